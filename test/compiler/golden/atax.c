/* y = A^T (A x) (the computation of PolyBench's atax): the column sums y[j] += A[i][j] * t[i]
   sit inside the row loop i, which carries them, so in source order only the zeroing loops
   are parallel. isl's scheduler distributes the column sums into their own nest and
   interchanges it (j outside, parallel; i inside), which bbmmc accepts (poly/reschedule.h). */
void atax(int m, int n, double A[m][n], double x[n], double y[n], double t[m]) {
#pragma scop
  for (int j = 0; j < n; j++)
    y[j] = 0.0;
  for (int i = 0; i < m; i++) {
    t[i] = 0.0;
    for (int j = 0; j < n; j++)
      t[i] = t[i] + A[i][j] * x[j];
    for (int j = 0; j < n; j++)
      y[j] = y[j] + A[i][j] * t[i];
  }
#pragma endscop
}
