// The 2-D Jacobi of jacobi2d_host.cpp with CUDA kernels on 1..N GPUs through libbbmm's
// public C API (driver in stencil_common.h): the interior rows are cut into one block
// per GPU, each block into --tiles-per-device tiles; per tile: require the rows plus
// one halo row each side (all columns) READ and the written rows WRITE, acquire,
// launch, flow out the first/last row when a tile of another GPU reads it (peer copies
// over NVLink where the GPUs reach each other), release. With --reserve (default) each
// GPU's allocation hull (its rows plus the halo) is reserved before the time loop, so
// no instance grows (bytes_d2d == 0). --capacity auto forces box-out.
//
// Kernels: a single-piece fast path (one base pointer and pitch per view, 64x4 blocks,
// threadIdx.x along the contiguous columns, each thread marching down 32 rows); the generic piece
// lookup only when a view has several pieces. Verified against an independent
// single-GPU CUDA program in this binary (cudaMalloc, its own kernels, no libbbmm) and,
// for n <= 514, against the CPU loop; the reference is never timed.
//
//   jacobi2d_cuda [--n N] [--steps T] [--devices D] [--tiles-per-device K]
//                 [--capacity BYTES|auto|none] [--no-reserve] [--json] [--plan]
//
// Prints the statistics table (or JSON) and a last line
//   RESULT sample=jacobi2d n=.. steps=.. gpus=.. ... verified=0|1 max_rel_err=..
// Exit codes: 0 verified, 1 usage or runtime error, 2 verification failed, 3 an
// instance grew although the hulls were reserved, 77 no GPU visible (SKIP).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "stencil_common.h"

namespace {

using stencil::Pieces;

constexpr int kBx = 32, kBy = 8;  // threads: x along columns (contiguous), y along rows
constexpr int kThreads = kBx * kBy;
constexpr int64_t kMaxGridY = 65535;

__host__ __device__ inline double init_a(int64_t i, int64_t j) {
  return static_cast<double>((i * 7 + j * 13) % 101) / 101.0;
}
__host__ __device__ inline double init_b(int64_t i, int64_t j) {
  return static_cast<double>((i * 3 + j * 5) % 37) / 37.0;
}

void init(double* a, double* b, int64_t n, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i)
    for (int64_t j = 0; j < n; ++j) {
      a[i * n + j] = init_a(i, j);
      b[i * n + j] = init_b(i, j);
    }
}

void cpu_loop(double* a, double* b, int64_t n, int steps) {
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

// ------------------------------------------------------------ libbbmm kernels

// Single piece per view: `in` and `out` point at element (lo, 1) of their pieces; the
// tile writes `rows` x `cols` elements from there.
struct SingleArgs {
  const double* in;
  double* out;
  int64_t in_pitch, out_pitch, rows, cols;
  int64_t chunk;  // rows marched by one thread (marching kernel; 0: the grid-stride kernel)
  int bx, by;
};

// The single-piece kernel's shape. Default: the marching kernel with 64x4 threads over
// (column, row band), each thread marching down 32 rows with the rows above and below
// in registers (fastest of the shapes tuned on an H200 on 2026-11-23: 0.371 s against
// 0.445 s for the grid-stride kernel, n=16386, 100 steps; docs/performance.md).
// BBMM_JACOBI_KERNEL=BXxBYxROWS picks another marching shape (BX x BY one of 32x8,
// 64x4, 128x2, 32x4); BBMM_JACOBI_KERNEL=grid the grid-stride kernel (32x8 threads,
// one element per thread and row).
using stencil::KernelShape;

KernelShape kernel_shape() {
  static const KernelShape grid{32, 8, 0};
  static const KernelShape shape = stencil::kernel_shape_from_env(
      "jacobi2d_cuda", "BBMM_JACOBI_KERNEL", "ROWS", {"32x8", "32x4", "64x4", "128x2"},
      KernelShape{64, 4, 32}, &grid);
  return shape;
}

// Marching kernel: thread (x, y) of block (bx, by) computes column bx*BX+x for the
// rows [p0, p0 + chunk) of band by*BY+y, keeping rows r-1, r, r+1 of its column in
// registers (each input element is loaded once per column from memory; the
// column neighbours come from L1).
template <int BX, int BY>
__global__ void __launch_bounds__(BX * BY)
    jacobi_march(const double* __restrict__ in, double* __restrict__ out, int64_t in_pitch,
                 int64_t out_pitch, int64_t rows, int64_t cols, int64_t chunk) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * BX + threadIdx.x;
  const int64_t p0 = (static_cast<int64_t>(blockIdx.y) * BY + threadIdx.y) * chunk;
  if (c >= cols || p0 >= rows) return;
  const int64_t p1 = p0 + chunk < rows ? p0 + chunk : rows;
  const double* p = in + p0 * in_pitch + c;
  double* o = out + p0 * out_pitch + c;
  double above = p[-in_pitch], mid = p[0];
  for (int64_t r = p0; r < p1; ++r) {
    const double below = p[in_pitch];
    *o = 0.2 * (mid + p[-1] + p[1] + below + above);
    above = mid;
    mid = below;
    p += in_pitch;
    o += out_pitch;
  }
}

template <int BX, int BY>
void launch_march(const SingleArgs& a, cudaStream_t s) {
  const int64_t bands = (a.rows + a.chunk - 1) / a.chunk;
  const dim3 grid(static_cast<unsigned>((a.cols + BX - 1) / BX),
                  static_cast<unsigned>((bands + BY - 1) / BY));
  jacobi_march<BX, BY><<<grid, dim3(BX, BY), 0, s>>>(a.in, a.out, a.in_pitch, a.out_pitch, a.rows,
                                                     a.cols, a.chunk);
}

__global__ void __launch_bounds__(kThreads)
    jacobi_single(const double* __restrict__ in, double* __restrict__ out, int64_t in_pitch,
                  int64_t out_pitch, int64_t rows, int64_t cols) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kBx + threadIdx.x;
  if (c >= cols) return;
  const int64_t row_step = static_cast<int64_t>(gridDim.y) * kBy;
  for (int64_t r = static_cast<int64_t>(blockIdx.y) * kBy + threadIdx.y; r < rows; r += row_step) {
    const double* p = in + r * in_pitch + c;
    out[r * out_pitch + c] = 0.2 * (p[0] + p[-1] + p[1] + p[in_pitch] + p[-in_pitch]);
  }
}

void launch_single(const bbmm_launch_info* info, void* p) {
  const SingleArgs& a = *static_cast<const SingleArgs*>(p);
  if (a.chunk > 0) {
    const cudaStream_t s = static_cast<cudaStream_t>(info->queue);
    if (a.bx == 64) return launch_march<64, 4>(a, s);
    if (a.bx == 128) return launch_march<128, 2>(a, s);
    if (a.by == 4) return launch_march<32, 4>(a, s);
    return launch_march<32, 8>(a, s);
  }
  const dim3 block(kBx, kBy);
  const dim3 grid(static_cast<unsigned>((a.cols + kBx - 1) / kBx),
                  static_cast<unsigned>(std::min<int64_t>((a.rows + kBy - 1) / kBy, kMaxGridY)));
  jacobi_single<<<grid, block, 0, static_cast<cudaStream_t>(info->queue)>>>(
      a.in, a.out, a.in_pitch, a.out_pitch, a.rows, a.cols);
}

// Several pieces: every access looks its piece up.
struct GenericArgs {
  Pieces in, out;
  int64_t lo, hi, n;
};

__device__ inline double* at(const Pieces& v, int64_t i, int64_t j) {
  const int64_t idx[2] = {i, j};
  for (int k = 0; k < v.n; ++k) {
    if (bbmm_piece_contains(&v.p[k], 2, idx)) {
      return static_cast<double*>(bbmm_piece_at(&v.p[k], sizeof(double), 2, idx));
    }
  }
  return nullptr;  // not reached: the views cover the required boxes
}

__global__ void __launch_bounds__(kThreads) jacobi_generic(const __grid_constant__ GenericArgs a) {
  const int64_t j = 1 + static_cast<int64_t>(blockIdx.x) * kBx + threadIdx.x;
  if (j >= a.n - 1) return;
  const int64_t row_step = static_cast<int64_t>(gridDim.y) * kBy;
  for (int64_t i = a.lo + static_cast<int64_t>(blockIdx.y) * kBy + threadIdx.y; i < a.hi;
       i += row_step) {
    *at(a.out, i, j) = 0.2 * (*at(a.in, i, j) + *at(a.in, i, j - 1) + *at(a.in, i, j + 1) +
                              *at(a.in, i + 1, j) + *at(a.in, i - 1, j));
  }
}

void launch_generic(const bbmm_launch_info* info, void* p) {
  const GenericArgs& a = *static_cast<const GenericArgs*>(p);
  const dim3 block(kBx, kBy);
  const dim3 grid(
      static_cast<unsigned>((a.n - 2 + kBx - 1) / kBx),
      static_cast<unsigned>(std::min<int64_t>((a.hi - a.lo + kBy - 1) / kBy, kMaxGridY)));
  jacobi_generic<<<grid, block, 0, static_cast<cudaStream_t>(info->queue)>>>(a);
}

std::string launch(bbmm_tile* t, const bbmm_view& src, const bbmm_view& dst, int64_t lo, int64_t hi,
                   int64_t n, stencil::LaunchCounts* counts) {
  bbmm_status st;
  if (src.npieces == 1 && dst.npieces == 1) {
    const int64_t first[2] = {lo, 1};
    SingleArgs a;
    a.in = static_cast<const double*>(bbmm_piece_at(&src.pieces[0], sizeof(double), 2, first));
    a.out = static_cast<double*>(bbmm_piece_at(&dst.pieces[0], sizeof(double), 2, first));
    a.in_pitch = src.pieces[0].stride[0];
    a.out_pitch = dst.pieces[0].stride[0];
    a.rows = hi - lo;
    a.cols = n - 2;
    const KernelShape shape = kernel_shape();
    a.chunk = shape.chunk;
    a.bx = shape.bx;
    a.by = shape.by;
    counts->single_piece++;
    st = bbmm_tile_launch(t, launch_single, &a, sizeof a);
  } else {
    GenericArgs a;
    if (!stencil::copy_pieces(src, &a.in) || !stencil::copy_pieces(dst, &a.out)) {
      return "a view has " + std::to_string(std::max(src.npieces, dst.npieces)) +
             " pieces; the generic kernel takes at most " + std::to_string(stencil::kMaxPieces);
    }
    a.lo = lo;
    a.hi = hi;
    a.n = n;
    counts->generic++;
    st = bbmm_tile_launch(t, launch_generic, &a, sizeof a);
  }
  if (st != BBMM_OK) return std::string("bbmm_tile_launch: ") + bbmm_last_error_message();
  return "";
}

// ------------------------------------------------- independent reference (no libbbmm)

__global__ void ref_init(double* a, double* b, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n * n;
       e += stride) {
    a[e] = init_a(e / n, e % n);
    b[e] = init_b(e / n, e % n);
  }
}

__global__ void ref_step(const double* in, double* out, int64_t n) {
  for (int64_t i = 1 + blockIdx.y * static_cast<int64_t>(blockDim.y) + threadIdx.y; i < n - 1;
       i += static_cast<int64_t>(gridDim.y) * blockDim.y)
    for (int64_t j = 1 + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < n - 1;
         j += static_cast<int64_t>(gridDim.x) * blockDim.x)
      out[i * n + j] = 0.2 * (in[i * n + j] + in[i * n + j - 1] + in[i * n + j + 1] +
                              in[(i + 1) * n + j] + in[(i - 1) * n + j]);
}

#define REF_CUDA(call)                                                                \
  do {                                                                                \
    const cudaError_t e_ = (call);                                                    \
    if (e_ != cudaSuccess) return std::string(#call) + ": " + cudaGetErrorString(e_); \
  } while (0)

// The same computation on GPU 0 with plain CUDA: its own input, kernels and buffers.
std::string reference(double* ra, double* rb, int64_t n, int steps) {
  const size_t bytes = static_cast<size_t>(n * n) * sizeof(double);
  double *a = nullptr, *b = nullptr;
  REF_CUDA(cudaSetDevice(0));
  REF_CUDA(cudaMalloc(&a, bytes));
  REF_CUDA(cudaMalloc(&b, bytes));
  ref_init<<<4096, 256>>>(a, b, n);
  REF_CUDA(cudaGetLastError());
  const dim3 block(32, 8), grid(static_cast<unsigned>((n + 31) / 32),
                                static_cast<unsigned>(std::min<int64_t>((n + 7) / 8, 65535)));
  for (int t = 0; t < steps; ++t) {
    ref_step<<<grid, block>>>(a, b, n);
    ref_step<<<grid, block>>>(b, a, n);
  }
  REF_CUDA(cudaGetLastError());
  REF_CUDA(cudaMemcpy(ra, a, bytes, cudaMemcpyDeviceToHost));
  REF_CUDA(cudaMemcpy(rb, b, bytes, cudaMemcpyDeviceToHost));
  REF_CUDA(cudaFree(a));
  REF_CUDA(cudaFree(b));
  return "";
}

// Own rows read all n columns, halo rows the n-2 interior ones; n-2 written per row.
// In: all of A but its 4 corners, and B's boundary without corners (read in phase 2
// before any write); out: both interiors.
stencil::Traffic traffic(int64_t n, int steps, const stencil::Partition& p) {
  stencil::Traffic t;
  if (steps == 0) return t;
  t.device = stencil::device_bytes(p, steps, n, n - 2, n - 2);
  t.h2d_min = static_cast<uint64_t>(n * n - 4 + 4 * (n - 2)) * sizeof(double);
  t.d2h_min = static_cast<uint64_t>(2 * (n - 2) * (n - 2)) * sizeof(double);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  // This program calls CUDA before it creates the runtime (device count, the reference
  // run), which would keep CUDA's lazy module loading: the first launch of each kernel
  // would then wait until its GPU is idle, on libbbmm's issue thread (docs/runtime.md).
  setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
  const stencil::Sample s{"jacobi2d", "jacobi2d_cuda",
                          2,          BBMM_BACKEND_CUDA,
                          init,       launch,
                          cpu_loop,   514,
                          reference,  "the CUDA reference (one GPU, no libbbmm)",
                          traffic};
  stencil::Options o;
  o.n = 2048;
  o.steps = 20;
  const int rc = stencil::parse_options(argc, argv, s.program, &o);
  if (rc >= 0) return rc;
  if (o.plan) {
    if (o.devices == 0) o.devices = 1;
    return stencil::run(s, o);
  }
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess || visible == 0) {
    std::printf("SKIP: %s needs a GPU (none visible)\n", s.program);
    return 77;
  }
  // BBMM_CUDA_DEVICES_PER_GPU=k: k logical devices per GPU (one GPU shows the
  // multi-device path: halo copies between logical devices on copy streams).
  if (const char* v = std::getenv("BBMM_CUDA_DEVICES_PER_GPU"); v != nullptr && std::atoi(v) > 1) {
    visible *= std::atoi(v);
  }
  if (o.devices == 0) o.devices = visible;
  if (o.devices > visible) {
    std::fprintf(stderr, "%s: --devices %d, but only %d GPUs are visible\n", s.program, o.devices,
                 visible);
    return 1;
  }
  return stencil::run(s, o);
}
