/* Compile-time budget: four serial loops (each iteration accumulates into B[i], so t..w
   carry dependences) around a parallel loop: the phase has 32^4 serial iterations at the
   report's parameter values, which choosing the sample iterations once enumerated (3.6 s). */
void serial4_parallel(int n, int m, double A[n], double B[n]) {
#pragma scop
  for (int t = 0; t < m; t++)
    for (int u = 0; u < m; u++)
      for (int v = 0; v < m; v++)
        for (int w = 0; w < m; w++)
          for (int i = 0; i < n; i++)
            B[i] = B[i] + A[i] * (t + u + v + w);
#pragma endscop
}
