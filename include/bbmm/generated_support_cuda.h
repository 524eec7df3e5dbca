/* Helpers of the CUDA files bbmmc generates (--target=cuda, docs/codegen.md): integer
 * arithmetic of the bounds isl prints (host and device), CUDA error checks, the thread
 * block, march and grid of a launch (with their run-time overrides), and the piece lookup
 * of the multi-piece kernels. Uses libbbmm's public C API only.
 *
 * A generated CUDA file sets the generation-time defaults, then includes this header:
 *
 *   #define BBMM_GEN_CUDA_BLOCK_X 32    (--block=X,Y,Z; defaults 32, 8, 1)
 *   #define BBMM_GEN_CUDA_BLOCK_Y 8
 *   #define BBMM_GEN_CUDA_BLOCK_Z 1
 *   #define BBMM_GEN_CUDA_MARCH 32      (--march=R; default 32)
 *   #include "bbmm/generated_support_cuda.h"
 *
 * CUDA C++ (nvcc). Every function is static: each generated file has its own copy.
 * Thread-safety: all functions may be called from any thread (libbbmm's CUDA backend
 * runs launch functions on one issue thread per device); the environment is read once. */
#ifndef BBMM_GENERATED_SUPPORT_CUDA_H_
#define BBMM_GENERATED_SUPPORT_CUDA_H_

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "bbmm/bbmm.h"
#include "bbmm/view.h"

/* The register bound of every generated kernel. Default __launch_bounds__(1024): every
   block shape BBMM_CUDA_BLOCK accepts (up to 1024 threads) can launch, as registers are
   capped at 64 per thread. Building with -DBBMM_CUDA_MAX_REGISTERS=N (16..64) caps them at
   N instead (__maxnreg__(N)): more resident threads for a kernel that needs more than N
   without it (occupancy), at the price of spills when the body needs them
   (docs/codegen.md). */
#ifdef BBMM_CUDA_MAX_REGISTERS
#if BBMM_CUDA_MAX_REGISTERS < 16 || BBMM_CUDA_MAX_REGISTERS > 64
#error "BBMM_CUDA_MAX_REGISTERS must be 16..64 (a kernel of 1024 threads needs <= 64)"
#endif
#define BBMM_GEN_CUDA_KERNEL_BOUND __maxnreg__(BBMM_CUDA_MAX_REGISTERS)
#else
#define BBMM_GEN_CUDA_KERNEL_BOUND __launch_bounds__(1024)
#endif

#ifndef BBMM_GEN_CUDA_BLOCK_X
#define BBMM_GEN_CUDA_BLOCK_X 32
#endif
#ifndef BBMM_GEN_CUDA_BLOCK_Y
#define BBMM_GEN_CUDA_BLOCK_Y 8
#endif
#ifndef BBMM_GEN_CUDA_BLOCK_Z
#define BBMM_GEN_CUDA_BLOCK_Z 1
#endif
#ifndef BBMM_GEN_CUDA_MARCH
#define BBMM_GEN_CUDA_MARCH 32
#endif
/* The threads of the one block that runs a wavefront's steps (bbmmc
   --wavefront-steps=block): they share each step's iterations, a barrier between steps. */
#ifndef BBMM_GEN_CUDA_WAVEFRONT_THREADS
#define BBMM_GEN_CUDA_WAVEFRONT_THREADS 1024
#endif

#define BBMM_GEN_UNUSED __attribute__((unused))

/* --- Arithmetic of isl's bounds (isl's min, max and floord, renamed) ------------------- */

static __host__ __device__ inline BBMM_GEN_UNUSED int64_t bbmm_min(int64_t a, int64_t b) {
  return a < b ? a : b;
}
static __host__ __device__ inline BBMM_GEN_UNUSED int64_t bbmm_max(int64_t a, int64_t b) {
  return a > b ? a : b;
}
/* floor(n / d) for d != 0, for every sign of n and d. */
static __host__ __device__ inline BBMM_GEN_UNUSED int64_t bbmm_floord(int64_t n, int64_t d) {
  int64_t q = n / d;
  return (n % d != 0 && ((n < 0) != (d < 0))) ? q - 1 : q;
}

/* --- Errors ---------------------------------------------------------------------------- */

/* A failed CUDA call ends the program (a launch function cannot return an error). */
static inline BBMM_GEN_UNUSED void bbmm_cu_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    bbmm_fatal(1, "%s failed: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
  }
}

/* --- Settings read from the environment once ------------------------------------------ */

/* "X,Y[,Z]" with X*Y*Z in [1, 1024] into shape; 0 when malformed. */
static inline BBMM_GEN_UNUSED int bbmm_cu_parse_block(const char* v, int shape[3]) {
  int x = 0, y = 0, z = 1, used = -1, used_z = -1;
  if (sscanf(v, "%d,%d%n", &x, &y, &used) != 2 || used < 0) return 0;
  if (v[used] == ',') {
    if (sscanf(v + used + 1, "%d%n", &z, &used_z) != 1 || used_z < 0) return 0;
    used += 1 + used_z;
  }
  if (v[used] != '\0' || x < 1 || y < 1 || z < 1 || (long)x * y * z > 1024) return 0;
  shape[0] = x;
  shape[1] = y;
  shape[2] = z;
  return 1;
}

/* A decimal integer in [lo, hi] into *out; 0 when malformed or out of range. */
static inline BBMM_GEN_UNUSED int bbmm_cu_parse_int(const char* v, long long lo, long long hi,
                                                    long long* out) {
  char* end;
  if (!v || !*v) return 0;
  const long long r = strtoll(v, &end, 10);
  if (*end || r < lo || r > hi) return 0;
  *out = r;
  return 1;
}

/* Sets *value from the environment variable "var" when it is set: a decimal integer in
   [lo, hi] ("what" describes that), or the program ends with a message naming it. */
static inline BBMM_GEN_UNUSED void bbmm_cu_env_int(const char* var, long long lo, long long hi,
                                                   const char* what, long long* value) {
  const char* v = getenv(var);
  if (v && *v && !bbmm_cu_parse_int(v, lo, hi, value)) {
    bbmm_fatal(1, "%s='%s' is not %s", var, v, what);
  }
}

/* The thread block shape: the generation-time default, or BBMM_CUDA_BLOCK=X,Y[,Z]. A
   kernel over k grid dimensions uses the first k components and folds the others into
   its last one (1-D: X*Y*Z threads along x; 2-D: X by Y*Z). */
static inline BBMM_GEN_UNUSED void bbmm_cu_block_shape(int shape[3]) {
  static int s[3] = {BBMM_GEN_CUDA_BLOCK_X, BBMM_GEN_CUDA_BLOCK_Y, BBMM_GEN_CUDA_BLOCK_Z};
  static std::once_flag once;
  std::call_once(once, [] {
    const char* v = getenv("BBMM_CUDA_BLOCK");
    if (v && *v && !bbmm_cu_parse_block(v, s)) {
      bbmm_fatal(1, "BBMM_CUDA_BLOCK='%s' is not X,Y[,Z] with X*Y*Z in [1, 1024]", v);
    }
  });
  shape[0] = s[0];
  shape[1] = s[1];
  shape[2] = s[2];
}

/* Values of the outermost grid coordinate each thread of a 2-D or 3-D kernel marches
   through: the generation-time default, or BBMM_CUDA_MARCH=R (1: one value per thread). */
static inline BBMM_GEN_UNUSED int64_t bbmm_cu_march(void) {
  static long long m = BBMM_GEN_CUDA_MARCH;
  static std::once_flag once;
  std::call_once(once, [] { bbmm_cu_env_int("BBMM_CUDA_MARCH", 1, 65536, "an integer in [1, 65536]", &m); });
  return m;
}

/* 1 when BBMM_PIECE_LOOKUP=element: multi-piece kernels find the piece of every element
   instead of once per access reference (slower, the same results: the tests run both);
   0 for "reference" (the default). */
static inline BBMM_GEN_UNUSED int64_t bbmm_cu_per_element(void) {
  static int64_t v = 0;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* e = getenv("BBMM_PIECE_LOOKUP");
    if (!e || !*e || strcmp(e, "reference") == 0) return;
    if (strcmp(e, "element") == 0) {
      v = 1;
      return;
    }
    bbmm_fatal(1, "BBMM_PIECE_LOOKUP='%s' is not 'reference' or 'element'", e);
  });
  return v;
}

/* At most this many blocks per grid dimension: BBMM_CUDA_GRID_CAP=B (tests the kernels'
   grid-stride loops with small grids), else 0 (the hardware limits only). */
static inline BBMM_GEN_UNUSED int64_t bbmm_cu_grid_cap(void) {
  static long long cap = 0;
  static std::once_flag once;
  std::call_once(once, [] {
    bbmm_cu_env_int("BBMM_CUDA_GRID_CAP", 1, 2147483647, "a positive integer", &cap);
  });
  return cap;
}

/* --- Launch shape ---------------------------------------------------------------------- */

/* The block and grid of a kernel over "dims" (0..3) grid coordinates with ranges
   [lo[d], hi[d]), block shape "shape" (bbmm_cu_block_shape), "march" values of the
   outermost coordinate per thread when dims >= 2, and at most "cap" blocks per dimension
   (0: none); false when a range is empty. Grids are capped at the hardware limits too
   (2^31 - 1 blocks in x, 65,535 in y and z): the kernels' grid-stride loops cover the
   rest. */
static inline BBMM_GEN_UNUSED bool bbmm_cu_shape_of(int dims, const int64_t* lo, const int64_t* hi,
                                                    const int shape[3], int64_t march, int64_t cap,
                                                    dim3* grid, dim3* block) {
  unsigned b[3] = {1, 1, 1};
  if (dims == 1) {
    b[0] = (unsigned)(shape[0] * shape[1] * shape[2]);
  } else if (dims == 2) {
    b[0] = (unsigned)shape[0];
    b[1] = (unsigned)(shape[1] * shape[2]);
  } else if (dims == 3) {
    b[0] = (unsigned)shape[0];
    b[1] = (unsigned)shape[1];
    b[2] = (unsigned)shape[2];
  }
  int64_t limit[3] = {2147483647, 65535, 65535};
  unsigned g[3] = {1, 1, 1};
  for (int d = 0; d < dims; ++d) {
    if (hi[d] <= lo[d]) return false;
    if (cap > 0 && cap < limit[d]) limit[d] = cap;
    const int64_t per_block = (int64_t)b[d] * (d >= 1 && d == dims - 1 ? march : 1);
    const int64_t n = (hi[d] - lo[d] + per_block - 1) / per_block;
    g[d] = (unsigned)(n < limit[d] ? n : limit[d]);
  }
  *grid = dim3(g[0], g[1], g[2]);
  *block = dim3(b[0], b[1], b[2]);
  return true;
}

/* Whether the grid-stride loops of a launch shaped "grid" x "block" by bbmm_cu_shape_of
   (march "march" along the outermost of 2 or 3 coordinates) compute only values that an
   int32_t holds, so that the single-piece kernel may count in 32 bits. Along coordinate d
   a counter starts at lo[d] + t * m (thread t of the grid's g[d] * b[d], m the march or 1),
   below lo[d] + stride with stride = g[d] * b[d] * m; it is compared with hi[d] before each
   step of "stride", so it stays below hi[d] + stride (lo[d] < hi[d]) and never goes below
   lo[d]; the march loop ends at min(hi[d], start + m). Fewer registers per thread: the
   counters of heat3d's kernel took 14 of its 58 (ptxas, sm_90). */
static inline BBMM_GEN_UNUSED bool bbmm_cu_fits32(int dims, const int64_t* lo, const int64_t* hi,
                                                  int64_t march, dim3 grid, dim3 block) {
  const int64_t g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
  for (int d = 0; d < dims; ++d) {
    const int64_t stride = g[d] * b[d] * (d >= 1 && d == dims - 1 ? march : 1);
    if (lo[d] < INT32_MIN || hi[d] > (int64_t)INT32_MAX - stride) return false;
  }
  return true;
}

/* The threads of a block along the outermost coordinate of a 2-D or 3-D launch, as
   bbmm_cu_shape_of folds the block shape "shape" (2-D: Y*Z). */
static inline BBMM_GEN_UNUSED int64_t bbmm_cu_outer_threads(int dims, const int shape[3]) {
  return dims == 2 ? (int64_t)shape[1] * shape[2] : (int64_t)shape[2];
}

/* The march of a 2-D or 3-D launch that fills the GPU: "march" halved (rounding up)
   until the grid bbmm_cu_shape_of makes with it has at least "min_blocks" blocks, or the
   march is 1. A tile's kernel marches fewer values of its outermost coordinate per
   thread when the tile is thin (many GPUs, many tiles per GPU): the multiprocessors stay
   busy, at the price of less reuse along that coordinate. 1-D launches do not march. */
static inline BBMM_GEN_UNUSED int64_t bbmm_cu_fill_march(int dims, const int64_t* lo,
                                                         const int64_t* hi, const int shape[3],
                                                         int64_t march, int64_t cap,
                                                         int64_t min_blocks) {
  if (dims < 2) return march;
  while (march > 1) {
    dim3 grid, block;
    if (!bbmm_cu_shape_of(dims, lo, hi, shape, march, cap, &grid, &block)) break;
    if ((int64_t)grid.x * grid.y * grid.z >= min_blocks) break;
    march = (march + 1) / 2;
  }
  return march;
}

/* The march that covers the outermost coordinate of a 2-D or 3-D launch with the same
   number of blocks as "march" but in equal shares: a tile of 48 planes marched 32 at a
   time has blocks of 32 and of 16 planes, and the launch lasts as long as the 32-plane
   ones; 24 each covers it in the same two blocks per column. Returns the least march m'
   <= march with blocks * threads * m' >= extent along that coordinate (threads: the
   block's extent there, as bbmm_cu_shape_of folds it). 1-D launches do not march. */
static inline BBMM_GEN_UNUSED int64_t bbmm_cu_balance_march(int dims, const int64_t* lo,
                                                            const int64_t* hi,
                                                            const int shape[3], int64_t march) {
  if (dims < 2 || march <= 1) return march;
  const int d = dims - 1;
  const int64_t extent = hi[d] - lo[d];
  if (extent <= 0) return march;
  const int64_t threads = bbmm_cu_outer_threads(dims, shape);
  const int64_t blocks = (extent + threads * march - 1) / (threads * march);
  const int64_t m = (extent + blocks * threads - 1) / (blocks * threads);
  return m < march ? m : march;
}

/* The march of a 2-D or 3-D launch estimated to end first on a device that runs
   "resident" blocks at once: for every count b of blocks along the outermost coordinate
   that a march <= "march" gives, the least march m_b covering the extent in b blocks (so
   balanced, as bbmm_cu_balance_march), costed as the waves of resident blocks
   the grid needs times the m_b + 1 units a block takes (its values and one for its start
   and halo); the cheapest, ties to the larger march. A kernel whose registers allow 4
   blocks of 256 threads per multiprocessor runs 528 at once on an H100: a 48-plane tile
   of 384 x 384 planes in 1,152 blocks of 24 planes takes 3 waves for 2.2 waves of work,
   in 3,456 blocks of 8 planes 7 for 6.5. Returns "march" for 1-D launches, for
   resident <= 0 and where the hardware limits cap the grid (grid-stride loops). */
static inline BBMM_GEN_UNUSED int64_t bbmm_cu_wave_march(int dims, const int64_t* lo,
                                                         const int64_t* hi, const int shape[3],
                                                         int64_t march, int64_t cap,
                                                         int64_t resident) {
  if (dims < 2 || resident <= 0 || march < 1) return march;
  const int d = dims - 1;
  const int64_t extent = hi[d] - lo[d];
  if (extent <= 0) return march;
  const int64_t threads = bbmm_cu_outer_threads(dims, shape);
  int64_t best = march, best_cost = -1;
  /* Marches from the largest down; each the least with its count of outer blocks. */
  for (int64_t m = march; m >= 1; --m) {
    const int64_t outer_blocks = (extent + threads * m - 1) / (threads * m);
    if (m > 1 && (extent + threads * (m - 1) - 1) / (threads * (m - 1)) == outer_blocks) continue;
    dim3 grid, block;
    if (!bbmm_cu_shape_of(dims, lo, hi, shape, m, cap, &grid, &block)) return march;
    const int64_t outer = dims == 2 ? grid.y : grid.z;
    if (outer != outer_blocks) return march;  /* capped */
    const int64_t blocks = (int64_t)grid.x * grid.y * grid.z;
    const int64_t cost = (blocks + resident - 1) / resident * (m + 1);
    if (best_cost < 0 || cost < best_cost) {
      best = m;
      best_cost = cost;
    }
  }
  return best;
}

/* 1 (the default; BBMM_CUDA_WAVES=0|1): after the fill rule, launches pick their march
   with bbmm_cu_wave_march from the kernel's occupancy (bbmm_cu_resident) instead of
   bbmm_cu_balance_march (bbmm_cu_pick_march). Long stencil runs, same call: fdtd2d and
   heat3d 1.02-1.04x faster on 1-2 H100s, heat2d and jacobi1d unchanged (2026-11-26,
   sixth session, docs/performance.md). */
static inline BBMM_GEN_UNUSED int64_t bbmm_cu_waves(void) {
  static long long w = 1;
  static std::once_flag once;
  std::call_once(once, [] { bbmm_cu_env_int("BBMM_CUDA_WAVES", 0, 1, "0 or 1", &w); });
  return w;
}

/* Blocks per multiprocessor a launch aims at (bbmm_cu_fill_march): BBMM_CUDA_FILL=B, 0
   for none (the march as set), default 8 (a full wave of 256-thread blocks). */
static inline BBMM_GEN_UNUSED int64_t bbmm_cu_fill(void) {
  static long long b = 8;
  static std::once_flag once;
  std::call_once(once, [] { bbmm_cu_env_int("BBMM_CUDA_FILL", 0, 1024, "an integer in [0, 1024]", &b); });
  return b;
}

/* Multiprocessors of the calling thread's current device, read once per device; 0 when
   CUDA cannot say (the march then stays as set). */
static inline BBMM_GEN_UNUSED int64_t bbmm_cu_sm_count(void) {
  static std::atomic<int> known[64];
  int dev = 0, n = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (dev >= 0 && dev < 64 && (n = known[dev].load(std::memory_order_relaxed)) > 0) return n;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (dev >= 0 && dev < 64) known[dev].store(n, std::memory_order_relaxed);
  return n;
}

/* Blocks of "threads" threads of "kernel" the calling thread's current device runs at
   once: its multiprocessors times cudaOccupancyMaxActiveBlocksPerMultiprocessor, asked
   once per kernel, block size and device (remembered without limit: a program has
   finitely many; a scop with 20 phases on 8 GPUs has ~500); 0 when CUDA cannot say. */
static inline BBMM_GEN_UNUSED int64_t bbmm_cu_resident(const void* kernel, int threads) {
  struct Known {
    const void* kernel;
    int threads, device;
    int64_t resident;
  };
  static std::mutex mu;
  static std::vector<Known> known;
  int dev = 0;
  if (kernel == nullptr || cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const Known& k : known) {
      if (k.kernel == kernel && k.threads == threads && k.device == dev) return k.resident;
    }
  }
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  const int64_t resident = (int64_t)per_sm * bbmm_cu_sm_count();
  std::lock_guard<std::mutex> lock(mu);
  known.push_back(Known{kernel, threads, dev, resident});
  return resident;
}

/* The march of a 2-D or 3-D launch: "march" (the generation-time or BBMM_CUDA_MARCH
   value) shrunk to fill the device with "fill_blocks" blocks (bbmm_cu_fill_march; none
   when fill_blocks <= 0), then, when the device runs "resident" > 0 blocks of the kernel
   at once, to the march of the fewest weighted waves no larger than that
   (bbmm_cu_wave_march), otherwise to share the outermost coordinate evenly among its
   blocks (bbmm_cu_balance_march). The waves rule alone marched heat2d's 1,024-row tiles
   32 rows at a time (1 wave of 1,024 blocks) and was 10% slower on 4 H100s than the
   fill rule's 16 (2026-11-26, sixth session); capped by the fill rule it keeps 16 there
   and still marches heat3d's 48-plane tiles 8 planes at a time. */
static inline BBMM_GEN_UNUSED int64_t bbmm_cu_pick_march(int dims, const int64_t* lo,
                                                         const int64_t* hi, const int shape[3],
                                                         int64_t march, int64_t cap,
                                                         int64_t fill_blocks, int64_t resident) {
  if (dims < 2) return march;
  if (fill_blocks > 0) march = bbmm_cu_fill_march(dims, lo, hi, shape, march, cap, fill_blocks);
  if (resident > 0) return bbmm_cu_wave_march(dims, lo, hi, shape, march, cap, resident);
  return bbmm_cu_balance_march(dims, lo, hi, shape, march);
}

/* bbmm_cu_shape_of with the settings of this file and the environment, for a launch of
   "kernel": the march as bbmm_cu_pick_march shrinks it with bbmm_cu_fill() blocks per
   multiprocessor and, unless BBMM_CUDA_WAVES=0, the kernel's occupancy
   (bbmm_cu_resident). */
static inline BBMM_GEN_UNUSED bool bbmm_cu_shape(const void* kernel, int dims, const int64_t* lo,
                                                 const int64_t* hi, int64_t* march, dim3* grid,
                                                 dim3* block) {
  int s[3];
  bbmm_cu_block_shape(s);
  const int64_t cap = bbmm_cu_grid_cap();
  if (dims >= 2) {
    const int64_t resident = bbmm_cu_waves() ? bbmm_cu_resident(kernel, s[0] * s[1] * s[2]) : 0;
    *march = bbmm_cu_pick_march(dims, lo, hi, s, *march, cap, bbmm_cu_fill() * bbmm_cu_sm_count(),
                                resident);
  }
  return bbmm_cu_shape_of(dims, lo, hi, s, *march, cap, grid, block);
}

/* --- Pieces ---------------------------------------------------------------------------- */

/* The element "idx" of an array with "n" pieces (access-function split), trying first piece
   "last" (the piece of the reference's previous element in this thread, 0 at first) and
   remembering the piece found there (bbmm_gen_at_from's twin). */
template <typename T, int R>
static __device__ inline T* bbmm_cu_at_from(const bbmm_piece* p, int n, const int64_t (&idx)[R],
                                            int& last) {
  if (last < n && bbmm_piece_contains(&p[last], R, idx)) {
    return (T*)bbmm_piece_at(&p[last], sizeof(T), R, idx);
  }
  for (int k = 0; k < n; ++k) {
    if (bbmm_piece_contains(&p[k], R, idx)) {
      last = k;
      return (T*)bbmm_piece_at(&p[k], sizeof(T), R, idx);
    }
  }
  printf("bbmm: internal error: an element is in none of the tile's %d pieces\n", n);
  __trap();
  return nullptr;
}

/* bbmm_cu_at_from with no previous element. */
template <typename T, int R>
static __device__ inline T* bbmm_cu_at(const bbmm_piece* p, int n, const int64_t (&idx)[R]) {
  int first = 0;
  return bbmm_cu_at_from<T, R>(p, n, idx, first);
}

/* The first of the "n" pieces that holds all of box [lo, hi), or NULL when none does or the
   box is empty: looked up once per access reference (bbmm_gen_piece_of's device twin). */
static __device__ inline const bbmm_piece* bbmm_cu_piece_of(const bbmm_piece* p, int n, int rank,
                                                            const int64_t* lo, const int64_t* hi) {
  for (int d = 0; d < rank; ++d) {
    if (lo[d] >= hi[d]) return nullptr;
  }
  for (int k = 0; k < n; ++k) {
    bool in = true;
    for (int d = 0; d < rank && in; ++d) in = p[k].lo[d] <= lo[d] && hi[d] <= p[k].hi[d];
    if (in) return &p[k];
  }
  return nullptr;
}

/* The multi-piece kernels read the tile's pieces from device memory: the launch's
   argument block is copied there on the stream, and freed after the kernel. */
static inline BBMM_GEN_UNUSED char* bbmm_cu_block_copy(const void* args, size_t size,
                                                       cudaStream_t stream) {
  void* d = nullptr;
  bbmm_cu_check(cudaMallocAsync(&d, size, stream), "cudaMallocAsync (the tile's pieces)");
  bbmm_cu_check(cudaMemcpyAsync(d, args, size, cudaMemcpyHostToDevice, stream),
                "cudaMemcpyAsync (the tile's pieces)");
  return (char*)d;
}

#endif /* BBMM_GENERATED_SUPPORT_CUDA_H_ */
