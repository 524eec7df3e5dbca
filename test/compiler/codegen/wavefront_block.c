/* A wavefront run inside one kernel per time step (bbmm_it1 = 2i + j inside t, the threads
   of one CUDA block sharing i, __syncthreads() between steps).
   bbmmc-args: --wavefront-steps=block */
void seidel(int steps, int n, double A[n][n]) {
#pragma scop
  for (int t = 0; t < steps; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[i][j] = (A[i - 1][j] + A[i][j - 1] + A[i][j] + A[i][j + 1] + A[i + 1][j]) / 5.0;
#pragma endscop
}
