/* Helpers of the C files bbmmc generates (docs/codegen.md): integer arithmetic of the
 * bounds isl prints, error checks, the runtime of the file (created on first use from the
 * BBMM_* environment), box requests that skip empty boxes, and the piece lookup of the host
 * target's multi-piece kernels. Uses libbbmm's public C API only.
 *
 * A generated file names its target before including this header:
 *
 *   #define BBMM_GEN_TARGET BBMM_BACKEND_HOST   (or BBMM_BACKEND_CUDA, BBMM_BACKEND_OPENCL)
 *   #include "bbmm/generated_support.h"
 *
 * The OpenCL target includes bbmm/generated_support_opencl.h instead (it needs CL/cl.h).
 * Plain C (C99 and later; also valid C++). Every function is static inline: each
 * generated file has its own copy and its own runtime.
 * Thread-safety: bbmm_gen_runtime is not thread-safe; call the generated functions from
 * one thread at a time. The other functions are. */
#ifndef BBMM_GENERATED_SUPPORT_H_
#define BBMM_GENERATED_SUPPORT_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbmm/bbmm.h"
#include "bbmm/view.h"

#ifndef BBMM_GEN_TARGET
#error "define BBMM_GEN_TARGET (BBMM_BACKEND_HOST, BBMM_BACKEND_CUDA or BBMM_BACKEND_OPENCL) before including bbmm/generated_support.h"
#endif

/* --- Arithmetic of isl's bounds (isl's min, max and floord, renamed) ------------------- */

static inline int64_t bbmm_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t bbmm_max(int64_t a, int64_t b) { return a > b ? a : b; }
/* floor(n / d) for d != 0, for every sign of n and d (C's "/" truncates toward zero). */
static inline int64_t bbmm_floord(int64_t n, int64_t d) {
  int64_t q = n / d;
  return (n % d != 0 && ((n < 0) != (d < 0))) ? q - 1 : q;
}

/* --- Errors ---------------------------------------------------------------------------- */

/* Ends the program when "s" is not BBMM_OK, printing "what" and the runtime's message: the
 * generated functions keep their original signatures and have no way to return an error.
 * bbmm_fatal: on a rank of several (MPI), every rank stops. */
static inline void bbmm_gen_check(bbmm_status s, const char* what) {
  if (s != BBMM_OK) {
    bbmm_fatal(1, "%s failed: %s", what, bbmm_last_error_message());
  }
}

/* "n" zeroed bytes from calloc; ends the program when there is no memory. */
static inline void* bbmm_gen_calloc(size_t n) {
  void* p = calloc(1, n);
  if (!p) {
    bbmm_fatal(1, "out of host memory (%zu bytes)", n);
  }
  return p;
}

/* --- The runtime of the generated file ------------------------------------------------- */

/* The name of "target" in bbmmc's --target option ("cuda"), and in messages ("CUDA"). */
static inline const char* bbmm_gen_target_option(bbmm_backend_kind target) {
  switch (target) {
    case BBMM_BACKEND_HOST: return "host";
    case BBMM_BACKEND_CUDA: return "cuda";
    case BBMM_BACKEND_OPENCL: return "opencl";
    default: return "auto";
  }
}
static inline const char* bbmm_gen_target_label(bbmm_backend_kind target) {
  switch (target) {
    case BBMM_BACKEND_HOST: return "host";
    case BBMM_BACKEND_CUDA: return "CUDA";
    case BBMM_BACKEND_OPENCL: return "OpenCL";
    default: return "automatic";
  }
}

/* Parses "text" as an integer in [lo, hi] (leading white space allowed, nothing after
 * it). Returns 1 and sets "*out" when it is one; returns 0 and leaves "*out" alone
 * otherwise (also for "" and NULL). */
static inline int bbmm_gen_parse_int(const char* text, long long lo, long long hi,
                                     long long* out) {
  char* end;
  long long v;
  if (!text) return 0;
  v = strtoll(text, &end, 10);
  if (end == text || *end || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

/* Parses "text", the value of BBMM_TILES_PER_DEVICE: an integer in [1, 4096]
 * (bbmm_gen_parse_int). */
/* The position of "text" among the "n" words of "words" in *out; 0 (and *out untouched)
 * when it is none of them. The parser of every BBMM_* setting that names a choice. */
static inline int bbmm_gen_parse_word(const char* text, const char* const* words, int n,
                                      int* out) {
  for (int i = 0; i < n; ++i) {
    if (strcmp(text, words[i]) == 0) {
      *out = i;
      return 1;
    }
  }
  return 0;
}

static inline int bbmm_gen_parse_tiles_per_device(const char* text, int* out) {
  long long v;
  if (!bbmm_gen_parse_int(text, 1, 4096, &v)) return 0;
  *out = (int)v;
  return 1;
}

/* The runtime of this file and the tiles per device of every phase
 * (BBMM_TILES_PER_DEVICE; default 2 on GPUs, so that one tile's copies run under another
 * tile's kernel: heat2d n=16384 on an H200 took 0.895 s with 1 tile, 0.805 s with 2 and
 * 0.787 s with 4, docs/performance.md; 1 elsewhere). */
static bbmm_runtime* bbmm_gen_rt;
static int bbmm_gen_tiles_per_device = BBMM_GEN_TARGET == BBMM_BACKEND_CUDA ? 2 : 1;
/* 1 when BBMM_TILES_PER_DEVICE set the count (else the default, which small tiles lower). */
static int bbmm_gen_tiles_per_device_set = 0;

/* With the default tiles per device (BBMM_TILES_PER_DEVICE unset), a phase call whose tiles,
 * one per device, each require at most this many bytes takes one tile per device: copies
 * that short gain nothing from running under another tile's kernel, and a second tile
 * costs its launch, its boxes and its exchanges. PolyBench at LARGE (arrays of 1-40 MB) on
 * 2 x H100, 2026-11-27, one tile per GPU against two: correlation 0.781 s against 2.048 s
 * on 2 GPUs, cholesky 0.335 against 0.562, symm 0.498 against 0.718 on one GPU, the others
 * within the runs' spread (docs/performance.md, eleventh session). */
#define BBMM_GEN_SMALL_TILE_BYTES ((uint64_t)32 << 20)

/* 1 when a phase call whose largest tile, at one tile per device, requires "bytes" should
 * keep one tile per device (see BBMM_GEN_SMALL_TILE_BYTES). */
static inline int bbmm_gen_small_tiles(uint64_t bytes) {
  return !bbmm_gen_tiles_per_device_set && bytes <= BBMM_GEN_SMALL_TILE_BYTES;
}

/* How a device's share of a 1-D partition is split into its tiles: with E > 0
 * (BBMM_EDGE_TILES=E) and at least 3 tiles per device on 2 or more devices, the first and
 * the last tile of each device are edge tiles 1/E of the share wide and the others share
 * the interior evenly, so that a device computes what its neighbours read first and its
 * halo copies can run under the interior tiles' kernels; with E = 0 (the default), or
 * fewer tiles, the tiles are even. Edge tiles were slower on 4 H100s (2026-11-26, fifth
 * session: heat2d 0.1842 s with 3 tiles per GPU and E = 32 against 0.1401 s with 2 even
 * tiles; docs/performance.md), hence off by default. Set with the runtime. */
static int64_t bbmm_gen_edge_tiles = 0;

/* Parses "text", the value of BBMM_EDGE_TILES: an integer in [0, 1048576]
 * (bbmm_gen_parse_int). */
static inline int bbmm_gen_parse_edge_tiles(const char* text, int64_t* out) {
  long long v;
  if (!bbmm_gen_parse_int(text, 0, 1048576, &v)) return 0;
  *out = (int64_t)v;
  return 1;
}

/* Whether ties in a phase's issue order alternate direction from one ordered phase call
 * to the next (1, BBMM_TILE_ORDER=alternate), always follow the range (0,
 * BBMM_TILE_ORDER=forward), or alternate once the runtime has boxed out an instance (2,
 * BBMM_TILE_ORDER=auto, the default). Out of core, a phase that starts where the previous
 * one ended finds that one's last tiles still on the device: on one host device holding a
 * quarter of the data, 11% fewer bytes read in for heat2d and heat3d, 6% for jacobi1d, 32%
 * for fdtd2d (and 27% fewer written back, lazily), 2026-11-27, docs/performance.md. In
 * core it was neutral on 2 and 4 H100s (0.99-1.01, sixth session of 2026-11-26); before
 * copies between GPUs were pushed by their source it made heat2d 1.5 times slower on 4
 * H100s (fifth session), so in core the order stays forward. Set with the runtime. */
static int bbmm_gen_tile_order = 2;

/* "forward" -> 0, "alternate" -> 1, "auto" -> 2 in *out; 0 for anything else. */
static inline int bbmm_gen_parse_tile_order(const char* text, int* out) {
  static const char* const words[] = {"forward", "alternate", "auto"};
  return bbmm_gen_parse_word(text, words, 3, out);
}

/* How a partitioned loop whose range moves with the serial iterators (a triangular
 * range: lu's, cholesky's, trisolv's rows below the pivot) is split, at every serial
 * iteration: the range of all iterations, each tile clamped to this iteration's range
 * (0, BBMM_SPLIT=whole, the default: an element's device never changes, but the devices
 * whose rows are done fall idle), or this iteration's range itself (1, BBMM_SPLIT=step:
 * every device gets an equal share at every step; rows move between devices as the range
 * shrinks). Set with the runtime. */
static int bbmm_gen_split_step = 0;

/* "step" -> 1, "whole" -> 0 in *out; 0 for anything else. */
static inline int bbmm_gen_parse_split(const char* text, int* out) {
  static const char* const words[] = {"whole", "step"};
  return bbmm_gen_parse_word(text, words, 2, out);
}

/* Where a 1-D partition splits its range: at equal shares of the work (1,
 * BBMM_SPLIT_BY=work, the default), the statement instances of each iteration counted by
 * a function bbmmc generates for partitions whose iterations carry unequal work (a
 * triangular inner loop: syrk, correlation; a range that moves with the serial loops: lu's
 * rows below the pivot, summed over all pivots; bbmm_gen_weights below), or at equal
 * shares of the iterations (0, BBMM_SPLIT_BY=iterations). Set with the runtime. */
static int bbmm_gen_split_by_work = 1;

/* "work" -> 1, "iterations" -> 0 in *out; 0 for anything else. */
static inline int bbmm_gen_parse_split_by(const char* text, int* out) {
  static const char* const words[] = {"iterations", "work"};
  return bbmm_gen_parse_word(text, words, 2, out);
}

/* How multi-piece kernels find an element's piece: once per access reference (0, the
 * default, BBMM_PIECE_LOOKUP=reference) or for every element (1, BBMM_PIECE_LOOKUP=element:
 * slower, the same results; the tests run both). Set with the runtime, before any kernel. */
static int bbmm_gen_per_element;

/* "reference" -> 0, "element" -> 1 in *out; 0 for anything else. */
static inline int bbmm_gen_parse_piece_lookup(const char* text, int* out) {
  static const char* const words[] = {"reference", "element"};
  return bbmm_gen_parse_word(text, words, 2, out);
}

/* Where a phase with no parallel loop runs (it is one tile per call: a serial region): 1 on
 * the host (a host tile, BBMM_DEVICE_HOST: the calling thread over the program's own
 * arrays), 2 on device 0, 0 (auto, the default) on the host when the region is a whole loop
 * nest (no serial loop around it: seidel-2d, nussinov, floyd-warshall without its pragma)
 * or its tile does not fit a device, else on device 0. One GPU thread steps through a
 * serial loop nest tens of times slower than a CPU core; a serial step inside a serial loop
 * (cholesky's, durbin's) sits between parallel phases whose data the devices hold, and
 * moving its boxes to the host and back at every step costs more than the GPU thread.
 * BBMM_SERIAL=auto|host|device; set with the runtime. */
static int bbmm_gen_serial;

/* "auto" -> 0, "host" -> 1, "device" -> 2 in *out; 0 for anything else. */
static inline int bbmm_gen_parse_serial(const char* text, int* out) {
  static const char* const words[] = {"auto", "host", "device"};
  return bbmm_gen_parse_word(text, words, 3, out);
}

/* The device of a serial region whose tile requires "bytes" on devices holding "capacity"
 * bytes (0: unknown), "nested" in serial loops or not (0), and when nested, 2 when a step's
 * own loops are two or more deep (bbmm_gen_serial); 1 also for a wavefront that one thread
 * block runs (bbmmc --wavefront-steps=block): device 0 or BBMM_DEVICE_HOST; device 0
 * always over several ranks (host tiles do not run there). On a device a serial tile is one
 * thread: fine for a step of a few or a row of elements (cholesky, durbin), but a step of
 * quadratic work runs on the host (ludcmp at LARGE: more than 60 s on one H100 thread, 4.1 s
 * on the host; issue 13). */
static inline int bbmm_gen_serial_device(bbmm_runtime* rt, uint64_t bytes, uint64_t capacity,
                                         int nested) {
  if (bbmm_rank_count(rt) > 1 || bbmm_gen_serial == 2) return 0;
  if (bbmm_gen_serial == 1 || nested != 1 || (capacity > 0 && bytes > capacity)) {
    return BBMM_DEVICE_HOST;
  }
  return 0;
}

/* --- Statement instances per device (balance) -------------------------------------------
 * Compiled with -DBBMM_GEN_COUNT_INSTANCES, the host target's kernels count the statement
 * instances they run, per device (BBMM_GEN_INSTANCE() after each statement,
 * BBMM_GEN_INSTANCES_END adding a tile's count to its device's), and the statistics at exit
 * say how many each device ran: the work balance (bench/polybench/run.sh compiles its
 * programs so for its balance column). Off, the macros are nothing. */
#define BBMM_GEN_MAX_COUNTED_DEVICES 64
#ifdef BBMM_GEN_COUNT_INSTANCES
/* [0]: host tiles; [1 + d]: device d. */
static uint64_t bbmm_gen_instances[BBMM_GEN_MAX_COUNTED_DEVICES + 1];
#define BBMM_GEN_INSTANCES_BEGIN() uint64_t bbmm_count = 0
#define BBMM_GEN_INSTANCE() (++bbmm_count)
#define BBMM_GEN_INSTANCES_END(info) bbmm_gen_count_instances((info), bbmm_count)
static inline void bbmm_gen_count_instances(const bbmm_launch_info* info, uint64_t n) {
  const int d = info->device == BBMM_DEVICE_HOST ? 0 : info->device + 1;
  if (d >= 0 && d <= BBMM_GEN_MAX_COUNTED_DEVICES) {
    __atomic_fetch_add(&bbmm_gen_instances[d], n, __ATOMIC_RELAXED);
  }
}
#else
#define BBMM_GEN_INSTANCES_BEGIN() ((void)0)
#define BBMM_GEN_INSTANCE() ((void)0)
#define BBMM_GEN_INSTANCES_END(info) ((void)0)
#endif

/* At exit: prints the statistics when BBMM_STATS is "table", "1" or "json" (with
 * -DBBMM_GEN_COUNT_INSTANCES, then a line of statement instances per device: "bbmm:
 * statement instances: host H, dev0 A, ...", or as JSON {"bbmm_instances":[H, A, ...]}),
 * then destroys the runtime. */
static inline void bbmm_gen_exit(void) {
  const char* s = getenv("BBMM_STATS");
  if (bbmm_gen_rt && s && *s && strcmp(s, "0") != 0) {
    fflush(stdout);
    if (strcmp(s, "json") == 0) bbmm_stats_print_json(bbmm_gen_rt, stdout);
    else bbmm_stats_print(bbmm_gen_rt, stdout);
#ifdef BBMM_GEN_COUNT_INSTANCES
    {
      int n = bbmm_device_count(bbmm_gen_rt), d;
      if (n > BBMM_GEN_MAX_COUNTED_DEVICES) n = BBMM_GEN_MAX_COUNTED_DEVICES;
      const int json = strcmp(s, "json") == 0;
      printf(json ? "{\"bbmm_instances\":[%llu" : "bbmm: statement instances: host %llu",
             (unsigned long long)bbmm_gen_instances[0]);
      for (d = 0; d < n; ++d) {
        if (json) printf(",%llu", (unsigned long long)bbmm_gen_instances[d + 1]);
        else printf(", dev%d %llu", d, (unsigned long long)bbmm_gen_instances[d + 1]);
      }
      printf(json ? "]}\n" : "\n");
    }
#endif
    fflush(stdout);
  }
  if (bbmm_gen_rt) bbmm_runtime_destroy(bbmm_gen_rt);
  bbmm_gen_rt = NULL;
}

/* Called first thing in main() by bbmmc (in the file that defines main, after these
 * helpers): starts initialising the devices of the file's target in the background
 * (bbmm_warm_up: on CUDA the driver and the GPUs' contexts, a quarter to half a second)
 * while the program sets itself up, so that the first scop finds them ready. Off with
 * BBMM_WARM_UP=0. Nothing is reported here: bad options and device errors are reported
 * when the runtime is created (bbmm_gen_runtime). */
static inline void bbmm_gen_warm_up(void) {
  const char* w = getenv("BBMM_WARM_UP");
  bbmm_options o;
  if (w && strcmp(w, "0") == 0) return;
  if (bbmm_options_init(&o) != BBMM_OK) return;
  if (o.backend == BBMM_BACKEND_AUTO) o.backend = BBMM_GEN_TARGET;
  if (o.backend != BBMM_GEN_TARGET) return;
  (void)bbmm_warm_up(&o);
}

/* The runtime of this file, created on first use from the BBMM_* environment with the
 * backend of BBMM_GEN_TARGET (the kernels of a file run on that backend only), and
 * destroyed at exit. Ends the program, saying why, when BBMM_BACKEND names another backend,
 * when BBMM_TILES_PER_DEVICE, BBMM_PIECE_LOOKUP, BBMM_EDGE_TILES, BBMM_TILE_ORDER,
 * BBMM_SPLIT, BBMM_SPLIT_BY or BBMM_SERIAL is malformed, or when the runtime cannot
 * be created. */
static inline bbmm_runtime* bbmm_gen_runtime(void) {
  if (!bbmm_gen_rt) {
    const bbmm_backend_kind target = BBMM_GEN_TARGET;
    const char* t;
    bbmm_options o;
    bbmm_gen_check(bbmm_options_init(&o), "reading the BBMM_* environment");
    if (o.backend == BBMM_BACKEND_AUTO) o.backend = target;
    if (o.backend != target) {
      bbmm_fatal(1,
                 "this program was generated with --target=%s: its kernels run on the %s "
                 "backend only (unset BBMM_BACKEND or set it to '%s')",
                 bbmm_gen_target_option(target), bbmm_gen_target_label(target),
                 bbmm_gen_target_option(target));
    }
    t = getenv("BBMM_TILES_PER_DEVICE");
    if (t && *t && !bbmm_gen_parse_tiles_per_device(t, &bbmm_gen_tiles_per_device)) {
      bbmm_fatal(1, "BBMM_TILES_PER_DEVICE='%s' is not an integer in [1, 4096]", t);
    }
    bbmm_gen_tiles_per_device_set = t && *t;
    t = getenv("BBMM_PIECE_LOOKUP");
    if (t && *t && !bbmm_gen_parse_piece_lookup(t, &bbmm_gen_per_element)) {
      bbmm_fatal(1, "BBMM_PIECE_LOOKUP='%s' is not 'reference' or 'element'", t);
    }
    t = getenv("BBMM_EDGE_TILES");
    if (t && *t && !bbmm_gen_parse_edge_tiles(t, &bbmm_gen_edge_tiles)) {
      bbmm_fatal(1, "BBMM_EDGE_TILES='%s' is not an integer in [0, 1048576]", t);
    }
    t = getenv("BBMM_TILE_ORDER");
    if (t && *t && !bbmm_gen_parse_tile_order(t, &bbmm_gen_tile_order)) {
      bbmm_fatal(1, "BBMM_TILE_ORDER='%s' is not 'forward', 'alternate' or 'auto'", t);
    }
    t = getenv("BBMM_SPLIT");
    if (t && *t && !bbmm_gen_parse_split(t, &bbmm_gen_split_step)) {
      bbmm_fatal(1, "BBMM_SPLIT='%s' is not 'whole' or 'step'", t);
    }
    t = getenv("BBMM_SPLIT_BY");
    if (t && *t && !bbmm_gen_parse_split_by(t, &bbmm_gen_split_by_work)) {
      bbmm_fatal(1, "BBMM_SPLIT_BY='%s' is not 'work' or 'iterations'", t);
    }
    t = getenv("BBMM_SERIAL");
    if (t && *t && !bbmm_gen_parse_serial(t, &bbmm_gen_serial)) {
      bbmm_fatal(1, "BBMM_SERIAL='%s' is not 'auto', 'host' or 'device'", t);
    }
    bbmm_gen_check(bbmm_runtime_create(&o, &bbmm_gen_rt), "bbmm_runtime_create");
    atexit(bbmm_gen_exit);
  }
  return bbmm_gen_rt;
}

/* --- Boxes of a tile ------------------------------------------------------------------- */

/* Requires box [lo, hi) (rank "rank") of "a" for tile "t" with "mode", unless it is empty
 * (some lo[d] >= hi[d]: a guard of the box was true but the tile holds nothing of it);
 * counts the boxes required in "*count". Ends the program when the runtime fails. */
static inline void bbmm_gen_require(bbmm_tile* t, bbmm_array* a, int rank, const int64_t* lo,
                                    const int64_t* hi, bbmm_access mode, int* count) {
  for (int d = 0; d < rank; ++d) {
    if (lo[d] >= hi[d]) return;
  }
  bbmm_gen_check(bbmm_tile_require(t, a, lo, hi, mode), "bbmm_tile_require");
  ++*count;
}

/* --- Capacity-driven tile counts ---------------------------------------------------- */

static inline uint64_t bbmm_max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Adds the bytes of box [lo, hi) of elements of "elem_size" bytes to *acc (nothing when
 * the box is empty). */
static inline void bbmm_gen_box_bytes(uint64_t* acc, size_t elem_size, int rank, const int64_t* lo,
                                      const int64_t* hi) {
  uint64_t bytes = (uint64_t)elem_size;
  for (int d = 0; d < rank; ++d) {
    if (lo[d] >= hi[d]) return;
    bytes *= (uint64_t)(hi[d] - lo[d]);
  }
  *acc += bytes;
}

/* Says once per phase (named "phase") that its tiles still require "bytes" (an upper
 * bound: boxes may overlap) against devices of "capacity" bytes: the runtime fails if they
 * do not fit at all. "partitioned": 1, the tiles are one iteration of the partitioned loop
 * wide; 2, one iteration of each of two partitioned loops; 0, the phase, with no parallel
 * loop, runs as one tile. */
static inline void bbmm_gen_tile_too_large(const char* phase, uint64_t bytes, uint64_t capacity,
                                           int partitioned) {
  /* Said once per phase, the first time a tile of it does not fit (a serial loop's
   * iterations can need more and more: the check runs at each). */
  static const char* said = NULL;
  if (bytes <= capacity || said == phase) return;
  said = phase;
  if (partitioned == 2) {
    fprintf(stderr,
            "bbmm: note: a tile of %s, one iteration of each of its two partitioned loops "
            "wide, requires boxes of up to %llu bytes; a device holds %llu bytes\n",
            phase, (unsigned long long)bytes, (unsigned long long)capacity);
  } else if (partitioned) {
    fprintf(stderr,
            "bbmm: note: a tile of %s, one iteration of its partitioned loop wide, requires "
            "boxes of up to %llu bytes; a device holds %llu bytes (a 2-D partition, "
            "bbmmc --partition=2d, splits a second loop)\n",
            phase, (unsigned long long)bytes, (unsigned long long)capacity);
  } else {
    fprintf(stderr,
            "bbmm: note: %s has no parallel loop and runs as one tile, which requires "
            "boxes of up to %llu bytes; a device holds %llu bytes\n",
            phase, (unsigned long long)bytes, (unsigned long long)capacity);
  }
}

/* Whether the generated code reserves each device's allocation hull before its tiles
 * (BBMM_RESERVE, default 1; 0 turns the hints off, e.g. to measure what they save). */
static inline int bbmm_gen_reserve_enabled(void) {
  const char* v = getenv("BBMM_RESERVE");
  return !(v && strcmp(v, "0") == 0);
}

/* Reserves box [lo, hi) of "a" on "device" (bbmm_reserve) unless it is empty. Ends the
 * program when the runtime fails. */
static inline void bbmm_gen_reserve(bbmm_runtime* rt, int device, bbmm_array* a, int rank,
                                    const int64_t* lo, const int64_t* hi) {
  for (int d = 0; d < rank; ++d) {
    if (lo[d] >= hi[d]) return;
  }
  bbmm_gen_check(bbmm_reserve(rt, device, a, lo, hi), "bbmm_reserve");
}

/* Bounds [*lo, *hi) of tile k of the n tiles that split [from, to) over "devices" devices
 * (tile k on device k * devices / n; every device's tiles cover its even share
 * [from + span * d / devices, from + span * (d + 1) / devices) when n is a multiple of
 * "devices"). Even tiles, or edge tiles (bbmm_gen_edge_tiles) where they apply: n a
 * multiple of devices, 3 or more tiles per device, 2 or more devices, and a share wide
 * enough for an edge of at least one iteration on each side of an interior of one
 * iteration per interior tile. */
static inline void bbmm_gen_tile_bounds(int64_t from, int64_t to, int64_t n, int64_t devices,
                                        int64_t k, int64_t* lo, int64_t* hi) {
  const int64_t span = to - from;
  if (bbmm_gen_edge_tiles > 0 && devices > 1 && n % devices == 0 && n / devices >= 3) {
    const int64_t per = n / devices, d = k / per, j = k % per;
    const int64_t a = from + span * d / devices, b = from + span * (d + 1) / devices;
    const int64_t e = (b - a) / bbmm_gen_edge_tiles;
    const int64_t inner = b - a - 2 * e;
    if (e >= 1 && inner >= per - 2) {
      if (j == 0) {
        *lo = a;
        *hi = a + e;
      } else if (j == per - 1) {
        *lo = b - e;
        *hi = b;
      } else {
        *lo = a + e + inner * (j - 1) / (per - 2);
        *hi = a + e + inner * j / (per - 2);
      }
      return;
    }
  }
  *lo = from + span * k / n;
  *hi = from + span * (k + 1) / n;
}

/* The work along the range [from, to) of a 1-D partition's split loop, for split points at
 * equal shares of it. The loop's iterations are the rows r of the range with
 * r = offset (mod stride) (stride 1 but for a loop stepping by more). They are cut into
 * "segments" consecutive segments (one per iteration when there are at most
 * BBMM_GEN_WEIGHT_SEGMENTS), each segment's work taken from the generated function's count
 * at its first and last iteration, interpolated linearly in between (exact for the linear
 * and nearly so for the quadratic work of PolyBench's triangular loops), and the work
 * before each segment. "segments" is 0 when the range is empty, carries no work or
 * BBMM_SPLIT_BY=iterations: splits are then even. Computed once per scop execution
 * (bbmm_gen_weights_init), before the tiles. */
#define BBMM_GEN_WEIGHT_SEGMENTS 128
typedef struct bbmm_gen_weights {
  int64_t from, to, stride;
  int segments;
  /* Segment j is [row[j], row[j + 1]), row[j] an iteration (but row[segments] = to). */
  int64_t row[BBMM_GEN_WEIGHT_SEGMENTS + 1];
  double before[BBMM_GEN_WEIGHT_SEGMENTS + 1];  /* the work before row[j] */
} bbmm_gen_weights;

/* Fills *w for the iterations of [from, to) congruent to "offset" modulo "stride" (>= 1)
 * with "work"(x, row), the statement instances of iteration "row" (a function bbmmc
 * generates), bbmm_gen_split_by_work permitting. */
static inline void bbmm_gen_weights_init(bbmm_gen_weights* w, int64_t from, int64_t to,
                                         int64_t stride, int64_t offset,
                                         int64_t (*work)(const void*, int64_t), const void* x) {
  w->from = from;
  w->to = to;
  w->stride = stride;
  w->segments = 0;
  if (!bbmm_gen_split_by_work || from >= to || stride < 1) return;
  const int64_t first = from + (((offset - from) % stride) + stride) % stride;
  if (first >= to) return;
  const int64_t count = (to - 1 - first) / stride + 1; /* iterations */
  const int n = count < BBMM_GEN_WEIGHT_SEGMENTS ? (int)count : BBMM_GEN_WEIGHT_SEGMENTS;
  w->before[0] = 0;
  for (int j = 0; j < n; ++j) {
    const int64_t a = count * j / n, b = count * (j + 1) / n; /* iterations [a, b) */
    w->row[j] = first + stride * a;
    const double lo = (double)work(x, first + stride * a);
    const double seg = b - a == 1 ? lo : 0.5 * (double)(b - a) * (lo + (double)work(x, first + stride * (b - 1)));
    w->before[j + 1] = w->before[j] + seg;
  }
  w->row[n] = to;
  if (w->before[n] > 0) w->segments = n;
}

/* The first iteration of the split at fraction "f" in [0, 1] of the work of *w (segments
 * > 0): the work before it is f of the whole, interpolated linearly inside its segment.
 * Nondecreasing in f; w->from at 0 and w->to at 1. */
static inline int64_t bbmm_gen_weighted_point(const bbmm_gen_weights* w, double f) {
  if (f <= 0) return w->from;
  if (f >= 1) return w->to;
  const double target = f * w->before[w->segments];
  /* The first segment j with before[j + 1] >= target (before[j] < target). */
  int lo = 0, hi = w->segments - 1;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (w->before[mid + 1] >= target) hi = mid;
    else lo = mid + 1;
  }
  /* Iterations r of the segment are row[lo] (or the first iteration after it) + stride * m. */
  const double frac = (target - w->before[lo]) / (w->before[lo + 1] - w->before[lo]);
  const int64_t steps = (w->row[lo + 1] - w->row[lo] + w->stride - 1) / w->stride;
  int64_t r = w->row[lo] + w->stride * (int64_t)(frac * (double)steps + 0.5);
  if (r > w->row[lo + 1]) r = w->row[lo + 1];
  return r;
}

/* bbmm_gen_tile_bounds with the split points of *w (NULL: none) where they apply: the range
 * is the one *w was computed for, it carries work, there are fewer tiles than iterations
 * and no edge tiles. Tile k covers the work between fractions k / n and (k + 1) / n, so a
 * device's tiles (k * devices / n) cover its share d / devices .. (d + 1) / devices for any
 * multiple n of "devices". A tile may be empty. */
static inline void bbmm_gen_split(const bbmm_gen_weights* w, int64_t from, int64_t to,
                                  int64_t n, int64_t devices, int64_t k, int64_t* lo,
                                  int64_t* hi) {
  if (w && w->segments > 0 && from == w->from && to == w->to && n < to - from &&
      bbmm_gen_edge_tiles == 0) {
    *lo = bbmm_gen_weighted_point(w, (double)k / (double)n);
    *hi = bbmm_gen_weighted_point(w, (double)(k + 1) / (double)n);
    return;
  }
  bbmm_gen_tile_bounds(from, to, n, devices, k, lo, hi);
}

/* A tile of a phase and the bytes it flows out, for the order of issue. */
typedef struct bbmm_gen_tile_rank {
  uint64_t bytes;
  int64_t k;
} bbmm_gen_tile_rank;

static inline int bbmm_gen_rank_cmp(const void* a, const void* b) {
  const bbmm_gen_tile_rank* x = (const bbmm_gen_tile_rank*)a;
  const bbmm_gen_tile_rank* y = (const bbmm_gen_tile_rank*)b;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  return x->k < y->k ? -1 : (x->k > y->k ? 1 : 0);
}

/* Whether the ties of ordered phase calls alternate direction now (bbmm_gen_tile_order):
 * with auto, once some device of "rt" has boxed out an instance. */
static inline int bbmm_gen_alternating(const bbmm_runtime* rt) {
  if (bbmm_gen_tile_order != 2) return bbmm_gen_tile_order;
  bbmm_stats st;
  return rt != NULL && bbmm_stats_get(rt, -1, &st) == BBMM_OK && st.evictions > 0;
}

/* Orders "n" tiles by the bytes they flow out, largest first. Ties go by index, upwards
 * when "call" (the count of ordered phase calls before this one in the scop) is even or
 * "alternate" is 0, downwards when it is odd. */
static inline void bbmm_gen_order_tiles(bbmm_gen_tile_rank* rank, int64_t n, int64_t call,
                                        int alternate) {
  const int down = alternate && (call & 1);
  if (down) {
    for (int64_t i = 0; i < n; ++i) rank[i].k = -rank[i].k;
  }
  qsort(rank, (size_t)n, sizeof *rank, bbmm_gen_rank_cmp);
  if (down) {
    for (int64_t i = 0; i < n; ++i) rank[i].k = -rank[i].k;
  }
}

/* The smallest memory of the runtime's devices (bbmm_device_memory), 0 when it has none. */
static inline uint64_t bbmm_gen_min_device_memory(const bbmm_runtime* rt) {
  uint64_t m = 0;
  for (int d = 0; d < bbmm_device_count(rt); ++d) {
    const uint64_t b = bbmm_device_memory(rt, d);
    if (d == 0 || b < m) m = b;
  }
  return m;
}

/* Flows out box [lo, hi) of "a" for tile "t" unless it is empty. Ends the program when the
 * runtime fails. */
static inline void bbmm_gen_flow_out(bbmm_tile* t, bbmm_array* a, int rank, const int64_t* lo,
                                     const int64_t* hi) {
  for (int d = 0; d < rank; ++d) {
    if (lo[d] >= hi[d]) return;
  }
  bbmm_gen_check(bbmm_tile_flow_out(t, a, lo, hi), "bbmm_tile_flow_out");
}

/* The address of element "idx" (rank "rank", elements of "elem_size" bytes) in the one of
 * the "n" pieces "p" holding it (the host target's access-function split; the pieces of a
 * view are disjoint), trying first piece "*last", the piece of the reference's previous
 * element (0 at first: consecutive elements of one access reference mostly lie in one piece),
 * and remembering there the piece found. An element in no piece is a bug of bbmmc: prints
 * "array" and aborts. */
static inline void* bbmm_gen_at_from(const bbmm_piece* p, int n, int rank, const int64_t* idx,
                                     size_t elem_size, const char* array, int* last) {
  if (*last < n && bbmm_piece_contains(&p[*last], rank, idx)) {
    return bbmm_piece_at(&p[*last], elem_size, rank, idx);
  }
  for (int k = 0; k < n; ++k) {
    if (bbmm_piece_contains(&p[k], rank, idx)) {
      *last = k;
      return bbmm_piece_at(&p[k], elem_size, rank, idx);
    }
  }
  fprintf(stderr, "bbmm: internal error: an element of '%s' is in none of the tile's %d pieces\n",
          array, n);
  abort();
}

/* bbmm_gen_at_from with no previous element. */
static inline void* bbmm_gen_at(const bbmm_piece* p, int n, int rank, const int64_t* idx,
                                size_t elem_size, const char* array) {
  int first = 0;
  return bbmm_gen_at_from(p, n, rank, idx, elem_size, array, &first);
}

/* The first of the "n" pieces "p" that holds all of box [lo, hi) (rank "rank"), or NULL when
 * none does or the box is empty: a multi-piece kernel looks this up once per access
 * reference, for the box the reference touches in the tile. */
static inline const bbmm_piece* bbmm_gen_piece_of(const bbmm_piece* p, int n, int rank,
                                                  const int64_t* lo, const int64_t* hi) {
  for (int d = 0; d < rank; ++d) {
    if (lo[d] >= hi[d]) return NULL;
  }
  for (int k = 0; k < n; ++k) {
    int in = 1;
    for (int d = 0; d < rank && in; ++d) in = p[k].lo[d] <= lo[d] && hi[d] <= p[k].hi[d];
    if (in) return &p[k];
  }
  return NULL;
}

#endif /* BBMM_GENERATED_SUPPORT_H_ */
