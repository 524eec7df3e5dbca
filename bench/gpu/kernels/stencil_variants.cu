// stencil_variants: which loop structure should bbmmc's CUDA kernels have? The heat2d and
// heat3d steps of the samples, each written in the shapes a generator can emit, timed on one
// GPU against the roofline (every element a step reads and writes, once):
//
//   stencil_variants heat2d N [REPS] [--block BXxBY] [--march R]
//   stencil_variants heat3d N [REPS] [--block BXxBY] [--march R]
//
// Variants (all index arithmetic as the generated kernels do it: 32-bit unsigned, wrapping):
//   gen        the current generated form: march loop outermost, then grid-stride loops
//              over the other coordinates, every neighbour loaded
//   inner      grid-stride loops outside, the march loop innermost (one thread walks its
//              column), every neighbour loaded (the ones along the march from L1)
//   inner_u4   inner with the march loop unrolled 4 times
//   rot        inner with the neighbours along the march kept in registers (one new load
//              per step)
//   rot_u4     rot unrolled 4 times
//   rot_lb6, rot_u2_lb4, rot_u4_lb4: rot (unrolled 1, 2, 4 times) with launch bounds of 256
//              threads and 6 or 4 blocks per SM (so fewer registers, more warps)
//   hand       heat3d_cuda's / jacobi2d_cuda's form: pointer increments, registers
//
// Output: one line per variant, VARIANT sample=.. variant=.. block=.. march=.. seconds=..
// roofline=.. max_rel_diff=.. (against `gen`). Exit 77 when no GPU is visible.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

#define CK(x)                                                                     \
  do {                                                                            \
    cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)

struct Geo {
  int64_t lo[3], hi[3];  // per mapped coordinate: 0 = x (contiguous), 1 = y, 2 = z
  int64_t s0, s1;        // strides of the outer two array dimensions
  int64_t march;
};

typedef uint32_t U;
typedef int32_t I;

// ---- heat2d: B[i][j] = 0.2 * (A[i][j] + A[i][j-1] + A[i][j+1] + A[i+1][j] + A[i-1][j]),
// x: j, y: i (marched).
#define A2(i, j) a[(I)((U)(i) * (U)g.s0 + (U)(j))]
#define B2(i, j) b[(I)((U)(i) * (U)g.s0 + (U)(j))]

__global__ void h2_gen(Geo g, const double* __restrict__ a, double* __restrict__ b) {
  for (int64_t m = g.lo[1] + ((int64_t)blockIdx.y * blockDim.y + threadIdx.y) * g.march; m < g.hi[1];
       m += (int64_t)gridDim.y * blockDim.y * g.march)
    for (int64_t i = m; i < g.hi[1] && i < m + g.march; ++i)
      for (int64_t j = g.lo[0] + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < g.hi[0];
           j += (int64_t)gridDim.x * blockDim.x)
        B2(i, j) = 0.2 * (A2(i, j) + A2(i, j - 1) + A2(i, j + 1) + A2(i + 1, j) + A2(i - 1, j));
}

template <int UNROLL>
__global__ void h2_inner(Geo g, const double* __restrict__ a, double* __restrict__ b) {
  for (int64_t m = g.lo[1] + ((int64_t)blockIdx.y * blockDim.y + threadIdx.y) * g.march; m < g.hi[1];
       m += (int64_t)gridDim.y * blockDim.y * g.march)
    for (int64_t j = g.lo[0] + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < g.hi[0];
         j += (int64_t)gridDim.x * blockDim.x) {
      const int64_t end = m + g.march < g.hi[1] ? m + g.march : g.hi[1];
#pragma unroll UNROLL
      for (int64_t i = m; i < end; ++i)
        B2(i, j) = 0.2 * (A2(i, j) + A2(i, j - 1) + A2(i, j + 1) + A2(i + 1, j) + A2(i - 1, j));
    }
}

template <int UNROLL, int MINB>
__global__ void __launch_bounds__(256, MINB) h2_rot(Geo g, const double* __restrict__ a, double* __restrict__ b) {
  for (int64_t m = g.lo[1] + ((int64_t)blockIdx.y * blockDim.y + threadIdx.y) * g.march; m < g.hi[1];
       m += (int64_t)gridDim.y * blockDim.y * g.march)
    for (int64_t j = g.lo[0] + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < g.hi[0];
         j += (int64_t)gridDim.x * blockDim.x) {
      const int64_t end = m + g.march < g.hi[1] ? m + g.march : g.hi[1];
      double r0 = A2(m - 1, j), r1 = A2(m, j);
#pragma unroll UNROLL
      for (int64_t i = m; i < end; ++i) {
        const double r2 = A2(i + 1, j);
        B2(i, j) = 0.2 * (r1 + A2(i, j - 1) + A2(i, j + 1) + r2 + r0);
        r0 = r1;
        r1 = r2;
      }
    }
}

__global__ void h2_hand(Geo g, const double* __restrict__ a, double* __restrict__ b) {
  const int64_t j = g.lo[0] + (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t i0 = g.lo[1] + ((int64_t)blockIdx.y * blockDim.y + threadIdx.y) * g.march;
  if (j >= g.hi[0] || i0 >= g.hi[1]) return;
  const int64_t i1 = i0 + g.march < g.hi[1] ? i0 + g.march : g.hi[1];
  const double* c = a + i0 * g.s0 + j;
  double* o = b + i0 * g.s0 + j;
  double up = c[-g.s0], mid = c[0];
  for (int64_t i = i0; i < i1; ++i) {
    const double down = c[g.s0];
    *o = 0.2 * (mid + c[-1] + c[1] + down + up);
    up = mid;
    mid = down;
    c += g.s0;
    o += g.s0;
  }
}

// ---- heat3d (samples/heat3d): x: k, y: j, z: i (marched).
#define A3(i, j, k) a[(I)((U)(i) * (U)g.s0 + (U)(j) * (U)g.s1 + (U)(k))]
#define B3(i, j, k) b[(I)((U)(i) * (U)g.s0 + (U)(j) * (U)g.s1 + (U)(k))]
#define H3(up, c, dn, jp, jm, kp, km)                                                 \
  (0.125 * ((up) - 2.0 * (c) + (dn)) + 0.125 * ((jp) - 2.0 * (c) + (jm)) +             \
   0.125 * ((kp) - 2.0 * (c) + (km)) + (c))

__global__ void h3_gen(Geo g, const double* __restrict__ a, double* __restrict__ b) {
  for (int64_t m = g.lo[2] + ((int64_t)blockIdx.z * blockDim.z + threadIdx.z) * g.march; m < g.hi[2];
       m += (int64_t)gridDim.z * blockDim.z * g.march)
    for (int64_t i = m; i < g.hi[2] && i < m + g.march; ++i)
      for (int64_t j = g.lo[1] + (int64_t)blockIdx.y * blockDim.y + threadIdx.y; j < g.hi[1];
           j += (int64_t)gridDim.y * blockDim.y)
        for (int64_t k = g.lo[0] + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < g.hi[0];
             k += (int64_t)gridDim.x * blockDim.x)
          B3(i, j, k) = H3(A3(i + 1, j, k), A3(i, j, k), A3(i - 1, j, k), A3(i, j + 1, k),
                           A3(i, j - 1, k), A3(i, j, k + 1), A3(i, j, k - 1));
}

template <int UNROLL>
__global__ void h3_inner(Geo g, const double* __restrict__ a, double* __restrict__ b) {
  for (int64_t m = g.lo[2] + ((int64_t)blockIdx.z * blockDim.z + threadIdx.z) * g.march; m < g.hi[2];
       m += (int64_t)gridDim.z * blockDim.z * g.march)
    for (int64_t j = g.lo[1] + (int64_t)blockIdx.y * blockDim.y + threadIdx.y; j < g.hi[1];
         j += (int64_t)gridDim.y * blockDim.y)
      for (int64_t k = g.lo[0] + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < g.hi[0];
           k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t end = m + g.march < g.hi[2] ? m + g.march : g.hi[2];
#pragma unroll UNROLL
        for (int64_t i = m; i < end; ++i)
          B3(i, j, k) = H3(A3(i + 1, j, k), A3(i, j, k), A3(i - 1, j, k), A3(i, j + 1, k),
                           A3(i, j - 1, k), A3(i, j, k + 1), A3(i, j, k - 1));
      }
}

template <int UNROLL, int MINB>
__global__ void __launch_bounds__(256, MINB) h3_rot(Geo g, const double* __restrict__ a, double* __restrict__ b) {
  for (int64_t m = g.lo[2] + ((int64_t)blockIdx.z * blockDim.z + threadIdx.z) * g.march; m < g.hi[2];
       m += (int64_t)gridDim.z * blockDim.z * g.march)
    for (int64_t j = g.lo[1] + (int64_t)blockIdx.y * blockDim.y + threadIdx.y; j < g.hi[1];
         j += (int64_t)gridDim.y * blockDim.y)
      for (int64_t k = g.lo[0] + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < g.hi[0];
           k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t end = m + g.march < g.hi[2] ? m + g.march : g.hi[2];
        double r0 = A3(m - 1, j, k), r1 = A3(m, j, k);
#pragma unroll UNROLL
        for (int64_t i = m; i < end; ++i) {
          const double r2 = A3(i + 1, j, k);
          B3(i, j, k) = H3(r2, r1, r0, A3(i, j + 1, k), A3(i, j - 1, k), A3(i, j, k + 1),
                           A3(i, j, k - 1));
          r0 = r1;
          r1 = r2;
        }
      }
}

__global__ void h3_hand(Geo g, const double* __restrict__ a, double* __restrict__ b) {
  const int64_t k = g.lo[0] + (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t j = g.lo[1] + (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
  const int64_t p0 = g.lo[2] + (int64_t)blockIdx.z * g.march;
  if (k >= g.hi[0] || j >= g.hi[1] || p0 >= g.hi[2]) return;
  const int64_t p1 = p0 + g.march < g.hi[2] ? p0 + g.march : g.hi[2];
  const double* c = a + p0 * g.s0 + j * g.s1 + k;
  double* o = b + p0 * g.s0 + j * g.s1 + k;
  double below = c[-g.s0], mid = c[0];
  for (int64_t p = p0; p < p1; ++p) {
    const double above = c[g.s0];
    *o = H3(above, mid, below, c[g.s1], c[-g.s1], c[1], c[-1]);
    below = mid;
    mid = above;
    c += g.s0;
    o += g.s0;
  }
}

typedef void (*Kernel)(Geo, const double*, double*);

struct Variant {
  const char* name;
  Kernel k2, k3;
};

const Variant kVariants[] = {
    {"gen", h2_gen, h3_gen},
    {"inner", h2_inner<1>, h3_inner<1>},
    {"inner_u4", h2_inner<4>, h3_inner<4>},
    {"rot", h2_rot<1, 1>, h3_rot<1, 1>},
    {"rot_u4", h2_rot<4, 1>, h3_rot<4, 1>},
    {"rot_lb6", h2_rot<1, 6>, h3_rot<1, 6>},
    {"rot_u2_lb4", h2_rot<2, 4>, h3_rot<2, 4>},
    {"rot_u4_lb4", h2_rot<4, 4>, h3_rot<4, 4>},
    {"hand", h2_hand, h3_hand},
};

__global__ void init(double* p, size_t n, double scale) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = scale * (double)((i * 2654435761u) % 1000003u) / 1000003.0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: stencil_variants heat2d|heat3d N [REPS] [--block BXxBY] [--march R]\n");
    return 1;
  }
  const std::string sample = argv[1];
  const int64_t n = std::atoll(argv[2]);
  int reps = 10;
  int bx = 32, by = 8;
  int64_t march = 32;
  for (int i = 3; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--block") && i + 1 < argc) {
      if (std::sscanf(argv[++i], "%dx%d", &bx, &by) != 2) return 1;
    } else if (!std::strcmp(argv[i], "--march") && i + 1 < argc) {
      march = std::atoll(argv[++i]);
    } else {
      reps = std::atoi(argv[i]);
    }
  }
  const bool three = sample == "heat3d";
  if (!three && sample != "heat2d") return 1;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("SKIP no GPU visible\n");
    return 77;
  }
  const size_t elems = three ? (size_t)n * n * n : (size_t)n * n;
  double *a, *b, *ref;
  CK(cudaMalloc(&a, elems * 8));
  CK(cudaMalloc(&b, elems * 8));
  CK(cudaMalloc(&ref, elems * 8));
  init<<<1024, 256>>>(a, elems, 1.0);
  CK(cudaGetLastError());
  Geo g{};
  g.s0 = three ? n * n : n;
  g.s1 = three ? n : 0;
  g.march = march;
  for (int d = 0; d < 3; ++d) {
    g.lo[d] = 1;
    g.hi[d] = n - 1;
  }
  if (!three) g.lo[2] = 0, g.hi[2] = 1;
  const int64_t inner = n - 2;
  const dim3 block(bx, by, 1);
  dim3 grid;
  if (three) {
    grid = dim3((unsigned)((inner + bx - 1) / bx), (unsigned)((inner + by - 1) / by),
                (unsigned)((inner + march - 1) / march));
  } else {
    grid = dim3((unsigned)((inner + bx - 1) / bx),
                (unsigned)((inner + (int64_t)by * march - 1) / ((int64_t)by * march)), 1);
  }
  const double bytes = 2.0 * 8.0 * (double)inner * inner * (three ? inner : 1);
  // The roofline counts each interior element read once and written once; the halo reads
  // are left out (under 1%).
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<double> hr(1), hb(1);
  const size_t check = elems < (size_t)1 << 26 ? elems : (size_t)1 << 26;
  hr.resize(check);
  hb.resize(check);
  for (const Variant& v : kVariants) {
    const Kernel k = three ? v.k3 : v.k2;
    dim3 gr = grid;
    if (three && k == h3_hand) gr.z = (unsigned)((inner + march - 1) / march);
    if (!three && k == h2_hand) gr.y = (unsigned)((inner + (int64_t)by * march - 1) / ((int64_t)by * march));
    CK(cudaMemset(b, 0, elems * 8));
    k<<<gr, block>>>(g, a, b);  // warm-up
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    float best = 1e30f, total = 0;
    for (int r = 0; r < reps; ++r) {
      CK(cudaEventRecord(e0));
      k<<<gr, block>>>(g, a, b);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      best = ms < best ? ms : best;
      total += ms;
    }
    double diff = 0;
    if (v.k2 == h2_gen) {
      CK(cudaMemcpy(ref, b, elems * 8, cudaMemcpyDeviceToDevice));
    } else {
      CK(cudaMemcpy(hr.data(), ref + (elems - check), check * 8, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(hb.data(), b + (elems - check), check * 8, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < check; ++i) {
        const double d = std::fabs(hr[i] - hb[i]) / (std::fabs(hr[i]) > 1e-300 ? std::fabs(hr[i]) : 1.0);
        diff = d > diff ? d : diff;
      }
    }
    const double mean = total / reps / 1e3;
    std::printf("VARIANT sample=%s n=%lld variant=%s block=%dx%d march=%lld seconds=%.6f best=%.6f "
                "tbps=%.3f max_rel_diff=%.2e\n",
                sample.c_str(), (long long)n, v.name, bx, by, (long long)march, mean, best / 1e3,
                bytes / mean / 1e12, diff);
  }
  return 0;
}
