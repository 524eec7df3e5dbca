/* min/max/floord bounds, C integer division and a strided loop (i += 4) with
   iterators declared in the for-init. */
#define min(a, b) (((a) < (b)) ? (a) : (b))
int floord(int a, int b);
int max(int a, int b);
void blocked(int n, int m, double A[n][m], double s[n]) {
#pragma scop
  for (int ii = 0; ii <= floord(n - 1, 32); ii++)
    for (int i = 32 * ii; i <= min(n - 1, 32 * ii + 31); i++)
      for (int j = max(0, i - 3); j < min(m, i + 4); j++)
        A[i][j] = A[i][j] + s[i];
  for (int i = 0; i < n / 2; i += 4)
    s[i] = s[2 * i];
#pragma endscop
}
