/* Scalars written inside the scop that a phase keeps private (kernel locals, one copy per
   tile, work-item or thread): 'acc' accumulates over the inner loop k and is read after it
   in the same iteration of the parallel loop j (symm's temp2); 't' is declared in the scop;
   'a = b = ...' is a chained assignment (two statements). The second loop nest reuses
   'acc' at another depth (the CUDA thread mapping must ignore that nest's dependences on
   it). No scalar goes to memory. The loop i is serial (C[k][j] is updated for every i). */
void kernel(int n, int m, double alpha, double C[n][m], double A[n][n], double B[n][m]) {
  double acc, a, b;
#pragma scop
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) {
      acc = 0.0;
      for (int k = 0; k < i; k++) {
        C[k][j] += alpha * B[i][j] * A[i][k];
        acc += B[k][j] * A[i][k];
      }
      double t = alpha * acc;
      a = b = t + B[i][j];
      C[i][j] = a * b;
    }
  for (int i = 0; i < n; i++) {
    acc = C[i][0];
    C[i][m - 1] = acc * 2.0;
  }
#pragma endscop
}
