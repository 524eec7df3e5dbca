/* Boxes: Seidel-2d (PolyBench) by default: in place, every loop serial in source order;
   each time step t is swept by the wavefront 2i + j (isl's scheduler over i and j, t kept
   outermost), whose flat steps run inside one kernel per t (--wavefront-steps=auto): one
   tile per time step, the whole interior written, the whole array read.
   seidel_2d_launch.c: each wavefront step launched, rows split inside it. */
void kernel_seidel_2d(int tsteps, int n, double A[n][n]) {
  int t, i, j;
#pragma scop
  for (t = 0; t <= tsteps - 1; t++)
    for (i = 1; i <= n - 2; i++)
      for (j = 1; j <= n - 2; j++)
        A[i][j] = (A[i - 1][j - 1] + A[i - 1][j] + A[i - 1][j + 1] + A[i][j - 1] + A[i][j] +
                   A[i][j + 1] + A[i + 1][j - 1] + A[i + 1][j] + A[i + 1][j + 1]) / 9.0;
#pragma endscop
}
