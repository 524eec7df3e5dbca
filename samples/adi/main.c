/* adi [N [STEPS]]: sequential original vs the bbmmc-generated program. */
#include "sample.h"

void kernel_adi(int tsteps, int n, double u[n][n], double v[n][n], double p[n][n],
                double q[n][n], double a, double b, double c, double d, double e, double f);
void kernel_adi_seq(int tsteps, int n, double u[n][n], double v[n][n], double p[n][n],
                    double q[n][n], double a, double b, double c, double d, double e, double f);

int main(int argc, char** argv) {
  int n = sample_arg(argc, argv, 1, 50), tsteps = sample_arg(argc, argv, 2, 5);
  long sz = (long)n * n;
  double* x[4];
  double* r[4];
  for (int k = 0; k < 4; ++k) {
    x[k] = sample_alloc(sz * sizeof(double));
    r[k] = sample_alloc(sz * sizeof(double));
    for (long e = 0; e < sz; ++e) r[k][e] = x[k][e] = sample_value(e, k + 1);
  }
  /* PolyBench's coefficients. */
  double dx = 1.0 / n, dy = 1.0 / n, dt = 1.0 / tsteps, b1 = 2.0, b2 = 1.0;
  double mul1 = b1 * dt / (dx * dx), mul2 = b2 * dt / (dy * dy);
  double a = -mul1 / 2.0, b = 1.0 + mul1, c = a, d = -mul2 / 2.0, e = 1.0 + mul2, f = d;
  sample_request_stats();
  printf("adi: n=%d steps=%d\n", n, tsteps);
  if (sample_warmup()) {
    double w[4][16] = {{0}};
    kernel_adi(1, 4, (double(*)[4])w[0], (double(*)[4])w[1], (double(*)[4])w[2], (double(*)[4])w[3], a, b, c, d, e, f);
  }
  sample_ref seq_ref;
  sample_ref_begin(&seq_ref, "adi", argc, argv);
  sample_ref_array(&seq_ref, r[0], sz * sizeof(double));
  sample_ref_array(&seq_ref, r[1], sz * sizeof(double));
  sample_ref_array(&seq_ref, r[2], sz * sizeof(double));
  sample_ref_array(&seq_ref, r[3], sz * sizeof(double));
  double t0 = sample_now();
  if (sample_ref_compute(&seq_ref))
    kernel_adi_seq(tsteps, n, (double(*)[n])r[0], (double(*)[n])r[1], (double(*)[n])r[2],
                   (double(*)[n])r[3], a, b, c, d, e, f);
  if (sample_ref_end(&seq_ref)) return 0;
  double t1 = sample_now();
  kernel_adi(tsteps, n, (double(*)[n])x[0], (double(*)[n])x[1], (double(*)[n])x[2],
             (double(*)[n])x[3], a, b, c, d, e, f);
  double t2 = sample_now();
  int failures = 0;
  const char* names[4] = {"u", "v", "p", "q"};
  for (int k = 0; k < 4; ++k) sample_compare_double(names[k], r[k], x[k], sz, &failures);
  return sample_finish("adi", failures, t1 - t0, t2 - t1);
}
