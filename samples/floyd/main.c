/* floyd [N]: sequential original vs the bbmmc-generated program (exact). */
#include "sample.h"

void kernel_floyd(int n, int path[n][n]);
void kernel_floyd_seq(int n, int path[n][n]);

int main(int argc, char** argv) {
  int n = sample_arg(argc, argv, 1, 60);
  long sz = (long)n * n;
  int *p = sample_alloc(sz * sizeof(int)), *r = sample_alloc(sz * sizeof(int));
  for (long k = 0; k < sz; ++k) {
    /* Edge weights 1..100, some missing (a large weight that cannot overflow). */
    double v = sample_value(k, 7);
    r[k] = p[k] = v < 0.3 ? 1000000 : 1 + (int)(v * 100);
  }
  for (int i = 0; i < n; ++i) r[(long)i * n + i] = p[(long)i * n + i] = 0;
  sample_request_stats();
  printf("floyd: n=%d\n", n);
  if (sample_warmup()) {
    int w[16] = {0};
    kernel_floyd(4, (int(*)[4])w);
  }
  sample_ref seq_ref;
  sample_ref_begin(&seq_ref, "floyd", argc, argv);
  sample_ref_array(&seq_ref, r, sz * sizeof(int));
  double t0 = sample_now();
  if (sample_ref_compute(&seq_ref))
    kernel_floyd_seq(n, (int(*)[n])r);
  if (sample_ref_end(&seq_ref)) return 0;
  double t1 = sample_now();
  kernel_floyd(n, (int(*)[n])p);
  double t2 = sample_now();
  int failures = 0;
  sample_compare_int("path", r, p, sz, &failures);
  return sample_finish("floyd", failures, t1 - t0, t2 - t1);
}
