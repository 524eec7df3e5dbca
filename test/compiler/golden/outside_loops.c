/* Statements outside any loop inside a scop (0-d domains), a local scalar temporary
   declared in the scop, and an affine if/else. */
void f(int n, double A[n], double B[n], double *out) {
  double acc;
#pragma scop
  A[0] = 1.0;
  B[n - 1] = A[0] * 2.0;
  for (int i = 1; i < n; i++) {
    double t = A[i - 1] + 1.0;
    if (i % 2 == 0 && i < n - 1)
      A[i] = t;
    else
      A[i] = -t;
  }
  acc = A[n - 1];
#pragma endscop
  *out = acc;
}
