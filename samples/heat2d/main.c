/* heat2d [N [STEPS]]: runs the sequential original and the bbmmc-generated
   program on the same input and compares them. */
#include "sample.h"

void kernel_heat2d(int tsteps, int n, double A[n][n], double B[n][n]);
void kernel_heat2d_seq(int tsteps, int n, double A[n][n], double B[n][n]);

int main(int argc, char** argv) {
  int n = sample_arg(argc, argv, 1, 64), tsteps = sample_arg(argc, argv, 2, 10);
  long sz = (long)n * n;
  double *a = sample_alloc(sz * sizeof(double)), *b = sample_alloc(sz * sizeof(double));
  double *ra = sample_alloc(sz * sizeof(double)), *rb = sample_alloc(sz * sizeof(double));
  for (long k = 0; k < sz; ++k) {
    ra[k] = a[k] = sample_value(k, 1);
    rb[k] = b[k] = sample_value(k, 2);
  }
  sample_request_stats();
  printf("heat2d: n=%d steps=%d\n", n, tsteps);
  if (sample_warmup()) {
    double w[2][16] = {{0}};
    kernel_heat2d(1, 4, (double(*)[4])w[0], (double(*)[4])w[1]);
  }
  sample_ref seq_ref;
  sample_ref_begin(&seq_ref, "heat2d", argc, argv);
  sample_ref_array(&seq_ref, ra, sz * sizeof(double));
  sample_ref_array(&seq_ref, rb, sz * sizeof(double));
  double t0 = sample_now();
  if (sample_ref_compute(&seq_ref))
    kernel_heat2d_seq(tsteps, n, (double(*)[n])ra, (double(*)[n])rb);
  if (sample_ref_end(&seq_ref)) return 0;
  double t1 = sample_now();
  kernel_heat2d(tsteps, n, (double(*)[n])a, (double(*)[n])b);
  double t2 = sample_now();
  int failures = 0;
  sample_compare_double("A", ra, a, sz, &failures);
  sample_compare_double("B", rb, b, sz, &failures);
  return sample_finish("heat2d", failures, t1 - t0, t2 - t1);
}
