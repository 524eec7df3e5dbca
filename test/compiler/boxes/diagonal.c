/* Boxes: correlation's last nest (PolyBench): corr[i][i] = 1 lies beside the j loop, the
   reduction over k inside it. --partition=auto (the default) splits i and j, because one
   row of corr reads all of data; corr[i][i]'s coordinate along j is i (its tile is the
   column block holding i). */
void kernel_diagonal(int m, int n, double data[n][m], double corr[m][m]) {
  int i, j, k;
#pragma scop
  for (i = 0; i < m - 1; i++) {
    corr[i][i] = 1.0;
    for (j = i + 1; j < m; j++) {
      corr[i][j] = 0.0;
      for (k = 0; k < n; k++)
        corr[i][j] += data[k][i] * data[k][j];
      corr[j][i] = corr[i][j];
    }
  }
  corr[m - 1][m - 1] = 1.0;
#pragma endscop
}
