/* Scalars that carry values between phases are one-element arrays registered with the
   runtime (durbin's alpha): in the serial loop k, 'nrm' is reset, accumulated over i and
   read by a statement (a serial region: one tile per k), then read by the parallel loop j,
   another phase; 'scale' is set once before the loops and read in every
   iteration of k. Neither is used after the scop: the generated code drops them
   (bbmm_array_discard) instead of copying their last values back. 'last' is
   live-out and last written in the last iteration of a parallel loop: private, with its
   last value copied out to its memory under a guard. */
#include <math.h>
void kernel(int n, int m, double A[n][m], double R[n], double* out) {
  double nrm, scale, last;
#pragma scop
  scale = 2.0;
  for (int k = 1; k < n; k++) {
    nrm = 0.0;
    for (int i = 0; i < m; i++)
      nrm += A[k][i] * A[k][i];
    R[k] = sqrt(nrm);
    for (int j = 0; j < m; j++)
      A[k][j] = scale * A[k][j] / nrm + A[k - 1][j];
  }
  for (int j = 0; j < m; j++) {
    last = A[n - 1][j] + 1.0;
    A[0][j] = last;
  }
#pragma endscop
  *out = last;
}
