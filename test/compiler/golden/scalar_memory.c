/* Scalars in memory, one-element arrays ("scalars in memory" in --emit=deps), and one that
   is not: 'sum' is reset in the serial loop k and accumulated over i (a serial region:
   one tile per k), then read by the parallel loop j, another phase: in memory. 'prev'
   carries a value from one iteration of the serial loop i to the next (the guard i > 0
   keeps its reads from seeing a value from before the scop), all inside one serial
   region run by one tile: private. 'last' is live-out (used after the scop) and last
   written in the last iteration of a parallel loop: the phase keeps it private and copies
   that value out (so it is in memory too). */
void f(int n, double A[n][n], double B[n], double *out) {
  double sum, prev, last;
#pragma scop
  for (int k = 0; k < n; k++) {
    sum = 0.0;
    for (int i = 0; i < n; i++)
      sum += A[i][k];
    for (int j = 0; j < n; j++)
      A[k][j] = A[k][j] / sum;
  }
  for (int i = 0; i < n; i++) {
    if (i > 0)
      B[i] = prev * 0.5;
    prev = A[i][0];
  }
  for (int i = 0; i < n; i++) {
    last = B[i] + 1.0;
    A[i][i] = last;
  }
#pragma endscop
  *out = last;
}
