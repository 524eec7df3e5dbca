/* Scalars written inside the scop that a phase keeps private (kernel locals, one copy per
   tile, work-item or thread): 'acc' accumulates over the inner loop k and is read after it
   in the same iteration of the parallel loop j (symm's temp2); 't' is declared in the scop;
   'a = b = ...' is a chained assignment (two statements). No scalar goes to memory. */
void kernel(int n, int m, double alpha, double C[n][m], double A[n][n], double B[n][m]) {
  double acc, a, b;
#pragma scop
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) {
      acc = 0.0;
      for (int k = 0; k < i; k++)
        acc += B[k][j] * A[i][k];
      double t = alpha * acc;
      a = b = t + B[i][j];
      C[i][j] = a * b;
    }
#pragma endscop
}
