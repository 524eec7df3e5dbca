/* heat3d [N [STEPS]]: sequential original vs the bbmmc-generated program. */
#include "sample.h"

void kernel_heat3d(int tsteps, int n, double A[n][n][n], double B[n][n][n]);
void kernel_heat3d_seq(int tsteps, int n, double A[n][n][n], double B[n][n][n]);

int main(int argc, char** argv) {
  int n = sample_arg(argc, argv, 1, 20), tsteps = sample_arg(argc, argv, 2, 5);
  long sz = (long)n * n * n;
  double *a = sample_alloc(sz * sizeof(double)), *b = sample_alloc(sz * sizeof(double));
  double *ra = sample_alloc(sz * sizeof(double)), *rb = sample_alloc(sz * sizeof(double));
  for (long k = 0; k < sz; ++k) {
    ra[k] = a[k] = sample_value(k, 1);
    rb[k] = b[k] = sample_value(k, 2);
  }
  sample_request_stats();
  printf("heat3d: n=%d steps=%d\n", n, tsteps);
  if (sample_warmup()) {
    static double w[2][64];
    kernel_heat3d(1, 4, (double(*)[4][4])w[0], (double(*)[4][4])w[1]);
  }
  sample_ref seq_ref;
  sample_ref_begin(&seq_ref, "heat3d", argc, argv);
  sample_ref_array(&seq_ref, ra, sz * sizeof(double));
  sample_ref_array(&seq_ref, rb, sz * sizeof(double));
  double t0 = sample_now();
  if (sample_ref_compute(&seq_ref))
    kernel_heat3d_seq(tsteps, n, (double(*)[n][n])ra, (double(*)[n][n])rb);
  if (sample_ref_end(&seq_ref)) return 0;
  double t1 = sample_now();
  kernel_heat3d(tsteps, n, (double(*)[n][n])a, (double(*)[n][n])b);
  double t2 = sample_now();
  int failures = 0;
  sample_compare_double("A", ra, a, sz, &failures);
  sample_compare_double("B", rb, b, sz, &failures);
  return sample_finish("heat3d", failures, t1 - t0, t2 - t1);
}
