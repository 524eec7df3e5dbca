/* bscholes [N]: sequential original vs the bbmmc-generated program. */
#include "sample.h"

void kernel_bscholes(int n, double r, double S[n], double K[n], double T[n], double V[n],
                     double d1[n], double d2[n], double call[n], double put[n]);
void kernel_bscholes_seq(int n, double r, double S[n], double K[n], double T[n], double V[n],
                         double d1[n], double d2[n], double call[n], double put[n]);

int main(int argc, char** argv) {
  int n = sample_arg(argc, argv, 1, 4000);
  double* in[4];
  double* out[4];
  double* ref[4];
  for (int k = 0; k < 4; ++k) {
    in[k] = sample_alloc(n * sizeof(double));
    out[k] = sample_alloc(n * sizeof(double));
    ref[k] = sample_alloc(n * sizeof(double));
    for (long e = 0; e < n; ++e) out[k][e] = ref[k][e] = 0.0;
  }
  for (long e = 0; e < n; ++e) {
    in[0][e] = 10.0 + 90.0 * sample_value(e, 1);  /* spot */
    in[1][e] = 10.0 + 90.0 * sample_value(e, 2);  /* strike */
    in[2][e] = 0.25 + 2.0 * sample_value(e, 3);   /* years */
    in[3][e] = 0.1 + 0.4 * sample_value(e, 4);    /* volatility */
  }
  sample_request_stats();
  printf("bscholes: n=%d\n", n);
  if (sample_warmup()) {
    double w[8][4] = {{1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}};
    kernel_bscholes(4, 0.02, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]);
  }
  sample_ref seq_ref;
  sample_ref_begin(&seq_ref, "bscholes", argc, argv);
  sample_ref_array(&seq_ref, ref[0], n * sizeof(double));
  sample_ref_array(&seq_ref, ref[1], n * sizeof(double));
  sample_ref_array(&seq_ref, ref[2], n * sizeof(double));
  sample_ref_array(&seq_ref, ref[3], n * sizeof(double));
  double t0 = sample_now();
  if (sample_ref_compute(&seq_ref))
    kernel_bscholes_seq(n, 0.02, in[0], in[1], in[2], in[3], ref[0], ref[1], ref[2], ref[3]);
  if (sample_ref_end(&seq_ref)) return 0;
  double t1 = sample_now();
  kernel_bscholes(n, 0.02, in[0], in[1], in[2], in[3], out[0], out[1], out[2], out[3]);
  double t2 = sample_now();
  int failures = 0;
  sample_compare_double("call", ref[2], out[2], n, &failures);
  sample_compare_double("put", ref[3], out[3], n, &failures);
  sample_compare_double("d1", ref[0], out[0], n, &failures);
  return sample_finish("bscholes", failures, t1 - t0, t2 - t1);
}
