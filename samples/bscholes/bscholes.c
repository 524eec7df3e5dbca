/* bscholes: Black-Scholes prices of European call and put options,
   embarrassingly parallel; r is a read-only scalar. The normal CDF is
   0.5 * erfc(-x / sqrt(2)). */
#include <math.h>

void kernel_bscholes(int n, double r, double S[n], double K[n], double T[n], double V[n],
                     double d1[n], double d2[n], double call[n], double put[n]) {
  int i;
#pragma scop
  for (i = 0; i < n; i++) {
    d1[i] = (log(S[i] / K[i]) + (r + 0.5 * V[i] * V[i]) * T[i]) / (V[i] * sqrt(T[i]));
    d2[i] = d1[i] - V[i] * sqrt(T[i]);
    call[i] = S[i] * 0.5 * erfc(-d1[i] * 0.70710678118654752440)
            - K[i] * exp(-r * T[i]) * 0.5 * erfc(-d2[i] * 0.70710678118654752440);
    put[i] = K[i] * exp(-r * T[i]) * 0.5 * erfc(d2[i] * 0.70710678118654752440)
           - S[i] * 0.5 * erfc(d1[i] * 0.70710678118654752440);
  }
#pragma endscop
}
