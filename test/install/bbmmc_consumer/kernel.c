/* A 1-D three-point smoothing with a time loop, compiled by the installed bbmmc. */
void smooth(int steps, int n, double a[n], double b[n]) {
  int t, i;
#pragma scop
  for (t = 0; t < steps; t++) {
    for (i = 1; i < n - 1; i++)
      b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0;
    for (i = 1; i < n - 1; i++)
      a[i] = (b[i - 1] + b[i] + b[i + 1]) / 3.0;
  }
#pragma endscop
}
