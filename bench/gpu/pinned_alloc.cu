// What allocating pinned host memory costs, and whether it parallelises: the CUDA
// backend's staging lanes are 2 x 16 MiB of cudaHostAlloc each, 4 per logical device
// (h2d and d2h, 2 copy streams), allocated one after another at runtime creation
// (0.056-0.099 s per logical device on an H200, docs/performance.md, twenty-ninth
// session). Plain CUDA, no libbbmm. For N blocks of B bytes it times:
//   sequential   N cudaHostAlloc calls one after another (then N cudaFreeHost)
//   threads      N threads, one cudaHostAlloc each, at once
//   one          one cudaHostAlloc of N x B
// each the best of --reps, after a warm-up of the context.
//
//   pinned_alloc [--blocks 8] [--mib 32] [--reps 3]
//
// Output: a markdown table (seconds, GB/s pinned) and "PINNED way=.. seconds=.." lines.
// Exit codes: 0 measured, 1 usage or CUDA error, 77 no GPU visible (SKIP).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

#define PA_CUDA(call)                                                                  \
  do {                                                                                 \
    const cudaError_t e_ = (call);                                                     \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "pinned_alloc: %s: %s (line %d)\n", #call,                  \
                   cudaGetErrorString(e_), __LINE__);                                  \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr unsigned kFlags = cudaHostAllocPortable | cudaHostAllocMapped;  // as the lanes

}  // namespace

int main(int argc, char** argv) {
  int blocks = 8, mib = 32, reps = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--blocks" && i + 1 < argc) blocks = std::atoi(argv[++i]);
    else if (a == "--mib" && i + 1 < argc) mib = std::atoi(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: pinned_alloc [--blocks N] [--mib B] [--reps R]\n");
      return 1;
    }
  }
  if (blocks < 1 || blocks > 64 || mib < 1 || mib > 4096 || reps < 1) {
    std::fprintf(stderr, "pinned_alloc: 1 <= --blocks <= 64, 1 <= --mib <= 4096, --reps >= 1\n");
    return 1;
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("pinned_alloc: SKIP: no CUDA device visible\n");
    return 77;
  }
  PA_CUDA(cudaSetDevice(0));
  PA_CUDA(cudaFree(nullptr));  // the context, outside the timings
  const size_t bytes = size_t(mib) << 20;
  double best[3] = {1e30, 1e30, 1e30}, frees[3] = {1e30, 1e30, 1e30};
  for (int r = 0; r < reps; ++r) {
    std::vector<void*> p(blocks, nullptr);
    double t0 = now();
    for (int b = 0; b < blocks; ++b) PA_CUDA(cudaHostAlloc(&p[b], bytes, kFlags));
    best[0] = std::min(best[0], now() - t0);
    t0 = now();
    for (int b = 0; b < blocks; ++b) PA_CUDA(cudaFreeHost(p[b]));
    frees[0] = std::min(frees[0], now() - t0);

    std::vector<std::thread> th;
    std::vector<cudaError_t> err(blocks, cudaSuccess);
    t0 = now();
    for (int b = 0; b < blocks; ++b)
      th.emplace_back([&, b] {
        (void)cudaSetDevice(0);
        err[b] = cudaHostAlloc(&p[b], bytes, kFlags);
      });
    for (auto& t : th) t.join();
    best[1] = std::min(best[1], now() - t0);
    for (cudaError_t e : err) PA_CUDA(e);
    th.clear();
    t0 = now();
    for (int b = 0; b < blocks; ++b) th.emplace_back([&, b] { err[b] = cudaFreeHost(p[b]); });
    for (auto& t : th) t.join();
    frees[1] = std::min(frees[1], now() - t0);
    for (cudaError_t e : err) PA_CUDA(e);

    void* one = nullptr;
    t0 = now();
    PA_CUDA(cudaHostAlloc(&one, bytes * blocks, kFlags));
    best[2] = std::min(best[2], now() - t0);
    t0 = now();
    PA_CUDA(cudaFreeHost(one));
    frees[2] = std::min(frees[2], now() - t0);
  }
  const char* names[3] = {"sequential", "threads", "one"};
  std::printf("### Pinned host allocations: %d blocks of %d MiB (cudaHostAlloc, portable + mapped), "
              "best of %d\n\n| way | alloc s | GB/s pinned | free s |\n|---|---:|---:|---:|\n",
              blocks, mib, reps);
  for (int w = 0; w < 3; ++w) {
    std::printf("| %s | %.4f | %.2f | %.4f |\n", names[w], best[w],
                blocks * static_cast<double>(bytes) / best[w] / 1e9, frees[w]);
    std::fprintf(stderr, "PINNED way=%s seconds=%.6f free_seconds=%.6f\n", names[w], best[w],
                 frees[w]);
  }
  return 0;
}
