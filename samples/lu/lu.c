/* lu: right-looking LU decomposition without pivoting, in place. The k loop is
   serial; both i loops are parallel; the domains shrink with k (triangular). */
void kernel_lu(int n, double A[n][n]) {
  int i, j, k;
#pragma scop
  for (k = 0; k < n; k++) {
    for (i = k + 1; i < n; i++)
      A[i][k] = A[i][k] / A[k][k];
    for (i = k + 1; i < n; i++)
      for (j = k + 1; j < n; j++)
        A[i][j] = A[i][j] - A[i][k] * A[k][j];
  }
#pragma endscop
}
