/* The two products of BiCG (the computation of PolyBench's bicg): s = A^T r accumulates
   s[j] over the row loop i, q = A p accumulates q[i] over j, both in one nest. In source
   order the row loop is serial (s) and the column loop too (q). Rescheduled, q's rows run in
   parallel over i and s's columns over j, in two nests (poly/reschedule.h). */
void bicg(int n, int m, double A[n][m], double s[m], double q[n], double p[m], double r[n]) {
  int i, j;
#pragma scop
  for (i = 0; i < m; i++)
    s[i] = 0;
  for (i = 0; i < n; i++) {
    q[i] = 0.0;
    for (j = 0; j < m; j++) {
      s[j] = s[j] + r[i] * A[i][j];
      q[i] = q[i] + A[i][j] * p[j];
    }
  }
#pragma endscop
}
