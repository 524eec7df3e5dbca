// baseline_stencils: what a CUDA programmer writes without BBMM to run the samples heat2d and
// heat3d on one or several GPUs, the baselines of the multi-GPU study (issue 12):
//
//   baseline_stencils heat2d|heat3d N STEPS --impl handwritten|managed|wholecopy --gpus G
//                     [--verify|--no-verify] [--oracle-file F] [--march M] [--grid-cap B]
//   baseline_stencils heat2d|heat3d N STEPS --plan [--gpus G]
//   baseline_stencils heat2d|heat3d N STEPS --host-check
// options:
//   --impl handwritten  G GPUs (any G >= 1): the interior rows 1..N-2 (planes for heat3d) in G
//                       contiguous blocks, each GPU holding its block of A and B plus one halo
//                       row on either side; after each phase the new boundary rows go to the
//                       neighbours by cudaMemcpyPeerAsync, ordered by events (no host
//                       synchronisation in the time loop); at the end each GPU's rows come back
//   --impl managed      G GPUs: A and B in cudaMallocManaged memory, each GPU's rows advised
//                       and prefetched to it, the same kernels on every GPU over its rows, the
//                       halos read through unified memory; all GPUs synchronised between phases
//   --impl wholecopy    1 GPU: cudaMalloc both arrays, copy them in, run, copy them out
//   --gpus G            GPUs 0..G-1 (default 1)
//   --verify/--no-verify  compare with the sample's own C loop nest (default: when that run is
//                       short, heat2d N*N*STEPS <= 2.5e9, heat3d N^3*STEPS <= 1.5e9; otherwise
//                       with wholecopy run in this process when it fits GPU 0)
//   --oracle-file F     compare with the sequential result a sample stored (A then B, the
//                       BBMM_SAMPLE_CACHE file of samples/common/sample.h for the same N and
//                       STEPS: the same input): bench/gpu/study.sh's oracle
//   --march M           rows (planes) each thread marches through (default 32, as bbmmc)
//   --grid-cap B        at most B blocks per grid dimension (tests the grid-stride loops)
//   --plan              no GPU: print the row blocks and the bytes each implementation moves,
//                       and check that the blocks cover rows 1..N-2 exactly once
//   --host-check        no GPU: run the kernels' thread functions in host loops, with the
//                       handwritten decomposition (G = 2, halos exchanged by memcpy), the
//                       managed one and the whole arrays, and compare them with the C loop nest
//                       bit for bit (a test of this program: same expressions, same order)
//
// The kernels are written as bbmmc generates them (so that the study compares data movement,
// not kernels): __launch_bounds__(1024), 32x8 threads, threadIdx.x along the contiguous last
// dimension; 2-D: threadIdx.y over rows, 3-D: threadIdx.y over j and the grid's z over planes;
// each thread marches through M consecutive rows (planes) in its innermost loop (not
// unrolled); grid-stride loops; int64_t index arithmetic. Each element is computed by the
// expression of the C source in the same order, so with -fmad=false the results would equal
// the C program's bit for bit; the default build (FMA contraction) is the one to time.
//
// The input is the samples' main.c's: A[k] = sample_value(k, 1), B[k] = sample_value(k, 2)
// (samples/common/sample.h) in host memory from malloc. Before the timed region: cudaFree(0)
// and peer access on every GPU used, pinning of the host arrays (cudaHostRegister, portable;
// handwritten and wholecopy, pin_seconds) and the device allocations (alloc_seconds). The
// timed region (seconds) runs from the first host-to-device transfer until the results are
// back in host memory.
//
// Output, one line per run (plus lines starting with '#'):
//   BASELINE sample=heat2d impl=handwritten gpus=2 n=.. steps=.. seconds=.. pin_seconds=..
//            alloc_seconds=.. bytes_h2d=.. bytes_d2h=.. bytes_peer=.. verified=0|1
//            oracle=cpu|wholecopy|file|none max_rel_err=..|-
//   PLAN, PLAN_BLOCK, PLAN_IMPL, PLAN_CHECK lines                          (--plan)
//   HOSTCHECK sample=.. n=.. steps=.. variant=.. gpus=.. march=.. grid_cap=.. identical=0|1
//             max_rel_err=.. bytes_ok=0|1                                   (--host-check)
// The bytes are counted from the copies the program issues (managed: 0, the driver moves
// them). Exit codes: 0 ok, 1 usage or CUDA error, 2 verification (or host check) failed.
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../bench_common.cuh"  // parse_int
#include "sample.h"              // samples/common/: sample_value, sample_now

// The samples' loop nests, compiled from samples/<name>/<name>.c as they are, their functions
// renamed reference_<name> (CMakeLists.txt here): the CPU reference. A C parameter
// `double A[n][n]` is a `double (*)[n]`, passed as a plain pointer.
extern "C" {
void reference_heat2d(int tsteps, int n, double* A, double* B);
void reference_heat3d(int tsteps, int n, double* A, double* B);
}

namespace {

#define BS_CUDA(call)                                                                              \
  do {                                                                                             \
    const cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "baseline_stencils: %s: %s (line %d)\n", #call, cudaGetErrorString(e_), \
                   __LINE__);                                                                      \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "baseline_stencils: %s\n", message.c_str());
  std::exit(1);
}

// ------------------------------------------------------------------------------ problem

enum class Sample { kHeat2d, kHeat3d };
enum class Impl { kHandwritten, kManaged, kWholecopy };

const char* impl_name(Impl i) {
  return i == Impl::kHandwritten ? "handwritten" : i == Impl::kManaged ? "managed" : "wholecopy";
}

// A sample at a size. Both arrays are n^rank doubles, row-major; a "row" is one value of the
// outermost index i: n doubles for heat2d, an n x n plane for heat3d.
struct Problem {
  Sample sample;
  int64_t n;
  int steps;

  const char* name() const { return sample == Sample::kHeat2d ? "heat2d" : "heat3d"; }
  int64_t row_elems() const { return sample == Sample::kHeat2d ? n : n * n; }
  size_t row_bytes() const { return static_cast<size_t>(row_elems()) * sizeof(double); }
  int64_t elems() const { return n * row_elems(); }
  size_t array_bytes() const { return static_cast<size_t>(elems()) * sizeof(double); }
  // Both phases of a step write rows 1..n-2; each phase reads its source's rows 0..n-1.
  int phases() const { return 2 * steps; }
};

// Host memory for one array from the C allocator, page-aligned and a whole number of pages,
// so that cudaHostRegister of one array never meets a page of another already registered
// (cudaErrorHostMemoryAlreadyRegistered with small arrays side by side on the heap).
double* host_alloc(size_t bytes) {
  const long page = sysconf(_SC_PAGESIZE);
  const size_t align = page > 0 ? static_cast<size_t>(page) : 4096;
  const size_t size = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, size > 0 ? size : align);
  if (p == nullptr) fail("out of host memory (" + std::to_string(bytes) + " bytes)");
  return static_cast<double*>(p);
}

// The inputs of the samples' main.c.
void fill_inputs(const Problem& p, double* a, double* b) {
  for (int64_t k = 0; k < p.elems(); ++k) {
    a[k] = sample_value(static_cast<long>(k), 1);
    b[k] = sample_value(static_cast<long>(k), 2);
  }
}

// The sample's C loop nest on host arrays `a`, `b`.
void run_reference(const Problem& p, double* a, double* b) {
  if (p.sample == Sample::kHeat2d) {
    reference_heat2d(p.steps, static_cast<int>(p.n), a, b);
  } else {
    reference_heat3d(p.steps, static_cast<int>(p.n), a, b);
  }
}

// ------------------------------------------------------------------ row decomposition

// The interior rows [lo, hi) one GPU computes. Its buffers (handwritten) hold rows
// [lo - 1, hi + 1): the block and one halo row on either side.
struct RowBlock {
  int64_t lo, hi;
  int64_t buffer_first() const { return lo - 1; }
  int64_t buffer_rows() const { return hi - lo + 2; }
};

// Rows 1..n-2 in `g` contiguous blocks of sizes differing by at most one (n - 2 >= g).
std::vector<RowBlock> split_rows(int64_t n, int g) {
  const int64_t m = n - 2;
  std::vector<RowBlock> blocks;
  for (int k = 0; k < g; ++k) blocks.push_back({1 + m * k / g, 1 + m * (k + 1) / g});
  return blocks;
}

// One row copied after a phase from GPU `src`'s buffer to GPU `dst`'s (rows local to the
// buffers): a block's first or last row to the neighbour's halo row.
struct HaloCopy {
  int src, dst;
  int64_t src_row, dst_row;
};

// The halo copies after each phase (all but the last): between blocks k and k+1, block k's
// last row (global hi_k - 1) to block k+1's first halo row, and block k+1's first row
// (global lo_{k+1} = hi_k) to block k's last halo row.
std::vector<HaloCopy> halo_copies(const std::vector<RowBlock>& blocks) {
  std::vector<HaloCopy> copies;
  for (size_t k = 0; k + 1 < blocks.size(); ++k) {
    const RowBlock &lower = blocks[k], &upper = blocks[k + 1];
    const int s = static_cast<int>(k);
    copies.push_back({s, s + 1, (lower.hi - 1) - lower.buffer_first(), 0});
    copies.push_back({s + 1, s, upper.lo - upper.buffer_first(), lower.buffer_rows() - 1});
  }
  return copies;
}

// Whether `blocks` cover rows 1..n-2 exactly once, each non-empty, and every halo copy takes
// a row its source computes to the same global row in its destination's halo; the reason in
// `*why` otherwise.
bool check_blocks(int64_t n, const std::vector<RowBlock>& blocks, std::string* why) {
  std::vector<int> cover(static_cast<size_t>(n), 0);
  for (const RowBlock& b : blocks) {
    if (b.lo >= b.hi || b.lo < 1 || b.hi > n - 1) {
      *why = "block [" + std::to_string(b.lo) + "," + std::to_string(b.hi) + ") is empty or " +
             "outside rows 1..n-2";
      return false;
    }
    for (int64_t i = b.lo; i < b.hi; ++i) ++cover[static_cast<size_t>(i)];
  }
  for (int64_t i = 0; i < n; ++i) {
    const int want = (i == 0 || i == n - 1) ? 0 : 1;
    if (cover[static_cast<size_t>(i)] != want) {
      *why = "row " + std::to_string(i) + " is covered " +
             std::to_string(cover[static_cast<size_t>(i)]) + " times, not " + std::to_string(want);
      return false;
    }
  }
  for (const HaloCopy& c : halo_copies(blocks)) {
    const RowBlock &s = blocks[static_cast<size_t>(c.src)], &d = blocks[static_cast<size_t>(c.dst)];
    const int64_t from = s.buffer_first() + c.src_row, to = d.buffer_first() + c.dst_row;
    const bool dst_halo = c.dst_row == 0 || c.dst_row == d.buffer_rows() - 1;
    if (from != to || from < s.lo || from >= s.hi || !dst_halo || std::abs(c.src - c.dst) != 1) {
      *why = "halo copy " + std::to_string(c.src) + "->" + std::to_string(c.dst) + " is wrong";
      return false;
    }
  }
  return true;
}

struct Bytes {
  double h2d = 0, d2h = 0, peer = 0;
};

// What `impl` on `gpus` GPUs must copy, from the decomposition (the runs count what they
// copy and are checked against this).
Bytes planned_bytes(const Problem& p, Impl impl, int gpus) {
  Bytes b;
  const double row = static_cast<double>(p.row_bytes());
  if (impl == Impl::kWholecopy) {
    b.h2d = b.d2h = 2.0 * static_cast<double>(p.array_bytes());
  } else if (impl == Impl::kHandwritten) {
    for (const RowBlock& r : split_rows(p.n, gpus)) {
      b.h2d += 2.0 * static_cast<double>(r.buffer_rows()) * row;  // A and B with halos
      b.d2h += 2.0 * static_cast<double>(r.hi - r.lo) * row;      // A and B, own rows
    }
    // 2 (gpus - 1) rows after every phase but the last.
    b.peer = static_cast<double>(p.phases() - 1) * 2.0 * (gpus - 1) * row;
  }
  return b;
}

bool same_bytes(const Bytes& x, const Bytes& y) {
  return x.h2d == y.h2d && x.d2h == y.d2h && x.peer == y.peer;
}

// ------------------------------------------------------------------------------ kernels

// A thread's coordinates (blockIdx, threadIdx, gridDim, blockDim), as in CUDA.
struct Idx3 {
  int64_t x, y, z;
};

// The rows one launch computes: [lo, hi) in global row numbers; the buffers' first row is
// global row `row0` (0 for the whole arrays, lo - 1 for a handwritten block).
struct PhaseRange {
  int64_t n, row0, lo, hi, march;
};

// heat2d, both phases (the second with A and B swapped):
//   B[i][j] = 0.2 * (A[i][j] + A[i][j - 1] + A[i][j + 1] + A[i + 1][j] + A[i - 1][j]);
// `c` is the element's offset in the buffers, `n` the row length.
__host__ __device__ inline void heat2d_point(const double* __restrict__ a, double* __restrict__ b,
                                             int64_t c, int64_t n) {
  b[c] = 0.2 * (a[c] + a[c - 1] + a[c + 1] + a[c + n] + a[c - n]);
}

// heat3d, both phases (the second with A and B swapped):
//   B[i][j][k] = 0.125 * (A[i + 1][j][k] - 2.0 * A[i][j][k] + A[i - 1][j][k])
//              + 0.125 * (A[i][j + 1][k] - 2.0 * A[i][j][k] + A[i][j - 1][k])
//              + 0.125 * (A[i][j][k + 1] - 2.0 * A[i][j][k] + A[i][j][k - 1])
//              + A[i][j][k];
__host__ __device__ inline void heat3d_point(const double* __restrict__ a, double* __restrict__ b,
                                             int64_t c, int64_t n, int64_t nn) {
  // clang-format off
  b[c] = 0.125 * (a[c + nn] - 2.0 * a[c] + a[c - nn])
       + 0.125 * (a[c + n] - 2.0 * a[c] + a[c - n])
       + 0.125 * (a[c + 1] - 2.0 * a[c] + a[c - 1])
       + a[c];
  // clang-format on
}

// One thread of a heat2d phase, bbmmc's loop structure: the thread's march chunk of rows (y),
// then the grid-stride loop over the columns 1..n-2 (x), then the march over the chunk's rows.
__host__ __device__ inline void heat2d_thread(const double* __restrict__ src,
                                              double* __restrict__ dst, const PhaseRange& r,
                                              Idx3 blk, Idx3 thr, Idx3 grid, Idx3 dim) {
  const int64_t n = r.n;
  for (int64_t m = r.lo + (blk.y * dim.y + thr.y) * r.march; m < r.hi;
       m += grid.y * dim.y * r.march) {
    const int64_t e = m + r.march < r.hi ? m + r.march : r.hi;
    for (int64_t j = 1 + blk.x * dim.x + thr.x; j < n - 1; j += grid.x * dim.x) {
#ifdef __CUDA_ARCH__  // (the host compiler does not know it)
#pragma unroll 1
#endif
      for (int64_t i = m; i < e; ++i) heat2d_point(src, dst, (i - r.row0) * n + j, n);
    }
  }
}

// One thread of a heat3d phase: march chunk of planes (z), grid-stride loops over j (y) and
// k (x), then the march over the chunk's planes.
__host__ __device__ inline void heat3d_thread(const double* __restrict__ src,
                                              double* __restrict__ dst, const PhaseRange& r,
                                              Idx3 blk, Idx3 thr, Idx3 grid, Idx3 dim) {
  const int64_t n = r.n, nn = r.n * r.n;
  for (int64_t m = r.lo + (blk.z * dim.z + thr.z) * r.march; m < r.hi;
       m += grid.z * dim.z * r.march) {
    const int64_t e = m + r.march < r.hi ? m + r.march : r.hi;
    for (int64_t j = 1 + blk.y * dim.y + thr.y; j < n - 1; j += grid.y * dim.y) {
      for (int64_t k = 1 + blk.x * dim.x + thr.x; k < n - 1; k += grid.x * dim.x) {
#ifdef __CUDA_ARCH__  // (the host compiler does not know it)
#pragma unroll 1
#endif
        for (int64_t i = m; i < e; ++i)
          heat3d_point(src, dst, (i - r.row0) * nn + j * n + k, n, nn);
      }
    }
  }
}

__global__ void __launch_bounds__(1024)
    heat2d_kernel(const double* __restrict__ src, double* __restrict__ dst, const PhaseRange r) {
  heat2d_thread(src, dst, r, Idx3{blockIdx.x, blockIdx.y, blockIdx.z},
                Idx3{threadIdx.x, threadIdx.y, threadIdx.z}, Idx3{gridDim.x, gridDim.y, gridDim.z},
                Idx3{blockDim.x, blockDim.y, blockDim.z});
}

__global__ void __launch_bounds__(1024)
    heat3d_kernel(const double* __restrict__ src, double* __restrict__ dst, const PhaseRange r) {
  heat3d_thread(src, dst, r, Idx3{blockIdx.x, blockIdx.y, blockIdx.z},
                Idx3{threadIdx.x, threadIdx.y, threadIdx.z}, Idx3{gridDim.x, gridDim.y, gridDim.z},
                Idx3{blockDim.x, blockDim.y, blockDim.z});
}

constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridYZ = 65535;
constexpr int64_t kBlockX = 32, kBlockY = 8;

// Blocks covering `extent` values, `per_block` per block, at most `limit` (and `cap` if > 0).
int64_t blocks_for(int64_t extent, int64_t per_block, int64_t limit, int64_t cap) {
  int64_t b = (extent + per_block - 1) / per_block;
  b = std::min(b, limit);
  if (cap > 0) b = std::min(b, cap);
  return std::max<int64_t>(1, b);
}

struct LaunchShape {
  Idx3 grid, block;
};

// The grid of a phase over `rows` rows (bbmm_cu_shape_of's rule): 32x8 threads; 2-D: x over
// the n-2 columns, y over the rows, march rows per thread; 3-D: x over k, y over j, z over the
// planes, march planes per thread.
LaunchShape launch_shape(const Problem& p, int64_t rows, int64_t march, int64_t cap) {
  const int64_t inner = p.n - 2;
  if (p.sample == Sample::kHeat2d) {
    return {{blocks_for(inner, kBlockX, kMaxGridX, cap),
             blocks_for(rows, kBlockY * march, kMaxGridYZ, cap), 1},
            {kBlockX, kBlockY, 1}};
  }
  return {{blocks_for(inner, kBlockX, kMaxGridX, cap), blocks_for(inner, kBlockY, kMaxGridYZ, cap),
           blocks_for(rows, march, kMaxGridYZ, cap)},
          {kBlockX, kBlockY, 1}};
}

// Launches one phase of `p` over `r` on `stream` (the current device's).
void launch_phase(const Problem& p, const double* src, double* dst, const PhaseRange& r,
                  int64_t cap, cudaStream_t stream) {
  if (r.hi <= r.lo) return;
  const LaunchShape s = launch_shape(p, r.hi - r.lo, r.march, cap);
  const dim3 grid(static_cast<unsigned>(s.grid.x), static_cast<unsigned>(s.grid.y),
                  static_cast<unsigned>(s.grid.z));
  const dim3 block(static_cast<unsigned>(s.block.x), static_cast<unsigned>(s.block.y),
                   static_cast<unsigned>(s.block.z));
  if (p.sample == Sample::kHeat2d) {
    heat2d_kernel<<<grid, block, 0, stream>>>(src, dst, r);
  } else {
    heat3d_kernel<<<grid, block, 0, stream>>>(src, dst, r);
  }
  BS_CUDA(cudaGetLastError());
}

// The same phase in host loops over every block and thread of the launch (--host-check).
void host_phase(const Problem& p, const double* src, double* dst, const PhaseRange& r,
                int64_t cap) {
  if (r.hi <= r.lo) return;
  const LaunchShape s = launch_shape(p, r.hi - r.lo, r.march, cap);
  for (int64_t bz = 0; bz < s.grid.z; ++bz)
    for (int64_t by = 0; by < s.grid.y; ++by)
      for (int64_t bx = 0; bx < s.grid.x; ++bx)
        for (int64_t tz = 0; tz < s.block.z; ++tz)
          for (int64_t ty = 0; ty < s.block.y; ++ty)
            for (int64_t tx = 0; tx < s.block.x; ++tx) {
              const Idx3 blk{bx, by, bz}, thr{tx, ty, tz};
              if (p.sample == Sample::kHeat2d) {
                heat2d_thread(src, dst, r, blk, thr, s.grid, s.block);
              } else {
                heat3d_thread(src, dst, r, blk, thr, s.grid, s.block);
              }
            }
}

// ------------------------------------------------------------------------ comparison

// Largest relative error of `got` against `want` over `count` doubles (absolute where the
// expected value is tiny), as sample_compare_double; NaN if any element is NaN.
double max_rel_err(const double* want, const double* got, int64_t count) {
  double max_err = 0;
  for (int64_t k = 0; k < count; ++k) {
    const double d = std::fabs(got[k] - want[k]);
    const double scale = std::fabs(want[k]) > 1e-300 ? std::fabs(want[k]) : 1.0;
    const double e = d / scale;
    if (std::isnan(e)) return e;
    max_err = std::max(max_err, e);
  }
  return max_err;
}

constexpr double kTolerance = 1e-10;

// ------------------------------------------------------------------------- host check

enum class Variant { kWhole, kShared, kBlocks };

const char* variant_name(Variant v) {
  return v == Variant::kWhole ? "whole" : v == Variant::kShared ? "shared" : "blocks";
}

// Runs all phases of `p` on host arrays `a`, `b` as the GPU implementations do: kWhole as
// wholecopy (one launch over the whole arrays), kShared as managed (the whole arrays, one
// launch per block), kBlocks as handwritten (a buffer per block with its halo rows, halos
// exchanged by memcpy after every phase but the last, each block's rows copied back).
// Returns the bytes copied (kBlocks; the others copy nothing here).
Bytes host_run(const Problem& p, Variant v, int gpus, int64_t march, int64_t cap, double* a,
               double* b) {
  Bytes bytes;
  const std::vector<RowBlock> blocks = split_rows(p.n, gpus);
  if (v != Variant::kBlocks) {
    for (int ph = 0; ph < p.phases(); ++ph) {
      const double* src = ph % 2 == 0 ? a : b;
      double* dst = ph % 2 == 0 ? b : a;
      if (v == Variant::kWhole) {
        host_phase(p, src, dst, PhaseRange{p.n, 0, 1, p.n - 1, march}, cap);
      } else {
        for (const RowBlock& r : blocks) {
          host_phase(p, src, dst, PhaseRange{p.n, 0, r.lo, r.hi, march}, cap);
        }
      }
    }
    return bytes;
  }
  const int64_t re = p.row_elems();
  const size_t rb = p.row_bytes();
  std::vector<std::vector<double>> ba(blocks.size()), bb(blocks.size());
  for (size_t g = 0; g < blocks.size(); ++g) {
    const RowBlock& r = blocks[g];
    ba[g].resize(static_cast<size_t>(r.buffer_rows() * re));
    bb[g].resize(static_cast<size_t>(r.buffer_rows() * re));
    std::memcpy(ba[g].data(), a + r.buffer_first() * re, r.buffer_rows() * rb);
    std::memcpy(bb[g].data(), b + r.buffer_first() * re, r.buffer_rows() * rb);
    bytes.h2d += 2.0 * static_cast<double>(r.buffer_rows() * rb);
  }
  const std::vector<HaloCopy> halos = halo_copies(blocks);
  for (int ph = 0; ph < p.phases(); ++ph) {
    std::vector<std::vector<double>>& src = ph % 2 == 0 ? ba : bb;
    std::vector<std::vector<double>>& dst = ph % 2 == 0 ? bb : ba;
    for (size_t g = 0; g < blocks.size(); ++g) {
      const RowBlock& r = blocks[g];
      host_phase(p, src[g].data(), dst[g].data(),
                 PhaseRange{p.n, r.buffer_first(), r.lo, r.hi, march}, cap);
    }
    if (ph + 1 == p.phases()) break;
    for (const HaloCopy& c : halos) {
      std::memcpy(dst[static_cast<size_t>(c.dst)].data() + c.dst_row * re,
                  dst[static_cast<size_t>(c.src)].data() + c.src_row * re, rb);
      bytes.peer += static_cast<double>(rb);
    }
  }
  for (size_t g = 0; g < blocks.size(); ++g) {
    const RowBlock& r = blocks[g];
    std::memcpy(a + r.lo * re, ba[g].data() + re, (r.hi - r.lo) * rb);
    std::memcpy(b + r.lo * re, bb[g].data() + re, (r.hi - r.lo) * rb);
    bytes.d2h += 2.0 * static_cast<double>((r.hi - r.lo) * rb);
  }
  return bytes;
}

int host_check(const Problem& p) {
  const size_t bytes = p.array_bytes();
  std::vector<double> ra(static_cast<size_t>(p.elems())), rb(ra.size()), ha(ra.size()),
      hb(ra.size());
  fill_inputs(p, ra.data(), rb.data());
  run_reference(p, ra.data(), rb.data());
  struct Config {
    Variant variant;
    int gpus;
    int64_t march, cap;
  };
  const Config configs[] = {
      {Variant::kWhole, 1, 32, 0}, {Variant::kWhole, 1, 3, 2},   {Variant::kShared, 2, 32, 0},
      {Variant::kShared, 2, 3, 2}, {Variant::kBlocks, 2, 32, 0}, {Variant::kBlocks, 2, 3, 2},
      {Variant::kBlocks, 3, 5, 1},
  };
  int failures = 0;
  for (const Config& c : configs) {
    if (p.n - 2 < c.gpus) continue;
    fill_inputs(p, ha.data(), hb.data());
    const Bytes got = host_run(p, c.variant, c.gpus, c.march, c.cap, ha.data(), hb.data());
    const bool identical = std::memcmp(ha.data(), ra.data(), bytes) == 0 &&
                           std::memcmp(hb.data(), rb.data(), bytes) == 0;
    const double err = std::max(max_rel_err(ra.data(), ha.data(), p.elems()),
                                max_rel_err(rb.data(), hb.data(), p.elems()));
    const bool bytes_ok = c.variant != Variant::kBlocks ||
                          same_bytes(got, planned_bytes(p, Impl::kHandwritten, c.gpus));
    std::printf(
        "HOSTCHECK sample=%s n=%lld steps=%d variant=%s gpus=%d march=%lld grid_cap=%lld "
        "identical=%d max_rel_err=%.3g bytes_ok=%d\n",
        p.name(), static_cast<long long>(p.n), p.steps, variant_name(c.variant), c.gpus,
        static_cast<long long>(c.march), static_cast<long long>(c.cap), identical ? 1 : 0, err,
        bytes_ok ? 1 : 0);
    if (!identical || !bytes_ok) ++failures;
  }
  std::printf("HOSTCHECK sample=%s passed=%d\n", p.name(), failures == 0 ? 1 : 0);
  return failures == 0 ? 0 : 2;
}

// ------------------------------------------------------------------------------ plan

int plan(const Problem& p, int gpus) {
  const std::vector<RowBlock> blocks = split_rows(p.n, gpus);
  std::printf("PLAN sample=%s n=%lld steps=%d gpus=%d row_bytes=%zu array_bytes=%zu\n", p.name(),
              static_cast<long long>(p.n), p.steps, gpus, p.row_bytes(), p.array_bytes());
  for (size_t g = 0; g < blocks.size(); ++g) {
    const RowBlock& r = blocks[g];
    std::printf("PLAN_BLOCK gpu=%zu rows=[%lld,%lld) buffer_rows=[%lld,%lld) device_bytes=%zu\n", g,
                static_cast<long long>(r.lo), static_cast<long long>(r.hi),
                static_cast<long long>(r.buffer_first()),
                static_cast<long long>(r.buffer_first() + r.buffer_rows()),
                2 * static_cast<size_t>(r.buffer_rows()) * p.row_bytes());
  }
  for (const HaloCopy& c : halo_copies(blocks)) {
    std::printf(
        "PLAN_HALO from_gpu=%d row=%lld to_gpu=%d\n", c.src,
        static_cast<long long>(blocks[static_cast<size_t>(c.src)].buffer_first() + c.src_row),
        c.dst);
  }
  const Impl impls[] = {Impl::kHandwritten, Impl::kManaged, Impl::kWholecopy};
  for (Impl i : impls) {
    const int g = i == Impl::kWholecopy ? 1 : gpus;
    const Bytes b = planned_bytes(p, i, g);
    std::printf("PLAN_IMPL impl=%s gpus=%d bytes_h2d=%.0f bytes_d2h=%.0f bytes_peer=%.0f%s\n",
                impl_name(i), g, b.h2d, b.d2h, b.peer,
                i == Impl::kManaged ? " (moved by the driver, not counted)" : "");
  }
  std::string why;
  const bool ok = check_blocks(p.n, blocks, &why);
  std::printf("PLAN_CHECK rows=[1,%lld) covered_once=%d%s%s\n", static_cast<long long>(p.n - 1),
              ok ? 1 : 0, ok ? "" : " ", why.c_str());
  return ok ? 0 : 1;
}

// ----------------------------------------------------------------------------- on GPUs

struct Options {
  Impl impl = Impl::kHandwritten;
  bool impl_given = false;
  int gpus = 1;
  int verify = -1;  // -1: by size, 0: no, 1: yes
  std::string oracle_file;  // --oracle-file: the sequential result stored by a sample
  int64_t march = 32;
  int64_t grid_cap = 0;
  bool plan = false;
  bool host_check = false;
};

struct RunResult {
  double seconds = 0, pin_seconds = 0, alloc_seconds = 0;
  Bytes bytes;
};

// Pins `a` and `b` (`bytes` each) for every GPU; returns the seconds it took.
double pin(double* a, double* b, size_t bytes) {
  const double t0 = sample_now();
  BS_CUDA(cudaHostRegister(a, bytes, cudaHostRegisterPortable));
  BS_CUDA(cudaHostRegister(b, bytes, cudaHostRegisterPortable));
  return sample_now() - t0;
}

void unpin(double* a, double* b) {
  BS_CUDA(cudaHostUnregister(a));
  BS_CUDA(cudaHostUnregister(b));
}

void sync_devices(int gpus) {
  for (int g = 0; g < gpus; ++g) {
    BS_CUDA(cudaSetDevice(g));
    BS_CUDA(cudaDeviceSynchronize());
  }
}

// cudaFree(0) on GPUs 0..gpus-1 and peer access between every pair that supports it.
void warm_up(int gpus) {
  int count = 0;
  BS_CUDA(cudaGetDeviceCount(&count));
  if (count < gpus) {
    fail("--gpus " + std::to_string(gpus) + " but " + std::to_string(count) +
         " GPU(s) are visible");
  }
  for (int g = 0; g < gpus; ++g) {
    BS_CUDA(cudaSetDevice(g));
    BS_CUDA(cudaFree(nullptr));
    cudaDeviceProp prop;
    BS_CUDA(cudaGetDeviceProperties(&prop, g));
    std::printf("# gpu %d: %s, %.1f GiB\n", g, prop.name,
                static_cast<double>(prop.totalGlobalMem) / (1 << 30));
  }
  for (int g = 0; g < gpus; ++g) {
    for (int h = 0; h < gpus; ++h) {
      if (g == h) continue;
      int can = 0;
      BS_CUDA(cudaDeviceCanAccessPeer(&can, g, h));
      if (can) {
        BS_CUDA(cudaSetDevice(g));
        const cudaError_t e = cudaDeviceEnablePeerAccess(h, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) {
          (void)cudaGetLastError();  // clears it
        } else {
          BS_CUDA(e);
        }
      }
      std::printf("# peer access gpu %d -> gpu %d: %s\n", g, h, can ? "enabled" : "not available");
    }
  }
  std::fflush(stdout);
}

// handwritten: see the file comment. Streams per GPU: `compute` (H2D, kernels, D2H) and `copy`
// (the halo copies it sends). Events: `loaded` (its H2D done), `computed` (its kernel of the
// phase done), `sent` (its halo copies of the phase done). The order, without host
// synchronisation: a GPU's kernel waits for the previous phase's halo copies sent by its
// neighbours (they wrote its source's halo rows) and by itself (they read rows of the array
// this kernel's successor overwrites); its copy stream then waits for the kernel and sends its
// first and last rows. A copy into a neighbour's halo row comes after the neighbour's H2D and
// after the neighbour's previous kernel that read that row (the neighbour's `sent` of the
// previous phase precedes this GPU's kernel, which precedes its copies).
RunResult run_handwritten(const Problem& p, const Options& o, double* a, double* b) {
  const int gpus = o.gpus;
  const std::vector<RowBlock> blocks = split_rows(p.n, gpus);
  const std::vector<HaloCopy> halos = halo_copies(blocks);
  const int64_t re = p.row_elems();
  const size_t rb = p.row_bytes();
  RunResult res;
  res.pin_seconds = pin(a, b, p.array_bytes());
  struct Gpu {
    double* a = nullptr;
    double* b = nullptr;
    cudaStream_t compute = nullptr, copy = nullptr;
    cudaEvent_t loaded = nullptr, computed = nullptr, sent = nullptr;
  };
  std::vector<Gpu> gpu(static_cast<size_t>(gpus));
  double t0 = sample_now();
  for (int g = 0; g < gpus; ++g) {
    Gpu& d = gpu[static_cast<size_t>(g)];
    const size_t bytes = static_cast<size_t>(blocks[static_cast<size_t>(g)].buffer_rows()) * rb;
    BS_CUDA(cudaSetDevice(g));
    BS_CUDA(cudaMalloc(&d.a, bytes));
    BS_CUDA(cudaMalloc(&d.b, bytes));
    BS_CUDA(cudaStreamCreateWithFlags(&d.compute, cudaStreamNonBlocking));
    BS_CUDA(cudaStreamCreateWithFlags(&d.copy, cudaStreamNonBlocking));
    BS_CUDA(cudaEventCreateWithFlags(&d.loaded, cudaEventDisableTiming));
    BS_CUDA(cudaEventCreateWithFlags(&d.computed, cudaEventDisableTiming));
    BS_CUDA(cudaEventCreateWithFlags(&d.sent, cudaEventDisableTiming));
  }
  res.alloc_seconds = sample_now() - t0;
  sync_devices(gpus);

  t0 = sample_now();
  for (int g = 0; g < gpus; ++g) {
    Gpu& d = gpu[static_cast<size_t>(g)];
    const RowBlock& r = blocks[static_cast<size_t>(g)];
    const size_t bytes = static_cast<size_t>(r.buffer_rows()) * rb;
    BS_CUDA(cudaSetDevice(g));
    BS_CUDA(
        cudaMemcpyAsync(d.a, a + r.buffer_first() * re, bytes, cudaMemcpyHostToDevice, d.compute));
    BS_CUDA(
        cudaMemcpyAsync(d.b, b + r.buffer_first() * re, bytes, cudaMemcpyHostToDevice, d.compute));
    res.bytes.h2d += 2.0 * static_cast<double>(bytes);
    BS_CUDA(cudaEventRecord(d.loaded, d.compute));
  }
  // A GPU's halo copies write into its neighbours' buffers: only after their H2D.
  for (const HaloCopy& c : halos) {
    BS_CUDA(cudaSetDevice(c.src));
    BS_CUDA(cudaStreamWaitEvent(gpu[static_cast<size_t>(c.src)].copy,
                                gpu[static_cast<size_t>(c.dst)].loaded, 0));
  }
  for (int ph = 0; ph < p.phases(); ++ph) {
    const bool a_to_b = ph % 2 == 0;
    const bool exchange = gpus > 1 && ph + 1 < p.phases();
    for (int g = 0; g < gpus; ++g) {
      Gpu& d = gpu[static_cast<size_t>(g)];
      const RowBlock& r = blocks[static_cast<size_t>(g)];
      BS_CUDA(cudaSetDevice(g));
      if (ph > 0 && gpus > 1) {
        for (int h = std::max(0, g - 1); h <= std::min(gpus - 1, g + 1); ++h) {
          BS_CUDA(cudaStreamWaitEvent(d.compute, gpu[static_cast<size_t>(h)].sent, 0));
        }
      }
      launch_phase(p, a_to_b ? d.a : d.b, a_to_b ? d.b : d.a,
                   PhaseRange{p.n, r.buffer_first(), r.lo, r.hi, o.march}, o.grid_cap, d.compute);
      if (exchange) BS_CUDA(cudaEventRecord(d.computed, d.compute));
    }
    if (!exchange) continue;
    for (int g = 0; g < gpus; ++g) {
      Gpu& d = gpu[static_cast<size_t>(g)];
      BS_CUDA(cudaSetDevice(g));
      BS_CUDA(cudaStreamWaitEvent(d.copy, d.computed, 0));
      for (const HaloCopy& c : halos) {
        if (c.src != g) continue;
        const Gpu& to = gpu[static_cast<size_t>(c.dst)];
        const double* from_buf = a_to_b ? d.b : d.a;
        double* to_buf = a_to_b ? to.b : to.a;
        BS_CUDA(cudaMemcpyPeerAsync(to_buf + c.dst_row * re, c.dst, from_buf + c.src_row * re, g,
                                    rb, d.copy));
        res.bytes.peer += static_cast<double>(rb);
      }
      BS_CUDA(cudaEventRecord(d.sent, d.copy));
    }
  }
  for (int g = 0; g < gpus; ++g) {
    Gpu& d = gpu[static_cast<size_t>(g)];
    const RowBlock& r = blocks[static_cast<size_t>(g)];
    const size_t bytes = static_cast<size_t>(r.hi - r.lo) * rb;
    BS_CUDA(cudaSetDevice(g));
    BS_CUDA(cudaMemcpyAsync(a + r.lo * re, d.a + re, bytes, cudaMemcpyDeviceToHost, d.compute));
    BS_CUDA(cudaMemcpyAsync(b + r.lo * re, d.b + re, bytes, cudaMemcpyDeviceToHost, d.compute));
    res.bytes.d2h += 2.0 * static_cast<double>(bytes);
  }
  for (int g = 0; g < gpus; ++g) {
    BS_CUDA(cudaSetDevice(g));
    BS_CUDA(cudaStreamSynchronize(gpu[static_cast<size_t>(g)].compute));
    BS_CUDA(cudaStreamSynchronize(gpu[static_cast<size_t>(g)].copy));
  }
  res.seconds = sample_now() - t0;

  for (int g = 0; g < gpus; ++g) {
    Gpu& d = gpu[static_cast<size_t>(g)];
    BS_CUDA(cudaSetDevice(g));
    BS_CUDA(cudaFree(d.a));
    BS_CUDA(cudaFree(d.b));
    BS_CUDA(cudaStreamDestroy(d.compute));
    BS_CUDA(cudaStreamDestroy(d.copy));
    BS_CUDA(cudaEventDestroy(d.loaded));
    BS_CUDA(cudaEventDestroy(d.computed));
    BS_CUDA(cudaEventDestroy(d.sent));
  }
  unpin(a, b);
  return res;
}

cudaMemLocation device_location(int g) {
  cudaMemLocation l{};
  l.type = cudaMemLocationTypeDevice;
  l.id = g;
  return l;
}

cudaMemLocation host_location() {
  cudaMemLocation l{};
  l.type = cudaMemLocationTypeHost;
  l.id = 0;  // ignored for cudaMemLocationTypeHost
  return l;
}

// managed: see the file comment. GPU g's region of the arrays, [r0, r1), is its block (the
// first GPU's from row 0, the last's to row n-1: the boundary rows it reads); its preferred
// location is GPU g, and GPU g is advised to access its neighbours' rows next to its block
// (its halo rows) where they are, without migrating them.
RunResult run_managed(const Problem& p, const Options& o, double* a, double* b) {
  const int gpus = o.gpus;
  const std::vector<RowBlock> blocks = split_rows(p.n, gpus);
  const int64_t re = p.row_elems();
  const size_t rb = p.row_bytes(), bytes = p.array_bytes();
  for (int g = 0; g < gpus; ++g) {
    int concurrent = 0;
    BS_CUDA(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, g));
    if (!concurrent) fail("managed: GPU " + std::to_string(g) + " lacks concurrent managed access");
    size_t free_bytes = 0, total = 0;
    BS_CUDA(cudaSetDevice(g));
    BS_CUDA(cudaMemGetInfo(&free_bytes, &total));
    if (free_bytes <= 2 * bytes) {
      fail("managed: A and B (" + std::to_string(2 * bytes) + " bytes) do not fit GPU " +
           std::to_string(g) + "'s free memory (" + std::to_string(free_bytes) +
           " bytes); not oversubscribing managed memory");
    }
  }
  RunResult res;
  double* ma = nullptr;
  double* mb = nullptr;
  double t0 = sample_now();
  BS_CUDA(cudaSetDevice(0));
  BS_CUDA(cudaMallocManaged(&ma, bytes, cudaMemAttachGlobal));
  BS_CUDA(cudaMallocManaged(&mb, bytes, cudaMemAttachGlobal));
  res.alloc_seconds = sample_now() - t0;
  std::memcpy(ma, a, bytes);  // the input, filled on the host
  std::memcpy(mb, b, bytes);
  std::vector<cudaStream_t> stream(static_cast<size_t>(gpus));
  for (int g = 0; g < gpus; ++g) {
    BS_CUDA(cudaSetDevice(g));
    BS_CUDA(cudaStreamCreateWithFlags(&stream[static_cast<size_t>(g)], cudaStreamNonBlocking));
  }
  sync_devices(gpus);
  auto region_first = [&](int g) { return g == 0 ? 0 : blocks[static_cast<size_t>(g)].lo; };
  auto region_end = [&](int g) { return g == gpus - 1 ? p.n : blocks[static_cast<size_t>(g)].hi; };

  t0 = sample_now();
  for (int g = 0; g < gpus; ++g) {
    const RowBlock& r = blocks[static_cast<size_t>(g)];
    const int64_t r0 = region_first(g), r1 = region_end(g);
    BS_CUDA(cudaSetDevice(g));
    for (double* m : {ma, mb}) {
      BS_CUDA(cudaMemAdvise(m + r0 * re, static_cast<size_t>(r1 - r0) * rb,
                            cudaMemAdviseSetPreferredLocation, device_location(g)));
      if (g > 0) {
        BS_CUDA(
            cudaMemAdvise(m + (r.lo - 1) * re, rb, cudaMemAdviseSetAccessedBy, device_location(g)));
      }
      if (g < gpus - 1) {
        BS_CUDA(cudaMemAdvise(m + r.hi * re, rb, cudaMemAdviseSetAccessedBy, device_location(g)));
      }
      BS_CUDA(cudaMemPrefetchAsync(m + r0 * re, static_cast<size_t>(r1 - r0) * rb,
                                   device_location(g), 0, stream[static_cast<size_t>(g)]));
    }
  }
  for (int g = 0; g < gpus; ++g) {
    BS_CUDA(cudaSetDevice(g));
    BS_CUDA(cudaStreamSynchronize(stream[static_cast<size_t>(g)]));
  }
  for (int ph = 0; ph < p.phases(); ++ph) {
    const bool a_to_b = ph % 2 == 0;
    for (int g = 0; g < gpus; ++g) {
      const RowBlock& r = blocks[static_cast<size_t>(g)];
      BS_CUDA(cudaSetDevice(g));
      launch_phase(p, a_to_b ? ma : mb, a_to_b ? mb : ma, PhaseRange{p.n, 0, r.lo, r.hi, o.march},
                   o.grid_cap, stream[static_cast<size_t>(g)]);
    }
    // The next phase reads rows the other GPUs wrote in this one.
    for (int g = 0; g < gpus; ++g) {
      BS_CUDA(cudaSetDevice(g));
      BS_CUDA(cudaStreamSynchronize(stream[static_cast<size_t>(g)]));
    }
  }
  for (int g = 0; g < gpus; ++g) {
    const int64_t r0 = region_first(g), r1 = region_end(g);
    BS_CUDA(cudaSetDevice(g));
    for (double* m : {ma, mb}) {
      BS_CUDA(cudaMemPrefetchAsync(m + r0 * re, static_cast<size_t>(r1 - r0) * rb, host_location(),
                                   0, stream[static_cast<size_t>(g)]));
    }
  }
  for (int g = 0; g < gpus; ++g) {
    BS_CUDA(cudaSetDevice(g));
    BS_CUDA(cudaStreamSynchronize(stream[static_cast<size_t>(g)]));
  }
  res.seconds = sample_now() - t0;

  std::memcpy(a, ma, bytes);  // the results, for the comparison
  std::memcpy(b, mb, bytes);
  for (int g = 0; g < gpus; ++g) {
    BS_CUDA(cudaSetDevice(g));
    BS_CUDA(cudaStreamDestroy(stream[static_cast<size_t>(g)]));
  }
  BS_CUDA(cudaSetDevice(0));
  BS_CUDA(cudaFree(ma));
  BS_CUDA(cudaFree(mb));
  return res;
}

// wholecopy on GPU 0: see the file comment. `pin_host`: register the host arrays first (the
// timed runs; the oracle run copies from pageable memory).
RunResult run_wholecopy(const Problem& p, const Options& o, double* a, double* b, bool pin_host) {
  const size_t bytes = p.array_bytes();
  RunResult res;
  if (pin_host) res.pin_seconds = pin(a, b, bytes);
  double* da = nullptr;
  double* db = nullptr;
  cudaStream_t stream = nullptr;
  BS_CUDA(cudaSetDevice(0));
  double t0 = sample_now();
  BS_CUDA(cudaMalloc(&da, bytes));
  BS_CUDA(cudaMalloc(&db, bytes));
  res.alloc_seconds = sample_now() - t0;
  BS_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  BS_CUDA(cudaDeviceSynchronize());

  t0 = sample_now();
  BS_CUDA(cudaMemcpyAsync(da, a, bytes, cudaMemcpyHostToDevice, stream));
  BS_CUDA(cudaMemcpyAsync(db, b, bytes, cudaMemcpyHostToDevice, stream));
  res.bytes.h2d = 2.0 * static_cast<double>(bytes);
  for (int ph = 0; ph < p.phases(); ++ph) {
    const bool a_to_b = ph % 2 == 0;
    launch_phase(p, a_to_b ? da : db, a_to_b ? db : da, PhaseRange{p.n, 0, 1, p.n - 1, o.march},
                 o.grid_cap, stream);
  }
  BS_CUDA(cudaMemcpyAsync(a, da, bytes, cudaMemcpyDeviceToHost, stream));
  BS_CUDA(cudaMemcpyAsync(b, db, bytes, cudaMemcpyDeviceToHost, stream));
  res.bytes.d2h = 2.0 * static_cast<double>(bytes);
  BS_CUDA(cudaStreamSynchronize(stream));
  res.seconds = sample_now() - t0;

  BS_CUDA(cudaFree(da));
  BS_CUDA(cudaFree(db));
  BS_CUDA(cudaStreamDestroy(stream));
  if (pin_host) unpin(a, b);
  return res;
}

// Whether the CPU run of the loop nest is short enough to verify by default (< ~5 s).
bool cpu_verify_by_default(const Problem& p) {
  const double n = static_cast<double>(p.n), s = p.steps;
  return p.sample == Sample::kHeat2d ? n * n * s <= 2.5e9 : n * n * n * s <= 1.5e9;
}

// Whether wholecopy fits GPU 0 now (both arrays and 256 MiB to spare).
bool wholecopy_fits(const Problem& p) {
  size_t free_bytes = 0, total = 0;
  BS_CUDA(cudaSetDevice(0));
  BS_CUDA(cudaMemGetInfo(&free_bytes, &total));
  return static_cast<double>(free_bytes) >
         2.0 * static_cast<double>(p.array_bytes()) + 256.0 * (1 << 20);
}

int run_on_gpus(const Problem& p, const Options& o) {
  if (o.impl == Impl::kWholecopy && o.gpus != 1) fail("--impl wholecopy runs on 1 GPU (--gpus 1)");
  const size_t bytes = p.array_bytes();
  double* a = host_alloc(bytes);
  double* b = host_alloc(bytes);
  fill_inputs(p, a, b);
  warm_up(o.gpus);

  RunResult res;
  if (o.impl == Impl::kHandwritten) {
    res = run_handwritten(p, o, a, b);
  } else if (o.impl == Impl::kManaged) {
    res = run_managed(p, o, a, b);
  } else {
    res = run_wholecopy(p, o, a, b, true);
  }
  const Bytes want = planned_bytes(p, o.impl, o.gpus);
  const bool bytes_ok = o.impl == Impl::kManaged || same_bytes(res.bytes, want);

  // The oracle: the C loop nest, or wholecopy at sizes where that would be slow.
  const char* oracle = "none";
  if (!o.oracle_file.empty()) {
    oracle = "file";
  } else if (o.verify == 1 || (o.verify == -1 && cpu_verify_by_default(p))) {
    oracle = "cpu";
  } else if (o.verify == -1 && o.impl != Impl::kWholecopy && wholecopy_fits(p)) {
    oracle = "wholecopy";
  }
  double err = 0;
  bool verified = false;
  if (std::strcmp(oracle, "none") != 0) {
    double* ra = host_alloc(bytes);
    double* rb = host_alloc(bytes);
    fill_inputs(p, ra, rb);
    const double t0 = sample_now();
    if (std::strcmp(oracle, "file") == 0) {
      // The sample's reference cache (samples/common/sample.h, BBMM_SAMPLE_CACHE): the
      // sequential program's A then B, for the same input and size.
      FILE* f = std::fopen(o.oracle_file.c_str(), "rb");
      if (f == nullptr) fail("--oracle-file " + o.oracle_file + ": cannot open it");
      const size_t got = std::fread(ra, 1, bytes, f) + std::fread(rb, 1, bytes, f);
      const bool at_end = std::fgetc(f) == EOF;
      std::fclose(f);
      if (got != 2 * bytes || !at_end) {
        fail("--oracle-file " + o.oracle_file + ": not the " + std::to_string(2 * bytes) +
             " bytes of A and B of this size");
      }
    } else if (std::strcmp(oracle, "cpu") == 0) {
      run_reference(p, ra, rb);
    } else {
      run_wholecopy(p, o, ra, rb, false);
    }
    std::printf("# oracle %s: %.3f s\n", oracle, sample_now() - t0);
    err = std::max(max_rel_err(ra, a, p.elems()), max_rel_err(rb, b, p.elems()));
    verified = err <= kTolerance;  // false for NaN
    std::free(ra);
    std::free(rb);
  }
  char err_text[32];
  if (std::strcmp(oracle, "none") == 0) {
    std::snprintf(err_text, sizeof err_text, "-");
  } else {
    std::snprintf(err_text, sizeof err_text, "%.3g", err);
  }
  std::printf(
      "BASELINE sample=%s impl=%s gpus=%d n=%lld steps=%d seconds=%.6f pin_seconds=%.6f "
      "alloc_seconds=%.6f bytes_h2d=%.0f bytes_d2h=%.0f bytes_peer=%.0f verified=%d oracle=%s "
      "max_rel_err=%s\n",
      p.name(), impl_name(o.impl), o.gpus, static_cast<long long>(p.n), p.steps, res.seconds,
      res.pin_seconds, res.alloc_seconds, res.bytes.h2d, res.bytes.d2h, res.bytes.peer,
      verified ? 1 : 0, oracle, err_text);
  std::fflush(stdout);
  std::free(a);
  std::free(b);
  if (!bytes_ok) {
    fail("internal: the bytes copied (h2d " + std::to_string(res.bytes.h2d) + ", d2h " +
         std::to_string(res.bytes.d2h) + ", peer " + std::to_string(res.bytes.peer) +
         ") differ from the plan's (" + std::to_string(want.h2d) + ", " + std::to_string(want.d2h) +
         ", " + std::to_string(want.peer) + ")");
  }
  if (std::strcmp(oracle, "none") != 0 && !verified) {
    std::fprintf(stderr,
                 "baseline_stencils: %s %s: the result differs from the %s oracle "
                 "(max relative error %s > %g)\n",
                 p.name(), impl_name(o.impl), oracle, err_text, kTolerance);
    return 2;
  }
  return 0;
}

// ------------------------------------------------------------------------------- main

void usage(FILE* f) {
  std::fprintf(f,
               "usage: baseline_stencils heat2d|heat3d N STEPS --impl handwritten|managed|"
               "wholecopy --gpus G\n"
               "                         [--verify|--no-verify] [--oracle-file F] [--march M]\n"
               "                         [--grid-cap B]\n"
               "       baseline_stencils heat2d|heat3d N STEPS --plan [--gpus G]\n"
               "       baseline_stencils heat2d|heat3d N STEPS --host-check\n");
}

using bbmm_bench::parse_int;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    usage(stderr);
    return 1;
  }
  Problem p{Sample::kHeat2d, 0, 0};
  if (std::strcmp(argv[1], "heat2d") == 0) {
    p.sample = Sample::kHeat2d;
  } else if (std::strcmp(argv[1], "heat3d") == 0) {
    p.sample = Sample::kHeat3d;
  } else {
    std::fprintf(stderr, "baseline_stencils: unknown sample '%s'\n", argv[1]);
    usage(stderr);
    return 1;
  }
  int64_t v = 0;
  // The C functions take int n; heat2d's and heat3d's rows stay far below that anyway.
  if (!parse_int(argv[2], 3, 2147483647, &v)) {
    std::fprintf(stderr, "baseline_stencils: N must be an integer >= 3, got '%s'\n", argv[2]);
    return 1;
  }
  p.n = v;
  if (!parse_int(argv[3], 1, 2147483647, &v)) {
    std::fprintf(stderr, "baseline_stencils: STEPS must be a positive integer, got '%s'\n",
                 argv[3]);
    return 1;
  }
  p.steps = static_cast<int>(v);
  Options o;
  for (int i = 4; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--verify") {
      o.verify = 1;
    } else if (arg == "--no-verify") {
      o.verify = 0;
    } else if (arg == "--oracle-file" && has_value) {
      o.oracle_file = argv[++i];
    } else if (arg == "--plan") {
      o.plan = true;
    } else if (arg == "--host-check") {
      o.host_check = true;
    } else if (arg == "--impl" && has_value) {
      const std::string s = argv[++i];
      if (s == "handwritten") {
        o.impl = Impl::kHandwritten;
      } else if (s == "managed") {
        o.impl = Impl::kManaged;
      } else if (s == "wholecopy") {
        o.impl = Impl::kWholecopy;
      } else {
        std::fprintf(stderr, "baseline_stencils: unknown --impl '%s'\n", s.c_str());
        return 1;
      }
      o.impl_given = true;
    } else if (arg == "--gpus" && has_value && parse_int(argv[i + 1], 1, 1024, &v)) {
      o.gpus = static_cast<int>(v);
      ++i;
    } else if (arg == "--march" && has_value && parse_int(argv[i + 1], 1, 65536, &v)) {
      o.march = v;
      ++i;
    } else if (arg == "--grid-cap" && has_value && parse_int(argv[i + 1], 1, 1 << 30, &v)) {
      o.grid_cap = v;
      ++i;
    } else {
      std::fprintf(stderr, "baseline_stencils: bad argument '%s'\n", arg.c_str());
      usage(stderr);
      return 1;
    }
  }
  if (p.n - 2 < o.gpus) {
    std::fprintf(stderr, "baseline_stencils: %d GPUs need at least %d interior rows (N >= %d)\n",
                 o.gpus, o.gpus, o.gpus + 2);
    return 1;
  }
  if (o.plan) return plan(p, o.gpus);
  if (o.host_check) return host_check(p);
  if (!o.impl_given) {
    std::fprintf(stderr, "baseline_stencils: --impl is required\n");
    usage(stderr);
    return 1;
  }
  return run_on_gpus(p, o);
}
