/* lu [N]: sequential original vs the bbmmc-generated program. */
#include "sample.h"

void kernel_lu(int n, double A[n][n]);
void kernel_lu_seq(int n, double A[n][n]);

int main(int argc, char** argv) {
  int n = sample_arg(argc, argv, 1, 60);
  long sz = (long)n * n;
  double *a = sample_alloc(sz * sizeof(double)), *r = sample_alloc(sz * sizeof(double));
  /* Diagonally dominant, so no pivoting is needed. */
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      r[(long)i * n + j] = a[(long)i * n + j] = sample_value((long)i * n + j, 3) + (i == j ? n : 0);
  sample_request_stats();
  printf("lu: n=%d\n", n);
  if (sample_warmup()) {
    double w[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    kernel_lu(4, (double(*)[4])w);
  }
  sample_ref seq_ref;
  sample_ref_begin(&seq_ref, "lu", argc, argv);
  sample_ref_array(&seq_ref, r, sz * sizeof(double));
  double t0 = sample_now();
  if (sample_ref_compute(&seq_ref))
    kernel_lu_seq(n, (double(*)[n])r);
  if (sample_ref_end(&seq_ref)) return 0;
  double t1 = sample_now();
  kernel_lu(n, (double(*)[n])a);
  double t2 = sample_now();
  int failures = 0;
  sample_compare_double("A", r, a, sz, &failures);
  return sample_finish("lu", failures, t1 - t0, t2 - t1);
}
