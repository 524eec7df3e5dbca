// Runtime manager micro-benchmarks (Google Benchmark) on the host backend:
// the acquire+release hit path (target: under 2 microseconds), the miss path,
// the eviction path (clean and dirty), and making a realistic tile request
// disjoint (the 5 boxes of a 5-point stencil). docs/performance.md records
// the figures.
//
//   build-rt/bench/runtime/runtime_bench [--benchmark_filter=Hit]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "bbmm/bbmm.h"
#include "bbmm/box.h"
#include "bbmm/box_set.h"
#include "bbmm/runtime.h"
#include "core/backend.h"
#include "host/host_backend.h"

namespace bbmm {
namespace {

Box box2(int64_t i0, int64_t j0, int64_t i1, int64_t j1) { return *Box::create({i0, j0}, {i1, j1}); }

std::unique_ptr<Runtime> make_runtime(int devices, size_t capacity) {
  absl::StatusOr<std::unique_ptr<Backend>> b =
      make_host_backend({.devices = devices, .capacity_bytes = capacity});
  if (!b.ok()) std::abort();
  // The options from the environment (BBMM_TILE_PLANS=0 compares the hit paths without plans).
  absl::StatusOr<RuntimeOptions> options = RuntimeOptions::from_env();
  if (!options.ok()) std::abort();
  absl::StatusOr<std::unique_ptr<Runtime>> rt =
      Runtime::create_with_backend(*std::move(b), *options);
  if (!rt.ok()) std::abort();
  return *std::move(rt);
}

void check(const absl::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "runtime_bench: %s\n", s.ToString().c_str());
    std::abort();
  }
}

// One tile: require `boxes` of `a` (READ) and `out` of `b` (WRITE, if
// given), acquire, release. No kernel: this measures the manager.
void tile(Runtime& rt, int device, Array* a, const std::vector<Box>& boxes, Array* b = nullptr,
          const Box* out = nullptr, Access out_access = Access::kWrite) {
  absl::StatusOr<Tile> t = rt.begin_tile(device);
  check(t.status());
  for (const Box& box : boxes) check(t->require(a, box, Access::kRead));
  if (b != nullptr) check(t->require(b, *out, out_access));
  check(t->acquire());
  check(t->release());
}

constexpr int64_t kN = 256;

// Hit path: one box already resident.
void BM_AcquireReleaseHit(benchmark::State& state) {
  // Host arrays before the runtime: they must outlive it (copies in flight
  // read and write them until it is shut down).
  std::vector<double> h(kN * kN);
  auto rt = make_runtime(1, 0);
  const int64_t ext[2] = {kN, kN};
  Array* a = *rt->register_array("a", h.data(), 8, ext);
  const std::vector<Box> boxes = {box2(0, 0, 64, kN)};
  tile(*rt, 0, a, boxes);
  for (auto _ : state) tile(*rt, 0, a, boxes);
  state.counters["hits"] = static_cast<double>(rt->stats(0).hits_exact);
  check(rt->unregister_array(a));
}
BENCHMARK(BM_AcquireReleaseHit);

// Hit path of a realistic stencil tile: 5 READ boxes of `in` (centre and
// four halos), one WRITE box of `out`, all resident.
void BM_AcquireReleaseHitStencil(benchmark::State& state) {
  std::vector<double> hin(kN * kN), hout(kN * kN);
  auto rt = make_runtime(1, 0);
  const int64_t ext[2] = {kN, kN};
  Array* in = *rt->register_array("in", hin.data(), 8, ext);
  Array* out = *rt->register_array("out", hout.data(), 8, ext);
  const std::vector<Box> boxes = {box2(64, 1, 128, kN - 1), box2(63, 1, 64, kN - 1),
                                  box2(128, 1, 129, kN - 1), box2(64, 0, 128, 1),
                                  box2(64, kN - 1, 128, kN)};
  const Box w = box2(64, 1, 128, kN - 1);
  tile(*rt, 0, in, boxes, out, &w);
  for (auto _ : state) tile(*rt, 0, in, boxes, out, &w);
  check(rt->unregister_array(in));
  check(rt->unregister_array(out));
}
BENCHMARK(BM_AcquireReleaseHitStencil);

// The same hit through the C API (what generated code calls).
void BM_AcquireReleaseHitCApi(benchmark::State& state) {
  std::vector<double> h(kN * kN);
  bbmm_options o;
  bbmm_options_init(&o);
  o.backend = BBMM_BACKEND_HOST;
  o.devices = 1;
  bbmm_runtime* rt = nullptr;
  if (bbmm_runtime_create(&o, &rt) != BBMM_OK) std::abort();
  const int64_t ext[2] = {kN, kN};
  bbmm_array* a = nullptr;
  bbmm_array_register(rt, "a", h.data(), 8, 2, ext, nullptr, 0, &a);
  const int64_t lo[2] = {0, 0}, hi[2] = {64, kN};
  auto run = [&] {
    bbmm_tile* t = nullptr;
    bbmm_tile_begin(rt, 0, &t);
    bbmm_tile_require(t, a, lo, hi, BBMM_READ);
    if (bbmm_tile_acquire(t) != BBMM_OK) std::abort();
    bbmm_tile_release(t);
  };
  run();
  for (auto _ : state) run();
  if (bbmm_array_unregister(rt, a) != BBMM_OK || bbmm_runtime_destroy(rt) != BBMM_OK) std::abort();
}
BENCHMARK(BM_AcquireReleaseHitCApi);

// Miss path: every tile asks for a box not on the device (allocation and an
// asynchronous read-in; the copies themselves run on the device's worker
// thread). The array is re-registered, untimed, every 256 boxes (the manager
// scans a device's instances of an array linearly, so this keeps the number
// of resident instances realistic).
void BM_AcquireReleaseMiss(benchmark::State& state) {
  const int64_t rows = 256, cols = 64;
  std::vector<double> h(rows * cols);
  auto rt = make_runtime(1, 0);
  const int64_t ext[2] = {rows, cols};
  Array* a = *rt->register_array("a", h.data(), 8, ext);
  int64_t next = 0;
  for (auto _ : state) {
    if (next == rows) {
      state.PauseTiming();
      check(rt->unregister_array(a));
      a = *rt->register_array("a", h.data(), 8, ext);
      next = 0;
      state.ResumeTiming();
    }
    tile(*rt, 0, a, {box2(next, 0, next + 1, cols)});
    ++next;
  }
  state.counters["misses"] = static_cast<double>(rt->stats(0).misses);
  check(rt->unregister_array(a));
}
BENCHMARK(BM_AcquireReleaseMiss);

// Eviction path: room for one box; two boxes alternate, so every tile boxes
// out the other's (clean) instance, allocates and reads in.
void BM_AcquireReleaseEvictClean(benchmark::State& state) {
  const int64_t rows = 64, cols = 64;
  std::vector<double> h(rows * cols);
  auto rt = make_runtime(1, 8 * cols * (rows / 2));
  const int64_t ext[2] = {rows, cols};
  Array* a = *rt->register_array("a", h.data(), 8, ext);
  const Box boxes[2] = {box2(0, 0, rows / 2, cols), box2(rows / 2, 0, rows, cols)};
  int k = 0;
  for (auto _ : state) {
    tile(*rt, 0, a, {boxes[k]});
    k ^= 1;
  }
  check(rt->synchronize());
  state.counters["evictions"] = static_cast<double>(rt->stats(0).evictions);
  check(rt->unregister_array(a));
}
BENCHMARK(BM_AcquireReleaseEvictClean);

// As above with dirty instances: READ_WRITE tiles, so each eviction first
// writes the other box back to the host.
void BM_AcquireReleaseEvictDirty(benchmark::State& state) {
  const int64_t rows = 64, cols = 64;
  std::vector<double> h(rows * cols), dummy(1);
  auto rt = make_runtime(1, 8 * cols * (rows / 2));
  const int64_t ext[2] = {rows, cols}, one[1] = {1};
  Array* a = *rt->register_array("a", h.data(), 8, ext);
  Array* unused = *rt->register_array("unused", dummy.data(), 8, one);
  const Box boxes[2] = {box2(0, 0, rows / 2, cols), box2(rows / 2, 0, rows, cols)};
  int k = 0;
  for (auto _ : state) {
    absl::StatusOr<Tile> t = rt->begin_tile(0);
    check(t->require(a, boxes[k], Access::kReadWrite));
    check(t->acquire());
    check(t->release());
    k ^= 1;
  }
  check(rt->synchronize());
  state.counters["writebacks"] = static_cast<double>(rt->stats(0).writebacks);
  check(rt->unregister_array(a));
  check(rt->unregister_array(unused));
}
BENCHMARK(BM_AcquireReleaseEvictDirty);

// The whole tile path of a 2-D Jacobi phase as the GPU samples issue it: 2
// devices, 2 tiles each, each device's rows reserved up front; per tile
// acquire (hits), a launch (an empty kernel), the flow-out of its first and
// last rows to the neighbours (peer copies across devices), release. One
// iteration is one phase (4 tiles); the time is what the calling thread
// spends in libbbmm, issuing included (the host backend's queue hand-off costs
// more than the CUDA backend's).
void BM_JacobiPhaseTilePath(benchmark::State& state) {
  const int64_t n = 1026;
  const int devices = 2, tiles = 4;
  std::vector<double> ha(n * n, 1.0), hb(n * n, 0.0);
  auto rt = make_runtime(devices, 0);
  const int64_t ext[2] = {n, n};
  Array* a = *rt->register_array("A", ha.data(), 8, ext);
  Array* b = *rt->register_array("B", hb.data(), 8, ext);
  for (int d = 0; d < devices; ++d) {
    const int64_t lo = 1 + (n - 2) * d / devices, hi = 1 + (n - 2) * (d + 1) / devices;
    check(rt->reserve(d, a, box2(lo - 1, 0, hi + 1, n)));
    check(rt->reserve(d, b, box2(lo - 1, 0, hi + 1, n)));
  }
  int phase = 0;
  auto run_phase = [&] {
    Array* src = phase % 2 == 0 ? a : b;
    Array* dst = phase % 2 == 0 ? b : a;
    ++phase;
    for (int k = 0; k < tiles; ++k) {
      const int64_t lo = 1 + (n - 2) * k / tiles, hi = 1 + (n - 2) * (k + 1) / tiles;
      absl::StatusOr<Tile> t = rt->begin_tile(k * devices / tiles);
      check(t.status());
      check(t->require(src, box2(lo - 1, 0, hi + 1, n), Access::kRead));
      check(t->require(dst, box2(lo, 1, hi, n - 1), Access::kWrite));
      check(t->acquire());
      check(t->launch([](const bbmm_launch_info&) {}));
      if (lo > 1) check(t->flow_out(dst, box2(lo, 1, lo + 1, n - 1)));
      if (hi < n - 1) check(t->flow_out(dst, box2(hi - 1, 1, hi, n - 1)));
      check(t->release());
    }
  };
  for (int k = 0; k < 4; ++k) run_phase();
  check(rt->synchronize());
  for (auto _ : state) {
    run_phase();
    if (phase % 64 == 0) {
      state.PauseTiming();
      check(rt->synchronize());  // keep the queues short
      state.ResumeTiming();
    }
  }
  check(rt->synchronize());
  state.counters["tiles"] = benchmark::Counter(static_cast<double>(tiles),
                                               benchmark::Counter::kIsIterationInvariantRate,
                                               benchmark::Counter::kIs1000);
  state.counters["peer_MiB"] =
      static_cast<double>(rt->stats(-1).bytes_peer) / static_cast<double>(1 << 20);
  check(rt->unregister_array(a));
  check(rt->unregister_array(b));
}
BENCHMARK(BM_JacobiPhaseTilePath);

// Making a 5-point stencil tile's request disjoint: centre plus four halo
// strips (they do not overlap the centre here, but two of them touch it), as
// acquire does: add each box, then coalesce.
void BM_DisjointStencilRequest(benchmark::State& state) {
  const Box boxes[5] = {box2(64, 1, 128, 255), box2(63, 1, 64, 255), box2(128, 1, 129, 255),
                        box2(64, 0, 128, 1), box2(64, 255, 128, 256)};
  for (auto _ : state) {
    BoxSet s(2);
    for (const Box& b : boxes) benchmark::DoNotOptimize(s.add(b));
    s.coalesce();
    benchmark::DoNotOptimize(s.size());
  }
}
BENCHMARK(BM_DisjointStencilRequest);

// The same with overlapping boxes (the centre plus four shifted copies of it,
// as an unmerged stencil would request them).
void BM_DisjointStencilRequestOverlapping(benchmark::State& state) {
  const Box boxes[5] = {box2(64, 1, 128, 255), box2(63, 1, 127, 255), box2(65, 1, 129, 255),
                        box2(64, 0, 128, 254), box2(64, 2, 128, 256)};
  for (auto _ : state) {
    BoxSet s(2);
    for (const Box& b : boxes) benchmark::DoNotOptimize(s.add(b));
    s.coalesce();
    benchmark::DoNotOptimize(s.size());
  }
}
BENCHMARK(BM_DisjointStencilRequestOverlapping);

}  // namespace
}  // namespace bbmm

BENCHMARK_MAIN();
