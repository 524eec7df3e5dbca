/* Triangular bounds (SYRK, lower triangle): j <= i, so the domain is a triangle and
   the boxes of later passes must not assume a rectangle. */
void kernel_syrk(int n, int m, double alpha, double beta, double C[n][n], double A[n][m]) {
  int i, j, k;
#pragma scop
  for (i = 0; i < n; i++) {
    for (j = 0; j <= i; j++)
      C[i][j] *= beta;
    for (k = 0; k < m; k++)
      for (j = 0; j <= i; j++)
        C[i][j] += alpha * A[i][k] * A[j][k];
  }
#pragma endscop
}
