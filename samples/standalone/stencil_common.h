// Shared by the hand-written stencil samples (jacobi2d_host.cpp, jacobi2d_cuda.cu,
// heat3d_cuda.cu): the command line, the partition of the outer dimension (rows or
// planes) into one block per device and tiles per block, the order the tiles are issued
// in, the tile loop over libbbmm's public C API, the per-device allocation hulls given to
// bbmm_reserve, the traffic model behind the RESULT line, the verification and the
// output. A sample supplies its kernels, initial values and references through
// StencilSample and calls stencil_main().
//
// Header-only C++17 (nvcc compiles it too). Not thread-safe: one host thread drives the
// runtime; only the host-side helpers (initialisation, comparison) use several threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bbmm/bbmm.h"

namespace stencil {

// Views with more pieces than this are refused (the generic kernels take the pieces by
// value as a kernel argument: 2 x 8 pieces x 208 B stays under CUDA's 4 KiB).
constexpr int kMaxPieces = 8;

// A view's pieces by value, so a kernel (host or CUDA) can take them as an argument.
struct Pieces {
  int n;
  bbmm_piece p[kMaxPieces];
};

inline bool copy_pieces(const bbmm_view& v, Pieces* out) {
  if (v.npieces < 1 || v.npieces > kMaxPieces) return false;
  out->n = v.npieces;
  for (int k = 0; k < v.npieces; ++k) out->p[k] = v.pieces[k];
  return true;
}

// ------------------------------------------------------------------ command line

struct Options {
  int64_t n = 0;
  int steps = 0;
  int devices = 0;  // 0: all visible (CUDA) or the sample's default
  int tiles_per_device = 2;
  std::string capacity = "none";  // none | auto | bytes (e.g. 512MiB)
  bool reserve = true;
  bool json = false;
  bool plan = false;  // print the partition and the traffic model, run nothing
};

// Parses a decimal integer that must use the whole of `text`.
inline bool parse_int(const char* text, int64_t* out) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

// Parses "4096", "64KiB", "64MiB", "2GiB", "1GB" (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB).
// The shape of a marching kernel: BX x BY threads, each running `chunk` consecutive
// rows (planes); chunk 0 means the program's other (grid-stride) kernel.
struct KernelShape {
  int bx = 64, by = 4;
  int64_t chunk = 32;
};

// `def`, or the shape "BXxBYxN" in environment variable `var` when set, with BX x BY one
// of `allowed` ("32x8", ...) and N >= 1; `grid`, when not null, is the shape the value
// "grid" selects. Anything else ends the program with a message naming `var` and what
// it accepts (`unit`: "ROWS" or "PLANES").
inline KernelShape kernel_shape_from_env(const char* program, const char* var, const char* unit,
                                         const std::vector<std::string>& allowed,
                                         KernelShape def, const KernelShape* grid) {
  const char* v = std::getenv(var);
  if (v == nullptr || *v == '\0') return def;
  if (grid != nullptr && std::strcmp(v, "grid") == 0) return *grid;
  int bx = 0, by = 0;
  long long chunk = 0;
  const bool parsed = std::sscanf(v, "%dx%dx%lld", &bx, &by, &chunk) == 3 && chunk >= 1;
  const std::string block = std::to_string(bx) + "x" + std::to_string(by);
  if (!parsed || std::find(allowed.begin(), allowed.end(), block) == allowed.end()) {
    std::string list;
    for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
    std::fprintf(stderr, "%s: %s='%s': use BXxBYx%s with BXxBY one of %s%s\n", program, var, v,
                 unit, list.c_str(), grid != nullptr ? ", or grid" : "");
    std::exit(1);
  }
  return KernelShape{bx, by, chunk};
}

inline bool parse_bytes(const std::string& text, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || !(v >= 0)) return false;
  const std::string unit(end);
  static const struct {
    const char* name;
    double factor;
  } kUnits[] = {{"", 1},
                {"B", 1},
                {"KiB", 1024.0},
                {"MiB", 1048576.0},
                {"GiB", 1073741824.0},
                {"TiB", 1099511627776.0},
                {"KB", 1e3},
                {"MB", 1e6},
                {"GB", 1e9},
                {"TB", 1e12}};
  for (const auto& u : kUnits) {
    if (unit == u.name) {
      *out = static_cast<uint64_t>(v * u.factor);
      return true;
    }
  }
  return false;
}

inline void print_usage(const char* program, const Options& d, FILE* f) {
  std::fprintf(f,
               "usage: %s [--n N] [--steps T] [--devices D] [--tiles-per-device K]\n"
               "       %*s [--capacity BYTES|auto|none] [--reserve|--no-reserve] [--json] "
               "[--plan]\n"
               "  --n N                 array extent per dimension (default %lld)\n"
               "  --steps T             time steps, two phases each (default %d)\n"
               "  --devices D           devices to use (default %s)\n"
               "  --tiles-per-device K  tiles per device block (default %d)\n"
               "  --capacity C          per-device byte limit: none, auto (3/4 of a device's\n"
               "                        share of both arrays: forces box-out) or e.g. 512MiB\n"
               "                        (default %s)\n"
               "  --no-reserve          do not bbmm_reserve each device's allocation hull\n"
               "  --json                statistics as JSON instead of a table\n"
               "  --plan                print the tiles, hulls and traffic model; run nothing\n",
               program, static_cast<int>(std::strlen(program)), "", static_cast<long long>(d.n),
               d.steps, d.devices > 0 ? std::to_string(d.devices).c_str() : "all visible",
               d.tiles_per_device, d.capacity.c_str());
}

// Parses the command line over the defaults in `o`. Returns -1 to go on, else the exit
// code (0 after --help, 1 after a usage error, both printed).
inline int parse_options(int argc, char** argv, const char* program, Options* o) {
  const Options defaults = *o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto int_value = [&](int64_t lo, int64_t hi, int64_t* out) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: %s needs a value\n", program, arg.c_str());
        return false;
      }
      const char* text = argv[++i];
      if (!parse_int(text, out) || *out < lo || *out > hi) {
        std::fprintf(stderr, "%s: %s '%s': expected an integer in [%lld, %lld]\n", program,
                     arg.c_str(), text, static_cast<long long>(lo), static_cast<long long>(hi));
        return false;
      }
      return true;
    };
    int64_t v = 0;
    bool ok = true;
    if (arg == "--n") {
      ok = int_value(3, int64_t{1} << 31, &v);
      o->n = v;
    } else if (arg == "--steps") {
      ok = int_value(0, 1 << 30, &v);
      o->steps = static_cast<int>(v);
    } else if (arg == "--devices") {
      ok = int_value(1, 64, &v);
      o->devices = static_cast<int>(v);
    } else if (arg == "--tiles-per-device") {
      ok = int_value(1, 1 << 20, &v);
      o->tiles_per_device = static_cast<int>(v);
    } else if (arg == "--capacity") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: --capacity needs a value\n", program);
        ok = false;
      } else {
        o->capacity = argv[++i];
        uint64_t bytes = 0;
        if (o->capacity != "none" && o->capacity != "auto" &&
            (!parse_bytes(o->capacity, &bytes) || bytes == 0)) {
          std::fprintf(stderr,
                       "%s: --capacity '%s': expected none, auto or a byte count such as "
                       "536870912 or 512MiB\n",
                       program, o->capacity.c_str());
          ok = false;
        }
      }
    } else if (arg == "--reserve") {
      o->reserve = true;
    } else if (arg == "--no-reserve") {
      o->reserve = false;
    } else if (arg == "--json") {
      o->json = true;
    } else if (arg == "--plan") {
      o->plan = true;
    } else if (arg == "--help" || arg == "-h") {
      print_usage(program, defaults, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "%s: unknown argument '%s'\n", program, arg.c_str());
      ok = false;
    }
    if (!ok) {
      print_usage(program, defaults, stderr);
      return 1;
    }
  }
  return -1;
}

// --------------------------------------------------------------- partition

// One tile: interior outer indices [lo, hi) of its device's block; flow_lo / flow_hi:
// its first / last row (plane) is read by a tile of ANOTHER device in the next phase.
struct Tile {
  int device;
  int64_t lo, hi;
  bool flow_lo, flow_hi;
};

struct Partition {
  int devices = 0;
  std::vector<int64_t> block_lo, block_hi;  // per device: interior rows [lo, hi)
  std::vector<Tile> order;                  // every tile once, in issue order
};

// Cuts the interior [1, n-1) of the outer dimension into one block per device and each
// block into `k` tiles (needs n-2 >= devices*k, so that no tile is empty). Issue order:
// first, for each device, the tiles with a neighbour on another device (their flow-out
// of halo rows then starts early, while the device runs its inner tiles), then the rest.
inline Partition make_partition(int64_t n, int devices, int k) {
  Partition p;
  p.devices = devices;
  const int64_t m = n - 2;
  std::vector<Tile> inner;
  for (int d = 0; d < devices; ++d) {
    const int64_t blo = 1 + m * d / devices, bhi = 1 + m * (d + 1) / devices;
    p.block_lo.push_back(blo);
    p.block_hi.push_back(bhi);
  }
  for (int d = 0; d < devices; ++d) {
    const int64_t blo = p.block_lo[d], bhi = p.block_hi[d];
    for (int t = 0; t < k; ++t) {
      Tile tile{d, blo + (bhi - blo) * t / k, blo + (bhi - blo) * (t + 1) / k, false, false};
      tile.flow_lo = t == 0 && d > 0;
      tile.flow_hi = t == k - 1 && d < devices - 1;
      (tile.flow_lo || tile.flow_hi ? p.order : inner).push_back(tile);
    }
  }
  p.order.insert(p.order.end(), inner.begin(), inner.end());
  return p;
}

// Box [olo, ohi) in the outer dimension times [ilo, ihi) in every inner one.
inline void make_box(int rank, int64_t olo, int64_t ohi, int64_t ilo, int64_t ihi, int64_t* lo,
                     int64_t* hi) {
  lo[0] = olo;
  hi[0] = ohi;
  for (int d = 1; d < rank; ++d) {
    lo[d] = ilo;
    hi[d] = ihi;
  }
}

inline int64_t ipow(int64_t b, int e) {
  int64_t r = 1;
  for (int i = 0; i < e; ++i) r *= b;
  return r;
}

// --------------------------------------------------------------- traffic model

// Bytes over the whole run (every step): `device`: what the kernels must move through
// device memory, summed over devices (each phase reads every element of its input
// block that the stencil touches once and writes its output block once); `h2d_min`:
// every element read before it is written comes in once; `d2h_min`: every element
// written goes out once.
struct Traffic {
  uint64_t device = 0, h2d_min = 0, d2h_min = 0;
};

// Elements touched per outer slice: `own_read` in each owned row/plane, `halo_read` in
// each of the two halo rows/planes, `written` in each owned row/plane.
inline uint64_t device_bytes(const Partition& p, int steps, int64_t own_read, int64_t halo_read,
                             int64_t written) {
  uint64_t per_phase = 0;
  for (int d = 0; d < p.devices; ++d) {
    const int64_t rows = p.block_hi[d] - p.block_lo[d];
    per_phase += static_cast<uint64_t>(rows * own_read + 2 * halo_read + rows * written);
  }
  return per_phase * 2 * static_cast<uint64_t>(steps) * sizeof(double);
}

// ------------------------------------------------------------- host helpers

// Runs f(lo, hi) on disjoint ranges covering [0, count) from several threads.
template <class F>
void parallel_for(int64_t count, const F& f) {
  int threads = static_cast<int>(std::min<unsigned>(std::thread::hardware_concurrency(), 64));
  if (threads < 1) threads = 1;
  if (count < 4096) threads = 1;
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    pool.emplace_back(
        [&f, t, threads, count] { f(count * t / threads, count * (t + 1) / threads); });
  }
  f(0, count / threads);
  for (std::thread& th : pool) th.join();
}

// max |x - ref| / |ref| over `count` elements (|ref| == 0: the absolute error), with
// several threads; +inf if any x or ref is NaN.
inline double max_rel_err(const double* x, const double* ref, int64_t count) {
  const int slots = 64;
  std::vector<double> partial(slots * 8, 0.0);  // one cache line per thread
  std::atomic_int next{0};
  parallel_for(count, [&](int64_t lo, int64_t hi) {
    double m = 0;
    for (int64_t i = lo; i < hi; ++i) {
      const double d = std::fabs(x[i] - ref[i]);
      const double r = std::fabs(ref[i]);
      const double e = r > 0 ? d / r : d;
      if (!(e <= m)) m = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
    }
    partial[(next++ % slots) * 8] = m;
  });
  double m = 0;
  for (int s = 0; s < slots; ++s) m = std::max(m, partial[s * 8]);
  return m;
}

// Host arrays without the zero fill of std::vector (first touched by the threads that
// initialise them).
inline std::unique_ptr<double[]> host_array(int64_t count) {
  return std::unique_ptr<double[]>(new double[static_cast<size_t>(count)]);
}

// ---------------------------------------------------------------- the sample

struct LaunchCounts {
  int64_t single_piece = 0, generic = 0;
};

// What a sample supplies. The stencil runs `steps` times: phase 1 writes B's interior
// from A, phase 2 A's interior from B; each tile reads its rows/planes plus one halo each
// side over the whole inner extent and writes its rows/planes over the inner interior.
struct Sample {
  const char* sample;   // RESULT's sample= ("jacobi2d")
  const char* program;  // for messages ("jacobi2d_cuda")
  int rank;             // 2 or 3
  bbmm_backend_kind backend;
  // Fills outer slices [lo, hi) of both initial arrays (called from several threads).
  void (*init)(double* a, double* b, int64_t n, int64_t lo, int64_t hi);
  // Enqueues the kernel of a tile writing outer slices [lo, hi) of `dst` from `src`;
  // returns "" or an error message.
  std::string (*launch)(bbmm_tile* t, const bbmm_view& src, const bbmm_view& dst, int64_t lo,
                        int64_t hi, int64_t n, LaunchCounts* counts);
  // The sequential loop on the host, in place.
  void (*cpu_loop)(double* a, double* b, int64_t n, int steps);
  // Also compare with cpu_loop when n <= this.
  int64_t cpu_check_max_n;
  // An independent reference (no libbbmm) writing the final arrays to ra/rb, or null;
  // returns "" or an error message. `name` describes it in the output.
  std::string (*reference)(double* ra, double* rb, int64_t n, int steps);
  const char* reference_name;
  // The traffic model of the run.
  Traffic (*traffic)(int64_t n, int steps, const Partition& p);
};

inline uint64_t capacity_bytes(const Sample& s, const Options& o) {
  if (o.capacity == "none") return 0;
  if (o.capacity == "auto") {
    // A device's share of both arrays, 3/4 of it: its tiles cannot all stay resident.
    return static_cast<uint64_t>(2 * ipow(o.n, s.rank) * sizeof(double) / o.devices * 3 / 4);
  }
  uint64_t bytes = 0;
  parse_bytes(o.capacity, &bytes);
  return bytes;
}

// Bytes of the largest per-device allocation hull of both arrays.
inline uint64_t hull_bytes(const Sample& s, const Partition& p, int64_t n) {
  uint64_t worst = 0;
  for (int d = 0; d < p.devices; ++d) {
    const int64_t slices = p.block_hi[d] - p.block_lo[d] + 2;
    worst = std::max<uint64_t>(worst, 2 * slices * ipow(n, s.rank - 1) * sizeof(double));
  }
  return worst;
}

// Checks the options against the sample (after the device count is known); prints why not.
inline bool check_options(const Sample& s, const Options& o) {
  if (o.n - 2 < static_cast<int64_t>(o.devices) * o.tiles_per_device) {
    std::fprintf(stderr,
                 "%s: n = %lld leaves %lld interior %s for %d devices x %d tiles: every tile "
                 "needs one; use a larger --n or fewer tiles\n",
                 s.program, static_cast<long long>(o.n), static_cast<long long>(o.n - 2),
                 s.rank == 2 ? "rows" : "planes", o.devices, o.tiles_per_device);
    return false;
  }
  // Both arrays and the references must be addressable.
  const double elems = std::pow(static_cast<double>(o.n), s.rank);
  if (elems * sizeof(double) > 0.25 * static_cast<double>(std::numeric_limits<int64_t>::max())) {
    std::fprintf(stderr, "%s: n = %lld is too large\n", s.program, static_cast<long long>(o.n));
    return false;
  }
  return true;
}

inline void print_plan(const Sample& s, const Options& o) {
  const Partition p = make_partition(o.n, o.devices, o.tiles_per_device);
  const Traffic tr = s.traffic(o.n, o.steps, p);
  const char* what = s.rank == 2 ? "rows" : "planes";
  std::printf("%s plan: n=%lld steps=%d devices=%d tiles/device=%d\n", s.program,
              static_cast<long long>(o.n), o.steps, o.devices, o.tiles_per_device);
  for (int d = 0; d < p.devices; ++d) {
    std::printf("device %d: %s [%lld, %lld), reserve hull %s [%lld, %lld) x [0, %lld)^%d\n", d,
                what, static_cast<long long>(p.block_lo[d]), static_cast<long long>(p.block_hi[d]),
                what, static_cast<long long>(p.block_lo[d] - 1),
                static_cast<long long>(p.block_hi[d] + 1), static_cast<long long>(o.n), s.rank - 1);
  }
  for (size_t i = 0; i < p.order.size(); ++i) {
    const Tile& t = p.order[i];
    std::printf("tile %zu: device %d %s [%lld, %lld)%s%s\n", i, t.device, what,
                static_cast<long long>(t.lo), static_cast<long long>(t.hi),
                t.flow_lo ? " flow_out first" : "", t.flow_hi ? " flow_out last" : "");
  }
  std::printf("capacity %llu B/device, largest hull of both arrays %llu B\n",
              static_cast<unsigned long long>(capacity_bytes(s, o)),
              static_cast<unsigned long long>(hull_bytes(s, p, o.n)));
  std::printf("traffic model: bytes_device=%llu bytes_h2d_min=%llu bytes_d2h_min=%llu\n",
              static_cast<unsigned long long>(tr.device),
              static_cast<unsigned long long>(tr.h2d_min),
              static_cast<unsigned long long>(tr.d2h_min));
}

// One phase: every tile writes `dst` on its slices from `src`.
inline std::string run_phase(const Sample& s, bbmm_runtime* rt, bbmm_array* src, bbmm_array* dst,
                             const Partition& p, int64_t n, LaunchCounts* counts) {
  int64_t lo[BBMM_MAX_RANK], hi[BBMM_MAX_RANK];
  for (const Tile& tile : p.order) {
    std::string error;
    auto fail = [&](const char* call) {
      char where[160];
      std::snprintf(where, sizeof where, "%s (device %d, slices [%lld, %lld)): ", call, tile.device,
                    static_cast<long long>(tile.lo), static_cast<long long>(tile.hi));
      error = std::string(where) + bbmm_last_error_message();
      return false;
    };
    bbmm_tile* t = nullptr;
    if (bbmm_tile_begin(rt, tile.device, &t) != BBMM_OK) {
      fail("bbmm_tile_begin");
      return error;
    }
    bbmm_view vin, vout;
    bool ok = true;
    make_box(s.rank, tile.lo - 1, tile.hi + 1, 0, n, lo, hi);
    if (ok && bbmm_tile_require(t, src, lo, hi, BBMM_READ) != BBMM_OK) ok = fail("require READ");
    make_box(s.rank, tile.lo, tile.hi, 1, n - 1, lo, hi);
    if (ok && bbmm_tile_require(t, dst, lo, hi, BBMM_WRITE) != BBMM_OK) ok = fail("require WRITE");
    if (ok && bbmm_tile_acquire(t) != BBMM_OK) ok = fail("bbmm_tile_acquire");
    if (ok && bbmm_tile_view(t, src, &vin) != BBMM_OK) ok = fail("bbmm_tile_view");
    if (ok && bbmm_tile_view(t, dst, &vout) != BBMM_OK) ok = fail("bbmm_tile_view");
    if (ok) {
      error = s.launch(t, vin, vout, tile.lo, tile.hi, n, counts);
      ok = error.empty();
    }
    // Only halo rows read by ANOTHER device's tile are flowed out: flow_out of a box no
    // other device holds goes to the host, which would cost PCIe traffic for rows that
    // the neighbouring tile of the same device finds in place.
    if (ok && tile.flow_lo) {
      make_box(s.rank, tile.lo, tile.lo + 1, 1, n - 1, lo, hi);
      if (bbmm_tile_flow_out(t, dst, lo, hi) != BBMM_OK) ok = fail("bbmm_tile_flow_out");
    }
    if (ok && tile.flow_hi) {
      make_box(s.rank, tile.hi - 1, tile.hi, 1, n - 1, lo, hi);
      if (bbmm_tile_flow_out(t, dst, lo, hi) != BBMM_OK) ok = fail("bbmm_tile_flow_out");
    }
    if (bbmm_tile_release(t) != BBMM_OK && ok) ok = fail("bbmm_tile_release");
    if (!ok) return error;
  }
  return "";
}

#define STENCIL_CHECK(call)                                                              \
  do {                                                                                   \
    if ((call) != BBMM_OK) {                                                             \
      std::fprintf(stderr, "%s: %s: %s\n", s.program, #call, bbmm_last_error_message()); \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

// Runs the sample with options `o` (devices already resolved). Exit codes: 0 verified;
// 1 usage or runtime error; 2 verification failed; 3 verified, but an instance grew
// although every device's hull was reserved (bytes_d2d != 0).
inline int run(const Sample& s, const Options& o) {
  if (!check_options(s, o)) return 1;
  if (o.plan) {
    print_plan(s, o);
    return 0;
  }
  const int64_t n = o.n, elems = ipow(n, s.rank);
  std::unique_ptr<double[]> a = host_array(elems), b = host_array(elems);
  parallel_for(n, [&](int64_t lo, int64_t hi) { s.init(a.get(), b.get(), n, lo, hi); });

  bbmm_options opts;
  STENCIL_CHECK(bbmm_options_init(&opts));
  opts.backend = s.backend;
  opts.devices = o.devices;
  opts.device_memory = capacity_bytes(s, o);
  bbmm_runtime* rt = nullptr;
  STENCIL_CHECK(bbmm_runtime_create(&opts, &rt));
  if (bbmm_device_count(rt) != o.devices) {
    std::fprintf(stderr, "%s: asked for %d devices, the runtime has %d\n", s.program, o.devices,
                 bbmm_device_count(rt));
    return 1;
  }
  int64_t ext[BBMM_MAX_RANK];
  for (int d = 0; d < s.rank; ++d) ext[d] = n;
  bbmm_array *A = nullptr, *B = nullptr;
  // Registration (pinning the host arrays on CUDA) is outside the timed region; the
  // host_pin statistics report it.
  STENCIL_CHECK(bbmm_array_register(rt, "A", a.get(), sizeof(double), s.rank, ext, nullptr, 0, &A));
  STENCIL_CHECK(bbmm_array_register(rt, "B", b.get(), sizeof(double), s.rank, ext, nullptr, 0, &B));

  const Partition p = make_partition(n, o.devices, o.tiles_per_device);
  const uint64_t cap = opts.device_memory, hull = hull_bytes(s, p, n);
  // Under a capacity that cannot hold both hulls, reserving would only make the second
  // reservation box out the first: box-out runs do without.
  const bool reserve = o.reserve && (cap == 0 || hull <= cap);
  LaunchCounts counts;

  // Setup, like a hand-written program's cudaMalloc: the reservations (when on)
  // allocate each device's hull; reported apart (reserve_seconds), as pinning is.
  double reserve_seconds = 0;
  if (reserve) {
    const auto r0 = std::chrono::steady_clock::now();
    int64_t lo[BBMM_MAX_RANK], hi[BBMM_MAX_RANK];
    for (int d = 0; d < o.devices; ++d) {
      make_box(s.rank, p.block_lo[d] - 1, p.block_hi[d] + 1, 0, n, lo, hi);
      STENCIL_CHECK(bbmm_reserve(rt, d, A, lo, hi));
      STENCIL_CHECK(bbmm_reserve(rt, d, B, lo, hi));
    }
    reserve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
  }
  bbmm_stats before;
  STENCIL_CHECK(bbmm_stats_get(rt, -1, &before));

  // Timed: every tile, and both arrays back on the host.
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < o.steps; ++t) {
    std::string error = run_phase(s, rt, A, B, p, n, &counts);
    if (error.empty()) error = run_phase(s, rt, B, A, p, n, &counts);
    if (!error.empty()) {
      std::fprintf(stderr, "%s: step %d: %s\n", s.program, t, error.c_str());
      return 1;
    }
  }
  // B first: its last writes (phase 1 of the last step) come before A's, so its
  // write-back can overlap the last phase's kernels.
  STENCIL_CHECK(bbmm_sync_to_host(rt, B));
  STENCIL_CHECK(bbmm_sync_to_host(rt, A));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  bbmm_stats st;
  STENCIL_CHECK(bbmm_stats_get(rt, -1, &st));
  // The timed part of the time in libbbmm (not the reservations).
  const double manager_seconds = st.manager_seconds - before.manager_seconds;
  const Traffic tr = s.traffic(n, o.steps, p);
  const char* dev_word = s.backend == BBMM_BACKEND_HOST ? "devices" : "gpus";
  std::printf("%s: n=%lld steps=%d %s=%d tiles/device=%d reserve=%d capacity=%s (%llu B/device)\n",
              s.program, static_cast<long long>(n), o.steps, dev_word, o.devices,
              o.tiles_per_device, reserve ? 1 : 0, o.capacity.c_str(),
              static_cast<unsigned long long>(cap));
  if (o.reserve && !reserve) {
    std::printf(
        "reserve skipped: both arrays' hull (%llu B on the largest device) exceeds the "
        "capacity\n",
        static_cast<unsigned long long>(hull));
  }
  std::printf(
      "time %.6f s (from the first tile to both arrays on the host), manager %.6f s (%.2f%%), "
      "reservations %.6f s, registration/pinning %.6f s for %llu B (both untimed)\n",
      seconds, manager_seconds, seconds > 0 ? 100.0 * manager_seconds / seconds : 0.0,
      reserve_seconds, st.host_pin_seconds, static_cast<unsigned long long>(st.bytes_host_pinned));
  std::printf("kernels: %lld single-piece, %lld generic (several pieces)\n",
              static_cast<long long>(counts.single_piece), static_cast<long long>(counts.generic));
  if (o.json) {
    STENCIL_CHECK(bbmm_stats_print_json(rt, stdout));
  } else {
    STENCIL_CHECK(bbmm_stats_print(rt, stdout));
  }
  std::printf(
      "traffic: h2d %llu B (min %llu), d2h %llu B (min %llu), peer %llu B, d2d %llu B; "
      "device memory (model) %llu B\n",
      static_cast<unsigned long long>(st.bytes_h2d), static_cast<unsigned long long>(tr.h2d_min),
      static_cast<unsigned long long>(st.bytes_d2h), static_cast<unsigned long long>(tr.d2h_min),
      static_cast<unsigned long long>(st.bytes_peer), static_cast<unsigned long long>(st.bytes_d2d),
      static_cast<unsigned long long>(tr.device));
  bool grew = false;
  if (reserve) {
    grew = st.bytes_d2d != 0;
    if (grew) {
      std::printf(
          "RESERVE CHECK FAILED: bytes_d2d = %llu although every device's hull was "
          "reserved (an instance grew)\n",
          static_cast<unsigned long long>(st.bytes_d2d));
    } else {
      std::printf("bytes_d2d = 0: no instance grew (every device's hull reserved)\n");
    }
  }
  STENCIL_CHECK(bbmm_array_unregister(rt, A));
  STENCIL_CHECK(bbmm_array_unregister(rt, B));
  STENCIL_CHECK(bbmm_runtime_destroy(rt));

  // Verification, untimed, after the runtime freed its device memory.
  double max_err = 0;
  bool checked = false;
  std::unique_ptr<double[]> ra, rb;
  if (s.reference != nullptr) {
    ra = host_array(elems);
    rb = host_array(elems);
    const std::string error = s.reference(ra.get(), rb.get(), n, o.steps);
    double e = std::numeric_limits<double>::infinity();
    if (error.empty()) {
      e = std::max(max_rel_err(a.get(), ra.get(), elems), max_rel_err(b.get(), rb.get(), elems));
    } else {
      std::printf("%s failed: %s\n", s.reference_name, error.c_str());
    }
    std::printf("verification against %s: max relative error %.3g -> %s\n", s.reference_name, e,
                e <= 1e-10 ? "PASSED" : "FAILED");
    max_err = std::max(max_err, e);
    checked = true;
  }
  if (n <= s.cpu_check_max_n) {
    if (!ra) {
      ra = host_array(elems);
      rb = host_array(elems);
    }
    parallel_for(n, [&](int64_t lo, int64_t hi) { s.init(ra.get(), rb.get(), n, lo, hi); });
    s.cpu_loop(ra.get(), rb.get(), n, o.steps);
    const double e =
        std::max(max_rel_err(a.get(), ra.get(), elems), max_rel_err(b.get(), rb.get(), elems));
    std::printf("verification against the sequential CPU loop: max relative error %.3g -> %s\n", e,
                e <= 1e-10 ? "PASSED" : "FAILED");
    max_err = std::max(max_err, e);
    checked = true;
  }
  const bool verified = checked && max_err <= 1e-10;
  std::printf(
      "RESULT sample=%s n=%lld steps=%d gpus=%d tiles_per_gpu=%d reserve=%d seconds=%.6f "
      "manager_seconds=%.6f bytes_device=%llu bytes_h2d_min=%llu bytes_d2h_min=%llu "
      "bytes_h2d=%llu bytes_d2h=%llu bytes_peer=%llu bytes_d2d=%llu verified=%d "
      "max_rel_err=%.3g host_pin_seconds=%.6f capacity=%llu evictions=%llu backend=%s "
      "reserve_seconds=%.6f\n",
      s.sample, static_cast<long long>(n), o.steps, o.devices, o.tiles_per_device, reserve ? 1 : 0,
      seconds, manager_seconds, static_cast<unsigned long long>(tr.device),
      static_cast<unsigned long long>(tr.h2d_min), static_cast<unsigned long long>(tr.d2h_min),
      static_cast<unsigned long long>(st.bytes_h2d), static_cast<unsigned long long>(st.bytes_d2h),
      static_cast<unsigned long long>(st.bytes_peer), static_cast<unsigned long long>(st.bytes_d2d),
      verified ? 1 : 0, max_err, st.host_pin_seconds, static_cast<unsigned long long>(cap),
      static_cast<unsigned long long>(st.evictions),
      s.backend == BBMM_BACKEND_HOST ? "host" : "cuda", reserve_seconds);
  if (!verified) return 2;
  return grew ? 3 : 0;
}

#undef STENCIL_CHECK

}  // namespace stencil
