/* bbmmc-args: --partition=2d
   GEMM with the 2-D blocked partition: i and j are both split, so a tile needs only
   rows [lo0, hi0) of A and columns [lo1, hi1) of B instead of all of B. */
void kernel_gemm(int ni, int nj, int nk, double alpha, double beta, double C[ni][nj],
                 double A[ni][nk], double B[nk][nj]) {
  int i, j, k;
#pragma scop
  for (i = 0; i < ni; i++) {
    for (j = 0; j < nj; j++) {
      C[i][j] *= beta;
      for (k = 0; k < nk; ++k)
        C[i][j] += alpha * A[i][k] * B[k][j];
    }
  }
#pragma endscop
}
