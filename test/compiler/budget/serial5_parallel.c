/* Compile-time budget: five serial loops (each iteration accumulates into B[i], so t..x
   carry dependences) around a parallel loop: the phase has 32^5 serial iterations at the
   report's parameter values, which choosing the sample iterations once enumerated (it did
   not finish in a minute). */
void serial5_parallel(int n, int m, double A[n], double B[n]) {
#pragma scop
  for (int t = 0; t < m; t++)
    for (int u = 0; u < m; u++)
      for (int v = 0; v < m; v++)
        for (int w = 0; w < m; w++)
          for (int x = 0; x < m; x++)
            for (int i = 0; i < n; i++)
              B[i] = B[i] + A[i] * (t + u + v + w + x);
#pragma endscop
}
