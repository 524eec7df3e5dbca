/* Black-Scholes-like, embarrassingly parallel: every option i reads its own inputs and
   writes its own price; no flow-out at all, boxes equal the footprint exactly. */
double bs_price(double s, double k, double t, double r, double v);
void kernel_bscholes(int N, double r, double v, double S[N], double K[N], double T[N],
                     double P[N]) {
  int i;
#pragma scop
  for (i = 0; i < N; i++)
    P[i] = bs_price(S[i], K[i], T[i], r, v);
#pragma endscop
}
