/* Codegen: a partitioned range that moves with the serial iterator (i from k+1): tiles are
   cut from the range of all iterations and clamped, so a row's owner never changes. */
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
