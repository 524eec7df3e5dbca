/* jacobi1d: 1-D three-point Jacobi (PolyBench), two arrays, a time loop. */
void kernel_jacobi1d(int tsteps, int n, double A[n], double B[n]) {
  int t, i;
#pragma scop
  for (t = 0; t < tsteps; t++) {
    for (i = 1; i < n - 1; i++)
      B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1]);
    for (i = 1; i < n - 1; i++)
      A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1]);
  }
#pragma endscop
}
