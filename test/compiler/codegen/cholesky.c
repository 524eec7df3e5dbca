/* Cholesky factorisation A = L L^T in place (the computation of PolyBench's cholesky, with a
   call to sqrt): left-looking in source order, every loop serial. isl's scheduler makes it
   right-looking: one serial loop over the eliminated column k (fusing source loops with
   different iterators, so named bbmm_it<k>), the square root, the column's scaling and the
   trailing update in parallel over the rows (poly/reschedule.h). */
double sqrt(double);
void cholesky(int n, double A[n][n]) {
  int i, j, k;
#pragma scop
  for (i = 0; i < n; i++) {
    for (j = 0; j < i; j++) {
      for (k = 0; k < j; k++)
        A[i][j] -= A[i][k] * A[j][k];
      A[i][j] /= A[j][j];
    }
    for (k = 0; k < i; k++)
      A[i][i] -= A[i][k] * A[i][k];
    A[i][i] = sqrt(A[i][i]);
  }
#pragma endscop
}
