// The 2-D Jacobi of jacobi2d_host.cpp with CUDA kernels on 1-4 GPUs through
// libbbmm's public C API: row-block partition, each GPU's rows split into
// tiles, halo rows pushed to the neighbours by flow_out (peer copies over
// NVLink where the GPUs reach each other), and an optional per-GPU capacity
// limit that forces box-out. Verified against a CPU loop.
//
//   jacobi2d_cuda [--n N] [--steps T] [--devices D] [--tiles-per-device K]
//                 [--capacity BYTES|auto|none] [--json]
//
// Exits 77 (skipped) when no GPU is present.
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bbmm/bbmm.h"

namespace {

constexpr int kMaxPieces = 4;

// A view's pieces by value, so a kernel can take them as an argument.
struct Pieces {
  int n;
  bbmm_piece p[kMaxPieces];
};

struct Args {
  Pieces in, out;
  int64_t lo, hi, n;
};

__device__ double* at(const Pieces& v, int64_t i, int64_t j) {
  const int64_t idx[2] = {i, j};
  if (v.n == 1) return static_cast<double*>(bbmm_piece_at(&v.p[0], sizeof(double), 2, idx));
  for (int k = 0; k < v.n; ++k) {
    if (bbmm_piece_contains(&v.p[k], 2, idx)) {
      return static_cast<double*>(bbmm_piece_at(&v.p[k], sizeof(double), 2, idx));
    }
  }
  return nullptr;
}

__global__ void jacobi_rows(Args a) {
  const int64_t j = 1 + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t i = a.lo + blockIdx.y;
  if (j >= a.n - 1 || i >= a.hi) return;
  *at(a.out, i, j) = 0.2 * (*at(a.in, i, j) + *at(a.in, i, j - 1) + *at(a.in, i, j + 1) +
                            *at(a.in, i + 1, j) + *at(a.in, i - 1, j));
}

void kernel(const bbmm_launch_info* info, void* p) {
  const Args& a = *static_cast<const Args*>(p);
  dim3 block(256), grid(static_cast<unsigned>((a.n - 2 + 255) / 256),
                        static_cast<unsigned>(a.hi - a.lo));
  jacobi_rows<<<grid, block, 0, static_cast<cudaStream_t>(info->queue)>>>(a);
}

bool to_pieces(const bbmm_view& v, Pieces* out) {
  if (v.npieces > kMaxPieces) return false;
  out->n = v.npieces;
  for (int k = 0; k < v.npieces; ++k) out->p[k] = v.pieces[k];
  return true;
}

#define CHECK(call)                                                                   \
  do {                                                                                \
    if ((call) != BBMM_OK) {                                                          \
      std::fprintf(stderr, "jacobi2d_cuda: %s: %s\n", #call, bbmm_last_error_message()); \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

int phase(bbmm_runtime* rt, bbmm_array* src, bbmm_array* dst, int64_t n, int devices,
          int tiles_per_device) {
  const int tiles = devices * tiles_per_device;
  for (int k = 0; k < tiles; ++k) {
    const int64_t lo = 1 + (n - 2) * k / tiles, hi = 1 + (n - 2) * (k + 1) / tiles;
    if (lo >= hi) continue;
    bbmm_tile* t = nullptr;
    CHECK(bbmm_tile_begin(rt, k / tiles_per_device, &t));
    const int64_t rlo[2] = {lo - 1, 0}, rhi[2] = {hi + 1, n};
    const int64_t wlo[2] = {lo, 1}, whi[2] = {hi, n - 1};
    CHECK(bbmm_tile_require(t, src, rlo, rhi, BBMM_READ));
    CHECK(bbmm_tile_require(t, dst, wlo, whi, BBMM_WRITE));
    CHECK(bbmm_tile_acquire(t));
    bbmm_view vin, vout;
    CHECK(bbmm_tile_view(t, src, &vin));
    CHECK(bbmm_tile_view(t, dst, &vout));
    Args args;
    if (!to_pieces(vin, &args.in) || !to_pieces(vout, &args.out)) {
      std::fprintf(stderr, "jacobi2d_cuda: more than %d pieces\n", kMaxPieces);
      return 1;
    }
    args.lo = lo;
    args.hi = hi;
    args.n = n;
    CHECK(bbmm_tile_launch(t, kernel, &args, sizeof args));
    if (lo > 1) {
      const int64_t flo[2] = {lo, 1}, fhi[2] = {lo + 1, n - 1};
      CHECK(bbmm_tile_flow_out(t, dst, flo, fhi));
    }
    if (hi < n - 1) {
      const int64_t flo[2] = {hi - 1, 1}, fhi[2] = {hi, n - 1};
      CHECK(bbmm_tile_flow_out(t, dst, flo, fhi));
    }
    CHECK(bbmm_tile_release(t));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = 2048;
  int steps = 20, devices = 0, tiles_per_device = 2;
  std::string capacity = "none";
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "jacobi2d_cuda: %s needs a value\n", argv[i]);
        std::exit(1);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--n")) n = std::atoll(value());
    else if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(value());
    else if (!std::strcmp(argv[i], "--devices")) devices = std::atoi(value());
    else if (!std::strcmp(argv[i], "--tiles-per-device")) tiles_per_device = std::atoi(value());
    else if (!std::strcmp(argv[i], "--capacity")) capacity = value();
    else if (!std::strcmp(argv[i], "--json")) json = true;
    else {
      std::fprintf(stderr, "usage: jacobi2d_cuda [--n N] [--steps T] [--devices D] "
                           "[--tiles-per-device K] [--capacity BYTES|auto|none] [--json]\n");
      return 1;
    }
  }
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess || visible == 0) {
    std::printf("SKIP: jacobi2d_cuda needs a GPU (none visible)\n");
    return 77;
  }
  if (devices <= 0) devices = visible < 4 ? visible : 4;
  if (n < 3 || steps < 0 || devices > visible || tiles_per_device < 1) {
    std::fprintf(stderr, "jacobi2d_cuda: need n >= 3, steps >= 0, 1 <= devices <= %d\n", visible);
    return 1;
  }
  std::vector<double> a(n * n), b(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      a[i * n + j] = static_cast<double>((i * 7 + j * 13) % 101) / 101.0;
      b[i * n + j] = static_cast<double>((i * 3 + j * 5) % 37) / 37.0;
    }
  std::vector<double> ra = a, rb = b;

  bbmm_options o;
  CHECK(bbmm_options_init(&o));
  o.backend = BBMM_BACKEND_CUDA;
  o.devices = devices;
  if (capacity == "auto") {
    o.device_memory = 2 * n * n * sizeof(double) / devices * 3 / 4;
  } else if (capacity != "none") {
    o.device_memory = std::strtoull(capacity.c_str(), nullptr, 10);
  }
  bbmm_runtime* rt = nullptr;
  CHECK(bbmm_runtime_create(&o, &rt));
  const int64_t ext[2] = {n, n};
  bbmm_array *A = nullptr, *B = nullptr;
  CHECK(bbmm_array_register(rt, "A", a.data(), sizeof(double), 2, ext, nullptr, 0, &A));
  CHECK(bbmm_array_register(rt, "B", b.data(), sizeof(double), 2, ext, nullptr, 0, &B));
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < steps; ++t) {
    if (phase(rt, A, B, n, devices, tiles_per_device) || phase(rt, B, A, n, devices, tiles_per_device)) {
      return 1;
    }
  }
  CHECK(bbmm_sync_to_host(rt, A));
  CHECK(bbmm_sync_to_host(rt, B));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  for (int t = 0; t < steps; ++t) {
    for (int64_t i = 1; i < n - 1; ++i)
      for (int64_t j = 1; j < n - 1; ++j)
        rb[i * n + j] = 0.2 * (ra[i * n + j] + ra[i * n + j - 1] + ra[i * n + j + 1] +
                               ra[(i + 1) * n + j] + ra[(i - 1) * n + j]);
    for (int64_t i = 1; i < n - 1; ++i)
      for (int64_t j = 1; j < n - 1; ++j)
        ra[i * n + j] = 0.2 * (rb[i * n + j] + rb[i * n + j - 1] + rb[i * n + j + 1] +
                               rb[(i + 1) * n + j] + rb[(i - 1) * n + j]);
  }
  double max_err = 0;
  for (int64_t k = 0; k < n * n; ++k) {
    max_err = std::fmax(max_err, std::fabs(a[k] - ra[k]) / std::fmax(1e-300, std::fabs(ra[k])));
    max_err = std::fmax(max_err, std::fabs(b[k] - rb[k]) / std::fmax(1e-300, std::fabs(rb[k])));
  }
  std::printf("jacobi2d_cuda: n=%ld steps=%d gpus=%d tiles/gpu=%d capacity=%s time=%.3f s\n",
              static_cast<long>(n), steps, devices, tiles_per_device, capacity.c_str(), seconds);
  if (json) {
    CHECK(bbmm_stats_print_json(rt, stdout));
  } else {
    CHECK(bbmm_stats_print(rt, stdout));
  }
  const bool ok = max_err <= 1e-10;
  std::printf("verification against the CPU loop: max relative error %.3g -> %s\n", max_err,
              ok ? "PASSED" : "FAILED");
  CHECK(bbmm_runtime_destroy(rt));
  return ok ? 0 : 2;
}
