/* Tiled wavefronts (bbmmc --wavefront-tiles=R,W): time steps of in-place sweeps whose
   inner loops all carry dependences, so that inside each step only a wavefront has a
   parallel loop (bbmmc's default schedule), run in blocks of R rows and W wavefront steps.
   kernel_seidel2d: PolyBench's seidel-2d (wavefront 2i + j); kernel_gs3: a 3-D
   Gauss-Seidel sweep. */

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
