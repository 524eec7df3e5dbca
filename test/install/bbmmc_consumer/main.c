/* Runs the generated smooth() on 3 simulated devices and checks it against the same loops
   written here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void smooth(int steps, int n, double a[n], double b[n]);

int main(void) {
  enum { N = 300, T = 5 };
  static double a[N], b[N], ra[N], rb[N];
  for (int i = 0; i < N; ++i) ra[i] = a[i] = (double)((i * 37) % 101), rb[i] = b[i] = 0;
  setenv("BBMM_DEVICES", "3", 1);
  smooth(T, N, a, b);
  for (int t = 0; t < T; t++) {
    for (int i = 1; i < N - 1; i++) rb[i] = (ra[i - 1] + ra[i] + ra[i + 1]) / 3.0;
    for (int i = 1; i < N - 1; i++) ra[i] = (rb[i - 1] + rb[i] + rb[i + 1]) / 3.0;
  }
  for (int i = 0; i < N; ++i) {
    if (fabs(a[i] - ra[i]) > 1e-12 * fabs(ra[i]) || fabs(b[i] - rb[i]) > 1e-12 * fabs(rb[i])) {
      printf("bbmmc consumer: element %d differs\n", i);
      return 1;
    }
  }
  printf("bbmmc consumer: PASSED\n");
  return 0;
}
