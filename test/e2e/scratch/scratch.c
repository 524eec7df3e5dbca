/* Arrays whose values after a scop are not used (issue 12's transfers): bbmmc drops them
   instead of copying them back to the host (bbmm_array_discard). kernel_scratch names its
   second array with '#pragma bbmm scratch'; kernel_local's temporary is a local array the
   function does not use after the scop, which needs no pragma. main.c runs each as
   compiled (the _seq functions) and as generated. */
void kernel_scratch(int n, int steps, double A[n], double B[n]) {
#pragma scop
  for (int t = 0; t < steps; t++) {
    for (int i = 1; i < n - 1; i++)
      B[i] = (A[i - 1] + A[i] + A[i + 1]) / 3.0;
    for (int i = 1; i < n - 1; i++)
      A[i] = (B[i - 1] + B[i] + B[i + 1]) / 3.0;
  }
#pragma bbmm scratch(B)
#pragma endscop
}

void kernel_local(int n, double A[n]) {
  double T[n];
#pragma scop
  for (int i = 0; i < n; i++)
    T[i] = 2.0 * A[i] + 1.0;
  for (int i = 1; i < n - 1; i++)
    A[i] = T[i - 1] - T[i + 1];
#pragma endscop
}
