/* A scalar that cannot be privatised: 'sum' carries a value from one i iteration to
   the next (a running sum), so --emit=deps must say which scalar makes i serial.
   Also a global array with constant extents and a call treated as pure. */
double G[100];
double sqrt(double);
void prefix(int n, double out[n]) {
  double sum = 0.0;
#pragma scop
  for (int i = 0; i < n; i++) {
    sum = sum + sqrt(G[i]);
    out[i] = sum;
  }
#pragma endscop
  out[0] = sum;
}
