/* Wavefronts run inside one kernel (bbmmc --wavefront-steps=block): nests whose source
   order has no parallel loop and whose rescheduled form is a wavefront, a serial loop of
   steps with one parallel loop inside. kernel_seidel2d: PolyBench's seidel-2d (the
   wavefront 2i + j inside each time step); kernel_gs3: a 3-D Gauss-Seidel sweep (the same,
   one level deeper); kernel_intervals: a dynamic program over intervals like nussinov's
   (the wavefront is the diagonal j - i, outside every other loop: one kernel for the whole
   nest), integer so that any order of its maxima gives the same bits. */

void kernel_seidel2d(int steps, int n, double A[n][n]) {
#pragma scop
  for (int t = 0; t < steps; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[i][j] = (A[i - 1][j - 1] + A[i - 1][j] + A[i - 1][j + 1] + A[i][j - 1] + A[i][j] +
                   A[i][j + 1] + A[i + 1][j - 1] + A[i + 1][j] + A[i + 1][j + 1]) /
                  9.0;
#pragma endscop
}

void kernel_gs3(int steps, int n, double B[n][n][n]) {
#pragma scop
  for (int t = 0; t < steps; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          B[i][j][k] = 0.2 * (B[i - 1][j][k] + B[i][j - 1][k] + B[i][j][k - 1] +
                              B[i + 1][j][k] + B[i][j + 1][k + 1]);
#pragma endscop
}

void kernel_intervals(int n, int W[n], long T[n][n]) {
#pragma scop
  for (int i = n - 1; i >= 0; i--)
    for (int j = i + 1; j < n; j++) {
      T[i][j] = T[i][j] > T[i + 1][j] + W[i] ? T[i][j] : T[i + 1][j] + W[i];
      for (int k = i + 1; k < j; k++)
        T[i][j] = T[i][j] > T[i][k] + T[k + 1][j] - W[k] ? T[i][j] : T[i][k] + T[k + 1][j] - W[k];
    }
#pragma endscop
}
