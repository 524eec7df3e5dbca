/* Wavefronts (bbmmc --schedule=isl+wavefront): in-place sweeps whose loops all carry
   dependences, so that only a skewed schedule has a parallel loop. kernel_sweep: a 2-D
   Gauss-Seidel-like sweep (wavefront 2i + j); kernel_seidel1d: a 1-D Gauss-Seidel stencil
   over time steps (wavefront 2t + i). */

void kernel_sweep(int n, int m, double A[n][m]) {
#pragma scop
  for (int i = 1; i < n; i++)
    for (int j = 1; j < m - 1; j++)
      A[i][j] = 0.25 * (A[i - 1][j - 1] + A[i - 1][j + 1] + A[i][j - 1] + A[i][j]);
#pragma endscop
}

void kernel_seidel1d(int steps, int n, double B[n]) {
#pragma scop
  for (int t = 0; t < steps; t++)
    for (int i = 1; i < n - 1; i++)
      B[i] = (B[i - 1] + B[i] + B[i + 1]) / 3.0;
#pragma endscop
}
