/* Compile-time budget: eight serial loops with triangular bounds accumulating into one
   element of a 2-D array, next to a parallel nest: the sample serial iterations must be
   found without enumerating the iteration space. */
void accumulate_8deep_triangular(int n, double A[2][2], double B[n][n]) {
#pragma scop
  for (int i = 0; i < n; i++)
    for (int j = 0; j <= i; j++)
      for (int k = j; k < n; k++)
        for (int l = 0; l < n; l++)
          for (int m = 0; m <= l; m++)
            for (int o = m; o < n; o++)
              for (int p = 0; p < n; p++)
                for (int q = 0; q < n; q++)
                  A[1][0] += B[i][q];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      B[i][j] = A[1][0] * B[i][j];
#pragma endscop
}
