/* Two scops in one file (two functions): each gets its own model and byte range; the
   code between them is left alone. Also long and float element types. */
void first(int n, float a[n], long idx[n]) {
  int i;
#pragma scop
  for (i = 0; i < n; i++) {
    a[i] = a[i] * 2.0f;
    idx[i] = i;
  }
#pragma endscop
}

int unrelated(int x) { while (x > 0) x--; return x; }

void second(int n, char c[n][3]) {
#pragma scop
  for (int i = 1; i < n; i++)
    for (int j = 0; j < 3; j++)
      c[i][j] = c[i - 1][j];
#pragma endscop
}
