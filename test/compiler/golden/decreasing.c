/* Decreasing loops: back substitution with i counting down (i--) and a strided
   decreasing loop (j -= 2); the schedule must keep the original order, so the
   schedule dimension of a decreasing loop is -i. */
void back_substitution(int n, double U[n][n], double x[n], double b[n], double y[n]) {
  int i, j;
#pragma scop
  for (i = n - 1; i >= 0; i--) {
    x[i] = b[i];
    for (j = i + 1; j < n; j++)
      x[i] = x[i] - U[i][j] * x[j];
    x[i] = x[i] / U[i][i];
  }
  for (j = n - 1; j > 0; j -= 2)
    y[j] = y[j - 1] * 2.0;
#pragma endscop
}
