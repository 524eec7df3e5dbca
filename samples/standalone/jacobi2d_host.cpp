// A hand-written 2-D Jacobi on several simulated devices through libbbmm's
// public C++ API: row-block partition, each device's block split into tiles,
// halo rows exchanged by flow_out, a device capacity small enough to force
// box-out every step. Verified against the sequential loop; prints the
// runtime's statistics.
//
//   jacobi2d_host [--n N] [--steps T] [--devices D] [--tiles-per-device K]
//                 [--capacity BYTES|auto] [--json]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bbmm/box.h"
#include "bbmm/runtime.h"

namespace {

struct Config {
  int64_t n = 512;
  int steps = 20;
  int devices = 4;
  int tiles_per_device = 2;
  std::string capacity = "auto";  // auto: 3/4 of one device's share
  bool json = false;
};

// The pieces of a view, copied so the kernel may run after the tile ended.
class Grid {
 public:
  explicit Grid(const bbmm_view& v) : pieces_(v.pieces, v.pieces + v.npieces) {}
  double& at(int64_t i, int64_t j) const {
    const int64_t idx[2] = {i, j};
    for (const bbmm_piece& p : pieces_) {
      if (bbmm_piece_contains(&p, 2, idx)) {
        return *static_cast<double*>(bbmm_piece_at(&p, sizeof(double), 2, idx));
      }
    }
    std::fprintf(stderr, "jacobi2d: element (%ld, %ld) is in no piece\n", static_cast<long>(i),
                 static_cast<long>(j));
    std::abort();
  }

 private:
  std::vector<bbmm_piece> pieces_;
};

void sequential(std::vector<double>& a, std::vector<double>& b, int64_t n, int steps) {
  for (int t = 0; t < steps; ++t) {
    for (int64_t i = 1; i < n - 1; ++i)
      for (int64_t j = 1; j < n - 1; ++j)
        b[i * n + j] = 0.2 * (a[i * n + j] + a[i * n + j - 1] + a[i * n + j + 1] +
                              a[(i + 1) * n + j] + a[(i - 1) * n + j]);
    for (int64_t i = 1; i < n - 1; ++i)
      for (int64_t j = 1; j < n - 1; ++j)
        a[i * n + j] = 0.2 * (b[i * n + j] + b[i * n + j - 1] + b[i * n + j + 1] +
                              b[(i + 1) * n + j] + b[(i - 1) * n + j]);
  }
}

bbmm::Box rows(int64_t lo, int64_t hi, int64_t c0, int64_t c1) {
  return *bbmm::Box::create({lo, c0}, {hi, c1});
}

// One phase: dst[i][j] = 0.2 * (5-point sum of src) for the rows of every
// tile; each tile flows out its first and last row to its neighbours.
absl::Status phase(bbmm::Runtime& rt, bbmm::Array* src, bbmm::Array* dst, const Config& c) {
  const int64_t n = c.n;
  const int tiles = c.devices * c.tiles_per_device;
  for (int k = 0; k < tiles; ++k) {
    // Tile k owns interior rows [lo, hi).
    const int64_t lo = 1 + (n - 2) * k / tiles, hi = 1 + (n - 2) * (k + 1) / tiles;
    if (lo >= hi) continue;
    absl::StatusOr<bbmm::Tile> tile = rt.begin_tile(k / c.tiles_per_device);
    if (!tile.ok()) return tile.status();
    bbmm::Tile& t = *tile;
    absl::Status s = t.require(src, rows(lo - 1, hi + 1, 0, n), bbmm::Access::kRead);
    if (s.ok()) s = t.require(dst, rows(lo, hi, 1, n - 1), bbmm::Access::kWrite);
    if (s.ok()) s = t.acquire();
    if (!s.ok()) return s;
    Grid in(*t.view(src)), out(*t.view(dst));
    s = t.launch([in, out, lo, hi, n](const bbmm_launch_info&) {
      for (int64_t i = lo; i < hi; ++i)
        for (int64_t j = 1; j < n - 1; ++j)
          out.at(i, j) = 0.2 * (in.at(i, j) + in.at(i, j - 1) + in.at(i, j + 1) +
                                in.at(i + 1, j) + in.at(i - 1, j));
    });
    // Halo rows: the next phase's neighbouring tiles read rows lo and hi-1.
    if (s.ok() && lo > 1) s = t.flow_out(dst, rows(lo, lo + 1, 1, n - 1));
    if (s.ok() && hi < n - 1) s = t.flow_out(dst, rows(hi - 1, hi, 1, n - 1));
    if (s.ok()) s = t.release();
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

int run(const Config& c) {
  const int64_t n = c.n;
  std::vector<double> a(n * n), b(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      a[i * n + j] = static_cast<double>((i * 7 + j * 13) % 101) / 101.0;
      b[i * n + j] = static_cast<double>((i * 3 + j * 5) % 37) / 37.0;
    }
  std::vector<double> ra = a, rb = b;
  sequential(ra, rb, n, c.steps);

  absl::StatusOr<bbmm::RuntimeOptions> opts = bbmm::RuntimeOptions::from_env();
  if (!opts.ok()) {
    std::fprintf(stderr, "jacobi2d: %s\n", std::string(opts.status().message()).c_str());
    return 1;
  }
  opts->backend = BBMM_BACKEND_HOST;
  opts->devices = c.devices;
  if (c.capacity == "auto") {
    // A device's share of both arrays is 2*n*n/devices doubles; allow 3/4 of
    // it, so its tiles cannot all stay resident and box-out happens.
    opts->device_memory = 2 * n * n * sizeof(double) / c.devices * 3 / 4;
  } else {
    absl::StatusOr<uint64_t> bytes = bbmm::parse_bytes(c.capacity);
    if (!bytes.ok()) {
      std::fprintf(stderr, "jacobi2d: --capacity %s\n",
                   std::string(bytes.status().message()).c_str());
      return 1;
    }
    opts->device_memory = *bytes;
  }
  absl::StatusOr<std::unique_ptr<bbmm::Runtime>> rt = bbmm::Runtime::create(*opts);
  if (!rt.ok()) {
    std::fprintf(stderr, "jacobi2d: %s\n", std::string(rt.status().message()).c_str());
    return 1;
  }
  const int64_t extents[2] = {n, n};
  bbmm::Array* A = *(*rt)->register_array("A", a.data(), sizeof(double), extents);
  bbmm::Array* B = *(*rt)->register_array("B", b.data(), sizeof(double), extents);
  for (int t = 0; t < c.steps; ++t) {
    absl::Status s = phase(**rt, A, B, c);
    if (s.ok()) s = phase(**rt, B, A, c);
    if (!s.ok()) {
      std::fprintf(stderr, "jacobi2d: step %d: %s\n", t, std::string(s.message()).c_str());
      return 1;
    }
  }
  absl::Status s = (*rt)->sync_to_host(A);
  if (s.ok()) s = (*rt)->sync_to_host(B);
  if (!s.ok()) {
    std::fprintf(stderr, "jacobi2d: sync: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  double max_err = 0;
  for (int64_t k = 0; k < n * n; ++k) {
    max_err = std::max(max_err, std::fabs(a[k] - ra[k]) / std::max(1e-300, std::fabs(ra[k])));
    max_err = std::max(max_err, std::fabs(b[k] - rb[k]) / std::max(1e-300, std::fabs(rb[k])));
  }
  const bbmm_stats total = (*rt)->stats();
  std::printf("jacobi2d: n=%ld steps=%d devices=%d tiles/device=%d capacity=%lu B/device\n",
              static_cast<long>(n), c.steps, c.devices, c.tiles_per_device,
              static_cast<unsigned long>(opts->device_memory));
  if (c.json) {
    std::printf("%s\n", (*rt)->stats_json().c_str());
  } else {
    std::printf("%s", (*rt)->stats_table().c_str());
  }
  const bool ok = max_err <= 1e-10;
  std::printf("verification against the sequential loop: max relative error %.3g -> %s\n",
              max_err, ok ? "PASSED" : "FAILED");
  if (total.evictions == 0 && opts->device_memory < 2 * n * n * sizeof(double) / c.devices) {
    std::printf("note: no eviction happened\n");
  }
  return ok ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "jacobi2d: %s needs a value\n", flag);
        std::exit(1);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--n")) c.n = std::atoll(value("--n"));
    else if (!std::strcmp(argv[i], "--steps")) c.steps = std::atoi(value("--steps"));
    else if (!std::strcmp(argv[i], "--devices")) c.devices = std::atoi(value("--devices"));
    else if (!std::strcmp(argv[i], "--tiles-per-device"))
      c.tiles_per_device = std::atoi(value("--tiles-per-device"));
    else if (!std::strcmp(argv[i], "--capacity")) c.capacity = value("--capacity");
    else if (!std::strcmp(argv[i], "--json")) c.json = true;
    else {
      std::fprintf(stderr,
                   "usage: jacobi2d_host [--n N] [--steps T] [--devices D] "
                   "[--tiles-per-device K] [--capacity BYTES|auto] [--json]\n");
      return 1;
    }
  }
  if (c.n < 3 || c.steps < 0 || c.devices < 1 || c.tiles_per_device < 1) {
    std::fprintf(stderr, "jacobi2d: need n >= 3, steps >= 0, devices >= 1, tiles >= 1\n");
    return 1;
  }
  return run(c);
}
