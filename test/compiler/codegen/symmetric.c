/* Codegen: the per-row write strategy (required rows READ_WRITE, covering box READ).
   Symmetric writes X[i][j] and X[j][i] (j >= i): the tile writes rows [lo, hi) right of
   the diagonal and the mirrored columns below it; the write set is not a few boxes. */
void kernel_sym(int N, double X[N][N], double A[N][N]) {
  int i, j;
#pragma scop
  for (i = 0; i < N; i++)
    for (j = i; j < N; j++) {
      X[i][j] = A[i][j] * A[j][i];
      X[j][i] = A[i][j] * A[j][i];
    }
#pragma endscop
}
