/* floyd: Floyd-Warshall all-pairs shortest paths on integers. The i loop
   writes row k at i = k, so exact analysis calls it serial; the user asserts
   it parallel (row k does not change during iteration k). */
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
