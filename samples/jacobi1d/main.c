/* jacobi1d [N [STEPS]]: sequential original vs the bbmmc-generated program. */
#include "sample.h"

void kernel_jacobi1d(int tsteps, int n, double A[n], double B[n]);
void kernel_jacobi1d_seq(int tsteps, int n, double A[n], double B[n]);

int main(int argc, char** argv) {
  int n = sample_arg(argc, argv, 1, 1000), tsteps = sample_arg(argc, argv, 2, 20);
  double *a = sample_alloc(n * sizeof(double)), *b = sample_alloc(n * sizeof(double));
  double *ra = sample_alloc(n * sizeof(double)), *rb = sample_alloc(n * sizeof(double));
  for (long k = 0; k < n; ++k) {
    ra[k] = a[k] = sample_value(k, 1);
    rb[k] = b[k] = sample_value(k, 2);
  }
  sample_request_stats();
  printf("jacobi1d: n=%d steps=%d\n", n, tsteps);
  if (sample_warmup()) {
    double w[2][8] = {{0}};
    kernel_jacobi1d(1, 8, w[0], w[1]);
  }
  sample_ref seq_ref;
  sample_ref_begin(&seq_ref, "jacobi1d", argc, argv);
  sample_ref_array(&seq_ref, ra, n * sizeof(double));
  sample_ref_array(&seq_ref, rb, n * sizeof(double));
  double t0 = sample_now();
  if (sample_ref_compute(&seq_ref))
    kernel_jacobi1d_seq(tsteps, n, ra, rb);
  if (sample_ref_end(&seq_ref)) return 0;
  double t1 = sample_now();
  kernel_jacobi1d(tsteps, n, a, b);
  double t2 = sample_now();
  int failures = 0;
  sample_compare_double("A", ra, a, n, &failures);
  sample_compare_double("B", rb, b, n, &failures);
  return sample_finish("jacobi1d", failures, t1 - t0, t2 - t1);
}
