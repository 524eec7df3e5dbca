/* Integers and '#pragma bbmm parallel': the flow-out of a tile is row k+1 only; the
   statement's ?: and the row/column reads of k are printed with box-local addressing. */
void kernel_floyd(int n, int path[n][n]) {
  int i, j, k;
#pragma scop
  for (k = 0; k < n; k++) {
#pragma bbmm parallel
    for (i = 0; i < n; i++)
      for (j = 0; j < n; j++)
        path[i][j] = path[i][j] < path[i][k] + path[k][j] ? path[i][j] : path[i][k] + path[k][j];
  }
#pragma endscop
}
