/* Boxes: Cholesky factorisation (PolyBench), rescheduled right-looking: at each column k, a
   phase scales the column (A[i][k]) and updates the diagonal (A[i][i]) of the rows below
   it. Its write set is neither a few boxes nor rows of one interval (a column and a
   diagonal), but one access at a time it is a box and a diagonal, whose hull (the square of
   the tile's rows) no other tile touches. */
double sqrt(double);
void kernel_cholesky(int n, double A[n][n]) {
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
