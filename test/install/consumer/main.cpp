// A program built against an installed BBMM: doubles a vector on two
// simulated devices and checks the result on the host.
#include <cstdio>
#include <vector>

#include "bbmm/bbmm.h"

static void twice(const bbmm_launch_info* info, void* args) {
  (void)info;
  bbmm_piece* p = static_cast<bbmm_piece*>(args);
  for (int64_t i = p->lo[0]; i < p->hi[0]; ++i) {
    *static_cast<double*>(bbmm_piece_at(p, sizeof(double), 1, &i)) *= 2.0;
  }
}

int main() {
  bbmm_options opts;
  bbmm_options_init(&opts);
  opts.backend = BBMM_BACKEND_HOST;
  opts.devices = 2;
  bbmm_runtime* rt = nullptr;
  if (bbmm_runtime_create(&opts, &rt) != BBMM_OK) {
    std::fprintf(stderr, "create: %s\n", bbmm_last_error_message());
    return 1;
  }
  std::vector<double> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i);
  const int64_t n = static_cast<int64_t>(x.size());
  bbmm_array* a = nullptr;
  bbmm_array_register(rt, "x", x.data(), sizeof(double), 1, &n, nullptr, 0, &a);
  for (int d = 0; d < 2; ++d) {
    const int64_t lo = n * d / 2, hi = n * (d + 1) / 2;
    bbmm_tile* t = nullptr;
    bbmm_view v;
    if (bbmm_tile_begin(rt, d, &t) != BBMM_OK ||
        bbmm_tile_require(t, a, &lo, &hi, BBMM_READ_WRITE) != BBMM_OK ||
        bbmm_tile_acquire(t) != BBMM_OK || bbmm_tile_view(t, a, &v) != BBMM_OK ||
        v.npieces != 1 || bbmm_tile_launch(t, twice, &v.pieces[0], sizeof(bbmm_piece)) != BBMM_OK ||
        bbmm_tile_release(t) != BBMM_OK) {
      std::fprintf(stderr, "tile: %s\n", bbmm_last_error_message());
      return 1;
    }
  }
  bbmm_sync_to_host(rt, a);
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] != 2.0 * static_cast<double>(i)) {
      std::fprintf(stderr, "x[%zu] = %g, expected %g\n", i, x[i], 2.0 * i);
      return 1;
    }
  }
  bbmm_runtime_destroy(rt);
  std::printf("consumer: OK\n");
  return 0;
}
