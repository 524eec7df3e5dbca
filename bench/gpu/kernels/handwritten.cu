// handwritten_kernels: straightforward hand-written CUDA kernels of six bbmmc samples, the
// yardstick for the kernels of the bbmmc-compiled programs (issue 11, "Kernel speed"):
//
//   handwritten_kernels heat2d   N STEPS          [options]
//   handwritten_kernels fdtd2d   NX NY TMAX       [options]
//   handwritten_kernels heat3d   N STEPS          [options]
//   handwritten_kernels jacobi1d N STEPS          [options]
//   handwritten_kernels gemm     NI NJ NK [RUNS]  [options]   (RUNS timed runs, default 1)
//   handwritten_kernels bscholes N [RUNS]         [options]   (default 5)
//   handwritten_kernels --ceiling [--bytes SIZE] [--reps R] [--device D]
// options:
//   --verify / --no-verify  compare with a CPU run of the sample's own C loop nest (default:
//                           only when that run is small, <= 2e9 operations and <= 1 GiB)
//   --grid-cap B            at most B blocks per grid dimension (tests the grid-stride loops)
//   --host-check            no GPU: run the kernels' element functions in host loops and
//                           compare them with the C loop nest, bit for bit (a test of this
//                           program: same expressions, same order)
//   --device D              the GPU to use (default 0)
//   --plan                  no GPU: print the PLAN line (roofline bytes, operations and the
//                           arrays' footprint of a step) and exit
//
// The kernels are what a CUDA programmer writes first: one kernel per phase of the loop nest,
// launched in the order of the C source; one element per thread in grid-stride loops; 2-D:
// 32x8 threads, threadIdx.x along the contiguous last dimension; 3-D: 32x8 over (k, j) and
// blockIdx.z over i; 1-D: 256 threads; gemm: one thread per C[i][j], 32x8 blocks, the k loop
// inside. Each element is computed by the same expression as in the C source, in the same
// order, so with -fmad=false (handwritten_kernels_nofma) the results equal the C program's up
// to the math library (bscholes: log, exp, erfc); the default build (FMA contraction) is the
// one to time. The input is the sample's main.c's (sample_value of samples/common/sample.h,
// copied below), initialised on the device; the arrays are cudaMalloc'ed.
//
// Timing: stencils (heat2d, fdtd2d, heat3d, jacobi1d) run their STEPS time steps with a CUDA
// event between steps; the first step is the warm-up, seconds_per_step is the mean of the
// others. gemm and bscholes have no time loop: a step is the whole loop nest, run once as
// warm-up and then RUNS times (gemm's C re-initialised before each run, outside the timing).
//
// Output, one line per run (plus lines starting with '#'):
//   KERNEL sample=heat2d impl=handwritten n=.. steps=.. seconds_per_step=.. bytes_per_step=..
//          flops_per_step=.. gbps=.. verified=0|1 timed_steps=.. min_seconds_per_step=..
//          max_rel_err=..|- fmad=0|1
//   CEILING device=0 dev_bw=.. memcpy_bw=.. fp64_peak=..      (--ceiling, bytes/s and FLOP/s)
//   PLAN sample=heat2d n=.. steps=.. bytes_per_step=.. flops_per_step=.. footprint_bytes=..
//   HOSTCHECK sample=heat2d n=.. steps=.. max_rel_err=.. passed=0|1        (--host-check)
// bytes_per_step is the compulsory traffic of a step (the roofline bytes): per phase, every
// element the phase reads counted once plus every element it writes counted once (8 bytes
// each), no reuse between phases; each sample's rule is spelled out at its bytes_per_step().
// flops_per_step counts the +, -, *, / of the C source as written (a library call counts 1).
// Exit codes: 0 ok, 1 usage or CUDA error, 2 verification failed, 77 no GPU visible (SKIP).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../bench_common.cuh"

#ifndef HK_FMAD
#define HK_FMAD 1  // handwritten_kernels_nofma is built with -fmad=false -DHK_FMAD=0
#endif

// The samples' loop nests, compiled from samples/<name>/<name>.c as they are, their
// functions renamed reference_<name> (bench/gpu/kernels/CMakeLists.txt): the CPU reference.
// A C parameter `double A[n][n]` is a `double (*)[n]`, passed as a plain pointer.
extern "C" {
void reference_heat2d(int tsteps, int n, double* A, double* B);
void reference_fdtd2d(int tmax, int nx, int ny, double* ex, double* ey, double* hz, double* fict);
void reference_heat3d(int tsteps, int n, double* A, double* B);
void reference_jacobi1d(int tsteps, int n, double* A, double* B);
void reference_gemm(int ni, int nj, int nk, double alpha, double beta, double* C, double* A,
                    double* B);
void reference_bscholes(int n, double r, double* S, double* K, double* T, double* V, double* d1,
                        double* d2, double* call, double* put);
}

namespace {

#define HK_CUDA(call)                                                        \
  do {                                                                       \
    const cudaError_t e_ = (call);                                           \
    if (e_ != cudaSuccess) {                                                 \
      std::fprintf(stderr, "handwritten_kernels: %s: %s (line %d)\n", #call, \
                   cudaGetErrorString(e_), __LINE__);                        \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)

// samples/common/sample.h's sample_value (unsigned long is 64 bits there): a deterministic
// value in [0, 1) for element `k` of input `seed`.
__host__ __device__ inline double sample_value(int64_t k, int seed) {
  uint64_t x =
      static_cast<uint64_t>(k) * 2654435761ull + static_cast<uint64_t>(seed) * 40503ull + 12345ull;
  x ^= x >> 13;
  x *= 0x5bd1e995ull;
  x ^= x >> 15;
  return static_cast<double>(x % 1000003ull) / 1000003.0;
}

// ------------------------------------------------------------------------------ kernels

constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridYZ = 65535;

template <class F>
__global__ void grid_1d(int64_t i0, int64_t i1, F f) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = i0 + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < i1;
       i += stride) {
    f(i);
  }
}

// threadIdx.x runs along j, the contiguous last dimension.
template <class F>
__global__ void grid_2d(int64_t i0, int64_t i1, int64_t j0, int64_t j1, F f) {
  const int64_t si = static_cast<int64_t>(gridDim.y) * blockDim.y;
  const int64_t sj = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = i0 + static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; i < i1;
       i += si) {
    for (int64_t j = j0 + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < j1;
         j += sj) {
      f(i, j);
    }
  }
}

// 32x8 threads over (k, j), k contiguous; blockIdx.z over i.
template <class F>
__global__ void grid_3d(int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t k0, int64_t k1,
                        F f) {
  const int64_t sj = static_cast<int64_t>(gridDim.y) * blockDim.y;
  const int64_t sk = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = i0 + blockIdx.z; i < i1; i += gridDim.z) {
    for (int64_t j = j0 + static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; j < j1;
         j += sj) {
      for (int64_t k = k0 + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < k1;
           k += sk) {
        f(i, j, k);
      }
    }
  }
}

// Blocks covering `extent` elements, `per_block` per block, at most `limit` (and `cap`).
unsigned blocks_for(int64_t extent, int64_t per_block, int64_t limit, int64_t cap) {
  const int64_t b = (extent + per_block - 1) / per_block;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min({b, limit, cap})));
}

// Runs phases as CUDA kernels on `stream`.
struct DeviceExec {
  cudaStream_t stream = nullptr;
  int64_t grid_cap = kMaxGridX;

  template <class F>
  void for_1d(int64_t i0, int64_t i1, F f) const {
    if (i1 <= i0) return;
    grid_1d<<<blocks_for(i1 - i0, 256, kMaxGridX, grid_cap), 256, 0, stream>>>(i0, i1, f);
    HK_CUDA(cudaGetLastError());
  }
  template <class F>
  void for_2d(int64_t i0, int64_t i1, int64_t j0, int64_t j1, F f) const {
    if (i1 <= i0 || j1 <= j0) return;
    const dim3 grid(blocks_for(j1 - j0, 32, kMaxGridX, grid_cap),
                    blocks_for(i1 - i0, 8, kMaxGridYZ, grid_cap));
    grid_2d<<<grid, dim3(32, 8), 0, stream>>>(i0, i1, j0, j1, f);
    HK_CUDA(cudaGetLastError());
  }
  template <class F>
  void for_3d(int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t k0, int64_t k1, F f) const {
    if (i1 <= i0 || j1 <= j0 || k1 <= k0) return;
    const dim3 grid(blocks_for(k1 - k0, 32, kMaxGridX, grid_cap),
                    blocks_for(j1 - j0, 8, kMaxGridYZ, grid_cap),
                    blocks_for(i1 - i0, 1, kMaxGridYZ, grid_cap));
    grid_3d<<<grid, dim3(32, 8), 0, stream>>>(i0, i1, j0, j1, k0, k1, f);
    HK_CUDA(cudaGetLastError());
  }
};

// Runs the same element functions in host loops (--host-check). The phases have no
// dependence between their elements, so the order of the loops does not matter.
struct HostExec {
  template <class F>
  void for_1d(int64_t i0, int64_t i1, F f) const {
    for (int64_t i = i0; i < i1; ++i) f(i);
  }
  template <class F>
  void for_2d(int64_t i0, int64_t i1, int64_t j0, int64_t j1, F f) const {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = j0; j < j1; ++j) f(i, j);
  }
  template <class F>
  void for_3d(int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t k0, int64_t k1, F f) const {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = j0; j < j1; ++j)
        for (int64_t k = k0; k < k1; ++k) f(i, j, k);
  }
};

// ------------------------------------------------------------ element functions
// Each is the statement of the C source for one element, the same expression in the same
// order; pointers are to the first element of the (row-major) array.

// How main.c fills an input: offset + scale * sample_value(k, seed), zeros, or k itself.
struct InitArray {
  enum Kind { kValue, kZero, kIndex };
  double* p;
  Kind kind;
  int seed;
  double offset, scale;
  __host__ __device__ void operator()(int64_t k) const {
    p[k] = kind == kValue  ? offset + scale * sample_value(k, seed)
           : kind == kZero ? 0.0
                           : static_cast<double>(k);
  }
};

// heat2d, both phases (the second with A and B swapped):
//   B[i][j] = 0.2 * (A[i][j] + A[i][j - 1] + A[i][j + 1] + A[i + 1][j] + A[i - 1][j]);
struct Heat2dPoint {
  const double* src;
  double* dst;
  int64_t n;
  __host__ __device__ void operator()(int64_t i, int64_t j) const {
    const double* __restrict__ a = src;
    double* __restrict__ b = dst;
    const int64_t c = i * n + j;
    b[c] = 0.2 * (a[c] + a[c - 1] + a[c + 1] + a[c + n] + a[c - n]);
  }
};

// fdtd2d phase 1: ey[0][j] = fict[t];
struct FdtdSource {
  double* ey;
  const double* fict;
  int64_t t;
  __host__ __device__ void operator()(int64_t j) const { ey[j] = fict[t]; }
};

// fdtd2d phase 2: ey[i][j] = ey[i][j] - 0.5 * (hz[i][j] - hz[i - 1][j]);
struct FdtdEy {
  double* ey_;
  const double* hz_;
  int64_t ny;
  __host__ __device__ void operator()(int64_t i, int64_t j) const {
    double* __restrict__ ey = ey_;
    const double* __restrict__ hz = hz_;
    const int64_t c = i * ny + j;
    ey[c] = ey[c] - 0.5 * (hz[c] - hz[c - ny]);
  }
};

// fdtd2d phase 3: ex[i][j] = ex[i][j] - 0.5 * (hz[i][j] - hz[i][j - 1]);
struct FdtdEx {
  double* ex_;
  const double* hz_;
  int64_t ny;
  __host__ __device__ void operator()(int64_t i, int64_t j) const {
    double* __restrict__ ex = ex_;
    const double* __restrict__ hz = hz_;
    const int64_t c = i * ny + j;
    ex[c] = ex[c] - 0.5 * (hz[c] - hz[c - 1]);
  }
};

// fdtd2d phase 4:
//   hz[i][j] = hz[i][j] - 0.7 * (ex[i][j + 1] - ex[i][j] + ey[i + 1][j] - ey[i][j]);
struct FdtdHz {
  double* hz_;
  const double* ex_;
  const double* ey_;
  int64_t ny;
  __host__ __device__ void operator()(int64_t i, int64_t j) const {
    double* __restrict__ hz = hz_;
    const double* __restrict__ ex = ex_;
    const double* __restrict__ ey = ey_;
    const int64_t c = i * ny + j;
    hz[c] = hz[c] - 0.7 * (ex[c + 1] - ex[c] + ey[c + ny] - ey[c]);
  }
};

// heat3d, both phases (the second with A and B swapped):
//   B[i][j][k] = 0.125 * (A[i + 1][j][k] - 2.0 * A[i][j][k] + A[i - 1][j][k])
//              + 0.125 * (A[i][j + 1][k] - 2.0 * A[i][j][k] + A[i][j - 1][k])
//              + 0.125 * (A[i][j][k + 1] - 2.0 * A[i][j][k] + A[i][j][k - 1])
//              + A[i][j][k];
struct Heat3dPoint {
  const double* src;
  double* dst;
  int64_t n;
  __host__ __device__ void operator()(int64_t i, int64_t j, int64_t k) const {
    const double* __restrict__ a = src;
    double* __restrict__ b = dst;
    const int64_t nn = n * n;
    const int64_t c = i * nn + j * n + k;
    // clang-format off
    b[c] = 0.125 * (a[c + nn] - 2.0 * a[c] + a[c - nn])
         + 0.125 * (a[c + n] - 2.0 * a[c] + a[c - n])
         + 0.125 * (a[c + 1] - 2.0 * a[c] + a[c - 1])
         + a[c];
    // clang-format on
  }
};

// jacobi1d, both phases: B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1]);
struct Jacobi1dPoint {
  const double* src;
  double* dst;
  __host__ __device__ void operator()(int64_t i) const {
    const double* __restrict__ a = src;
    double* __restrict__ b = dst;
    b[i] = 0.33333 * (a[i - 1] + a[i] + a[i + 1]);
  }
};

// gemm, one C[i][j]: C[i][j] *= beta; then for k: C[i][j] += alpha * A[i][k] * B[k][j];
// (per element, the order of the C source; the value stays in a register).
struct GemmElement {
  double* c_;
  const double* a_;
  const double* b_;
  int64_t nj, nk;
  double alpha, beta;
  __host__ __device__ void operator()(int64_t i, int64_t j) const {
    const double* __restrict__ a = a_;
    const double* __restrict__ b = b_;
    double acc = c_[i * nj + j];
    acc *= beta;
    for (int64_t k = 0; k < nk; ++k) acc += alpha * a[i * nk + k] * b[k * nj + j];
    c_[i * nj + j] = acc;
  }
};

// bscholes, one option i: the four statements of the C source (d2 reads the d1 just
// computed, call and put the d1 and d2).
struct BscholesOption {
  const double *s_, *k_, *t_, *v_;
  double *d1_, *d2_, *call_, *put_;
  double r;
  __host__ __device__ void operator()(int64_t i) const {
    using std::erfc;
    using std::exp;
    using std::log;
    using std::sqrt;
    const double S = s_[i], K = k_[i], T = t_[i], V = v_[i];
    const double d1 = (log(S / K) + (r + 0.5 * V * V) * T) / (V * sqrt(T));
    const double d2 = d1 - V * sqrt(T);
    d1_[i] = d1;
    d2_[i] = d2;
    call_[i] = S * 0.5 * erfc(-d1 * 0.70710678118654752440) -
               K * exp(-r * T) * 0.5 * erfc(-d2 * 0.70710678118654752440);
    put_[i] = K * exp(-r * T) * 0.5 * erfc(d2 * 0.70710678118654752440) -
              S * 0.5 * erfc(d1 * 0.70710678118654752440);
  }
};

// --------------------------------------------------------------------- samples

// An array of a sample: its name, element count, main.c's initial values, and whether the
// loop nest writes it (written arrays are compared, and re-initialised between the runs of
// gemm).
struct ArraySpec {
  const char* name;
  int64_t count;
  InitArray::Kind kind;
  int seed;
  double offset, scale;
  bool written;
};

ArraySpec values(const char* name, int64_t count, int seed, bool written) {
  return ArraySpec{name, count, InitArray::kValue, seed, 0.0, 1.0, written};
}

// One sample at given sizes. Thread-compatible (const methods only).
class Problem {
 public:
  virtual ~Problem() = default;
  virtual const char* name() const = 0;
  // The sizes as KERNEL-line fields without the steps, e.g. "n=32768".
  virtual std::string sizes() const = 0;
  // Time steps of the loop nest; 1 for gemm and bscholes, whose whole nest is the step.
  virtual int steps() const = 0;
  virtual bool whole_nest_is_step() const { return false; }
  virtual std::vector<ArraySpec> arrays() const = 0;
  // Step `t` (all its phases, in the order of the C source) on arrays `p` (in the order
  // of arrays()).
  virtual void step(const DeviceExec& e, double* const* p, int t) const = 0;
  virtual void step(const HostExec& e, double* const* p, int t) const = 0;
  // The C loop nest of the sample on host arrays `p`: all steps.
  virtual void reference(double* const* p) const = 0;
  virtual double bytes_per_step() const = 0;
  virtual double flops_per_step() const = 0;
};

// Implements both step() overloads with the derived class's `run_step` template.
template <class Derived>
class ProblemBase : public Problem {
 public:
  void step(const DeviceExec& e, double* const* p, int t) const override {
    static_cast<const Derived*>(this)->run_step(e, p, t);
  }
  void step(const HostExec& e, double* const* p, int t) const override {
    static_cast<const Derived*>(this)->run_step(e, p, t);
  }
};

constexpr double kDouble = sizeof(double);

class Heat2d : public ProblemBase<Heat2d> {
 public:
  Heat2d(int n, int steps) : n_(n), steps_(steps) {}
  const char* name() const override { return "heat2d"; }
  std::string sizes() const override { return "n=" + std::to_string(n_); }
  int steps() const override { return steps_; }
  std::vector<ArraySpec> arrays() const override {
    const int64_t sz = int64_t{n_} * n_;
    return {values("A", sz, 1, true), values("B", sz, 2, true)};
  }
  template <class E>
  void run_step(const E& e, double* const* p, int) const {
    e.for_2d(1, n_ - 1, 1, n_ - 1, Heat2dPoint{p[0], p[1], n_});
    e.for_2d(1, n_ - 1, 1, n_ - 1, Heat2dPoint{p[1], p[0], n_});
  }
  void reference(double* const* p) const override { reference_heat2d(steps_, n_, p[0], p[1]); }
  // Per phase: reads the source's n^2 - 4 elements (all but the corners), writes the
  // (n-2)^2 interior of the destination; two phases.
  double bytes_per_step() const override {
    const double n = n_, m = n_ - 2.0;
    return 2 * kDouble * ((n * n - 4) + m * m);
  }
  // 4 additions and 1 multiplication per interior point and phase.
  double flops_per_step() const override {
    const double m = n_ - 2.0;
    return 2 * 5 * m * m;
  }

 private:
  int n_, steps_;
};

class Fdtd2d : public ProblemBase<Fdtd2d> {
 public:
  Fdtd2d(int nx, int ny, int tmax) : nx_(nx), ny_(ny), tmax_(tmax) {}
  const char* name() const override { return "fdtd2d"; }
  std::string sizes() const override {
    return "nx=" + std::to_string(nx_) + " ny=" + std::to_string(ny_);
  }
  int steps() const override { return tmax_; }
  std::vector<ArraySpec> arrays() const override {
    const int64_t sz = int64_t{nx_} * ny_;
    return {values("ex", sz, 1, true), values("ey", sz, 2, true), values("hz", sz, 3, true),
            ArraySpec{"fict", tmax_, InitArray::kIndex, 0, 0.0, 1.0, false}};
  }
  template <class E>
  void run_step(const E& e, double* const* p, int t) const {
    double *ex = p[0], *ey = p[1], *hz = p[2], *fict = p[3];
    e.for_1d(0, ny_, FdtdSource{ey, fict, t});
    e.for_2d(1, nx_, 0, ny_, FdtdEy{ey, hz, ny_});
    e.for_2d(0, nx_, 1, ny_, FdtdEx{ex, hz, ny_});
    e.for_2d(0, nx_ - 1, 0, ny_ - 1, FdtdHz{hz, ex, ey, ny_});
  }
  void reference(double* const* p) const override {
    reference_fdtd2d(tmax_, nx_, ny_, p[0], p[1], p[2], p[3]);
  }
  // Phase 1 reads fict[t], writes ey's row 0 (ny). Phase 2 reads ey's rows 1.. and all of
  // hz, writes ey's rows 1.. ((nx-1) ny each). Phase 3 reads ex's columns 1.. and all of hz,
  // writes ex's columns 1.. (nx (ny-1) each). Phase 4 reads hz's (nx-1)(ny-1), ex's rows
  // 0..nx-2 ((nx-1) ny) and ey's columns 0..ny-2 (nx (ny-1)), writes hz's (nx-1)(ny-1).
  double bytes_per_step() const override {
    const double x = nx_, y = ny_;
    const double p1 = 1 + y;
    const double p2 = (x - 1) * y + x * y + (x - 1) * y;
    const double p3 = x * (y - 1) + x * y + x * (y - 1);
    const double p4 = 2 * (x - 1) * (y - 1) + (x - 1) * y + x * (y - 1);
    return kDouble * (p1 + p2 + p3 + p4);
  }
  // Phases 2 and 3: 3 operations per element; phase 4: 5.
  double flops_per_step() const override {
    const double x = nx_, y = ny_;
    return 3 * (x - 1) * y + 3 * x * (y - 1) + 5 * (x - 1) * (y - 1);
  }

 private:
  int nx_, ny_, tmax_;
};

class Heat3d : public ProblemBase<Heat3d> {
 public:
  Heat3d(int n, int steps) : n_(n), steps_(steps) {}
  const char* name() const override { return "heat3d"; }
  std::string sizes() const override { return "n=" + std::to_string(n_); }
  int steps() const override { return steps_; }
  std::vector<ArraySpec> arrays() const override {
    const int64_t sz = int64_t{n_} * n_ * n_;
    return {values("A", sz, 1, true), values("B", sz, 2, true)};
  }
  template <class E>
  void run_step(const E& e, double* const* p, int) const {
    e.for_3d(1, n_ - 1, 1, n_ - 1, 1, n_ - 1, Heat3dPoint{p[0], p[1], n_});
    e.for_3d(1, n_ - 1, 1, n_ - 1, 1, n_ - 1, Heat3dPoint{p[1], p[0], n_});
  }
  void reference(double* const* p) const override { reference_heat3d(steps_, n_, p[0], p[1]); }
  // Per phase: reads the source's (n-2)^3 interior plus its 6 (n-2)^2 face points (the
  // 7-point star never reaches edges or corners), writes the (n-2)^3 interior; two phases.
  double bytes_per_step() const override {
    const double m = n_ - 2.0;
    return 2 * kDouble * ((m * m * m + 6 * m * m) + m * m * m);
  }
  // 15 operations per interior point and phase (3 x 4 in the brackets, 3 additions).
  double flops_per_step() const override {
    const double m = n_ - 2.0;
    return 2 * 15 * m * m * m;
  }

 private:
  int n_, steps_;
};

class Jacobi1d : public ProblemBase<Jacobi1d> {
 public:
  Jacobi1d(int n, int steps) : n_(n), steps_(steps) {}
  const char* name() const override { return "jacobi1d"; }
  std::string sizes() const override { return "n=" + std::to_string(n_); }
  int steps() const override { return steps_; }
  std::vector<ArraySpec> arrays() const override {
    return {values("A", n_, 1, true), values("B", n_, 2, true)};
  }
  template <class E>
  void run_step(const E& e, double* const* p, int) const {
    e.for_1d(1, n_ - 1, Jacobi1dPoint{p[0], p[1]});
    e.for_1d(1, n_ - 1, Jacobi1dPoint{p[1], p[0]});
  }
  void reference(double* const* p) const override { reference_jacobi1d(steps_, n_, p[0], p[1]); }
  // Per phase: reads all n of the source, writes n - 2; two phases.
  double bytes_per_step() const override { return 2 * kDouble * (n_ + (n_ - 2.0)); }
  // 2 additions and 1 multiplication per point and phase.
  double flops_per_step() const override { return 2 * 3 * (n_ - 2.0); }

 private:
  int n_, steps_;
};

class Gemm : public ProblemBase<Gemm> {
 public:
  static constexpr double kAlpha = 1.5, kBeta = 1.2;  // main.c's
  Gemm(int ni, int nj, int nk) : ni_(ni), nj_(nj), nk_(nk) {}
  const char* name() const override { return "gemm"; }
  std::string sizes() const override {
    return "ni=" + std::to_string(ni_) + " nj=" + std::to_string(nj_) +
           " nk=" + std::to_string(nk_);
  }
  int steps() const override { return 1; }
  bool whole_nest_is_step() const override { return true; }
  std::vector<ArraySpec> arrays() const override {
    return {values("C", int64_t{ni_} * nj_, 1, true), values("A", int64_t{ni_} * nk_, 2, false),
            values("B", int64_t{nk_} * nj_, 3, false)};
  }
  template <class E>
  void run_step(const E& e, double* const* p, int) const {
    e.for_2d(0, ni_, 0, nj_, GemmElement{p[0], p[1], p[2], nj_, nk_, kAlpha, kBeta});
  }
  void reference(double* const* p) const override {
    reference_gemm(ni_, nj_, nk_, kAlpha, kBeta, p[0], p[1], p[2]);
  }
  // Reads C, A and B once, writes C once.
  double bytes_per_step() const override {
    const double i = ni_, j = nj_, k = nk_;
    return kDouble * (2 * i * j + i * k + k * j);
  }
  // C *= beta: 1 per element; C += alpha * A * B: 3 per (i, j, k). (The usual gemm count,
  // 2 ni nj nk, is 2/3 of the second term.)
  double flops_per_step() const override {
    const double i = ni_, j = nj_, k = nk_;
    return i * j + 3 * i * j * k;
  }

 private:
  int ni_, nj_, nk_;
};

class Bscholes : public ProblemBase<Bscholes> {
 public:
  static constexpr double kRate = 0.02;  // main.c's r
  explicit Bscholes(int n) : n_(n) {}
  const char* name() const override { return "bscholes"; }
  std::string sizes() const override { return "n=" + std::to_string(n_); }
  int steps() const override { return 1; }
  bool whole_nest_is_step() const override { return true; }
  std::vector<ArraySpec> arrays() const override {
    // main.c: spot, strike, years, volatility; the outputs start at zero.
    return {ArraySpec{"S", n_, InitArray::kValue, 1, 10.0, 90.0, false},
            ArraySpec{"K", n_, InitArray::kValue, 2, 10.0, 90.0, false},
            ArraySpec{"T", n_, InitArray::kValue, 3, 0.25, 2.0, false},
            ArraySpec{"V", n_, InitArray::kValue, 4, 0.1, 0.4, false},
            ArraySpec{"d1", n_, InitArray::kZero, 0, 0.0, 0.0, true},
            ArraySpec{"d2", n_, InitArray::kZero, 0, 0.0, 0.0, true},
            ArraySpec{"call", n_, InitArray::kZero, 0, 0.0, 0.0, true},
            ArraySpec{"put", n_, InitArray::kZero, 0, 0.0, 0.0, true}};
  }
  template <class E>
  void run_step(const E& e, double* const* p, int) const {
    e.for_1d(0, n_, BscholesOption{p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], kRate});
  }
  void reference(double* const* p) const override {
    reference_bscholes(n_, kRate, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
  }
  // Reads S, K, T, V once, writes d1, d2, call, put once.
  double bytes_per_step() const override { return kDouble * 8.0 * n_; }
  // Per option: d1 10, d2 3, call 15, put 13 (log, sqrt, exp, erfc count 1 each).
  double flops_per_step() const override { return 41.0 * n_; }

 private:
  int n_;
};

// ----------------------------------------------------------------- the driver

struct Options {
  int verify = -1;  // -1: when small
  int64_t grid_cap = kMaxGridX;
  bool host_check = false;
  bool plan = false;
  int device = 0;
  int runs = -1;  // gemm, bscholes: timed runs (-1: the default)
};

void usage(FILE* f) {
  std::fprintf(f,
               "usage: handwritten_kernels SAMPLE SIZES... [options]\n"
               "  heat2d N STEPS | fdtd2d NX NY TMAX | heat3d N STEPS | jacobi1d N STEPS |\n"
               "  gemm NI NJ NK [RUNS] | bscholes N [RUNS]\n"
               "  options: --verify, --no-verify, --grid-cap B, --host-check, --plan, --device D\n"
               "       handwritten_kernels --ceiling [--bytes SIZE] [--reps R] [--device D]\n");
}

using bbmm_bench::parse_int;

// The sample named by `name` with sizes `sizes` (positional arguments), or null after
// printing why not. gemm and bscholes take an optional last RUNS, stored in `opt`.
std::unique_ptr<Problem> make_problem(const std::string& name, const std::vector<int64_t>& sz,
                                      Options* opt) {
  auto want = [&](size_t lo, size_t hi, const char* what) {
    if (sz.size() < lo || sz.size() > hi) {
      std::fprintf(stderr, "handwritten_kernels: %s takes %s\n", name.c_str(), what);
      return false;
    }
    return true;
  };
  if (name == "heat2d" && want(2, 2, "N STEPS")) return std::make_unique<Heat2d>(sz[0], sz[1]);
  if (name == "fdtd2d" && want(3, 3, "NX NY TMAX"))
    return std::make_unique<Fdtd2d>(sz[0], sz[1], sz[2]);
  if (name == "heat3d" && want(2, 2, "N STEPS")) return std::make_unique<Heat3d>(sz[0], sz[1]);
  if (name == "jacobi1d" && want(2, 2, "N STEPS")) return std::make_unique<Jacobi1d>(sz[0], sz[1]);
  if (name == "gemm" && want(3, 4, "NI NJ NK [RUNS]")) {
    opt->runs = sz.size() == 4 ? static_cast<int>(sz[3]) : 1;
    return std::make_unique<Gemm>(sz[0], sz[1], sz[2]);
  }
  if (name == "bscholes" && want(1, 2, "N [RUNS]")) {
    opt->runs = sz.size() == 2 ? static_cast<int>(sz[1]) : 5;
    return std::make_unique<Bscholes>(sz[0]);
  }
  if (name != "heat2d" && name != "fdtd2d" && name != "heat3d" && name != "jacobi1d" &&
      name != "gemm" && name != "bscholes") {
    std::fprintf(stderr, "handwritten_kernels: unknown sample '%s'\n", name.c_str());
  }
  return nullptr;
}

// samples/common/sample.h's comparison: the largest relative error of `got` against
// `want` (absolute where the expected value is tiny); NaN counts as infinite.
double max_rel_error(const double* want, const double* got, int64_t n, int64_t* where) {
  double worst = 0;
  *where = -1;
  for (int64_t k = 0; k < n; ++k) {
    const double d = std::fabs(got[k] - want[k]);
    const double scale = std::fabs(want[k]) > 1e-300 ? std::fabs(want[k]) : 1.0;
    const double e = d / scale;
    if (!(e <= worst)) {
      worst = std::isnan(e) ? INFINITY : e;
      *where = k;
    }
  }
  return worst;
}

constexpr double kTolerance = 1e-10;

// Compares the written arrays of `got` with `want`; prints one '#' line per array.
// Returns the largest relative error.
double compare(const Problem& pb, const std::vector<std::vector<double>>& want,
               const std::vector<std::vector<double>>& got) {
  const std::vector<ArraySpec> specs = pb.arrays();
  double worst = 0;
  for (size_t a = 0; a < specs.size(); ++a) {
    if (!specs[a].written) continue;
    int64_t where = -1;
    const double e = max_rel_error(want[a].data(), got[a].data(), specs[a].count, &where);
    std::printf("#   %-5s %12lld doubles, max relative error %.3g", specs[a].name,
                static_cast<long long>(specs[a].count), e);
    if (e > kTolerance) {
      std::printf("  <-- MISMATCH at %lld: C %.17g, kernels %.17g", static_cast<long long>(where),
                  want[a][where], got[a][where]);
    }
    std::printf("\n");
    worst = std::max(worst, e);
  }
  return worst;
}

// Host arrays of `pb`, initialised like main.c, and the C loop nest run on them.
std::vector<std::vector<double>> reference_result(const Problem& pb) {
  const std::vector<ArraySpec> specs = pb.arrays();
  std::vector<std::vector<double>> host(specs.size());
  std::vector<double*> ptr(specs.size());
  for (size_t a = 0; a < specs.size(); ++a) {
    host[a].resize(specs[a].count);
    ptr[a] = host[a].data();
    const ArraySpec& s = specs[a];
    HostExec{}.for_1d(0, s.count, InitArray{ptr[a], s.kind, s.seed, s.offset, s.scale});
  }
  pb.reference(ptr.data());
  return host;
}

// --host-check: the element functions in host loops against the C loop nest.
int host_check(const Problem& pb) {
  const std::vector<ArraySpec> specs = pb.arrays();
  std::vector<std::vector<double>> host(specs.size());
  std::vector<double*> ptr(specs.size());
  for (size_t a = 0; a < specs.size(); ++a) {
    host[a].resize(specs[a].count);
    ptr[a] = host[a].data();
    const ArraySpec& s = specs[a];
    HostExec{}.for_1d(0, s.count, InitArray{ptr[a], s.kind, s.seed, s.offset, s.scale});
  }
  for (int t = 0; t < pb.steps(); ++t) pb.step(HostExec{}, ptr.data(), t);
  std::printf(
      "# host check of %s %s steps=%d: element functions in host loops vs the C loop "
      "nest\n",
      pb.name(), pb.sizes().c_str(), pb.steps());
  const double err = compare(pb, reference_result(pb), host);
  // Both sides are host code built without FMA contraction (x86-64 baseline) and call the
  // same libm, so the same expressions in the same order agree bit for bit; a reordered
  // sum (within the GPU tolerance) fails here.
  const bool ok = err == 0;
  std::printf("HOSTCHECK sample=%s %s steps=%d max_rel_err=%.3g passed=%d\n", pb.name(),
              pb.sizes().c_str(), pb.steps(), err, ok ? 1 : 0);
  return ok ? 0 : 2;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

int run_on_gpu(const Problem& pb, const Options& opt) {
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess || visible == 0) {
    std::printf("SKIP: handwritten_kernels needs a GPU (none visible)\n");
    return 77;
  }
  if (opt.device >= visible) {
    std::fprintf(stderr, "handwritten_kernels: --device %d, but %d GPU(s) visible\n", opt.device,
                 visible);
    return 1;
  }
  HK_CUDA(cudaSetDevice(opt.device));
  cudaDeviceProp prop;
  HK_CUDA(cudaGetDeviceProperties(&prop, opt.device));

  const std::vector<ArraySpec> specs = pb.arrays();
  double footprint = 0;
  for (const ArraySpec& s : specs) footprint += kDouble * s.count;
  size_t free_bytes = 0, total_bytes = 0;
  HK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  std::printf("# %s %s steps=%d on GPU %d (%s): %.3g GB in %zu arrays (%.3g GB free)\n", pb.name(),
              pb.sizes().c_str(), pb.steps(), opt.device, prop.name, footprint / 1e9, specs.size(),
              free_bytes / 1e9);
  if (footprint > static_cast<double>(free_bytes)) {
    std::fprintf(stderr, "handwritten_kernels: the arrays need %.3g GB, the GPU has %.3g GB free\n",
                 footprint / 1e9, free_bytes / 1e9);
    return 1;
  }
  const int64_t work = static_cast<int64_t>(pb.flops_per_step() * pb.steps());
  const bool verify =
      opt.verify >= 0 ? opt.verify == 1 : (work <= 2000000000 && footprint <= 1 << 30);

  DeviceExec dev;
  dev.grid_cap = opt.grid_cap;
  HK_CUDA(cudaStreamCreateWithFlags(&dev.stream, cudaStreamNonBlocking));
  std::vector<double*> ptr(specs.size(), nullptr);
  for (size_t a = 0; a < specs.size(); ++a) {
    HK_CUDA(cudaMalloc(&ptr[a], std::max<size_t>(8, specs[a].count * sizeof(double))));
  }
  auto init = [&](bool written_only) {
    for (size_t a = 0; a < specs.size(); ++a) {
      const ArraySpec& s = specs[a];
      if (written_only && !s.written) continue;
      dev.for_1d(0, s.count, InitArray{ptr[a], s.kind, s.seed, s.offset, s.scale});
    }
  };
  init(false);
  HK_CUDA(cudaStreamSynchronize(dev.stream));

  // Per step: its start and end events. Stencils: the steps of the time loop back to back
  // (the end of one is the start of the next); gemm, bscholes: 1 warm-up + runs.
  const int n_timed_runs = pb.whole_nest_is_step() ? opt.runs : std::max(1, pb.steps() - 1);
  const int n_steps = pb.whole_nest_is_step() ? 1 + opt.runs : pb.steps();
  std::vector<cudaEvent_t> begin(n_steps), end(n_steps);
  for (int s = 0; s < n_steps; ++s) {
    HK_CUDA(cudaEventCreate(&begin[s]));
    HK_CUDA(cudaEventCreate(&end[s]));
  }
  for (int s = 0; s < n_steps; ++s) {
    if (pb.whole_nest_is_step() && s > 0) init(true);  // gemm: C from its initial values
    HK_CUDA(cudaEventRecord(begin[s], dev.stream));
    pb.step(dev, ptr.data(), pb.whole_nest_is_step() ? 0 : s);
    HK_CUDA(cudaEventRecord(end[s], dev.stream));
  }
  HK_CUDA(cudaStreamSynchronize(dev.stream));
  std::vector<double> seconds;
  for (int s = n_steps == 1 ? 0 : 1; s < n_steps; ++s) {  // step 0: warm-up
    float ms = 0;
    HK_CUDA(cudaEventElapsedTime(&ms, begin[s], end[s]));
    seconds.push_back(ms * 1e-3);
  }
  if (n_steps == 1) std::printf("# one step only: the warm-up step is the timed one\n");
  double sum = 0;
  for (double s : seconds) sum += s;
  const double mean = sum / seconds.size();
  const double min = *std::min_element(seconds.begin(), seconds.end());
  const double max = *std::max_element(seconds.begin(), seconds.end());
  std::printf(
      "# seconds per step over %zu timed steps: mean %.4g, min %.4g, median %.4g, "
      "max %.4g\n",
      seconds.size(), mean, min, median(seconds), max);
  if (static_cast<int>(seconds.size()) != n_timed_runs) {
    std::fprintf(stderr, "handwritten_kernels: internal: %zu timed steps, expected %d\n",
                 seconds.size(), n_timed_runs);
    return 1;
  }

  double err = -1;
  if (verify) {
    std::vector<std::vector<double>> got(specs.size());
    for (size_t a = 0; a < specs.size(); ++a) {
      got[a].resize(specs[a].count);
      HK_CUDA(cudaMemcpy(got[a].data(), ptr[a], specs[a].count * sizeof(double),
                         cudaMemcpyDeviceToHost));
    }
    std::printf("# verification against the C loop nest on the CPU:\n");
    err = compare(pb, reference_result(pb), got);
  }
  for (size_t a = 0; a < specs.size(); ++a) HK_CUDA(cudaFree(ptr[a]));
  for (int s = 0; s < n_steps; ++s) {
    HK_CUDA(cudaEventDestroy(begin[s]));
    HK_CUDA(cudaEventDestroy(end[s]));
  }
  HK_CUDA(cudaStreamDestroy(dev.stream));

  const bool passed = verify && err <= kTolerance;
  char err_text[32] = "-";
  if (verify) std::snprintf(err_text, sizeof err_text, "%.3g", err);
  std::printf(
      "KERNEL sample=%s impl=handwritten %s steps=%d seconds_per_step=%.6g "
      "bytes_per_step=%.6g flops_per_step=%.6g gbps=%.6g verified=%d timed_steps=%zu "
      "min_seconds_per_step=%.6g max_rel_err=%s fmad=%d\n",
      pb.name(), pb.sizes().c_str(), pb.steps(), mean, pb.bytes_per_step(), pb.flops_per_step(),
      pb.bytes_per_step() / mean / 1e9, passed ? 1 : 0, seconds.size(), min, err_text, HK_FMAD);
  if (verify && !passed) {
    std::printf("handwritten_kernels: %s: verification FAILED (max relative error %s > %g)\n",
                pb.name(), err_text, kTolerance);
    return 2;
  }
  return 0;
}

// ------------------------------------------------------------------ --ceiling

// bench/gpu/ceilings.cu's method (bbmm_bench::copy_kernel of bench/gpu/bench_common.cuh):
// a grid-stride copy kernel (16-byte loads and stores,
// 8 blocks of 256 threads per SM) over a large buffer, bytes read + written over the best
// of `reps` timed runs after a warm-up. Also a cudaMemcpy device-to-device, counted alike.
// FP64 FMA units per SM (no tensor cores): 64 on sm_90 (H100, H200), 32 on sm_80 (A100) and
// sm_70 (V100); 0 (unknown) otherwise. Hopper's FP64 tensor cores double that peak, which a
// kernel of scalar FMAs cannot use.
int fp64_fma_per_sm(int major, int minor) {
  if (major == 9 && minor == 0) return 64;
  if ((major == 8 && minor == 0) || (major == 7 && minor == 0)) return 32;
  return 0;
}

int ceiling(int argc, char** argv, int first) {
  size_t bytes = size_t{1} << 30;
  int64_t reps = 5, device = 0;
  for (int i = first; i < argc; i += 2) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    bool ok = value != nullptr;
    if (ok && arg == "--bytes") {
      ok = bbmm_bench::parse_bytes(value, &bytes);
    } else if (ok && arg == "--reps") {
      ok = parse_int(value, 1, 1000, &reps);
    } else if (ok && arg == "--device") {
      ok = parse_int(value, 0, 1023, &device);
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "handwritten_kernels: bad argument '%s'\n", arg.c_str());
      usage(stderr);
      return 1;
    }
  }
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess || visible == 0) {
    std::printf("SKIP: handwritten_kernels needs a GPU (none visible)\n");
    return 77;
  }
  if (device >= visible) {
    std::fprintf(stderr, "handwritten_kernels: --device %lld, but %d GPU(s) visible\n",
                 static_cast<long long>(device), visible);
    return 1;
  }
  const int d = static_cast<int>(device);
  HK_CUDA(cudaSetDevice(d));
  cudaDeviceProp prop;
  HK_CUDA(cudaGetDeviceProperties(&prop, d));
  int sms = 0, clock_khz = 0;
  HK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d));
  HK_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, d));
  cudaStream_t stream;
  cudaEvent_t start, stop;
  HK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  HK_CUDA(cudaEventCreate(&start));
  HK_CUDA(cudaEventCreate(&stop));
  void *src = nullptr, *dst = nullptr;
  HK_CUDA(cudaMalloc(&src, bytes));
  HK_CUDA(cudaMalloc(&dst, bytes));
  HK_CUDA(cudaMemsetAsync(src, 1, bytes, stream));
  double best_kernel = 0, best_memcpy = 0;
  for (int use_memcpy = 0; use_memcpy < 2; ++use_memcpy) {
    for (int r = 0; r <= reps; ++r) {  // r == 0: warm-up
      HK_CUDA(cudaEventRecord(start, stream));
      if (use_memcpy) {
        HK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
      } else {
        bbmm_bench::copy_kernel<<<sms * 8, 256, 0, stream>>>(
            static_cast<const double2*>(src), static_cast<double2*>(dst), bytes / sizeof(double2));
        HK_CUDA(cudaGetLastError());
      }
      HK_CUDA(cudaEventRecord(stop, stream));
      HK_CUDA(cudaEventSynchronize(stop));
      float ms = 0;
      HK_CUDA(cudaEventElapsedTime(&ms, start, stop));
      const double bw = 2.0 * bytes / (ms * 1e-3);
      double& best = use_memcpy ? best_memcpy : best_kernel;
      if (r > 0 && ms > 0) best = std::max(best, bw);
    }
  }
  HK_CUDA(cudaFree(src));
  HK_CUDA(cudaFree(dst));
  HK_CUDA(cudaEventDestroy(start));
  HK_CUDA(cudaEventDestroy(stop));
  HK_CUDA(cudaStreamDestroy(stream));
  const double fp64 = 2.0 * fp64_fma_per_sm(prop.major, prop.minor) * sms * clock_khz * 1e3;
  std::printf(
      "# GPU %d (%s, sm_%d%d, %d SMs at %.0f MHz, %.1f GB): copy kernel %.1f GB/s, "
      "cudaMemcpy D2D %.1f GB/s (read+write, %zu bytes, best of %lld); FP64 peak "
      "%.1f TFLOPS without tensor cores (0: unknown for this GPU)\n",
      d, prop.name, prop.major, prop.minor, sms, clock_khz / 1e3, prop.totalGlobalMem / 1e9,
      best_kernel / 1e9, best_memcpy / 1e9, bytes, static_cast<long long>(reps), fp64 / 1e12);
  std::printf("CEILING device=%d dev_bw=%.6g memcpy_bw=%.6g fp64_peak=%.6g\n", d, best_kernel,
              best_memcpy, fp64);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  if (std::strcmp(argv[1], "--ceiling") == 0) return ceiling(argc, argv, 2);
  Options opt;
  std::vector<int64_t> sizes;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    int64_t v = 0;
    if (arg == "--verify") {
      opt.verify = 1;
    } else if (arg == "--no-verify") {
      opt.verify = 0;
    } else if (arg == "--host-check") {
      opt.host_check = true;
    } else if (arg == "--plan") {
      opt.plan = true;
    } else if ((arg == "--grid-cap" || arg == "--device") && i + 1 < argc &&
               parse_int(argv[i + 1], arg == "--device" ? 0 : 1, 1 << 30, &v)) {
      ++i;
      if (arg == "--device") {
        opt.device = static_cast<int>(v);
      } else {
        opt.grid_cap = v;
      }
    } else if (arg.rfind("--", 0) != 0 && parse_int(argv[i], 1, 2147483647, &v)) {
      sizes.push_back(v);
    } else {
      std::fprintf(stderr, "handwritten_kernels: bad argument '%s'\n", arg.c_str());
      usage(stderr);
      return 1;
    }
  }
  std::unique_ptr<Problem> pb = make_problem(argv[1], sizes, &opt);
  if (pb == nullptr) {
    usage(stderr);
    return 1;
  }
  if (pb->whole_nest_is_step() && opt.runs < 1) {
    std::fprintf(stderr, "handwritten_kernels: RUNS must be >= 1\n");
    return 1;
  }
  if (opt.plan) {
    double footprint = 0;
    for (const ArraySpec& s : pb->arrays()) footprint += kDouble * s.count;
    std::printf(
        "PLAN sample=%s %s steps=%d bytes_per_step=%.6g flops_per_step=%.6g "
        "footprint_bytes=%.6g\n",
        pb->name(), pb->sizes().c_str(), pb->steps(), pb->bytes_per_step(), pb->flops_per_step(),
        footprint);
    return 0;
  }
  return opt.host_check ? host_check(*pb) : run_on_gpu(*pb, opt);
}
