/* mvt [N]: sequential original vs the bbmmc-generated program. */
#include "sample.h"

void kernel_mvt(int n, double x1[n], double x2[n], double y_1[n], double y_2[n], double A[n][n]);
void kernel_mvt_seq(int n, double x1[n], double x2[n], double y_1[n], double y_2[n],
                    double A[n][n]);

int main(int argc, char** argv) {
  int n = sample_arg(argc, argv, 1, 120);
  double* v[4];
  double* r[4];
  for (int k = 0; k < 4; ++k) {
    v[k] = sample_alloc(n * sizeof(double));
    r[k] = sample_alloc(n * sizeof(double));
    for (long e = 0; e < n; ++e) r[k][e] = v[k][e] = sample_value(e, k + 1);
  }
  double* a = sample_alloc((long)n * n * sizeof(double));
  for (long e = 0; e < (long)n * n; ++e) a[e] = sample_value(e, 9);
  sample_request_stats();
  printf("mvt: n=%d\n", n);
  if (sample_warmup()) {
    double w[4][4] = {{0}}, wa[16] = {0};
    kernel_mvt(4, w[0], w[1], w[2], w[3], (double(*)[4])wa);
  }
  sample_ref seq_ref;
  sample_ref_begin(&seq_ref, "mvt", argc, argv);
  sample_ref_array(&seq_ref, r[0], n * sizeof(double));
  sample_ref_array(&seq_ref, r[1], n * sizeof(double));
  double t0 = sample_now();
  if (sample_ref_compute(&seq_ref))
    kernel_mvt_seq(n, r[0], r[1], r[2], r[3], (double(*)[n])a);
  if (sample_ref_end(&seq_ref)) return 0;
  double t1 = sample_now();
  kernel_mvt(n, v[0], v[1], v[2], v[3], (double(*)[n])a);
  double t2 = sample_now();
  int failures = 0;
  sample_compare_double("x1", r[0], v[0], n, &failures);
  sample_compare_double("x2", r[1], v[1], n, &failures);
  return sample_finish("mvt", failures, t1 - t0, t2 - t1);
}
