/* bbmmc-args: --wavefront-steps=launch
   Boxes: Seidel-2d (PolyBench) with each wavefront step launched: in place, every loop
   serial in source order; each time step
   t is swept by the wavefront 2i + j (isl's scheduler over i and j, t kept outermost), rows
   i split inside it: a tile of rows [lo, hi) writes one element per row, on a line of slope
   -2, declared as the hull of its rows, and reads the rows around it. */
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
