/* Allocation hints for boxes that move with the serial iterators and that no tile flows
   out (docs/codegen.md, "Allocation hints"). kernel_intervals: an interval dynamic
   program like nussinov's, rescheduled into diagonals d = j - i whose split range
   [0, n - d) moves too (every device reserves the hull of all tiles' boxes);
   kernel_rows: trmm's shape, the rows k > i of B read at each serial step i by column
   tiles that keep still (each device reserves its columns over all steps). Integer
   values, so that every order of the maxima gives the same bits. */

void kernel_intervals(int n, int W[n], long T[n][n]) {
#pragma scop
  for (int i = n - 1; i >= 0; i--)
    for (int j = i + 1; j < n; j++) {
      T[i][j] = T[i][j] > T[i + 1][j] + W[i] ? T[i][j] : T[i + 1][j] + W[i];
      for (int k = i + 1; k < j; k++)
        T[i][j] = T[i][j] > T[i][k] + T[k + 1][j] - W[k] ? T[i][j] : T[i][k] + T[k + 1][j] - W[k];
    }
#pragma endscop
}

void kernel_rows(int m, int n, long A[m][m], long B[m][n]) {
#pragma scop
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      for (int k = i + 1; k < m; k++)
        B[i][j] += A[k][i] * B[k][j];
      B[i][j] = 3 * B[i][j] % 1000003;
    }
#pragma endscop
}
