// Random-trace fuzz of the runtime against a dense host "shadow".
//
// A trace is a runtime configuration (1-4 host devices, a capacity down to the
// size of the largest tile, peer access on/off, pitch alignment, growth
// threshold, checking mode), 1-3 random arrays (rank 1-3, small extents,
// element sizes 1/4/8/12/16, some with padded host rows, some read-only) and a
// sequence of operations: tiles (require random READ / WRITE / READ_WRITE
// boxes, acquire, launch a kernel, flow_out, release), pairs of tiles open at
// the same time (on one device or two; neither reads or writes what the other
// writes), sync_to_host, synchronize and discard (the host copy, once the
// write-backs in flight have landed, becomes the shadow: later read-ins must
// come from it, not from a device's dropped instance). One tile in ten is a host tile
// (BBMM_DEVICE_HOST: run on the calling thread over the host arrays). Half the traces end
// with one of their tiles again, several times (recurring tiles reuse their placement:
// core/tile_plans.h).
//
// Kernels work through the views: they check every element the tile reads
// against the shadow (so stale read-ins are caught at once), update a random
// subset of the READ_WRITE elements (each byte b -> 3b+1) and write
// f(seed, index) to every WRITE element. The shadow applies the same. After
// every sync_to_host the host array must equal the shadow, and the padding of
// strided host arrays must be untouched.
//
// Environment: BBMM_FUZZ_TRACES (total over the shards; default 10000, 2000
// under a sanitizer), BBMM_FUZZ_SEED (first seed; default 20261122),
// BBMM_FUZZ_ONLY (replay the one trace of that seed, printing it).
// On failure the seed and a shrunk trace (operations and requirements
// removed one at a time while the failure persists) are printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bbmm/box_set.h"
#include "runtime_test_util.h"

namespace bbmm::testing {
namespace {

#if defined(BBMM_TEST_SANITIZER)
constexpr int kDefaultTraces = 2000;
constexpr const char* kBuildKind = "sanitizer build";
#else
constexpr int kDefaultTraces = 10000;
constexpr const char* kBuildKind = "optimised build";
#endif
constexpr int kShards = 4;

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A small deterministic generator (the same trace on every platform).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(mix(seed)) {}
  uint64_t next() { return s_ = mix(s_); }
  // Uniform in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool chance(int percent) { return range(0, 99) < percent; }

 private:
  uint64_t s_;
};

// ------------------------------------------------------------------ traces

struct ArraySpec {
  int rank = 1;
  int64_t ext[3] = {1, 1, 1};
  int64_t strides[3] = {1, 1, 1};  // host element strides
  int64_t host_elems = 0;          // elements in the host allocation
  size_t elem = 4;
  bool read_only = false;
  bool padded = false;

  Box whole() const {
    int64_t lo[3] = {0, 0, 0};
    return Box::make_unchecked(rank, lo, ext);
  }
  int64_t volume() const { return ext[0] * (rank > 1 ? ext[1] : 1) * (rank > 2 ? ext[2] : 1); }
  int64_t linear(const int64_t* idx) const {  // dense row-major index
    int64_t l = 0;
    for (int d = 0; d < rank; ++d) l = l * ext[d] + idx[d];
    return l;
  }
  int64_t host_offset(const int64_t* idx) const {
    int64_t o = 0;
    for (int d = 0; d < rank; ++d) o += idx[d] * strides[d];
    return o;
  }
};

struct Req {
  int array = 0;
  Box box;
  Access access = Access::kRead;
};

struct TileSpec {
  int device = 0;
  std::vector<Req> reqs;
  std::vector<std::pair<int, Box>> flows;
  uint64_t seed = 0;
  bool launch = true;
};

enum class OpKind { kTile, kPair, kSync, kSynchronize, kReserve, kDiscard };

struct Op {
  OpKind kind = OpKind::kTile;
  TileSpec a, b;        // kTile: a; kPair: a and b
  bool b_first = false; // kPair: launch/flow/release b before a
  int array = 0;        // kSync, kReserve, kDiscard
  int device = 0;       // kReserve
  Box box;              // kReserve
};

struct Trace {
  uint64_t seed = 0;
  int devices = 1;
  size_t capacity = 0;  // per device, 0 = unlimited
  bool peer = true;
  size_t align = 1;
  double growth = 0.25;
  bool check = false;
  bbmm_write_back write_back = BBMM_WRITE_BACK_LAZY;
  int queues = 1;  // host backend worker queues per device
  std::vector<ArraySpec> arrays;
  std::vector<Op> ops;
};

const char* access_name(Access a) {
  return a == Access::kRead ? "R" : a == Access::kWrite ? "W" : "RW";
}

// Derived from the tile's own seed (no draws of the trace's generator, so seeds keep
// their traces): read requirement k of the tile is BBMM_READ_TRANSIENT, and a phase
// boundary follows the tile's op.
bool transient_read(const TileSpec& t, size_t k, const Req& r) {
  return r.access == Access::kRead && ((t.seed >> (k % 48)) & 3) == 0;
}
bool boundary_after(const TileSpec& t) { return (t.seed >> 50) % 3 == 0; }

std::string to_string(const TileSpec& t) {
  std::string s = absl::StrCat("tile dev", t.device, " seed=", t.seed, t.launch ? "" : " nolaunch");
  for (size_t k = 0; k < t.reqs.size(); ++k) {
    const Req& r = t.reqs[k];
    absl::StrAppend(&s, " ", transient_read(t, k, r) ? "RT" : access_name(r.access), "(A",
                    r.array, r.box.to_string(), ")");
  }
  for (const auto& [a, b] : t.flows) absl::StrAppend(&s, " flow(A", a, b.to_string(), ")");
  return s;
}

std::string to_string(const Trace& t) {
  std::string s = absl::StrCat("trace seed=", t.seed, " devices=", t.devices,
                               " capacity=", t.capacity, " peer=", t.peer,
                               " align=", t.align, " growth=", t.growth, " check=", t.check,
                               " write_back=", static_cast<int>(t.write_back),
                               " queues=", t.queues, "\n");
  for (size_t i = 0; i < t.arrays.size(); ++i) {
    const ArraySpec& a = t.arrays[i];
    absl::StrAppend(&s, "  A", i, ": rank ", a.rank, " extents");
    for (int d = 0; d < a.rank; ++d) absl::StrAppend(&s, " ", a.ext[d]);
    absl::StrAppend(&s, " elem ", a.elem, a.padded ? " padded" : "",
                    a.read_only ? " read-only" : "", "\n");
  }
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const Op& op = t.ops[i];
    absl::StrAppend(&s, "  [", i, "] ");
    switch (op.kind) {
      case OpKind::kTile:
        absl::StrAppend(&s, to_string(op.a), boundary_after(op.a) ? " | phase boundary" : "");
        break;
      case OpKind::kPair:
        absl::StrAppend(&s, "pair", op.b_first ? " (b first)" : "",
                        boundary_after(op.a) ? " | phase boundary" : "", "\n      a: ",
                        to_string(op.a), "\n      b: ", to_string(op.b));
        break;
      case OpKind::kSync:
        absl::StrAppend(&s, "sync_to_host A", op.array);
        break;
      case OpKind::kSynchronize:
        absl::StrAppend(&s, "synchronize");
        break;
      case OpKind::kReserve:
        absl::StrAppend(&s, "reserve A", op.array, op.box.to_string(), " on dev", op.device);
        break;
      case OpKind::kDiscard:
        absl::StrAppend(&s, "discard A", op.array);
        break;
    }
    s += "\n";
  }
  return s;
}

Box random_box(Rng& rng, const ArraySpec& a) {
  int64_t lo[3], hi[3];
  for (int d = 0; d < a.rank; ++d) {
    // Mostly small boxes, sometimes a whole dimension.
    if (rng.chance(20)) {
      lo[d] = 0;
      hi[d] = a.ext[d];
    } else {
      lo[d] = rng.range(0, a.ext[d] - 1);
      hi[d] = rng.range(lo[d] + 1, std::min(a.ext[d], lo[d] + 1 + a.ext[d] / 2));
    }
  }
  return Box::make_unchecked(a.rank, lo, hi);
}

Box random_sub_box(Rng& rng, const Box& b) {
  int64_t lo[3], hi[3];
  for (int d = 0; d < b.rank(); ++d) {
    lo[d] = rng.range(b.lo(d), b.hi(d) - 1);
    hi[d] = rng.range(lo[d] + 1, b.hi(d));
  }
  return Box::make_unchecked(b.rank(), lo, hi);
}

TileSpec random_tile(Rng& rng, const Trace& t) {
  TileSpec tile;
  tile.device = static_cast<int>(rng.range(0, t.devices - 1));
  tile.seed = rng.next();
  // One tile in ten runs on the host (BBMM_DEVICE_HOST), drawn from the seed
  // so that the rest of the trace is what it was without host tiles.
  if (mix(tile.seed ^ 0x4057) % 10 == 0) tile.device = kHostDevice;
  const int nreq = static_cast<int>(rng.range(1, 4));
  for (int k = 0; k < nreq; ++k) {
    Req r;
    r.array = static_cast<int>(rng.range(0, static_cast<int64_t>(t.arrays.size()) - 1));
    const ArraySpec& a = t.arrays[r.array];
    r.box = random_box(rng, a);
    if (!tile.reqs.empty() && rng.chance(30)) {
      // Near an earlier box of the same array: overlapping or adjacent
      // requests exercise the disjoint-making and hull decisions.
      const Req& prev = tile.reqs[rng.range(0, static_cast<int64_t>(tile.reqs.size()) - 1)];
      if (prev.array == r.array) {
        int64_t lo[3], hi[3];
        for (int d = 0; d < a.rank; ++d) {
          lo[d] = std::clamp<int64_t>(prev.box.lo(d) + rng.range(-1, 1), 0, a.ext[d] - 1);
          hi[d] = std::clamp<int64_t>(prev.box.hi(d) + rng.range(-1, 1), lo[d] + 1, a.ext[d]);
        }
        r.box = Box::make_unchecked(a.rank, lo, hi);
      }
    }
    const int64_t acc = rng.range(0, 2);
    r.access = a.read_only || acc == 0 ? Access::kRead : acc == 1 ? Access::kWrite
                                                                 : Access::kReadWrite;
    tile.reqs.push_back(r);
  }
  bool writes = false;
  for (const Req& r : tile.reqs) writes = writes || r.access == Access::kWrite;
  tile.launch = writes || !rng.chance(10);
  for (const Req& r : tile.reqs) {
    if (r.access != Access::kRead && rng.chance(40)) {
      tile.flows.push_back({r.array, rng.chance(50) ? r.box : random_sub_box(rng, r.box)});
    }
  }
  return tile;
}

bool overlaps_any(const std::vector<Req>& reqs, int array, const Box& box, bool writes_only) {
  for (const Req& r : reqs) {
    if (r.array != array || (writes_only && r.access == Access::kRead)) continue;
    if (overlaps(r.box, box)) return true;
  }
  return false;
}

// Bytes the tile needs on its device with dense rows: per array, the volume
// of the union of its boxes.
size_t tile_bytes(const TileSpec& tile, const Trace& t) {
  size_t total = 0;
  for (size_t a = 0; a < t.arrays.size(); ++a) {
    BoxSet s(t.arrays[a].rank);
    for (const Req& r : tile.reqs) {
      if (r.array == static_cast<int>(a)) (void)s.add(r.box);
    }
    total += static_cast<size_t>(s.volume()) * t.arrays[a].elem;
  }
  return total;
}

Trace generate(uint64_t seed) {
  Rng rng(seed);
  Trace t;
  t.seed = seed;
  t.devices = static_cast<int>(rng.range(1, 4));
  t.peer = rng.chance(60);
  t.align = rng.chance(25) ? 64 : 1;
  t.growth = rng.chance(20) ? 0.0 : static_cast<double>(rng.range(0, 60)) / 100.0;
  t.check = rng.chance(30);
  // Lazy (the default) mostly, eager and auto (eager once a device boxes out dirty data) too.
  t.write_back = static_cast<bbmm_write_back>(rng.chance(60) ? 0 : rng.range(1, 2));
  // Several queues per device run a device's kernels and copies
  // concurrently: a missing event shows up as a wrong value.
  t.queues = rng.chance(50) ? 4 : 1;
  const int narrays = static_cast<int>(rng.range(1, 3));
  static constexpr size_t kElems[] = {1, 4, 8, 12, 16};
  for (int i = 0; i < narrays; ++i) {
    ArraySpec a;
    a.rank = static_cast<int>(rng.range(1, 3));
    const int64_t max_ext = a.rank == 1 ? 24 : a.rank == 2 ? 8 : 5;
    for (int d = 0; d < a.rank; ++d) a.ext[d] = rng.range(1, max_ext);
    a.elem = kElems[rng.range(0, 4)];
    a.read_only = narrays > 1 && rng.chance(20);
    a.padded = a.rank > 1 && rng.chance(30);
    a.strides[a.rank - 1] = 1;
    for (int d = a.rank - 2; d >= 0; --d) {
      a.strides[d] = a.strides[d + 1] * a.ext[d + 1] + (a.padded ? rng.range(1, 3) : 0);
    }
    a.host_elems = a.strides[0] * a.ext[0];
    t.arrays.push_back(a);
  }
  const int nops = static_cast<int>(rng.range(4, 14));
  for (int i = 0; i < nops; ++i) {
    Op op;
    const int64_t k = rng.range(0, 99);
    if (k < 55) {
      op.kind = OpKind::kTile;
      op.a = random_tile(rng, t);
    } else if (k < 75) {
      op.kind = OpKind::kPair;
      op.a = random_tile(rng, t);
      op.b = random_tile(rng, t);
      op.b_first = rng.chance(50);
      // Neither tile may read or write what the other writes.
      std::vector<Req> keep;
      for (const Req& r : op.b.reqs) {
        if (overlaps_any(op.a.reqs, r.array, r.box, /*writes_only=*/true)) continue;
        if (r.access != Access::kRead && overlaps_any(op.a.reqs, r.array, r.box, false)) continue;
        keep.push_back(r);
      }
      op.b.reqs = keep;
      std::vector<std::pair<int, Box>> flows;
      for (const auto& f : op.b.flows) {
        if (overlaps_any(op.b.reqs, f.first, f.second, true)) flows.push_back(f);
      }
      op.b.flows = flows;
      bool writes = false;
      for (const Req& r : op.b.reqs) writes = writes || r.access == Access::kWrite;
      op.b.launch = op.b.launch || writes;
    } else if (k < 80) {
      // A reservation: any box, on any device; it must change no value.
      op.kind = OpKind::kReserve;
      op.array = static_cast<int>(rng.range(0, narrays - 1));
      op.device = static_cast<int>(rng.range(0, t.devices - 1));
      const ArraySpec& a = t.arrays[op.array];
      int64_t lo[Box::kMaxRank], hi[Box::kMaxRank];
      for (int d = 0; d < a.rank; ++d) {
        lo[d] = rng.range(0, a.ext[d] - 1);
        hi[d] = rng.range(lo[d] + 1, a.ext[d]);
      }
      op.box = Box::make_unchecked(a.rank, lo, hi);
    } else if (k < 90) {
      op.kind = OpKind::kSync;
      op.array = static_cast<int>(rng.range(0, narrays - 1));
    } else if (k < 96) {
      op.kind = OpKind::kSynchronize;
    } else {
      op.kind = OpKind::kDiscard;
      op.array = static_cast<int>(rng.range(0, narrays - 1));
    }
    t.ops.push_back(op);
  }
  // Recurring tiles: half the traces end with one of their device tiles 3-6 times more, a
  // random tile after some of them, so that its plan (core/tile_plans.h) is made, used, and
  // dropped when its instances change (growth, eviction, discard). Drawn from a generator of
  // their own: the rest of the trace is what the seed gave before them.
  Rng again(seed ^ 0x7e57a9a1);
  if (again.chance(50)) {
    std::vector<size_t> singles;
    for (size_t i = 0; i < t.ops.size(); ++i) {
      if (t.ops[i].kind == OpKind::kTile && t.ops[i].a.device != kHostDevice) singles.push_back(i);
    }
    if (!singles.empty()) {
      const Op base = t.ops[singles[again.range(0, static_cast<int64_t>(singles.size()) - 1)]];
      const int64_t n = again.range(3, 6);
      for (int64_t k = 0; k < n; ++k) {
        Op op = base;
        op.a.seed = again.next();
        t.ops.push_back(op);
        if (again.chance(30)) {
          Op other;
          other.kind = OpKind::kTile;
          other.a = random_tile(again, t);
          t.ops.push_back(other);
        }
      }
    }
  }
  // Capacity: from exactly the largest tile to unlimited.
  size_t biggest = 1;
  for (const Op& op : t.ops) {
    if (op.kind == OpKind::kTile || op.kind == OpKind::kPair) {
      biggest = std::max(biggest, tile_bytes(op.a, t));
      if (op.kind == OpKind::kPair) biggest = std::max(biggest, tile_bytes(op.b, t));
    }
  }
  const int64_t c = rng.range(0, 3);
  // With padded device rows the footprint depends on how the runtime cuts
  // the boxes: keep those traces unlimited so that any out-of-memory error
  // is a bug.
  if (t.align != 1 || c == 3) {
    t.capacity = 0;
  } else {
    t.capacity = c == 0 ? biggest : c == 1 ? biggest * 3 / 2 : biggest * 3;
  }
  return t;
}

// ------------------------------------------------------------------ execution

// What a shard's traces exercised (printed, so a reader can see that the
// interesting paths ran).
struct Coverage {
  uint64_t tiles = 0, hits = 0, grown = 0, misses = 0, pieces = 0, evictions = 0,
           writebacks = 0, peer_bytes = 0, conflicts = 0, ooms = 0, host_tiles = 0, planned = 0;
};
thread_local Coverage g_coverage;

uint8_t value_byte(uint64_t seed, int64_t linear, size_t k) {
  return static_cast<uint8_t>(mix(seed ^ mix(static_cast<uint64_t>(linear) * 131 + k)) & 0xff);
}
bool rw_selected(uint64_t seed, int64_t linear) { return (mix(seed + 0x77 + linear * 7) & 3) != 0; }
uint8_t rw_update(uint8_t b) { return static_cast<uint8_t>(b * 3 + 1); }
constexpr uint8_t kPadByte = 0x5c;

// First error seen by a kernel (kernels run on device worker threads).
struct ErrorSink {
  std::mutex mu;
  std::string first;
  void report(std::string s) {
    std::lock_guard<std::mutex> lock(mu);
    if (first.empty()) first = std::move(s);
  }
  std::string get() {
    std::lock_guard<std::mutex> lock(mu);
    return first;
  }
};

// What a kernel does to one array.
struct KernelPart {
  enum Kind : uint8_t { kCheck, kUpdate, kWrite };
  struct Action {
    Kind kind;
    int64_t idx[3];
    uint8_t bytes[16];  // kCheck/kUpdate: expected old value; kWrite: new value
  };
  int array = 0;
  size_t elem = 0;
  PieceCopy view;
  std::vector<Action> actions;  // checks first, then updates, then writes
};

class Runner {
 public:
  explicit Runner(const Trace& t) : t_(t) {}
  // The runtime goes first: queued copies may still read the host arrays.
  // The host arrays stay registered to the end (the trace compares them at its
  // syncs): shut down explicitly, which skips the destructor's message.
  ~Runner() {
    if (rt_ != nullptr) (void)rt_->shutdown();
    rt_.reset();
  }

  // Runs the trace; returns the first failure, or nullopt.
  std::optional<std::string> run() {
    absl::StatusOr<std::unique_ptr<Backend>> backend;
    if (fuzz_backend()) {
      // Another backend (a GPU test binary): the trace's devices and
      // capacity; its own pitch alignment and peer access.
      std::unique_ptr<Backend> b = fuzz_backend()->make(t_.devices, t_.capacity);
      if (b == nullptr) return std::string("the test backend could not be made");
      backend = std::move(b);
    } else {
      backend = make_host_backend({.devices = t_.devices, .capacity_bytes = t_.capacity,
                                   .pitch_alignment = t_.align, .peer_access = t_.peer,
                                   .queues = t_.queues});
    }
    if (!backend.ok()) return absl::StrCat("make backend: ", backend.status().message());
    RuntimeOptions opts;
    opts.growth_threshold = t_.growth;
    opts.check = t_.check;
    opts.write_back = t_.write_back;
    absl::StatusOr<std::unique_ptr<Runtime>> rt =
        Runtime::create_with_backend(*std::move(backend), opts);
    if (!rt.ok()) return absl::StrCat("create: ", rt.status().message());
    rt_ = std::move(*rt);
    sink_ = std::make_shared<ErrorSink>();

    Rng rng(t_.seed ^ 0xabcdef);
    for (size_t i = 0; i < t_.arrays.size(); ++i) {
      const ArraySpec& a = t_.arrays[i];
      host_.emplace_back(a.host_elems * a.elem, kPadByte);
      shadow_.emplace_back(a.volume() * a.elem);
      for_each_point(a.whole(), [&](const int64_t* idx) {
        for (size_t k = 0; k < a.elem; ++k) {
          const uint8_t v = static_cast<uint8_t>(rng.next());
          shadow_[i][a.linear(idx) * a.elem + k] = v;
          host_[i][a.host_offset(idx) * a.elem + k] = v;
        }
      });
      std::vector<int64_t> ext(a.ext, a.ext + a.rank), st(a.strides, a.strides + a.rank);
      absl::StatusOr<Array*> arr =
          rt_->register_array(absl::StrCat("A", i), host_[i].data(), a.elem, ext,
                              a.padded ? std::span<const int64_t>(st) : std::span<const int64_t>(),
                              a.read_only);
      if (!arr.ok()) return absl::StrCat("register A", i, ": ", arr.status().message());
      arrays_.push_back(*arr);
    }

    for (size_t i = 0; i < t_.ops.size(); ++i) {
      op_ = i;
      std::optional<std::string> f = run_op(t_.ops[i]);
      if (!f) f = kernel_error();
      if (f) return absl::StrCat("op [", i, "]: ", *f);
    }
    op_ = t_.ops.size();
    for (size_t i = 0; i < arrays_.size(); ++i) {
      if (auto f = sync_and_compare(static_cast<int>(i))) return absl::StrCat("final: ", *f);
    }
    for (int d = 0; d < t_.devices; ++d) {
      const bbmm_stats s = rt_->stats(d);
      if (t_.capacity > 0 && s.peak_bytes_allocated > t_.capacity) {
        return absl::StrCat("device ", d, ": peak ", s.peak_bytes_allocated,
                            " bytes exceeds the capacity ", t_.capacity);
      }
    }
    const bbmm_stats all = rt_->stats(-1);
    g_coverage.tiles += all.tiles;
    g_coverage.host_tiles += all.host_tiles;
    g_coverage.hits += all.hits_exact + all.hits_contained;
    g_coverage.grown += all.hits_grown;
    g_coverage.misses += all.misses;
    g_coverage.pieces += all.pieces;
    g_coverage.evictions += all.evictions;
    g_coverage.writebacks += all.writebacks;
    g_coverage.peer_bytes += all.bytes_peer;
    g_coverage.planned += all.planned_tiles;
    (void)rt_->shutdown();  // arrays still registered on purpose (see ~Runner)
    rt_.reset();
    if (auto f = kernel_error()) return f;
    return std::nullopt;
  }

 private:
  struct Open {
    const TileSpec* spec;
    std::optional<Tile> tile;
    bool acquired = false;
    bool launched = false;
  };

  std::optional<std::string> kernel_error() {
    std::string e = sink_->get();
    if (e.empty()) return std::nullopt;
    return "kernel: " + e;
  }

  std::optional<std::string> run_op(const Op& op) {
    switch (op.kind) {
      case OpKind::kSync:
        return sync_and_compare(op.array);
      case OpKind::kSynchronize: {
        absl::Status s = rt_->synchronize();
        if (!s.ok()) return absl::StrCat("synchronize: ", s.message());
        epoch_writes_.clear();
        return std::nullopt;
      }
      case OpKind::kDiscard: {
        // No tile is open: it must succeed. Then the host copy, once what is being
        // written back has landed (sync_to_host waits for it and writes nothing more
        // back), is the array's value.
        absl::Status s = rt_->discard(arrays_[op.array]);
        if (!s.ok()) return absl::StrCat("discard A", op.array, ": ", s.message());
        s = rt_->sync_to_host(arrays_[op.array]);
        if (!s.ok()) return absl::StrCat("sync_to_host after discard A", op.array, ": ", s.message());
        if (auto f = kernel_error()) return f;
        const ArraySpec& a = t_.arrays[op.array];
        for_each_point(a.whole(), [&](const int64_t* idx) {
          std::copy_n(&host_[op.array][a.host_offset(idx) * a.elem], a.elem,
                      &shadow_[op.array][a.linear(idx) * a.elem]);
        });
        return std::nullopt;
      }
      case OpKind::kReserve: {
        // No tile is open: only running out of memory may refuse it.
        absl::Status s = rt_->reserve(op.device, arrays_[op.array], op.box);
        if (!s.ok() && !absl::IsResourceExhausted(s)) return absl::StrCat("reserve: ", s.message());
        return std::nullopt;
      }
      case OpKind::kTile: {
        Open a{&op.a, std::nullopt};
        if (auto f = begin_acquire(a, false)) return f;
        if (auto f = finish(a)) return f;
        return phase_boundary(op);
      }
      case OpKind::kPair: {
        Open a{&op.a, std::nullopt}, b{&op.b, std::nullopt};
        if (auto f = begin_acquire(a, false)) return f;
        if (auto f = begin_acquire(b, op.a.device == op.b.device)) return f;
        Open& first = op.b_first ? b : a;
        Open& second = op.b_first ? a : b;
        if (auto f = launch(first)) return f;
        if (auto f = launch(second)) return f;
        if (auto f = finish(first)) return f;
        if (auto f = finish(second)) return f;
        return phase_boundary(op);
      }
    }
    return std::nullopt;
  }

  // After a tile or pair whose first tile says so (boundary_after): a phase boundary,
  // which frees the unheld transient instances and starts a checking epoch.
  std::optional<std::string> phase_boundary(const Op& op) {
    if (!boundary_after(op.a)) return std::nullopt;
    absl::Status s = rt_->phase_boundary();
    if (!s.ok()) return absl::StrCat("phase_boundary: ", s.message());
    epoch_writes_.clear();
    return std::nullopt;
  }

  bool predicts_conflict(const TileSpec& t) const {
    if (!t_.check) return false;
    for (const Req& r : t.reqs) {
      if (r.access == Access::kRead) continue;
      for (const auto& [dev, arr, box] : epoch_writes_) {
        if (dev != t.device && arr == r.array && overlaps(box, r.box)) return true;
      }
    }
    return false;
  }

  void commit(const TileSpec& t) {
    if (!t_.check) return;
    for (const Req& r : t.reqs) {
      if (r.access != Access::kRead) epoch_writes_.push_back({t.device, r.array, r.box});
    }
  }

  // Begins, requires and acquires. `may_oom`: another open tile shares the
  // device, so running out of memory is legitimate.
  std::optional<std::string> begin_acquire(Open& o, bool may_oom) {
    const TileSpec& t = *o.spec;
    absl::StatusOr<Tile> tile = rt_->begin_tile(t.device);
    if (!tile.ok()) return absl::StrCat("begin_tile: ", tile.status().message());
    o.tile = std::move(*tile);
    for (size_t k = 0; k < t.reqs.size(); ++k) {
      const Req& r = t.reqs[k];
      absl::Status s = o.tile->require(arrays_[r.array], r.box,
                                       transient_read(t, k, r) ? Access::kReadTransient : r.access);
      if (!s.ok()) return absl::StrCat("require: ", s.message());
    }
    const bool conflict = predicts_conflict(t);
    absl::Status s = o.tile->acquire();
    if (conflict) {
      if (s.code() != absl::StatusCode::kAborted) {
        return absl::StrCat("acquire: expected a write conflict (kAborted), got ", s.ToString());
      }
      g_coverage.conflicts++;
      return std::nullopt;
    }
    if (absl::IsResourceExhausted(s) && may_oom) {
      g_coverage.ooms++;
      return std::nullopt;
    }
    if (!s.ok()) return absl::StrCat("acquire (", to_string(t), "): ", s.ToString());
    o.acquired = true;
    return check_views(o);
  }

  // Every required point lies in exactly one piece, inside the array.
  std::optional<std::string> check_views(const Open& o) {
    for (size_t a = 0; a < arrays_.size(); ++a) {
      bool required = false;
      for (const Req& r : o.spec->reqs) required = required || r.array == static_cast<int>(a);
      absl::StatusOr<bbmm_view> v = o.tile->view(arrays_[a]);
      if (!required) {
        if (v.ok()) return absl::StrCat("view of unrequired A", a, " succeeded");
        continue;
      }
      if (!v.ok()) return absl::StrCat("view A", a, ": ", v.status().message());
      const ArraySpec& spec = t_.arrays[a];
      if (v->rank != spec.rank || v->elem_size != spec.elem || v->npieces < 1) {
        return absl::StrCat("view A", a, ": rank ", v->rank, " elem ", v->elem_size, " pieces ",
                            v->npieces);
      }
      for (int p = 0; p < v->npieces; ++p) {
        const Box pb = piece_box(v->pieces[p], spec.rank);
        if (pb.empty() || !is_subset(pb, spec.whole())) {
          return absl::StrCat("view A", a, ": piece ", pb.to_string(), " outside the array");
        }
        for (int q = 0; q < p; ++q) {
          if (overlaps(pb, piece_box(v->pieces[q], spec.rank))) {
            return absl::StrCat("view A", a, ": pieces ", p, " and ", q, " overlap");
          }
        }
      }
      for (const Req& r : o.spec->reqs) {
        if (r.array != static_cast<int>(a)) continue;
        std::optional<std::string> missing;
        for_each_point(r.box, [&](const int64_t* idx) {
          if (!missing && bbmm_view_at(&*v, idx) == nullptr) {
            missing = absl::StrCat("view A", a, ": required point of ", r.box.to_string(),
                                   " is in no piece");
          }
        });
        if (missing) return missing;
      }
    }
    return std::nullopt;
  }

  // `v` with its pieces cut to the points tile `t` requires of array `a` (the
  // pieces of a view may hold more): what a kernel staged through the host
  // (cuda_host_access) copies in is then exactly what the tile may touch, so
  // that ThreadSanitizer over the fake CUDA runtime reports only real missing
  // orderings, not reads of elements another operation may write meanwhile.
  static PieceCopy required_only(PieceCopy v, const TileSpec& t, int a) {
    std::vector<Box> boxes;
    for (const Req& r : t.reqs) {
      if (r.array == a) boxes.push_back(r.box);
    }
    absl::StatusOr<BoxSet> need = BoxSet::disjoint(boxes);
    if (!need.ok()) return v;
    std::vector<bbmm_piece> cut;
    for (const bbmm_piece& p : v.pieces()) {
      for (size_t k = 0; k < need->size(); ++k) {
        absl::StatusOr<Box> in = intersection(piece_box(p, v.rank()), (*need)[k]);
        if (!in.ok() || in->empty()) continue;
        bbmm_piece q = p;
        int64_t skip = 0;
        for (int d = 0; d < v.rank(); ++d) {
          q.lo[d] = in->lo(d);
          q.hi[d] = in->hi(d);
          skip += (q.lo[d] - p.lo[d]) * p.stride[d];
        }
        q.offset += static_cast<uint64_t>(skip) * v.elem_size();
        cut.push_back(q);
      }
    }
    v.mutable_pieces() = std::move(cut);
    return v;
  }

  // Builds the kernel from the shadow, applies it to the shadow, launches it.
  std::optional<std::string> launch(Open& o) {
    if (!o.acquired || !o.spec->launch || o.launched) return std::nullopt;
    o.launched = true;
    const TileSpec& t = *o.spec;
    auto parts = std::make_shared<std::vector<KernelPart>>();
    for (size_t a = 0; a < arrays_.size(); ++a) {
      const ArraySpec& spec = t_.arrays[a];
      std::vector<uint8_t> mark(spec.volume(), 0);  // bit0 read, bit1 rw, bit2 write
      bool any = false;
      for (const Req& r : t.reqs) {
        if (r.array != static_cast<int>(a)) continue;
        any = true;
        const uint8_t bits = r.access == Access::kRead ? 1 : r.access == Access::kWrite ? 4 : 3;
        for_each_point(r.box, [&](const int64_t* idx) { mark[spec.linear(idx)] |= bits; });
      }
      if (!any) continue;
      KernelPart part;
      part.array = static_cast<int>(a);
      part.elem = spec.elem;
      part.view = required_only(PieceCopy(*o.tile->view(arrays_[a])), t, static_cast<int>(a));
      std::vector<uint8_t>& sh = shadow_[a];
      for (int pass = 0; pass < 3; ++pass) {
        for_each_point(spec.whole(), [&](const int64_t* idx) {
          const int64_t l = spec.linear(idx);
          KernelPart::Action act{};
          std::copy(idx, idx + spec.rank, act.idx);
          uint8_t* cur = &sh[l * spec.elem];
          if (pass == 0 && (mark[l] & 1)) {
            act.kind = KernelPart::kCheck;
            std::copy(cur, cur + spec.elem, act.bytes);
            part.actions.push_back(act);
          } else if (pass == 1 && (mark[l] & 2) && rw_selected(t.seed, l)) {
            act.kind = KernelPart::kUpdate;
            std::copy(cur, cur + spec.elem, act.bytes);
            part.actions.push_back(act);
            for (size_t k = 0; k < spec.elem; ++k) cur[k] = rw_update(cur[k]);
          } else if (pass == 2 && (mark[l] & 4)) {
            act.kind = KernelPart::kWrite;
            for (size_t k = 0; k < spec.elem; ++k) act.bytes[k] = value_byte(t.seed, l, k);
            std::copy(act.bytes, act.bytes + spec.elem, cur);
            part.actions.push_back(act);
          }
        });
      }
      parts->push_back(std::move(part));
    }
    std::shared_ptr<ErrorSink> sink = sink_;
    const std::string where = absl::StrCat("op [", op_, "] ", to_string(t));
    auto kernel = [parts, sink, where](const std::vector<PieceCopy>& views) {
      for (size_t k = 0; k < parts->size(); ++k) {
        const KernelPart& p = (*parts)[k];
        for (const KernelPart::Action& act : p.actions) {
          uint8_t* at = static_cast<uint8_t*>(views[k].at(act.idx));
          if (at == nullptr) {
            sink->report(absl::StrCat(where, ": A", p.array, " point in no piece"));
            return;
          }
          if (act.kind == KernelPart::kWrite) {
            std::copy(act.bytes, act.bytes + p.elem, at);
            continue;
          }
          if (!std::equal(act.bytes, act.bytes + p.elem, at)) {
            std::string idx;
            for (int d = 0; d < p.view.rank(); ++d) absl::StrAppend(&idx, d ? "," : "", act.idx[d]);
            sink->report(absl::StrCat(where, ": A", p.array, "[", idx,
                                      "] read stale data: first byte ", static_cast<int>(at[0]),
                                      ", expected ", static_cast<int>(act.bytes[0])));
            return;
          }
          if (act.kind == KernelPart::kUpdate) {
            for (size_t b = 0; b < p.elem; ++b) at[b] = rw_update(at[b]);
          }
        }
      }
    };
    absl::Status s = o.tile->launch([parts, kernel](const bbmm_launch_info& info) {
      std::vector<PieceCopy> views;
      for (const KernelPart& p : *parts) views.push_back(p.view);
      // A host tile's views are the host arrays: no staging.
      if (info.device != kHostDevice && fuzz_backend() && fuzz_backend()->host_access) {
        fuzz_backend()->host_access(info, views, kernel);
      } else {
        kernel(views);
      }
    });
    if (!s.ok()) return absl::StrCat("launch: ", s.message());
    commit(t);
    return std::nullopt;
  }

  std::optional<std::string> finish(Open& o) {
    if (o.acquired) {
      if (auto f = launch(o)) return f;
      o.acquired = false;  // launched (or not to be)
      if (o.spec->launch) {
        for (const auto& [a, box] : o.spec->flows) {
          absl::Status s = o.tile->flow_out(arrays_[a], box);
          if (!s.ok()) return absl::StrCat("flow_out: ", s.message());
        }
      } else {
        commit(*o.spec);  // release commits a tile's writes
      }
    }
    if (o.tile.has_value()) {
      absl::Status s = o.tile->release();
      o.tile.reset();
      if (!s.ok()) return absl::StrCat("release: ", s.message());
    }
    return std::nullopt;
  }

  std::optional<std::string> sync_and_compare(int i) {
    absl::Status s = rt_->sync_to_host(arrays_[i]);
    if (!s.ok()) return absl::StrCat("sync_to_host A", i, ": ", s.message());
    if (auto f = kernel_error()) return f;
    const ArraySpec& a = t_.arrays[i];
    std::vector<bool> logical(a.host_elems, false);
    std::optional<std::string> bad;
    for_each_point(a.whole(), [&](const int64_t* idx) {
      const int64_t h = a.host_offset(idx);
      logical[h] = true;
      if (bad) return;
      const uint8_t* want = &shadow_[i][a.linear(idx) * a.elem];
      const uint8_t* got = &host_[i][h * a.elem];
      if (!std::equal(want, want + a.elem, got)) {
        std::string at;
        for (int d = 0; d < a.rank; ++d) absl::StrAppend(&at, d ? "," : "", idx[d]);
        bad = absl::StrCat("after sync_to_host A", i, "[", at, "]: first byte ",
                           static_cast<int>(got[0]), ", shadow ", static_cast<int>(want[0]));
      }
    });
    if (bad) return bad;
    for (int64_t h = 0; h < a.host_elems; ++h) {
      if (logical[h]) continue;
      for (size_t k = 0; k < a.elem; ++k) {
        if (host_[i][h * a.elem + k] != kPadByte) {
          return absl::StrCat("A", i, ": host padding element ", h, " was overwritten");
        }
      }
    }
    return std::nullopt;
  }

  const Trace& t_;
  std::unique_ptr<Runtime> rt_;
  std::shared_ptr<ErrorSink> sink_;
  std::vector<std::vector<uint8_t>> host_, shadow_;
  std::vector<Array*> arrays_;
  std::vector<std::tuple<int, int, Box>> epoch_writes_;
  size_t op_ = 0;
};

std::optional<std::string> run_trace(const Trace& t) { return Runner(t).run(); }

// Removes operations, then requirements and flow-outs, one at a time while
// the trace still fails.
Trace shrink(Trace t) {
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t i = t.ops.size(); i-- > 0;) {
      Trace c = t;
      c.ops.erase(c.ops.begin() + static_cast<long>(i));
      if (run_trace(c)) {
        t = std::move(c);
        progress = true;
      }
    }
    for (size_t i = 0; i < t.ops.size(); ++i) {
      for (int which = 0; which < 2; ++which) {
        auto tile_of = [&](Trace& tr) -> TileSpec& { return which == 0 ? tr.ops[i].a : tr.ops[i].b; };
        for (size_t k = tile_of(t).reqs.size(); k-- > 0;) {
          Trace c = t;
          TileSpec& ct = tile_of(c);
          ct.reqs.erase(ct.reqs.begin() + static_cast<long>(k));
          bool writes = false;
          for (const Req& r : ct.reqs) writes = writes || r.access == Access::kWrite;
          if (writes && !ct.launch) continue;
          if (run_trace(c)) {
            t = std::move(c);
            progress = true;
          }
        }
        for (size_t k = tile_of(t).flows.size(); k-- > 0;) {
          Trace c = t;
          TileSpec& ct = tile_of(c);
          ct.flows.erase(ct.flows.begin() + static_cast<long>(k));
          if (run_trace(c)) {
            t = std::move(c);
            progress = true;
          }
        }
      }
    }
  }
  return t;
}

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return std::strtoull(v, nullptr, 10);
}

class RuntimeFuzz : public ::testing::TestWithParam<int> {};

TEST_P(RuntimeFuzz, HostArraysMatchShadow) {
  if (!fuzz_skip_reason().empty()) GTEST_SKIP() << fuzz_skip_reason();
  const uint64_t total = env_u64("BBMM_FUZZ_TRACES", kDefaultTraces);
  const uint64_t first = env_u64("BBMM_FUZZ_SEED", 20261122);
  if (const char* only = std::getenv("BBMM_FUZZ_ONLY"); only != nullptr && *only != '\0') {
    if (GetParam() != 0) GTEST_SKIP() << "BBMM_FUZZ_ONLY runs in shard 0";
    const Trace t = generate(std::strtoull(only, nullptr, 10));
    std::printf("%s", to_string(t).c_str());
    std::optional<std::string> f = run_trace(t);
    EXPECT_FALSE(f.has_value()) << *f;
    return;
  }
  const int shard = GetParam();
  const uint64_t begin = total * shard / kShards, end = total * (shard + 1) / kShards;
  const auto start = std::chrono::steady_clock::now();
  int failures = 0;
  g_coverage = {};
  for (uint64_t i = begin; i < end && failures < 3; ++i) {
    const Trace t = generate(first + i);
    std::optional<std::string> f = run_trace(t);
    if (!f) continue;
    ++failures;
    const Trace small = shrink(t);
    std::optional<std::string> sf = run_trace(small);
    ADD_FAILURE() << "trace seed " << t.seed << " (replay: BBMM_FUZZ_ONLY=" << t.seed
                  << ") failed: " << *f << "\nshrunk trace (" << small.ops.size()
                  << " ops) fails with: " << (sf ? *sf : "(passes?)") << "\n"
                  << to_string(small);
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("runtime fuzz shard %d/%d (%s): %llu traces from seed %llu in %.2f s\n", shard,
              kShards, kBuildKind, static_cast<unsigned long long>(end - begin),
              static_cast<unsigned long long>(first + begin), secs);
  const Coverage& c = g_coverage;
  std::printf("  exercised: %llu tiles, %llu hits, %llu grown, %llu misses, %llu pieces, "
              "%llu evictions, %llu write-backs, %llu peer bytes, %llu conflicts detected, "
              "%llu legitimate out-of-memory, %llu host tiles, %llu planned tiles\n",
              (unsigned long long)c.tiles, (unsigned long long)c.hits,
              (unsigned long long)c.grown, (unsigned long long)c.misses,
              (unsigned long long)c.pieces, (unsigned long long)c.evictions,
              (unsigned long long)c.writebacks, (unsigned long long)c.peer_bytes,
              (unsigned long long)c.conflicts, (unsigned long long)c.ooms,
              (unsigned long long)c.host_tiles, (unsigned long long)c.planned);
}

INSTANTIATE_TEST_SUITE_P(Shards, RuntimeFuzz, ::testing::Range(0, kShards));

}  // namespace
}  // namespace bbmm::testing
