/* Codegen: the per-row write strategy (required rows READ_WRITE, covering box READ).
   A triangular write: row i writes columns 0..i of L, so a tile's write set is not a
   box; the write strategy must be per-row enumeration (never a widened WRITE box). */
void kernel_tri(int N, double L[N][N], double A[N][N]) {
  int i, j;
#pragma scop
  for (i = 0; i < N; i++)
    for (j = 0; j <= i; j++)
      L[i][j] = A[i][j] + A[j][i];
#pragma endscop
}
