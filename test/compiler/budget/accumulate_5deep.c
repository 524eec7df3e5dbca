/* Compile-time budget: as accumulate_4deep.c one loop deeper (32^5 serial iterations to
   enumerate once: did not finish in 60 s; serial5_parallel.c keeps that case). */
void accumulate_5deep(int n, double A[1]) {
#pragma scop
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      for (int k = 0; k < n; k++)
        for (int l = 0; l < n; l++)
          for (int m = 0; m < n; m++)
            A[0] = A[0] + 1;
#pragma endscop
}
