// PolyBench heat-3d with CUDA kernels on 1..N GPUs through libbbmm's public C API
// (driver in stencil_common.h): per time step, for i, j, k in [1, n-1),
//   B[i][j][k] = 0.125 * (A[i+1][j][k] - 2 A[i][j][k] + A[i-1][j][k])
//              + 0.125 * (A[i][j+1][k] - 2 A[i][j][k] + A[i][j-1][k])
//              + 0.125 * (A[i][j][k+1] - 2 A[i][j][k] + A[i][j][k-1]) + A[i][j][k],
// then A from B the same way; doubles, PolyBench's initial values. The interior planes
// (i) are cut into one block per GPU, each block into --tiles-per-device tiles; per
// tile: require its planes plus one halo plane each side (whole planes) READ and the
// written planes WRITE, acquire, launch, flow out the first/last plane when a tile of
// another GPU reads it, release. With --reserve (default) each GPU's allocation hull
// is reserved before the time loop (bytes_d2d == 0). --capacity auto forces box-out.
//
// Kernels: a single-piece fast path (one base pointer, plane and row pitch per view;
// 64x4 threads over (k, j), k contiguous, each thread marching through up to 32 planes
// with the i-1, i, i+1 values in registers; BBMM_HEAT3D_KERNEL=BXxBYxPLANES picks another
// shape, e.g. 32x8x32); the generic piece lookup (32x4x2 blocks,
// grid-stride loops) only when a view has several pieces. Verified against an
// independent single-GPU CUDA program in this binary (no libbbmm) and, for n <= 66,
// against the CPU loop; the reference is never timed.
//
//   heat3d_cuda [--n N] [--steps T] [--devices D] [--tiles-per-device K]
//               [--capacity BYTES|auto|none] [--no-reserve] [--json] [--plan]
//
// Prints the statistics table (or JSON) and a last line
//   RESULT sample=heat3d n=.. steps=.. gpus=.. ... verified=0|1 max_rel_err=..
// Exit codes: 0 verified, 1 usage or runtime error, 2 verification failed, 3 an
// instance grew although the hulls were reserved, 77 no GPU visible (SKIP).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "stencil_common.h"

namespace {

using stencil::Pieces;

constexpr int64_t kMaxGridYZ = 65535;

// PolyBench heat-3d's initial values (A and B equal).
__host__ __device__ inline double init_value(int64_t i, int64_t j, int64_t k, int64_t n) {
  return static_cast<double>(i + j + (n - k)) * 10.0 / static_cast<double>(n);
}

void init(double* a, double* b, int64_t n, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < n; ++k) {
        a[(i * n + j) * n + k] = init_value(i, j, k, n);
        b[(i * n + j) * n + k] = init_value(i, j, k, n);
      }
}

void cpu_phase(const double* a, double* b, int64_t n) {
  for (int64_t i = 1; i < n - 1; ++i)
    for (int64_t j = 1; j < n - 1; ++j)
      for (int64_t k = 1; k < n - 1; ++k) {
        const int64_t e = (i * n + j) * n + k;
        b[e] = 0.125 * (a[e + n * n] - 2.0 * a[e] + a[e - n * n]) +
               0.125 * (a[e + n] - 2.0 * a[e] + a[e - n]) +
               0.125 * (a[e + 1] - 2.0 * a[e] + a[e - 1]) + a[e];
      }
}

void cpu_loop(double* a, double* b, int64_t n, int steps) {
  for (int t = 0; t < steps; ++t) {
    cpu_phase(a, b, n);
    cpu_phase(b, a, n);
  }
}

// ------------------------------------------------------------ libbbmm kernels

// Single-piece kernel: BX x BY threads over (k, j), k contiguous, each thread
// marching through `chunk` planes with the i-1, i, i+1 values in registers. The
// default shape, 64x4 threads and 32 planes, was the fastest of 32x8x32, 32x4x64,
// 64x4x32, 32x16x16 and 64x2x64 at n = 768 on an H100 (2026-11-23: 0.878 s against
// 0.917-0.994 s, bench/gpu/run_all.sh tune); BBMM_HEAT3D_KERNEL=BXxBYxPLANES
// (BX x BY one of 32x8, 32x4, 32x16, 64x4, 64x2) picks another, for tuning.
using stencil::KernelShape;

KernelShape kernel_shape() {
  static const KernelShape shape = stencil::kernel_shape_from_env(
      "heat3d_cuda", "BBMM_HEAT3D_KERNEL", "PLANES", {"32x8", "32x4", "32x16", "64x4", "64x2"},
      KernelShape{64, 4, 32}, nullptr);
  return shape;
}

// Single piece per view: `in` and `out` point at element (lo, 1, 1) of their pieces;
// the tile writes planes x m x m elements from there (m = n - 2).
struct SingleArgs {
  const double* in;
  double* out;
  int64_t in_plane, in_row, out_plane, out_row, planes, m, chunk;
  int bx, by;
};

template <int BX, int BY>
__global__ void __launch_bounds__(BX * BY)
    heat_single(const double* __restrict__ in, double* __restrict__ out, int64_t in_plane,
                int64_t in_row, int64_t out_plane, int64_t out_row, int64_t planes, int64_t m,
                int64_t chunk) {
  const int64_t k = static_cast<int64_t>(blockIdx.x) * BX + threadIdx.x;
  const int64_t j = static_cast<int64_t>(blockIdx.y) * BY + threadIdx.y;
  const int64_t p0 = static_cast<int64_t>(blockIdx.z) * chunk;
  if (k >= m || j >= m || p0 >= planes) return;
  const int64_t p1 = p0 + chunk < planes ? p0 + chunk : planes;
  const double* c = in + p0 * in_plane + j * in_row + k;
  double* o = out + p0 * out_plane + j * out_row + k;
  double below = c[-in_plane], mid = c[0];
  for (int64_t p = p0; p < p1; ++p) {
    const double above = c[in_plane];
    *o = 0.125 * (above - 2.0 * mid + below) + 0.125 * (c[in_row] - 2.0 * mid + c[-in_row]) +
         0.125 * (c[1] - 2.0 * mid + c[-1]) + mid;
    below = mid;
    mid = above;
    c += in_plane;
    o += out_plane;
  }
}

template <int BX, int BY>
void launch_single_shape(const SingleArgs& a, cudaStream_t stream) {
  const dim3 block(BX, BY);
  const dim3 grid(static_cast<unsigned>((a.m + BX - 1) / BX),
                  static_cast<unsigned>((a.m + BY - 1) / BY),
                  static_cast<unsigned>((a.planes + a.chunk - 1) / a.chunk));
  heat_single<BX, BY><<<grid, block, 0, stream>>>(a.in, a.out, a.in_plane, a.in_row,
                                                  a.out_plane, a.out_row, a.planes, a.m, a.chunk);
}

void launch_single(const bbmm_launch_info* info, void* p) {
  const SingleArgs& a = *static_cast<const SingleArgs*>(p);
  const cudaStream_t s = static_cast<cudaStream_t>(info->queue);
  if (a.bx == 64) {
    if (a.by == 4) return launch_single_shape<64, 4>(a, s);
    return launch_single_shape<64, 2>(a, s);
  }
  if (a.by == 4) return launch_single_shape<32, 4>(a, s);
  if (a.by == 16) return launch_single_shape<32, 16>(a, s);
  launch_single_shape<32, 8>(a, s);
}

// Several pieces: every access looks its piece up.
struct GenericArgs {
  Pieces in, out;
  int64_t lo, hi, n;
};

constexpr int kGx = 32, kGy = 4, kGz = 2;  // generic kernel: threads over (k, j, i)
constexpr int kGenericThreads = kGx * kGy * kGz;

__device__ inline double* at(const Pieces& v, int64_t i, int64_t j, int64_t k) {
  const int64_t idx[3] = {i, j, k};
  for (int q = 0; q < v.n; ++q) {
    if (bbmm_piece_contains(&v.p[q], 3, idx)) {
      return static_cast<double*>(bbmm_piece_at(&v.p[q], sizeof(double), 3, idx));
    }
  }
  return nullptr;  // not reached: the views cover the required boxes
}

__global__ void __launch_bounds__(kGenericThreads)
    heat_generic(const __grid_constant__ GenericArgs a) {
  const int64_t n = a.n;
  for (int64_t i = a.lo + static_cast<int64_t>(blockIdx.z) * kGz + threadIdx.z; i < a.hi;
       i += static_cast<int64_t>(gridDim.z) * kGz)
    for (int64_t j = 1 + static_cast<int64_t>(blockIdx.y) * kGy + threadIdx.y; j < n - 1;
         j += static_cast<int64_t>(gridDim.y) * kGy)
      for (int64_t k = 1 + static_cast<int64_t>(blockIdx.x) * kGx + threadIdx.x; k < n - 1;
           k += static_cast<int64_t>(gridDim.x) * kGx) {
        const double c = *at(a.in, i, j, k);
        *at(a.out, i, j, k) = 0.125 * (*at(a.in, i + 1, j, k) - 2.0 * c + *at(a.in, i - 1, j, k)) +
                              0.125 * (*at(a.in, i, j + 1, k) - 2.0 * c + *at(a.in, i, j - 1, k)) +
                              0.125 * (*at(a.in, i, j, k + 1) - 2.0 * c + *at(a.in, i, j, k - 1)) +
                              c;
      }
}

void launch_generic(const bbmm_launch_info* info, void* p) {
  const GenericArgs& a = *static_cast<const GenericArgs*>(p);
  const dim3 block(kGx, kGy, kGz);
  const dim3 grid(
      static_cast<unsigned>((a.n - 2 + kGx - 1) / kGx),
      static_cast<unsigned>(std::min<int64_t>((a.n - 2 + kGy - 1) / kGy, kMaxGridYZ)),
      static_cast<unsigned>(std::min<int64_t>((a.hi - a.lo + kGz - 1) / kGz, kMaxGridYZ)));
  heat_generic<<<grid, block, 0, static_cast<cudaStream_t>(info->queue)>>>(a);
}

std::string launch(bbmm_tile* t, const bbmm_view& src, const bbmm_view& dst, int64_t lo, int64_t hi,
                   int64_t n, stencil::LaunchCounts* counts) {
  bbmm_status st;
  const int64_t m = n - 2;
  const KernelShape shape = kernel_shape();
  if (src.npieces == 1 && dst.npieces == 1 && (m + shape.by - 1) / shape.by <= kMaxGridYZ &&
      (hi - lo + shape.chunk - 1) / shape.chunk <= kMaxGridYZ) {
    const int64_t first[3] = {lo, 1, 1};
    SingleArgs a;
    a.in = static_cast<const double*>(bbmm_piece_at(&src.pieces[0], sizeof(double), 3, first));
    a.out = static_cast<double*>(bbmm_piece_at(&dst.pieces[0], sizeof(double), 3, first));
    a.in_plane = src.pieces[0].stride[0];
    a.in_row = src.pieces[0].stride[1];
    a.out_plane = dst.pieces[0].stride[0];
    a.out_row = dst.pieces[0].stride[1];
    a.planes = hi - lo;
    a.m = m;
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
  for (int64_t i = blockIdx.z; i < n; i += gridDim.z)
    for (int64_t j = blockIdx.y * static_cast<int64_t>(blockDim.y) + threadIdx.y; j < n;
         j += static_cast<int64_t>(gridDim.y) * blockDim.y)
      for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
        a[(i * n + j) * n + k] = init_value(i, j, k, n);
        b[(i * n + j) * n + k] = init_value(i, j, k, n);
      }
}

__global__ void ref_step(const double* a, double* b, int64_t n) {
  for (int64_t i = 1 + blockIdx.z * static_cast<int64_t>(blockDim.z) + threadIdx.z; i < n - 1;
       i += static_cast<int64_t>(gridDim.z) * blockDim.z)
    for (int64_t j = 1 + blockIdx.y * static_cast<int64_t>(blockDim.y) + threadIdx.y; j < n - 1;
         j += static_cast<int64_t>(gridDim.y) * blockDim.y)
      for (int64_t k = 1 + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < n - 1;
           k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t e = (i * n + j) * n + k;
        b[e] = 0.125 * (a[e + n * n] - 2.0 * a[e] + a[e - n * n]) +
               0.125 * (a[e + n] - 2.0 * a[e] + a[e - n]) +
               0.125 * (a[e + 1] - 2.0 * a[e] + a[e - 1]) + a[e];
      }
}

#define REF_CUDA(call)                                                                \
  do {                                                                                \
    const cudaError_t e_ = (call);                                                    \
    if (e_ != cudaSuccess) return std::string(#call) + ": " + cudaGetErrorString(e_); \
  } while (0)

// The same computation on GPU 0 with plain CUDA: its own input, kernels and buffers.
std::string reference(double* ra, double* rb, int64_t n, int steps) {
  const size_t bytes = static_cast<size_t>(n * n * n) * sizeof(double);
  double *a = nullptr, *b = nullptr;
  REF_CUDA(cudaSetDevice(0));
  REF_CUDA(cudaMalloc(&a, bytes));
  REF_CUDA(cudaMalloc(&b, bytes));
  const unsigned yz = static_cast<unsigned>(std::min<int64_t>(n, 65535));
  ref_init<<<dim3(1, std::max(1u, yz / 8), yz), dim3(128, 8)>>>(a, b, n);
  REF_CUDA(cudaGetLastError());
  const dim3 block(32, 4, 2);
  const dim3 grid(static_cast<unsigned>((n + 31) / 32),
                  static_cast<unsigned>(std::min<int64_t>((n + 3) / 4, 65535)),
                  static_cast<unsigned>(std::min<int64_t>((n + 1) / 2, 65535)));
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

// Own planes read all but their 4 corner elements, halo planes their (n-2)^2 interior;
// (n-2)^2 written per plane. In: A but its 12 edges ((n-2)^3 interior + 6 faces of
// (n-2)^2), and B's 6 faces (read in phase 2 before any write); out: both interiors.
stencil::Traffic traffic(int64_t n, int steps, const stencil::Partition& p) {
  stencil::Traffic t;
  if (steps == 0) return t;
  const int64_t m = n - 2;
  t.device = stencil::device_bytes(p, steps, n * n - 4, m * m, m * m);
  t.h2d_min = static_cast<uint64_t>(m * m * m + 12 * m * m) * sizeof(double);
  t.d2h_min = static_cast<uint64_t>(2 * m * m * m) * sizeof(double);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  // This program calls CUDA before it creates the runtime (device count, the reference
  // run), which would keep CUDA's lazy module loading: the first launch of each kernel
  // would then wait until its GPU is idle, on libbbmm's issue thread (docs/runtime.md).
  setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
  const stencil::Sample s{
      "heat3d", "heat3d_cuda", 3,  BBMM_BACKEND_CUDA, init,
      launch,   cpu_loop,      66, reference,         "the CUDA reference (one GPU, no libbbmm)",
      traffic};
  stencil::Options o;
  o.n = 256;
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
