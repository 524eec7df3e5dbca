/* main before the function with the scop: the helpers come after main, so main gets no
   warm-up call (the runtime is created at the first scop, as always). */
void scale(int n, double A[n]);

int main(void) {
  double A[16];
  for (int i = 0; i < 16; i++) A[i] = i;
  scale(16, A);
  return A[3] == 6.0 ? 0 : 1;
}

void scale(int n, double A[n]) {
#pragma scop
  for (int i = 0; i < n; i++)
    A[i] = 2.0 * A[i];
#pragma endscop
}
