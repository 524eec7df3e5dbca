/* Forward substitution L x = b (the computation of PolyBench's trisolv), row-oriented: row
   i subtracts the solved x[j], j < i, so both loops are serial in source order. isl's
   scheduler makes it column-oriented: a serial loop over the solved column (a loop shared by
   statements whose source iterators differ: named bbmm_it<k>), inside it the division by the
   diagonal, then the update of every later row in parallel (poly/reschedule.h). */
void trisolv(int n, double L[n][n], double x[n], double b[n]) {
  int i, j;
#pragma scop
  for (i = 0; i < n; i++) {
    x[i] = b[i];
    for (j = 0; j < i; j++)
      x[i] -= L[i][j] * x[j];
    x[i] = x[i] / L[i][i];
  }
#pragma endscop
}
