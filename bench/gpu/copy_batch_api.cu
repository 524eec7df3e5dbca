// Is a batch of small box copies cheaper through CUDA's batch calls (cudaMemcpy3DBatchAsync,
// CUDA 12.8+) than one cudaMemcpy2DAsync per box? Issue 10's target is 1 MiB boxes at
// >= 0.95 of the contiguous PCIe ceiling; the runtime's batches of separate copies reach
// 0.90-0.94 (2 x H200, s19run2), one contiguous copy of the same bytes 0.97: the copy
// engine's cost per operation. Plain CUDA, no libbbmm: the answer decides whether the CUDA
// backend issues its box batches through the batch call.
//
// For each box shape (B boxes of 1 MiB, rows of W bytes out of host rows of 2W, the device
// side dense) and each direction (H2D from pinned memory, D2H to pinned memory) it times,
// with CUDA events, the best of --reps runs of:
//   separate  B cudaMemcpy2DAsync calls on one stream
//   batch     one cudaMemcpy3DBatchAsync of B operations (stream order)
//   one       one cudaMemcpyAsync of the B MiB, contiguous (what a batch could reach)
//   two streams  the separate copies, the odd boxes on a second stream (events between)
// and the ceiling, one cudaMemcpyAsync of 256 MiB. Every copy's bytes are checked.
//
//   copy_batch_api [--reps 10] [--boxes 16]
//
// Output: a markdown table, rates in GB/s and as a fraction of the ceiling; lines
// "COPYBATCH dir=h2d row=4096 separate=.. batch=.. one=.. ceiling=.." (bytes/s).
// Exit codes: 0 measured, 1 usage, CUDA or data error, 77 no GPU visible (SKIP).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

#define CB_CUDA(call)                                                                   \
  do {                                                                                  \
    const cudaError_t e_ = (call);                                                      \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "copy_batch_api: %s: %s (line %d)\n", #call,                 \
                   cudaGetErrorString(e_), __LINE__);                                   \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

constexpr size_t kBox = size_t{1} << 20;
constexpr size_t kCeiling = size_t{256} << 20;

enum class Way { kSeparate, kBatch, kOne, kTwoStreams };

// kTwoStreams: the odd boxes go on a second stream, forked from and joined to the first
// by events (do two copy engines hide each other's cost per copy?).
cudaStream_t g_side;
cudaEvent_t g_fork, g_join;

struct Buffers {
  unsigned char* host = nullptr;  // pinned: B boxes of rows of 2W (the box takes W of each)
  unsigned char* dev = nullptr;   // dense: B boxes one after the other
  size_t host_bytes = 0;
  size_t dev_bytes = 0;
};

// The B copies of one run, direction "h2d", rows of "w" bytes.
void issue(const Buffers& b, int boxes, size_t w, bool h2d, Way way, cudaStream_t s) {
  const size_t rows = kBox / w;
  if (way == Way::kOne) {
    // The same bytes as one contiguous copy (the host side's first B MiB).
    if (h2d)
      CB_CUDA(cudaMemcpyAsync(b.dev, b.host, boxes * kBox, cudaMemcpyHostToDevice, s));
    else
      CB_CUDA(cudaMemcpyAsync(b.host, b.dev, boxes * kBox, cudaMemcpyDeviceToHost, s));
    return;
  }
  if (way == Way::kSeparate || way == Way::kTwoStreams) {
    const bool two = way == Way::kTwoStreams;
    if (two) {
      CB_CUDA(cudaEventRecord(g_fork, s));
      CB_CUDA(cudaStreamWaitEvent(g_side, g_fork, 0));
    }
    for (int k = 0; k < boxes; ++k) {
      cudaStream_t on = two && k % 2 ? g_side : s;
      unsigned char* hp = b.host + k * 2 * kBox;
      unsigned char* dp = b.dev + k * kBox;
      if (h2d)
        CB_CUDA(cudaMemcpy2DAsync(dp, w, hp, 2 * w, w, rows, cudaMemcpyHostToDevice, on));
      else
        CB_CUDA(cudaMemcpy2DAsync(hp, 2 * w, dp, w, w, rows, cudaMemcpyDeviceToHost, on));
    }
    if (two) {
      CB_CUDA(cudaEventRecord(g_join, g_side));
      CB_CUDA(cudaStreamWaitEvent(s, g_join, 0));
    }
    return;
  }
  std::vector<cudaMemcpy3DBatchOp> ops(boxes);
  for (int k = 0; k < boxes; ++k) {
    cudaMemcpy3DBatchOp& op = ops[k];
    std::memset(&op, 0, sizeof op);
    cudaMemcpy3DOperand hostside{}, devside{};
    hostside.type = cudaMemcpyOperandTypePointer;
    hostside.op.ptr.ptr = b.host + k * 2 * kBox;
    hostside.op.ptr.rowLength = 2 * w;  // in elements: bytes for pointer operands
    hostside.op.ptr.layerHeight = rows;
    hostside.op.ptr.locHint.type = cudaMemLocationTypeHost;
    devside.type = cudaMemcpyOperandTypePointer;
    devside.op.ptr.ptr = b.dev + k * kBox;
    devside.op.ptr.rowLength = w;
    devside.op.ptr.layerHeight = rows;
    devside.op.ptr.locHint.type = cudaMemLocationTypeDevice;
    devside.op.ptr.locHint.id = 0;
    op.src = h2d ? hostside : devside;
    op.dst = h2d ? devside : hostside;
    op.extent = make_cudaExtent(w, rows, 1);
    op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    op.flags = cudaMemcpyFlagDefault;
  }
  CB_CUDA(cudaMemcpy3DBatchAsync(ops.size(), ops.data(), 0, s));
}

// Best bytes/s of "reps" runs (one warm-up).
double rate(const Buffers& b, int boxes, size_t w, bool h2d, Way way, int reps, cudaStream_t s,
            cudaEvent_t e0, cudaEvent_t e1) {
  double best = 0;
  for (int r = -1; r < reps; ++r) {
    CB_CUDA(cudaEventRecord(e0, s));
    issue(b, boxes, w, h2d, way, s);
    CB_CUDA(cudaEventRecord(e1, s));
    CB_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    CB_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 0) best = std::max(best, boxes * kBox / (ms * 1e-3));
  }
  return best;
}

unsigned char pattern(size_t i) { return static_cast<unsigned char>((i * 2654435761u) >> 13); }

// The device side after an H2D run holds, for box k, row r, byte c, the host's byte at
// k * 2 MiB + r * 2w + c; a D2H run of zeros back must clear exactly those bytes.
bool check(const Buffers& b, int boxes, size_t w, Way way, cudaStream_t s) {
  const size_t rows = kBox / w;
  for (size_t i = 0; i < b.host_bytes; ++i) b.host[i] = pattern(i);
  CB_CUDA(cudaMemset(b.dev, 0, b.dev_bytes));
  issue(b, boxes, w, true, way, s);
  CB_CUDA(cudaStreamSynchronize(s));
  std::vector<unsigned char> d(boxes * kBox);
  CB_CUDA(cudaMemcpy(d.data(), b.dev, d.size(), cudaMemcpyDeviceToHost));
  for (int k = 0; k < boxes; ++k)
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < w; c += 61) {
        const size_t hi = way == Way::kOne ? k * kBox + r * w + c : k * 2 * kBox + r * 2 * w + c;
        if (d[k * kBox + r * w + c] != pattern(hi)) return false;
      }
  if (way == Way::kOne) return true;
  CB_CUDA(cudaMemset(b.dev, 0, b.dev_bytes));
  issue(b, boxes, w, false, way, s);
  CB_CUDA(cudaStreamSynchronize(s));
  for (int k = 0; k < boxes; ++k)
    for (size_t r = 0; r < rows; ++r) {
      const size_t base = k * 2 * kBox + r * 2 * w;
      if (b.host[base] != 0 || b.host[base + w - 1] != 0) return false;
      if (b.host[base + w] != pattern(base + w)) return false;  // outside the box: untouched
    }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 10, boxes = 16;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--boxes" && i + 1 < argc) {
      boxes = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: copy_batch_api [--reps N] [--boxes B]\n");
      return 1;
    }
  }
  if (reps < 1 || boxes < 1 || boxes > 64) {
    std::fprintf(stderr, "copy_batch_api: --reps >= 1 and 1 <= --boxes <= 64\n");
    return 1;
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("copy_batch_api: SKIP: no CUDA device visible\n");
    return 77;
  }
  CB_CUDA(cudaSetDevice(0));
  Buffers b;
  b.host_bytes = std::max(boxes * 2 * kBox, kCeiling);
  b.dev_bytes = std::max(boxes * kBox, kCeiling);
  CB_CUDA(cudaMallocHost(&b.host, b.host_bytes));
  CB_CUDA(cudaMalloc(&b.dev, b.dev_bytes));
  cudaStream_t s;
  cudaEvent_t e0, e1;
  CB_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CB_CUDA(cudaEventCreate(&e0));
  CB_CUDA(cudaEventCreate(&e1));
  CB_CUDA(cudaStreamCreateWithFlags(&g_side, cudaStreamNonBlocking));
  CB_CUDA(cudaEventCreateWithFlags(&g_fork, cudaEventDisableTiming));
  CB_CUDA(cudaEventCreateWithFlags(&g_join, cudaEventDisableTiming));

  std::printf("### Box batches through CUDA's batch call (%d boxes of 1 MiB, best of %d)\n\n",
              boxes, reps);
  std::printf("| direction | row bytes | separate GB/s | batch GB/s | two streams GB/s | one copy GB/s "
              "| ceiling GB/s | separate / ceiling | batch / ceiling | two streams / ceiling "
              "| one / ceiling |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  bool ok = true;
  const size_t widths[] = {size_t{4} << 10, size_t{64} << 10, kBox / 4, kBox};
  for (size_t w : widths) {
    for (Way way : {Way::kSeparate, Way::kBatch, Way::kOne, Way::kTwoStreams})
      if (!check(b, boxes, w, way, s)) {
        std::printf("copy_batch_api: wrong bytes (row %zu, way %d)\n", w, static_cast<int>(way));
        ok = false;
      }
  }
  for (bool h2d : {true, false}) {
    // The ceiling: one copy of 256 MiB, the same as ceilings' h2d_bw / d2h_bw.
    double ceiling = 0;
    for (int r = -1; r < reps; ++r) {
      CB_CUDA(cudaEventRecord(e0, s));
      if (h2d)
        CB_CUDA(cudaMemcpyAsync(b.dev, b.host, kCeiling, cudaMemcpyHostToDevice, s));
      else
        CB_CUDA(cudaMemcpyAsync(b.host, b.dev, kCeiling, cudaMemcpyDeviceToHost, s));
      CB_CUDA(cudaEventRecord(e1, s));
      CB_CUDA(cudaEventSynchronize(e1));
      float ms = 0;
      CB_CUDA(cudaEventElapsedTime(&ms, e0, e1));
      if (r >= 0) ceiling = std::max(ceiling, kCeiling / (ms * 1e-3));
    }
    for (size_t w : widths) {
      const double sep = rate(b, boxes, w, h2d, Way::kSeparate, reps, s, e0, e1);
      const double bat = rate(b, boxes, w, h2d, Way::kBatch, reps, s, e0, e1);
      const double one = rate(b, boxes, w, h2d, Way::kOne, reps, s, e0, e1);
      const double two = rate(b, boxes, w, h2d, Way::kTwoStreams, reps, s, e0, e1);
      std::printf("| %s | %zu | %.1f | %.1f | %.1f | %.1f | %.1f | %.3f | %.3f | %.3f | %.3f |\n",
                  h2d ? "H2D" : "D2H", w, sep / 1e9, bat / 1e9, two / 1e9, one / 1e9,
                  ceiling / 1e9, sep / ceiling, bat / ceiling, two / ceiling, one / ceiling);
      std::fprintf(stderr,
                   "COPYBATCH dir=%s row=%zu separate=%.4g batch=%.4g two_streams=%.4g one=%.4g "
                   "ceiling=%.4g\n",
                   h2d ? "h2d" : "d2h", w, sep, bat, two, one, ceiling);
    }
  }
  std::printf("\ncopy_batch_api: data %s\n", ok ? "checked: OK" : "WRONG");
  CB_CUDA(cudaFree(b.dev));
  CB_CUDA(cudaFreeHost(b.host));
  return ok ? 0 : 1;
}
