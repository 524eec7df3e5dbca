/* fdtd2d [NX [NY [TMAX]]]: sequential original vs the bbmmc-generated program. */
#include "sample.h"

void kernel_fdtd2d(int tmax, int nx, int ny, double ex[nx][ny], double ey[nx][ny],
                   double hz[nx][ny], double fict[tmax]);
void kernel_fdtd2d_seq(int tmax, int nx, int ny, double ex[nx][ny], double ey[nx][ny],
                       double hz[nx][ny], double fict[tmax]);

int main(int argc, char** argv) {
  int nx = sample_arg(argc, argv, 1, 60), ny = sample_arg(argc, argv, 2, 70),
      tmax = sample_arg(argc, argv, 3, 10);
  long sz = (long)nx * ny;
  double* f[3];
  double* r[3];
  for (int a = 0; a < 3; ++a) {
    f[a] = sample_alloc(sz * sizeof(double));
    r[a] = sample_alloc(sz * sizeof(double));
    for (long k = 0; k < sz; ++k) r[a][k] = f[a][k] = sample_value(k, a + 1);
  }
  double* fict = sample_alloc(tmax * sizeof(double));
  for (int t = 0; t < tmax; ++t) fict[t] = (double)t;
  sample_request_stats();
  printf("fdtd2d: nx=%d ny=%d tmax=%d\n", nx, ny, tmax);
  if (sample_warmup()) {
    double w[3][16] = {{0}}, wf[1] = {0};
    kernel_fdtd2d(1, 4, 4, (double(*)[4])w[0], (double(*)[4])w[1], (double(*)[4])w[2], wf);
  }
  sample_ref seq_ref;
  sample_ref_begin(&seq_ref, "fdtd2d", argc, argv);
  sample_ref_array(&seq_ref, r[0], sz * sizeof(double));
  sample_ref_array(&seq_ref, r[1], sz * sizeof(double));
  sample_ref_array(&seq_ref, r[2], sz * sizeof(double));
  double t0 = sample_now();
  if (sample_ref_compute(&seq_ref))
    kernel_fdtd2d_seq(tmax, nx, ny, (double(*)[ny])r[0], (double(*)[ny])r[1], (double(*)[ny])r[2],
                      fict);
  if (sample_ref_end(&seq_ref)) return 0;
  double t1 = sample_now();
  kernel_fdtd2d(tmax, nx, ny, (double(*)[ny])f[0], (double(*)[ny])f[1], (double(*)[ny])f[2],
                fict);
  double t2 = sample_now();
  int failures = 0;
  sample_compare_double("ex", r[0], f[0], sz, &failures);
  sample_compare_double("ey", r[1], f[1], sz, &failures);
  sample_compare_double("hz", r[2], f[2], sz, &failures);
  return sample_finish("fdtd2d", failures, t1 - t0, t2 - t1);
}
