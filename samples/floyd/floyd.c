/* floyd: Floyd-Warshall all-pairs shortest paths on integers. The i loop
   writes row k at i = k, and the j loop column k at j = k, so exact analysis
   calls them serial; the user asserts both parallel (with path[k][k] = 0, row k
   and column k do not change during iteration k). Without the assertion on j,
   each GPU thread walks a whole row (j sequential, i across the threads). */
void kernel_floyd(int n, int path[n][n]) {
  int i, j, k;
#pragma scop
  for (k = 0; k < n; k++) {
#pragma bbmm parallel
    for (i = 0; i < n; i++)
#pragma bbmm parallel
      for (j = 0; j < n; j++)
        path[i][j] = path[i][j] < path[i][k] + path[k][j] ? path[i][j] : path[i][k] + path[k][j];
  }
#pragma endscop
}
