/* Boxes: Floyd-Warshall (PolyBench): integer paths, row k is read by every i. The exact
   analysis finds that i carries dependences (row k is written at i = k), so the
   user asserts the i loop parallel with '#pragma bbmm parallel'; --emit=deps must
   print the assertion and the dataflow with i's iterations unordered. */
void kernel_floyd_warshall(int n, int path[n][n]) {
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
