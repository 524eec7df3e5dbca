// Measures, per GPU and in about a second, the ceilings the stencil samples are
// compared with (bench/gpu/run_all.sh turns them into a roofline):
//   dev_bw  device-memory bandwidth: a simple copy kernel over a large buffer
//           (16-byte loads and stores), bytes read + bytes written over time;
//   h2d_bw  pinned host -> device, one cudaMemcpyAsync of --bytes;
//   d2h_bw  device -> pinned host, the same;
//   duplex  H2D and D2H at the same time (CEILING_DUPLEX: each direction's rate and
//           both directions' bytes over the time of the later).
// Each is the best of --reps timed runs after one warm-up, timed by CUDA events. With
// several GPUs it also measures all of them at once (aggregate bytes over the slowest
// GPU's time): PCIe transfers of different GPUs may share a host link.
//
//   ceilings [--bytes 1GiB] [--reps 5] [--devices D]
//
// Output, bytes/s (plus human-readable lines starting with '#'):
//   CEILING device=0 dev_bw=4.1e+12 h2d_bw=5.5e+10 d2h_bw=5.5e+10
//   CEILING_DUPLEX device=0 h2d_bw=.. d2h_bw=.. total_bw=..
//   CEILING_CONCURRENT gpus=2 dev_bw=.. h2d_bw=.. d2h_bw=..
// Exit codes: 0 measured, 1 usage or CUDA error, 77 no GPU visible (SKIP).
#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.cuh"

namespace {

#define CEIL_CUDA(call)                                                                   \
  do {                                                                                    \
    const cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "ceilings: %s: %s (line %d)\n", #call, cudaGetErrorString(e_), \
                   __LINE__);                                                             \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

enum class Kind { kDevice, kH2D, kD2H };

// Buffers of one GPU: two device buffers and one pinned host buffer of `bytes` each.
struct Gpu {
  int id = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  void *src = nullptr, *dst = nullptr, *host = nullptr;
  int blocks = 0;
};

void setup(Gpu* g, int id, size_t bytes) {
  g->id = id;
  CEIL_CUDA(cudaSetDevice(id));
  CEIL_CUDA(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
  CEIL_CUDA(cudaEventCreate(&g->start));
  CEIL_CUDA(cudaEventCreate(&g->stop));
  CEIL_CUDA(cudaMalloc(&g->src, bytes));
  CEIL_CUDA(cudaMalloc(&g->dst, bytes));
  CEIL_CUDA(cudaMemsetAsync(g->src, 1, bytes, g->stream));
  CEIL_CUDA(cudaHostAlloc(&g->host, bytes, cudaHostAllocPortable));
  std::memset(g->host, 1, bytes);  // touch every page before timing
  int sms = 0;
  CEIL_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, id));
  g->blocks = sms * 8;
}

void teardown(Gpu* g) {
  CEIL_CUDA(cudaSetDevice(g->id));
  CEIL_CUDA(cudaFree(g->src));
  CEIL_CUDA(cudaFree(g->dst));
  CEIL_CUDA(cudaFreeHost(g->host));
  CEIL_CUDA(cudaEventDestroy(g->start));
  CEIL_CUDA(cudaEventDestroy(g->stop));
  CEIL_CUDA(cudaStreamDestroy(g->stream));
}

void enqueue(const Gpu& g, Kind kind, size_t bytes) {
  CEIL_CUDA(cudaSetDevice(g.id));
  CEIL_CUDA(cudaEventRecord(g.start, g.stream));
  switch (kind) {
    case Kind::kDevice:
      bbmm_bench::copy_kernel<<<g.blocks, 256, 0, g.stream>>>(static_cast<const double2*>(g.src),
                                                  static_cast<double2*>(g.dst),
                                                  bytes / sizeof(double2));
      CEIL_CUDA(cudaGetLastError());
      break;
    case Kind::kH2D:
      CEIL_CUDA(cudaMemcpyAsync(g.dst, g.host, bytes, cudaMemcpyHostToDevice, g.stream));
      break;
    case Kind::kD2H:
      CEIL_CUDA(cudaMemcpyAsync(g.host, g.src, bytes, cudaMemcpyDeviceToHost, g.stream));
      break;
  }
  CEIL_CUDA(cudaEventRecord(g.stop, g.stream));
}

float elapsed_ms(const Gpu& g) {
  CEIL_CUDA(cudaSetDevice(g.id));
  CEIL_CUDA(cudaEventSynchronize(g.stop));
  float ms = 0;
  CEIL_CUDA(cudaEventElapsedTime(&ms, g.start, g.stop));
  return ms;
}

// Best bandwidth (bytes/s) of `reps` runs of `kind` on every GPU of `gpus` at once:
// bytes moved by all of them over the slowest one's time. The device copy counts
// bytes read plus bytes written.
double measure(const std::vector<Gpu*>& gpus, Kind kind, size_t bytes, int reps) {
  const double moved = static_cast<double>(bytes) * (kind == Kind::kDevice ? 2 : 1) * gpus.size();
  double best = 0;
  for (int r = 0; r <= reps; ++r) {  // r == 0: warm-up
    for (const Gpu* g : gpus) enqueue(*g, kind, bytes);
    float worst_ms = 0;
    for (const Gpu* g : gpus) worst_ms = std::max(worst_ms, elapsed_ms(*g));
    if (r > 0 && worst_ms > 0) best = std::max(best, moved / (worst_ms * 1e-3));
  }
  return best;
}

// H2D and D2H of `bytes` each at the same time on GPU `g` (two streams, two pinned
// host buffers): the best of `reps` runs of each direction's rate and of both
// directions' bytes over the later one's time (PCIe is full duplex; the host's
// memory and the GPU's copy engines decide how much of it two directions get).
struct Duplex {
  double h2d = 0, d2h = 0, total = 0;
};

Duplex measure_duplex(const Gpu& g, size_t bytes, int reps) {
  CEIL_CUDA(cudaSetDevice(g.id));
  cudaStream_t other = nullptr;
  cudaEvent_t stop2 = nullptr;
  void* host2 = nullptr;
  CEIL_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  CEIL_CUDA(cudaEventCreate(&stop2));
  CEIL_CUDA(cudaHostAlloc(&host2, bytes, cudaHostAllocPortable));
  std::memset(host2, 2, bytes);
  Duplex best;
  for (int r = 0; r <= reps; ++r) {  // r == 0: warm-up
    CEIL_CUDA(cudaEventRecord(g.start, g.stream));
    CEIL_CUDA(cudaStreamWaitEvent(other, g.start, 0));
    CEIL_CUDA(cudaMemcpyAsync(g.dst, g.host, bytes, cudaMemcpyHostToDevice, g.stream));
    CEIL_CUDA(cudaMemcpyAsync(host2, g.src, bytes, cudaMemcpyDeviceToHost, other));
    CEIL_CUDA(cudaEventRecord(g.stop, g.stream));
    CEIL_CUDA(cudaEventRecord(stop2, other));
    CEIL_CUDA(cudaEventSynchronize(g.stop));
    CEIL_CUDA(cudaEventSynchronize(stop2));
    float up = 0, down = 0;
    CEIL_CUDA(cudaEventElapsedTime(&up, g.start, g.stop));
    CEIL_CUDA(cudaEventElapsedTime(&down, g.start, stop2));
    if (r == 0 || up <= 0 || down <= 0) continue;
    const double b = static_cast<double>(bytes);
    best.h2d = std::max(best.h2d, b / (up * 1e-3));
    best.d2h = std::max(best.d2h, b / (down * 1e-3));
    best.total = std::max(best.total, 2 * b / (std::max(up, down) * 1e-3));
  }
  CEIL_CUDA(cudaFreeHost(host2));
  CEIL_CUDA(cudaEventDestroy(stop2));
  CEIL_CUDA(cudaStreamDestroy(other));
  return best;
}

void usage(FILE* f) {
  std::fprintf(f,
               "usage: ceilings [--bytes SIZE] [--reps R] [--devices D]\n"
               "  --bytes SIZE  bytes per copy, e.g. 1GiB (default), 256MiB\n"
               "  --reps R      timed runs per measurement, best kept (default 5)\n"
               "  --devices D   GPUs to measure (default all visible)\n");
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = size_t{1} << 30;
  int reps = 5, devices = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    }
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    bool ok = value != nullptr;
    if (ok && arg == "--bytes") {
      ok = bbmm_bench::parse_bytes(value, &bytes);
    } else if (ok && (arg == "--reps" || arg == "--devices")) {
      char* end = nullptr;
      const long v = std::strtol(value, &end, 10);
      ok = *end == '\0' && v >= 1 && v <= 1000;
      (arg == "--reps" ? reps : devices) = static_cast<int>(v);
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "ceilings: bad argument '%s%s%s'\n", arg.c_str(), value ? " " : "",
                   value ? value : "");
      usage(stderr);
      return 1;
    }
    ++i;
  }
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess || visible == 0) {
    std::printf("SKIP: ceilings needs a GPU (none visible)\n");
    return 77;
  }
  if (devices == 0) devices = visible;
  if (devices > visible) {
    std::fprintf(stderr, "ceilings: --devices %d, but only %d GPUs are visible\n", devices,
                 visible);
    return 1;
  }
  std::printf("# ceilings: %d GPU(s), %zu bytes per copy, best of %d\n", devices, bytes, reps);
  std::vector<Gpu> gpus(devices);
  for (int d = 0; d < devices; ++d) setup(&gpus[d], d, bytes);
  std::vector<Gpu*> all;
  for (int d = 0; d < devices; ++d) {
    cudaDeviceProp prop;
    CEIL_CUDA(cudaGetDeviceProperties(&prop, d));
    const std::vector<Gpu*> one = {&gpus[d]};
    const double dev = measure(one, Kind::kDevice, bytes, reps);
    const double h2d = measure(one, Kind::kH2D, bytes, reps);
    const double d2h = measure(one, Kind::kD2H, bytes, reps);
    std::printf("# GPU %d (%s): device copy %.1f GB/s (read+write), H2D %.1f GB/s, D2H %.1f GB/s\n",
                d, prop.name, dev / 1e9, h2d / 1e9, d2h / 1e9);
    std::printf("CEILING device=%d dev_bw=%.6g h2d_bw=%.6g d2h_bw=%.6g\n", d, dev, h2d, d2h);
    const Duplex both = measure_duplex(gpus[d], bytes, reps);
    std::printf("# GPU %d: H2D and D2H at once: %.1f + %.1f GB/s, %.1f GB/s both ways\n", d,
                both.h2d / 1e9, both.d2h / 1e9, both.total / 1e9);
    std::printf("CEILING_DUPLEX device=%d h2d_bw=%.6g d2h_bw=%.6g total_bw=%.6g\n", d, both.h2d,
                both.d2h, both.total);
    all.push_back(&gpus[d]);
  }
  if (devices > 1) {
    const double dev = measure(all, Kind::kDevice, bytes, reps);
    const double h2d = measure(all, Kind::kH2D, bytes, reps);
    const double d2h = measure(all, Kind::kD2H, bytes, reps);
    std::printf(
        "# all %d GPUs at once (aggregate): device copy %.1f GB/s, H2D %.1f GB/s, "
        "D2H %.1f GB/s\n",
        devices, dev / 1e9, h2d / 1e9, d2h / 1e9);
    std::printf("CEILING_CONCURRENT gpus=%d dev_bw=%.6g h2d_bw=%.6g d2h_bw=%.6g\n", devices, dev,
                h2d, d2h);
  }
  for (Gpu& g : gpus) teardown(&g);
  return 0;
}
