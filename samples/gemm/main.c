/* gemm [NI [NJ [NK]]]: sequential original vs the bbmmc-generated program. */
#include "sample.h"

void kernel_gemm(int ni, int nj, int nk, double alpha, double beta, double C[ni][nj],
                 double A[ni][nk], double B[nk][nj]);
void kernel_gemm_seq(int ni, int nj, int nk, double alpha, double beta, double C[ni][nj],
                     double A[ni][nk], double B[nk][nj]);

int main(int argc, char** argv) {
  int ni = sample_arg(argc, argv, 1, 50), nj = sample_arg(argc, argv, 2, 60),
      nk = sample_arg(argc, argv, 3, 40);
  double *c = sample_alloc((long)ni * nj * sizeof(double)),
         *rc = sample_alloc((long)ni * nj * sizeof(double)),
         *a = sample_alloc((long)ni * nk * sizeof(double)),
         *b = sample_alloc((long)nk * nj * sizeof(double));
  for (long e = 0; e < (long)ni * nj; ++e) rc[e] = c[e] = sample_value(e, 1);
  for (long e = 0; e < (long)ni * nk; ++e) a[e] = sample_value(e, 2);
  for (long e = 0; e < (long)nk * nj; ++e) b[e] = sample_value(e, 3);
  sample_request_stats();
  printf("gemm: ni=%d nj=%d nk=%d\n", ni, nj, nk);
  if (sample_warmup()) {
    double wc[16] = {0}, wa[16] = {0}, wb[16] = {0};
    kernel_gemm(4, 4, 4, 1.5, 1.2, (double(*)[4])wc, (double(*)[4])wa, (double(*)[4])wb);
  }
  sample_ref seq_ref;
  sample_ref_begin(&seq_ref, "gemm", argc, argv);
  sample_ref_array(&seq_ref, rc, (long)ni * nj * sizeof(double));
  double t0 = sample_now();
  if (sample_ref_compute(&seq_ref))
    kernel_gemm_seq(ni, nj, nk, 1.5, 1.2, (double(*)[nj])rc, (double(*)[nk])a, (double(*)[nj])b);
  if (sample_ref_end(&seq_ref)) return 0;
  double t1 = sample_now();
  kernel_gemm(ni, nj, nk, 1.5, 1.2, (double(*)[nj])c, (double(*)[nk])a, (double(*)[nj])b);
  double t2 = sample_now();
  int failures = 0;
  sample_compare_double("C", rc, c, (long)ni * nj, &failures);
  return sample_finish("gemm", failures, t1 - t0, t2 - t1);
}
