/* Allocation hints for boxes that move with the serial iterators and that no tile flows
   out: an interval dynamic program like nussinov's, rescheduled into diagonals d = j - i
   (one phase per diagonal, the split range [0, n - d) moving with d). Each device
   reserves the hull of every tile's boxes over all diagonals (the same box on every
   device), so what a device read stays valid there and only what another device wrote
   since is copied again; without the hint every diagonal's boxes were new transient
   instances, read in whole again. */
void intervals(int n, int W[n], long T[n][n]) {
#pragma scop
  for (int i = n - 1; i >= 0; i--)
    for (int j = i + 1; j < n; j++) {
      T[i][j] = T[i][j] > T[i + 1][j] + W[i] ? T[i][j] : T[i + 1][j] + W[i];
      for (int k = i + 1; k < j; k++)
        T[i][j] = T[i][j] > T[i][k] + T[k + 1][j] - W[k] ? T[i][j] : T[i][k] + T[k + 1][j] - W[k];
    }
#pragma endscop
}
