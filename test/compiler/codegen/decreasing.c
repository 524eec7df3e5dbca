/* A decreasing inner loop (j counts down): the kernel's loop runs j backwards, and a
   statement directly inside the parallel loop before it. */
void kernel_back(int n, double p[n][n], double v[n][n]) {
  int i, j;
#pragma scop
  for (i = 1; i < n - 1; i++) {
    v[n - 1][i] = 1.0;
    for (j = n - 2; j >= 1; j--)
      v[j][i] = p[i][j] * v[j + 1][i];
  }
#pragma endscop
}
