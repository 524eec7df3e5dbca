/* Loops that only a reduction orders, inside serial steps (durbin's shape), for
   bbmmc --reductions=reassociate (poly/reductions.h). The values are integers, or doubles
   holding small integers, so that every order of the additions and products gives the same
   bits: the blocked program must equal the sequential one exactly. */

/* s += e over [0, k), the iterator declared in the loop; each step's result feeds the
   next steps' reductions through y. */
void kernel_steps(int n, long x[n], long y[n]) {
  long s;
#pragma scop
  for (int k = 1; k < n; k++) {
    s = 0;
    for (int i = 0; i < k; i++)
      s += x[k - i - 1] * y[i];
    y[k] = (y[k] + s) % 1009;
  }
#pragma endscop
}

/* s = s * e over [0, k] (<=, an iterator declared before the scop), unsigned: products wrap
   exactly in any order. */
void kernel_products(int n, unsigned long x[n], unsigned long p[n]) {
  int i, k;
  unsigned long s;
#pragma scop
  for (k = 0; k < n; k++) {
    s = 1;
    for (i = 0; i <= k; i++)
      s = s * (x[i] + 1);
    p[k] = s;
    x[k] = (x[k] + s) % 7;
  }
#pragma endscop
}

/* s = s - e over [k, n) (a lower bound that moves with k) in double, exact: the values are
   small integers. */
void kernel_differences(int n, double w[n], double d[n]) {
  double s;
#pragma scop
  for (int k = 0; k < n; k++) {
    s = d[k];
    for (int i = k; i < n; i++)
      s = s - w[i] * 2.0;
    d[k] = s;
    w[k] = w[k] + 1.0;
  }
#pragma endscop
}

/* ludcmp's factorisation and substitutions (PolyBench), in integers: the scalar w is
   reduced in three loops of serial regions, and kept private in a parallel phase between
   them. */
void kernel_lu(int n, long A[n][n], long b[n], long x[n], long y[n]) {
  int i, j, k;
  long w;
#pragma scop
  for (i = 0; i < n; i++) {
    for (j = 0; j < i; j++) {
      w = A[i][j];
      for (k = 0; k < j; k++)
        w -= A[i][k] * A[k][j];
      A[i][j] = (w / (A[j][j] % 5 + 6)) % 1000;
    }
    for (j = i; j < n; j++) {
      w = A[i][j];
      for (k = 0; k < i; k++)
        w -= A[i][k] * A[k][j];
      A[i][j] = w % 1000;
    }
  }
  for (i = 0; i < n; i++) {
    w = b[i];
    for (j = 0; j < i; j++)
      w -= A[i][j] * y[j];
    y[i] = w % 1000;
  }
  for (i = n - 1; i >= 0; i--) {
    w = y[i];
    for (j = i + 1; j < n; j++)
      w -= A[i][j] * x[j];
    x[i] = (w / (A[i][i] % 5 + 6)) % 1000;
  }
#pragma endscop
}
