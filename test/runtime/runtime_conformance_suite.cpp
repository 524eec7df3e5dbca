// The cases of the runtime conformance suite (see runtime_conformance.h).
// Kernels are launch lambdas working through the views' pieces, copied by
// value (a kernel may run after the tile is released). Host arrays are
// declared before the runtime so that they outlive it: queued copies may read
// them until the runtime is destroyed.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/runtime_core.h"
#include "runtime_conformance.h"

namespace bbmm::testing {
namespace {
// The current factory's host_access (set by make_runtime, before any tile).
BackendFactory current_factory;

// Runs host kernel `body` on `views` inside a launch function, through the
// factory's host_access when it has one.
void run_host_kernel(const bbmm_launch_info& info, const std::vector<PieceCopy>& views,
                     const HostKernel& body) {
  // A host tile's views are the host arrays themselves.
  if (current_factory.host_access && info.device != kHostDevice) {
    current_factory.host_access(info, views, body);
  } else {
    body(views);
  }
}
}  // namespace

TestRuntime RuntimeConformance::make_runtime(int devices, size_t capacity,
                                                          RuntimeOptions options) {
  // Written only when the parameter changes, i.e. while no kernel runs.
  if (current_factory.name != GetParam().name) current_factory = GetParam();
  std::unique_ptr<Backend> backend = GetParam().make(devices, capacity);
  if (backend == nullptr) return nullptr;
  absl::StatusOr<std::unique_ptr<Runtime>> rt =
      Runtime::create_with_backend(std::move(backend), options);
  EXPECT_TRUE(rt.ok()) << rt.status();
  return TestRuntime(rt.ok() ? rt->release() : nullptr);
}

namespace {

struct TileReq {
  Array* array;
  Box box;
  Access access;
};

// Runs one tile on `device`: requires `reqs`, acquires, launches `body` with
// the view of each requirement's array (in `reqs` order), flows out `flows`,
// releases. Returns the first error.
template <typename Body>
absl::Status run_tile(Runtime& rt, int device, const std::vector<TileReq>& reqs, Body body,
                      const std::vector<std::pair<Array*, Box>>& flows = {}) {
  absl::StatusOr<Tile> tile = rt.begin_tile(device);
  if (!tile.ok()) return tile.status();
  for (const TileReq& r : reqs) {
    absl::Status s = tile->require(r.array, r.box, r.access);
    if (!s.ok()) return s;
  }
  absl::Status s = tile->acquire();
  if (!s.ok()) {
    (void)tile->release();
    return s;
  }
  std::vector<PieceCopy> views;
  for (const TileReq& r : reqs) {
    absl::StatusOr<bbmm_view> v = tile->view(r.array);
    if (!v.ok()) return v.status();
    views.emplace_back(*v);
  }
  s = tile->launch([views, body](const bbmm_launch_info& info) {
    run_host_kernel(info, views, body);
  });
  for (const auto& [a, b] : flows) {
    if (s.ok()) s = tile->flow_out(a, b);
  }
  absl::Status r = tile->release();
  return s.ok() ? r : s;
}

// A tile that only reads `box` (no kernel).
absl::Status touch(Runtime& rt, int device, Array* a, const Box& box) {
  return run_tile(rt, device, {{a, box, Access::kRead}}, [](const std::vector<PieceCopy>&) {});
}

Array* reg(Runtime& rt, const char* name, void* host, size_t elem,
           std::initializer_list<int64_t> extents, std::vector<int64_t> strides = {},
           bool read_only = false) {
  std::vector<int64_t> ext(extents);
  absl::StatusOr<Array*> a = rt.register_array(name, host, elem, ext, strides, read_only);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *a : nullptr;
}

double value(int64_t i) { return 0.5 + static_cast<double>(i); }

std::vector<double> iota_doubles(size_t n) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = value(static_cast<int64_t>(i));
  return v;
}

// Kernel body: every element of views[k] over `box` must equal value(i);
// counts mismatches in `bad`.
auto check_1d(std::shared_ptr<std::atomic<int>> bad, Box box, size_t k = 0) {
  return [bad, box, k](const std::vector<PieceCopy>& v) {
    for (int64_t i = box.lo(0); i < box.hi(0); ++i) {
      const void* p = v[k].at(&i);
      if (p == nullptr || *static_cast<const double*>(p) != value(i)) ++*bad;
    }
  };
}

// Kernel body: writes `f(i)` to every element of views[k] over `box`.
template <typename F>
auto write_1d(Box box, F f, size_t k = 0) {
  return [box, f, k](const std::vector<PieceCopy>& v) {
    for (int64_t i = box.lo(0); i < box.hi(0); ++i) *static_cast<double*>(v[k].at(&i)) = f(i);
  };
}

size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

// Device bytes of `box` with `elem`-byte elements when rows (the last
// dimension) are padded to `align` bytes (and stay a whole number of
// elements).
size_t expected_bytes(const Box& box, size_t elem, size_t align) {
  const size_t unit = std::lcm(align, elem);
  const int r = box.rank();
  size_t bytes = round_up(static_cast<size_t>(box.extent(r - 1)) * elem, unit);
  for (int d = 0; d < r - 1; ++d) bytes *= static_cast<size_t>(box.extent(d));
  return bytes;
}

// ------------------------------------------------------------------ reuse

TEST_P(RuntimeConformance, ExactReuseIsAHitWithoutCopies) {
  std::vector<double> x = iota_doubles(64);
  auto rt = make_runtime(1, 0);
  Array* a = reg(*rt, "x", x.data(), 8, {64});
  auto bad = std::make_shared<std::atomic<int>>(0);
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {32}), Access::kRead}}, check_1d(bad, B({0}, {32}))).ok());
  const bbmm_stats s1 = rt->stats(0);
  EXPECT_EQ(s1.misses, 1u);
  EXPECT_EQ(s1.bytes_h2d, 32u * 8);
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {32}), Access::kRead}}, check_1d(bad, B({0}, {32}))).ok());
  ASSERT_TRUE(rt->synchronize().ok());
  const bbmm_stats s2 = rt->stats(0);
  EXPECT_EQ(s2.hits_exact, 1u);
  EXPECT_EQ(s2.misses, 1u);
  EXPECT_EQ(s2.bytes_h2d, 32u * 8) << "a hit must not copy again";
  EXPECT_EQ(s2.instances, 1u);
  EXPECT_EQ(s2.tiles, 2u);
  EXPECT_EQ(*bad, 0);
}

TEST_P(RuntimeConformance, ContainedReuseServesASubBox) {
  std::vector<double> x = iota_doubles(64);
  auto rt = make_runtime(1, 0);
  Array* a = reg(*rt, "x", x.data(), 8, {64});
  ASSERT_TRUE(touch(*rt, 0, a, B({0}, {32})).ok());
  auto bad = std::make_shared<std::atomic<int>>(0);
  // The view of the contained box: one piece, exactly the box, inside the
  // instance (its addressing is checked by the kernel reading the values).
  absl::StatusOr<Tile> t = rt->begin_tile(0);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->require(a, B({8}, {16}), Access::kRead).ok());
  ASSERT_TRUE(t->acquire().ok());
  bbmm_view v = *t->view(a);
  ASSERT_EQ(v.npieces, 1);
  EXPECT_EQ(v.rank, 1);
  EXPECT_EQ(v.elem_size, 8u);
  EXPECT_EQ(piece_box(v.pieces[0], 1), B({8}, {16}));
  EXPECT_EQ(v.pieces[0].stride[0], 1);
  PieceCopy pc(v);
  ASSERT_TRUE(t->launch([pc, bad](const bbmm_launch_info& info) {
                    run_host_kernel(info, {pc}, check_1d(bad, B({8}, {16})));
                  }).ok());
  ASSERT_TRUE(t->release().ok());
  ASSERT_TRUE(rt->synchronize().ok());
  const bbmm_stats s = rt->stats(0);
  EXPECT_EQ(s.hits_contained, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.bytes_h2d, 32u * 8);
  EXPECT_EQ(*bad, 0);
}

TEST_P(RuntimeConformance, GrowthReplacesAnInstanceByTheHull) {
  std::vector<double> x = iota_doubles(64);
  auto rt = make_runtime(1, 0);
  Array* a = reg(*rt, "x", x.data(), 8, {64});
  ASSERT_TRUE(touch(*rt, 0, a, B({0}, {32})).ok());
  auto bad = std::make_shared<std::atomic<int>>(0);
  // [0,36) overlaps [0,32) partly; the hull wastes nothing: grow.
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {36}), Access::kRead}}, check_1d(bad, B({0}, {36}))).ok());
  ASSERT_TRUE(rt->synchronize().ok());
  const bbmm_stats s = rt->stats(0);
  EXPECT_EQ(s.hits_grown, 1u);
  EXPECT_EQ(s.instances, 1u);
  EXPECT_EQ(s.bytes_allocated, expected_bytes(B({0}, {36}), 8, GetParam().pitch_alignment));
  EXPECT_EQ(s.bytes_h2d, 36u * 8) << "only the 4 new elements are read in";
  EXPECT_EQ(*bad, 0);
  // The grown instance now serves [0,36) exactly.
  ASSERT_TRUE(touch(*rt, 0, a, B({0}, {36})).ok());
  EXPECT_EQ(rt->stats(0).hits_exact, 1u);
}

TEST_P(RuntimeConformance, NoGrowthByABlockToAHullOverAnEighthOfTheDevice) {
  // [0,16) resident, then a tile reads [14,32) (it adds a block) or [0,18) (a face): on a
  // device where their hull [0,32) or [0,18) takes more than an eighth of the memory, only
  // the face grows the instance; with room, both do.
  const size_t hull = expected_bytes(B({0}, {32}), 8, GetParam().pitch_alignment);
  for (const bool roomy : {false, true}) {
    for (const Box& next : {B({14}, {32}), B({0}, {18})}) {
      const size_t capacity = roomy ? 8 * hull : 4 * hull;
      SCOPED_TRACE(absl::StrCat("capacity ", capacity, ", then ", next.to_string()));
      std::vector<double> x = iota_doubles(64);
      auto rt = make_runtime(1, capacity);
      Array* a = reg(*rt, "x", x.data(), 8, {64});
      ASSERT_TRUE(touch(*rt, 0, a, B({0}, {16})).ok());
      auto bad = std::make_shared<std::atomic<int>>(0);
      ASSERT_TRUE(run_tile(*rt, 0, {{a, next, Access::kRead}}, check_1d(bad, next)).ok());
      ASSERT_TRUE(rt->synchronize().ok());
      const bool grows = roomy || next.hi(0) == 18;
      EXPECT_EQ(rt->stats(0).hits_grown, grows ? 1u : 0u);
      EXPECT_EQ(rt->stats(0).instances, grows ? 1u : 2u);
      EXPECT_EQ(*bad, 0);
    }
  }
}

TEST_P(RuntimeConformance, ThreeDStencilUnderBoxOutKeepsViewsInFewPieces) {
  // The standalone heat3d's small box-out run (n = 34, 2 tiles, 4 steps, each device
  // holding 3/4 of both arrays): a tile reads its planes and one more on each side of
  // the source and writes the interior of its planes of the destination. Its kernels
  // take views of at most 8 pieces (samples/standalone/stencil_common.h).
  constexpr int64_t n = 34;
  std::vector<double> x(n * n * n, 1.0), y(n * n * n, 2.0);
  auto rt = make_runtime(1, 2 * n * n * n * 8 * 3 / 4);
  Array* a = reg(*rt, "A", x.data(), 8, {n, n, n});
  Array* b = reg(*rt, "B", y.data(), 8, {n, n, n});
  size_t most = 0;
  for (int step = 0; step < 4; ++step) {
    for (int phase = 0; phase < 2; ++phase) {
      Array* src = phase == 0 ? a : b;
      Array* dst = phase == 0 ? b : a;
      for (const auto& [lo, hi] : {std::pair<int64_t, int64_t>{1, 17}, {17, 33}}) {
        absl::StatusOr<Tile> t = rt->begin_tile(0);
        ASSERT_TRUE(t.ok()) << t.status();
        ASSERT_TRUE(t->require(src, B({lo - 1, 0, 0}, {hi + 1, n, n}), Access::kRead).ok());
        ASSERT_TRUE(t->require(dst, B({lo, 1, 1}, {hi, n - 1, n - 1}), Access::kWrite).ok());
        ASSERT_TRUE(t->acquire().ok());
        for (Array* arr : {src, dst}) {
          absl::StatusOr<bbmm_view> v = t->view(arr);
          ASSERT_TRUE(v.ok()) << v.status();
          most = std::max(most, static_cast<size_t>(v->npieces));
        }
        ASSERT_TRUE(t->release().ok());
      }
    }
  }
  EXPECT_LE(most, 8u);
}

TEST_P(RuntimeConformance, PartialOverlapWithAnInstanceInUseGivesPieces) {
  std::vector<double> x = iota_doubles(64);
  auto rt = make_runtime(1, 0);
  Array* a = reg(*rt, "x", x.data(), 8, {64});
  // Tile A holds [0,32) while tile B asks for [16,48): the instance cannot
  // grow, so B is served as [16,32) from A's instance plus a new [32,48).
  absl::StatusOr<Tile> ta = rt->begin_tile(0);
  ASSERT_TRUE(ta.ok());
  ASSERT_TRUE(ta->require(a, B({0}, {32}), Access::kRead).ok());
  ASSERT_TRUE(ta->acquire().ok());
  const bbmm_view va = *ta->view(a);
  ASSERT_EQ(va.npieces, 1);
  const bbmm_piece pa = va.pieces[0];

  absl::StatusOr<Tile> tb = rt->begin_tile(0);
  ASSERT_TRUE(tb.ok());
  ASSERT_TRUE(tb->require(a, B({16}, {48}), Access::kRead).ok());
  ASSERT_TRUE(tb->acquire().ok());
  const bbmm_view vb = *tb->view(a);
  ASSERT_EQ(vb.npieces, 2);
  std::vector<Box> boxes = {piece_box(vb.pieces[0], 1), piece_box(vb.pieces[1], 1)};
  std::sort(boxes.begin(), boxes.end(), [](const Box& l, const Box& r) { return l.lo(0) < r.lo(0); });
  EXPECT_EQ(boxes[0], B({16}, {32}));
  EXPECT_EQ(boxes[1], B({32}, {48}));
  // Element 20 is A's element 20: the same device address.
  const int64_t i20[1] = {20};
  EXPECT_EQ(bbmm_view_at(&vb, i20), bbmm_piece_at(&pa, 8, 1, i20));
  auto bad = std::make_shared<std::atomic<int>>(0);
  PieceCopy pb(vb);
  ASSERT_TRUE(tb->launch([pb, bad](const bbmm_launch_info& info) {
                     run_host_kernel(info, {pb}, check_1d(bad, B({16}, {48})));
                   }).ok());
  ASSERT_TRUE(tb->release().ok());
  ASSERT_TRUE(ta->release().ok());
  ASSERT_TRUE(rt->synchronize().ok());
  const bbmm_stats s = rt->stats(0);
  EXPECT_GE(s.pieces, 1u);
  EXPECT_EQ(s.hits_grown, 0u);
  EXPECT_EQ(s.instances, 2u);
  EXPECT_EQ(s.bytes_h2d, 48u * 8);
  EXPECT_EQ(*bad, 0);
}

// ------------------------------------------------------------------ box-out

TEST_P(RuntimeConformance, EvictionTakesTheLeastRecentlyReleasedFirst) {
  // Room for three 128-byte boxes, not four.
  std::vector<double> x = iota_doubles(64);
  auto rt = make_runtime(1, 3 * 128 + 64);
  Array* a = reg(*rt, "x", x.data(), 8, {64});
  const Box X = B({0}, {16}), Y = B({16}, {32}), Z = B({32}, {48}), W = B({48}, {64});
  ASSERT_TRUE(touch(*rt, 0, a, X).ok());
  ASSERT_TRUE(touch(*rt, 0, a, Y).ok());
  ASSERT_TRUE(touch(*rt, 0, a, Z).ok());
  ASSERT_TRUE(touch(*rt, 0, a, X).ok());  // X is now the most recently released
  EXPECT_EQ(rt->stats(0).evictions, 0u);
  ASSERT_TRUE(touch(*rt, 0, a, W).ok());  // evicts Y
  EXPECT_EQ(rt->stats(0).evictions, 1u);
  const uint64_t hits = rt->stats(0).hits_exact, misses = rt->stats(0).misses;
  ASSERT_TRUE(touch(*rt, 0, a, X).ok());
  ASSERT_TRUE(touch(*rt, 0, a, Z).ok());
  EXPECT_EQ(rt->stats(0).hits_exact, hits + 2) << "X and Z must still be resident";
  ASSERT_TRUE(touch(*rt, 0, a, Y).ok());
  EXPECT_EQ(rt->stats(0).misses, misses + 1) << "Y must have been evicted";
  EXPECT_LE(rt->stats(0).peak_bytes_allocated, 3u * 128 + 64);
}

TEST_P(RuntimeConformance, DirtyDataIsWrittenBackBeforeEviction) {
  std::vector<double> x(32, -1.0);
  auto rt = make_runtime(1, 128);  // one 16-double box
  Array* a = reg(*rt, "x", x.data(), 8, {32});
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {16}), Access::kWrite}},
                       write_1d(B({0}, {16}), [](int64_t i) { return 2.0 * i + 1; }))
                  .ok());
  EXPECT_EQ(rt->stats(0).bytes_d2h, 0u);
  ASSERT_TRUE(touch(*rt, 0, a, B({16}, {32})).ok());  // boxes out [0,16)
  ASSERT_TRUE(rt->synchronize().ok());  // waits for the copies; no write-out
  const bbmm_stats s = rt->stats(0);
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.writebacks, 1u);
  EXPECT_EQ(s.bytes_written_back, 128u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(x[i], 2.0 * i + 1) << i;
  for (int i = 16; i < 32; ++i) EXPECT_EQ(x[i], -1.0) << i;
}

// Eager write-back (RuntimeOptions::write_back): a released tile's writes go to
// the host copy right away, so boxing the instance out later copies nothing.
// Tiles write [0,16), [16,32), [32,48) and [48,64) in turn on a device with room
// for two 16-double boxes; each is checked against what lazy write-back
// would have copied at that point.
namespace {

struct WriteBackTrace {
  std::vector<uint64_t> written_back;  // bytes_written_back after each tile
  std::vector<uint64_t> evictions;
};

RuntimeOptions writing_back(bbmm_write_back mode) {
  RuntimeOptions o;
  o.write_back = mode;
  return o;
}

// Writes the four boxes in turn, "steps" times, on device 0 of "rt"; then synchronises
// and checks the host array, and unregisters it.
WriteBackTrace write_four_boxes(Runtime& rt, int steps = 1) {
  std::vector<double> x(64, -1.0);
  Array* a = reg(rt, "x", x.data(), 8, {64});
  WriteBackTrace tr;
  for (int step = 0; step < steps; ++step) {
    for (int k = 0; k < 4; ++k) {
      const Box b = B({16 * k}, {16 * k + 16});
      EXPECT_TRUE(run_tile(rt, 0, {{a, b, Access::kWrite}},
                           write_1d(b, [k](int64_t i) { return 100.0 * k + i; }))
                      .ok());
      tr.written_back.push_back(rt.stats(0).bytes_written_back);
      tr.evictions.push_back(rt.stats(0).evictions);
    }
  }
  EXPECT_TRUE(rt.sync_to_host(a).ok());
  for (int k = 0; k < 4; ++k)
    for (int i = 16 * k; i < 16 * k + 16; ++i) EXPECT_EQ(x[i], 100.0 * k + i) << i;
  EXPECT_TRUE(rt.unregister_array(a).ok());
  return tr;
}

}  // namespace

TEST_P(RuntimeConformance, LazyWriteBackCopiesOnlyWhatIsBoxedOut) {
  auto rt = make_runtime(1, 2 * 128, writing_back(BBMM_WRITE_BACK_LAZY));
  const WriteBackTrace tr = write_four_boxes(*rt);
  EXPECT_EQ(tr.evictions, (std::vector<uint64_t>{0, 0, 1, 2}));
  EXPECT_EQ(tr.written_back, (std::vector<uint64_t>{0, 0, 128, 256}));
}

TEST_P(RuntimeConformance, EagerWriteBackCopiesEveryWriteAtRelease) {
  auto rt = make_runtime(1, 2 * 128, writing_back(BBMM_WRITE_BACK_EAGER));
  const WriteBackTrace tr = write_four_boxes(*rt);
  EXPECT_EQ(tr.evictions, (std::vector<uint64_t>{0, 0, 1, 2}));
  // Each tile's box at its release; the box-outs find nothing to copy.
  EXPECT_EQ(tr.written_back, (std::vector<uint64_t>{128, 256, 384, 512}));
}

TEST_P(RuntimeConformance, AutoWriteBackTurnsEagerAfterTheFirstDirtyBoxOut) {
  auto rt = make_runtime(1, 2 * 128, writing_back(BBMM_WRITE_BACK_AUTO));
  const WriteBackTrace tr = write_four_boxes(*rt);
  EXPECT_EQ(tr.evictions, (std::vector<uint64_t>{0, 0, 1, 2}));
  // Lazy until tile 2 boxes out [0,16) (dirty, 128 bytes); from then on eager:
  // tile 2's own box at its release, then tile 3's box-out of [16,32) (dirty,
  // written lazily) and tile 3's box.
  EXPECT_EQ(tr.written_back, (std::vector<uint64_t>{0, 0, 256, 512}));
}

TEST_P(RuntimeConformance, AutoWriteBackStaysLazyWhileEverythingFits) {
  auto rt = make_runtime(1, 4 * 128, writing_back(BBMM_WRITE_BACK_AUTO));
  const WriteBackTrace tr = write_four_boxes(*rt, 3);
  EXPECT_EQ(tr.written_back.back(), 0u);
  EXPECT_EQ(tr.evictions.back(), 0u);
}

TEST_P(RuntimeConformance, CleanInstancesAreEvictedWithoutWriteBack) {
  std::vector<double> x = iota_doubles(32);
  auto rt = make_runtime(1, 128);
  Array* a = reg(*rt, "x", x.data(), 8, {32});
  ASSERT_TRUE(touch(*rt, 0, a, B({0}, {16})).ok());
  ASSERT_TRUE(touch(*rt, 0, a, B({16}, {32})).ok());
  ASSERT_TRUE(rt->synchronize().ok());
  EXPECT_EQ(rt->stats(0).evictions, 1u);
  EXPECT_EQ(rt->stats(0).writebacks, 0u);
  EXPECT_EQ(rt->stats(0).bytes_d2h, 0u);
}

TEST_P(RuntimeConformance, OutOfCapacityNamesDeviceArrayBoxAndBytesAndLosesNothing) {
  std::vector<double> x(64, -1.0);
  auto rt = make_runtime(2, 128);
  Array* a = reg(*rt, "big", x.data(), 8, {64});
  // Dirty data on device 1 first.
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({0}, {16}), Access::kWrite}},
                       write_1d(B({0}, {16}), [](int64_t i) { return 3.0 * i; }))
                  .ok());
  absl::Status s = run_tile(*rt, 1, {{a, B({0}, {32}), Access::kReadWrite}},
                            [](const std::vector<PieceCopy>&) {});
  ASSERT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  const std::string m(s.message());
  EXPECT_NE(m.find("device 1"), std::string::npos) << m;
  EXPECT_NE(m.find("'big'"), std::string::npos) << m;
  EXPECT_NE(m.find("[0,"), std::string::npos) << m;
  EXPECT_NE(m.find("bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("128"), std::string::npos) << m << " (the capacity)";
  // Nothing lost: the written box, and the untouched rest.
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(x[i], 3.0 * i) << i;
  for (int i = 16; i < 64; ++i) EXPECT_EQ(x[i], -1.0) << i;
  // The device still works.
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({16}, {32}), Access::kWrite}},
                       write_1d(B({16}, {32}), [](int64_t i) { return 4.0 * i; }))
                  .ok());
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int i = 16; i < 32; ++i) EXPECT_EQ(x[i], 4.0 * i) << i;
}

// ------------------------------------------------------------------ coherency

TEST_P(RuntimeConformance, FlowOutPushesToOtherDevicesHoldingTheBox) {
  std::vector<double> x = iota_doubles(32);
  auto rt = make_runtime(2, 0);
  Array* a = reg(*rt, "x", x.data(), 8, {32});
  ASSERT_TRUE(touch(*rt, 1, a, B({0}, {16})).ok());  // device 1 holds [0,16)
  auto into1 = [&] { return rt->stats(1).bytes_peer + rt->stats(1).bytes_h2d; };
  const uint64_t before = into1();
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {16}), Access::kReadWrite}},
                       [](const std::vector<PieceCopy>& v) {
                         for (int64_t i = 0; i < 16; ++i) *static_cast<double*>(v[0].at(&i)) += 100;
                       },
                       {{a, B({0}, {16})}})
                  .ok());
  // Peer copy, or staged through the host where the devices cannot reach
  // each other: either way the box reaches device 1's instance.
  const uint64_t pushed = into1();
  EXPECT_EQ(pushed - before, 16u * 8) << "flow_out pushes the box to device 1";
  // Device 1 reads the new values from its own (updated) instance.
  auto seen = std::make_shared<std::vector<double>>(16);
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({0}, {16}), Access::kRead}},
                       [seen](const std::vector<PieceCopy>& v) {
                         for (int64_t i = 0; i < 16; ++i) (*seen)[i] = *static_cast<double*>(v[0].at(&i));
                       })
                  .ok());
  ASSERT_TRUE(rt->synchronize().ok());
  EXPECT_EQ(rt->stats(1).hits_exact, 1u);
  EXPECT_EQ(into1(), pushed) << "no read-in needed after flow_out";
  for (int i = 0; i < 16; ++i) EXPECT_EQ((*seen)[i], value(i) + 100) << i;
  // The host copy is still stale (device 1 holds the box); sync fixes it.
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(x[i], value(i) + 100) << i;
}

// Where no other device holds the box, a flow-out goes to the host only when
// some device cannot reach the writer by peer access (its readers would go
// through the host anyway); otherwise it moves nothing: a later reader copies
// it from the writer.
TEST_P(RuntimeConformance, FlowOutGoesToTheHostOnlyForDevicesWithoutPeerAccess) {
  std::vector<double> x(32, -1.0);
  auto rt = make_runtime(2, 0);
  const bool peer = rt->core()->backend().can_access_peer(1, 0);
  Array* a = reg(*rt, "x", x.data(), 8, {32});
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {32}), Access::kWrite}},
                       write_1d(B({0}, {32}), [](int64_t i) { return 7.0 * i; }),
                       {{a, B({8}, {24})}})
                  .ok());
  ASSERT_TRUE(rt->synchronize().ok());  // waits, does not write out
  EXPECT_EQ(rt->stats(0).bytes_d2h, peer ? 0u : 16u * 8);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(x[i], (!peer && i >= 8 && i < 24) ? 7.0 * i : -1.0) << i;
  }
  // Either way, a reader on the other device sees the new values.
  auto seen = std::make_shared<std::vector<double>>(32);
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({0}, {32}), Access::kRead}},
                       [seen](const std::vector<PieceCopy>& v) {
                         for (int64_t i = 0; i < 32; ++i) (*seen)[i] = *static_cast<double*>(v[0].at(&i));
                       })
                  .ok());
  ASSERT_TRUE(rt->synchronize().ok());
  for (int i = 0; i < 32; ++i) EXPECT_EQ((*seen)[i], 7.0 * i) << i;
}

// A flow-out goes only where the other device's tiles read and write
// (Instance::used), not into the rest of an instance that covers the box: here
// the headroom of an instance grown twice on device 0, which reaches into what
// device 1 writes. Nothing is pushed there; a device-0 tile that later asks
// for those elements finds them in its instance (a hit) and
// reads them in from device 1 at acquire, with device 1's values.
TEST_P(RuntimeConformance, FlowOutSkipsWhatNoTileOfTheOtherDeviceUses) {
  std::vector<double> x = iota_doubles(64);
  auto rt = make_runtime(2, 0);
  Array* a = reg(*rt, "x", x.data(), 8, {64});
  // [0,8), grown to [0,9) exactly, then to [0,10) with headroom: [0,15).
  for (int64_t hi : {8, 9, 10}) ASSERT_TRUE(touch(*rt, 0, a, B({0}, {hi})).ok()) << hi;
  ASSERT_EQ(rt->stats(0).hits_grown, 2u);
  auto into0 = [&] { return rt->stats(0).bytes_peer + rt->stats(0).bytes_h2d; };
  const uint64_t before = into0();
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({12}, {16}), Access::kWrite}},
                       write_1d(B({12}, {16}), [](int64_t i) { return -value(i); }),
                       {{a, B({12}, {16})}})
                  .ok());
  ASSERT_TRUE(rt->synchronize().ok());
  EXPECT_EQ(into0(), before) << "no flow-out into device 0's headroom";
  // Device 0 now asks for [0,15): its instance (with the headroom made above).
  auto seen = std::make_shared<std::vector<double>>(15);
  auto hits = [&] { return rt->stats(0).hits_exact + rt->stats(0).hits_contained; };
  const uint64_t hits_before = hits();
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {15}), Access::kRead}},
                       [seen](const std::vector<PieceCopy>& v) {
                         for (int64_t i = 0; i < 15; ++i) (*seen)[i] = *static_cast<double*>(v[0].at(&i));
                       })
                  .ok());
  ASSERT_TRUE(rt->synchronize().ok());
  EXPECT_EQ(hits(), hits_before + 1) << "the headroom covers [10,15)";
  EXPECT_EQ(rt->stats(0).hits_grown, 2u);
  EXPECT_EQ(into0() - before, 5u * 8) << "[10,12) from the host, [12,15) from device 1";
  for (int i = 0; i < 15; ++i) EXPECT_EQ((*seen)[i], i >= 12 ? -value(i) : value(i)) << i;
}

// A recurring tile (same device, same requirements) is acquired from its plan
// once its instances are known (core/tile_plans.h), and still reads in what
// another device wrote meanwhile; when its array's instances on the device change
// (growth frees the plan's instance), it is placed afresh, into the new instance,
// and planned again from there.
TEST_P(RuntimeConformance, RecurringTilesFollowTheirPlanUntilTheirInstancesChange) {
  std::vector<double> x = iota_doubles(64);
  std::vector<double> shadow = x;
  auto rt = make_runtime(2, 0);
  Array* a = reg(*rt, "x", x.data(), 8, {64});
  const Box mine = B({0}, {16});
  auto step = [&](double delta) {
    for (int64_t i = 0; i < 16; ++i) shadow[i] += delta;
    return run_tile(*rt, 0, {{a, mine, Access::kReadWrite}},
                    [delta](const std::vector<PieceCopy>& v) {
                      for (int64_t i = 0; i < 16; ++i) *static_cast<double*>(v[0].at(&i)) += delta;
                    });
  };
  auto planned = [&] { return rt->stats(0).planned_tiles; };
  // 1: a miss (noted); 2: a hit (remembered); 3-5: planned.
  for (int k = 1; k <= 5; ++k) ASSERT_TRUE(step(k).ok()) << k;
  EXPECT_EQ(planned(), 3u);
  EXPECT_EQ(rt->stats(0).hits_exact, 4u) << "a planned tile's hits are counted too";
  // Device 1 writes elements the planned tile reads: it reads them in.
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({8}, {12}), Access::kWrite}},
                       write_1d(B({8}, {12}), [](int64_t i) { return -value(i); }))
                  .ok());
  for (int64_t i = 8; i < 12; ++i) shadow[i] = -value(i);
  ASSERT_TRUE(step(10).ok());
  EXPECT_EQ(planned(), 4u);
  // Device 0 grows its instance to [0,32): the plan's instance is gone.
  ASSERT_TRUE(touch(*rt, 0, a, B({0}, {32})).ok());
  ASSERT_EQ(rt->stats(0).hits_grown, 1u);
  ASSERT_TRUE(step(100).ok());
  EXPECT_EQ(planned(), 4u) << "new instances: placed afresh";
  ASSERT_TRUE(step(1000).ok());
  EXPECT_EQ(planned(), 5u) << "planned again, in the grown instance";
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int i = 0; i < 64; ++i) EXPECT_EQ(x[i], shadow[i]) << i;
}

// With tile_plans off every tile is placed afresh: the same hits, no plan.
TEST_P(RuntimeConformance, WithoutTilePlansRecurringTilesArePlacedAfresh) {
  std::vector<double> x = iota_doubles(16);
  RuntimeOptions options;
  options.tile_plans = false;
  auto rt = make_runtime(1, 0, options);
  Array* a = reg(*rt, "x", x.data(), 8, {16});
  for (int k = 1; k <= 5; ++k) {
    ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {16}), Access::kReadWrite}},
                         [](const std::vector<PieceCopy>& v) {
                           for (int64_t i = 0; i < 16; ++i) *static_cast<double*>(v[0].at(&i)) += 1;
                         })
                    .ok());
  }
  EXPECT_EQ(rt->stats(0).planned_tiles, 0u);
  EXPECT_EQ(rt->stats(0).hits_exact, 4u);
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(x[i], value(i) + 5) << i;
}

TEST_P(RuntimeConformance, ReadAfterWriteOnAnotherDeviceSeesTheNewData) {
  std::vector<double> x = iota_doubles(48);
  auto rt = make_runtime(3, 0);
  Array* a = reg(*rt, "x", x.data(), 8, {48});
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {24}), Access::kWrite}},
                       write_1d(B({0}, {24}), [](int64_t i) { return -value(i); }))
                  .ok());
  // No flow_out: the directory still lets device 2 read valid data.
  auto seen = std::make_shared<std::vector<double>>(48);
  ASSERT_TRUE(run_tile(*rt, 2, {{a, B({0}, {48}), Access::kRead}},
                       [seen](const std::vector<PieceCopy>& v) {
                         for (int64_t i = 0; i < 48; ++i) (*seen)[i] = *static_cast<double*>(v[0].at(&i));
                       })
                  .ok());
  ASSERT_TRUE(rt->synchronize().ok());
  for (int i = 0; i < 48; ++i) EXPECT_EQ((*seen)[i], i < 24 ? -value(i) : value(i)) << i;
}

TEST_P(RuntimeConformance, SyncToHostCollectsEveryDevicesWrites) {
  std::vector<double> x(64, 0.0);
  auto rt = make_runtime(4, 0);
  Array* a = reg(*rt, "x", x.data(), 8, {64});
  for (int d = 0; d < 4; ++d) {
    const Box b = B({16 * d}, {16 * d + 16});
    ASSERT_TRUE(run_tile(*rt, d, {{a, b, Access::kWrite}},
                         write_1d(b, [d](int64_t i) { return d * 1000.0 + i; }))
                    .ok());
  }
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int i = 0; i < 64; ++i) EXPECT_EQ(x[i], (i / 16) * 1000.0 + i) << i;
  EXPECT_EQ(rt->stats(-1).bytes_d2h, 64u * 8);
  // A second sync has nothing to do.
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  EXPECT_EQ(rt->stats(-1).bytes_d2h, 64u * 8);
}

// A device that wrote an array piece by piece holds it as one region once the
// directory merges (lazily, core/directory.h): syncing writes it back in one copy
// per instance, not one per piece the directory has not merged yet.
TEST_P(RuntimeConformance, SyncToHostWritesBackMergedRegionsOnce) {
  std::vector<double> x(8 * 61, 0.0);
  auto rt = make_runtime(1, 0);
  Array* a = reg(*rt, "x", x.data(), 8, {8 * 61});
  ASSERT_TRUE(rt->reserve(0, a, B({0}, {8 * 61})).ok());  // one instance
  for (int r = 0; r < 61; ++r) {
    const Box b = B({8 * r}, {8 * r + 8});
    ASSERT_TRUE(run_tile(*rt, 0, {{a, b, Access::kWrite}},
                         write_1d(b, [](int64_t i) { return 2.0 * i + 1; }))
                    .ok());
  }
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int i = 0; i < 8 * 61; ++i) EXPECT_EQ(x[i], 2.0 * i + 1) << i;
  EXPECT_EQ(rt->stats(-1).bytes_d2h, 8u * 61 * 8);
  EXPECT_EQ(rt->stats(-1).writebacks, 1u);
}

TEST_P(RuntimeConformance, ReadOnlyArraysAreNeverWrittenBack) {
  std::vector<double> x = iota_doubles(64);
  auto rt = make_runtime(2, 128 + 64);  // one 16-double box per device
  Array* a = reg(*rt, "coeffs", x.data(), 8, {64}, {}, /*read_only=*/true);
  auto bad = std::make_shared<std::atomic<int>>(0);
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < 4; ++k) {
      const Box b = B({16 * k}, {16 * k + 16});
      ASSERT_TRUE(run_tile(*rt, k % 2, {{a, b, Access::kRead}}, check_1d(bad, b)).ok());
    }
  }
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  const bbmm_stats s = rt->stats(-1);
  EXPECT_GT(s.evictions, 0u);
  EXPECT_EQ(s.bytes_d2h, 0u);
  EXPECT_EQ(s.writebacks, 0u);
  EXPECT_EQ(*bad, 0);
  absl::StatusOr<Tile> t = rt->begin_tile(0);
  ASSERT_TRUE(t.ok());
  absl::Status w = t->require(a, B({0}, {4}), Access::kWrite);
  EXPECT_EQ(w.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(w.message()).find("read-only"), std::string::npos) << w;
  EXPECT_EQ(t->require(a, B({0}, {4}), Access::kReadWrite).code(),
            absl::StatusCode::kInvalidArgument);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(x[i], value(i));
}

// discard: what only devices hold is dropped, never written back; the host
// copy, untouched, is the value read in afterwards, also on a device whose
// (stale) instance still covers the box.
TEST_P(RuntimeConformance, DiscardDropsWhatOnlyDevicesHoldWithoutWritingItBack) {
  std::vector<double> x = iota_doubles(64);
  auto rt = make_runtime(2, 0);
  Array* a = reg(*rt, "scratch", x.data(), 8, {64});
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {32}), Access::kWrite}},
                       write_1d(B({0}, {32}), [](int64_t i) { return -value(i); }))
                  .ok());
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({32}, {48}), Access::kWrite}},
                       write_1d(B({32}, {48}), [](int64_t i) { return -value(i); }))
                  .ok());
  {
    // Not while a tile holds the array.
    absl::StatusOr<Tile> t = rt->begin_tile(1);
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE(t->require(a, B({40}, {44}), Access::kRead).ok());
    ASSERT_TRUE(t->acquire().ok());
    const absl::Status held = rt->discard(a);
    EXPECT_EQ(held.code(), absl::StatusCode::kFailedPrecondition) << held;
    EXPECT_TRUE(absl::StrContains(held.message(), "'scratch'")) << held;
    ASSERT_TRUE(t->release().ok());
  }
  ASSERT_TRUE(rt->discard(a).ok());
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  EXPECT_EQ(rt->stats(-1).bytes_d2h, 0u);
  EXPECT_EQ(rt->stats(-1).writebacks, 0u);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(x[i], value(i)) << i;
  // Read again on device 0, whose instance of [0, 32) holds the dropped values.
  auto bad = std::make_shared<std::atomic<int>>(0);
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {48}), Access::kRead}}, check_1d(bad, B({0}, {48})))
                  .ok());
  ASSERT_TRUE(rt->synchronize().ok());
  EXPECT_EQ(*bad, 0);
  // Written after the discard: written back as usual.
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({60}, {64}), Access::kWrite}},
                       write_1d(B({60}, {64}), [](int64_t i) { return 2 * value(i); }))
                  .ok());
  ASSERT_TRUE(rt->unregister_array(a).ok());
  for (int i = 0; i < 64; ++i) ASSERT_EQ(x[i], i >= 60 ? 2 * value(i) : value(i)) << i;
  EXPECT_EQ(rt->stats(-1).bytes_d2h, 4u * 8);
  // A read-only array: nothing to drop; an unregistered one: an error.
  std::vector<double> c = iota_doubles(8);
  Array* ro = reg(*rt, "coeffs", c.data(), 8, {8}, {}, /*read_only=*/true);
  EXPECT_TRUE(rt->discard(ro).ok());
  ASSERT_TRUE(rt->unregister_array(ro).ok());
  EXPECT_EQ(rt->discard(ro).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(rt->discard(nullptr).code(), absl::StatusCode::kInvalidArgument);
}

// ------------------------------------------------------------------ shapes

TEST_P(RuntimeConformance, ThreeDimensionalBoxes) {
  const int64_t n0 = 4, n1 = 5, n2 = 6;
  std::vector<float> x(n0 * n1 * n2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  const std::vector<float> orig = x;
  auto rt = make_runtime(2, 0);
  Array* a = reg(*rt, "cube", x.data(), 4, {n0, n1, n2});
  const Box box = B({1, 1, 2}, {3, 4, 5});
  ASSERT_TRUE(run_tile(*rt, 1, {{a, box, Access::kReadWrite}},
                       [box](const std::vector<PieceCopy>& v) {
                         for_each_point(box, [&](const int64_t* idx) {
                           *static_cast<float*>(v[0].at(idx)) *= 2;
                         });
                       })
                  .ok());
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int64_t i = 0; i < n0; ++i)
    for (int64_t j = 0; j < n1; ++j)
      for (int64_t k = 0; k < n2; ++k) {
        const size_t l = (i * n1 + j) * n2 + k;
        const bool in = box.contains({i, j, k});
        EXPECT_EQ(x[l], in ? 2 * orig[l] : orig[l]) << i << "," << j << "," << k;
      }
}

TEST_P(RuntimeConformance, RankFourBoxes) {
  const int64_t e[4] = {3, 3, 4, 5};
  std::vector<int32_t> x(e[0] * e[1] * e[2] * e[3]);
  std::iota(x.begin(), x.end(), 0);
  const std::vector<int32_t> orig = x;
  auto rt = make_runtime(2, 0);
  Array* a = reg(*rt, "hyper", x.data(), 4, {e[0], e[1], e[2], e[3]});
  const Box box = B({1, 0, 1, 1}, {3, 2, 4, 4});
  // Written on device 0, read (and incremented) on device 1, synced.
  ASSERT_TRUE(run_tile(*rt, 0, {{a, box, Access::kReadWrite}},
                       [box](const std::vector<PieceCopy>& v) {
                         for_each_point(box, [&](const int64_t* idx) {
                           *static_cast<int32_t*>(v[0].at(idx)) += 1000;
                         });
                       })
                  .ok());
  const Box all = B({0, 0, 0, 0}, {3, 3, 4, 5});
  ASSERT_TRUE(run_tile(*rt, 1, {{a, all, Access::kReadWrite}},
                       [all](const std::vector<PieceCopy>& v) {
                         for_each_point(all, [&](const int64_t* idx) {
                           *static_cast<int32_t*>(v[0].at(idx)) *= 2;
                         });
                       })
                  .ok());
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for_each_point(all, [&](const int64_t* idx) {
    const size_t l = ((idx[0] * e[1] + idx[1]) * e[2] + idx[2]) * e[3] + idx[3];
    const int32_t want = 2 * (orig[l] + (box.contains(std::span<const int64_t>(idx, 4)) ? 1000 : 0));
    EXPECT_EQ(x[l], want) << l;
  });
}

TEST_P(RuntimeConformance, ElementSizes1To16) {
  for (size_t elem : {size_t{1}, size_t{4}, size_t{8}, size_t{12}, size_t{16}}) {
    SCOPED_TRACE(absl::StrCat("element size ", elem));
    const int64_t n0 = 5, n1 = 7;
    std::vector<uint8_t> x(n0 * n1 * elem);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(i * 7 + 3);
    const std::vector<uint8_t> orig = x;
    auto rt = make_runtime(2, 0);
    Array* a = reg(*rt, "bytes", x.data(), elem, {n0, n1});
    const Box box = B({1, 2}, {4, 6});
    // Device 0 increments every byte of the box's elements; device 1 then
    // increments the whole array's elements once more.
    auto bump = [elem](Box b) {
      return [elem, b](const std::vector<PieceCopy>& v) {
        for_each_point(b, [&](const int64_t* idx) {
          uint8_t* p = static_cast<uint8_t*>(v[0].at(idx));
          for (size_t k = 0; k < elem; ++k) p[k] = static_cast<uint8_t>(p[k] + 1);
        });
      };
    };
    ASSERT_TRUE(run_tile(*rt, 0, {{a, box, Access::kReadWrite}}, bump(box)).ok());
    ASSERT_TRUE(run_tile(*rt, 1, {{a, B({0, 0}, {n0, n1}), Access::kReadWrite}},
                         bump(B({0, 0}, {n0, n1})))
                    .ok());
    ASSERT_TRUE(rt->sync_to_host(a).ok());
    for (int64_t i = 0; i < n0; ++i)
      for (int64_t j = 0; j < n1; ++j)
        for (size_t k = 0; k < elem; ++k) {
          const size_t l = (i * n1 + j) * elem + k;
          const int add = box.contains({i, j}) ? 2 : 1;
          ASSERT_EQ(x[l], static_cast<uint8_t>(orig[l] + add)) << i << "," << j << " byte " << k;
        }
  }
}

TEST_P(RuntimeConformance, PaddedHostArraysKeepTheirPadding) {
  const int64_t n0 = 6, n1 = 5, pitch = 8;  // 3 padding doubles per row
  std::vector<double> x(n0 * pitch, -99.0);
  for (int64_t i = 0; i < n0; ++i)
    for (int64_t j = 0; j < n1; ++j) x[i * pitch + j] = value(i * n1 + j);
  auto rt = make_runtime(2, 0);
  Array* a = reg(*rt, "padded", x.data(), 8, {n0, n1}, {pitch, 1});
  const Box box = B({1, 1}, {5, 4});
  ASSERT_TRUE(run_tile(*rt, 1, {{a, box, Access::kReadWrite}},
                       [box](const std::vector<PieceCopy>& v) {
                         for_each_point(box, [&](const int64_t* idx) {
                           *static_cast<double*>(v[0].at(idx)) += 1000;
                         });
                       })
                  .ok());
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int64_t i = 0; i < n0; ++i)
    for (int64_t j = 0; j < pitch; ++j) {
      const double got = x[i * pitch + j];
      if (j >= n1) {
        EXPECT_EQ(got, -99.0) << "padding " << i << "," << j;
      } else {
        EXPECT_EQ(got, value(i * n1 + j) + (box.contains({i, j}) ? 1000 : 0)) << i << "," << j;
      }
    }
}

// ------------------------------------------------------------------ checking mode

TEST_P(RuntimeConformance, CheckingModeReportsOverlappingWritesByTwoDevices) {
  RuntimeOptions opts;
  opts.check = true;
  std::vector<double> x(32, 0.0), y(32, 0.0);
  auto rt = make_runtime(2, 0, opts);
  Array* a = reg(*rt, "X", x.data(), 8, {32});
  Array* b = reg(*rt, "Y", y.data(), 8, {32});
  auto fill = [](Box box) { return write_1d(box, [](int64_t i) { return value(i); }); };
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {16}), Access::kWrite}}, fill(B({0}, {16}))).ok());
  // Same device again, other array, reads by another device: all fine.
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({8}, {16}), Access::kReadWrite}},
                       [](const std::vector<PieceCopy>&) {})
                  .ok());
  ASSERT_TRUE(run_tile(*rt, 1, {{b, B({0}, {16}), Access::kWrite}}, fill(B({0}, {16}))).ok());
  ASSERT_TRUE(touch(*rt, 1, a, B({0}, {32})).ok());
  // Device 1 writing [8,24) of X overlaps device 0's [0,16).
  absl::Status s = run_tile(*rt, 1, {{a, B({8}, {24}), Access::kWrite}}, fill(B({8}, {24})));
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  const std::string m(s.message());
  EXPECT_NE(m.find("'X'"), std::string::npos) << m;
  EXPECT_NE(m.find("[8,24)"), std::string::npos) << m;
  EXPECT_NE(m.find("[0,16)"), std::string::npos) << m;
  // A synchronisation point starts a new epoch.
  ASSERT_TRUE(rt->synchronize().ok());
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({8}, {24}), Access::kWrite}},
                       write_1d(B({8}, {24}), [](int64_t i) { return -1.0 * i; }))
                  .ok());
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(x[i], i < 8 ? value(i) : i < 24 ? -1.0 * i : 0.0) << i;
  }
}

// A phase boundary starts a new checking epoch without waiting: device 1 may then write
// what device 0 wrote in the previous phase (the result is program order's), while two
// devices writing the same elements within one phase are still reported, and so is a
// tile of the previous phase that is still open.
TEST_P(RuntimeConformance, PhaseBoundaryStartsACheckingEpochWithoutWaiting) {
  RuntimeOptions opts;
  opts.check = true;
  std::vector<double> x(32, 0.0);
  auto rt = make_runtime(2, 0, opts);
  Array* a = reg(*rt, "X", x.data(), 8, {32});
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {16}), Access::kWrite}},
                       write_1d(B({0}, {16}), [](int64_t i) { return value(i); }))
                  .ok());
  ASSERT_TRUE(rt->phase_boundary().ok());
  // Phase 2: device 1 rewrites [8,24), device 0 [24,32), both in program order after phase 1.
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({8}, {24}), Access::kReadWrite}},
                       [](const std::vector<PieceCopy>& v) {
                         for (int64_t i = 8; i < 24; ++i) v[0].ref<double>({i}) += 1000.0;
                       })
                  .ok());
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({24}, {32}), Access::kWrite}},
                       write_1d(B({24}, {32}), [](int64_t i) { return -1.0 * i; }))
                  .ok());
  // Within phase 2, device 0 writing [20,28) overlaps device 1's [8,24).
  absl::Status s = run_tile(*rt, 0, {{a, B({20}, {28}), Access::kWrite}},
                            write_1d(B({20}, {28}), [](int64_t) { return 7.0; }));
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_NE(std::string(s.message()).find("[8,24)"), std::string::npos) << s;
  // An open tile across a boundary is still checked against.
  absl::StatusOr<Tile> open = rt->begin_tile(1);
  ASSERT_TRUE(open.ok());
  ASSERT_TRUE(open->require(a, B({0}, {4}), Access::kWrite).ok());
  ASSERT_TRUE(open->acquire().ok());
  ASSERT_TRUE(rt->phase_boundary().ok());
  absl::StatusOr<Tile> other = rt->begin_tile(0);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(other->require(a, B({2}, {6}), Access::kWrite).ok());
  s = other->acquire();
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  ASSERT_TRUE(other->release().ok());
  const std::vector<PieceCopy> views = {PieceCopy(*open->view(a))};
  ASSERT_TRUE(open->launch([views](const bbmm_launch_info& info) {
                    run_host_kernel(info, views, write_1d(B({0}, {4}), [](int64_t) { return 5.0; }));
                  }).ok());
  ASSERT_TRUE(open->release().ok());
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int i = 0; i < 32; ++i) {
    const double want = i < 4 ? 5.0 : i < 8 ? value(i) : i < 16 ? value(i) + 1000.0
                      : i < 24 ? 1000.0 : -1.0 * i;
    EXPECT_EQ(x[i], want) << i;
  }
}

// BBMM_READ_TRANSIENT: an instance allocated for such boxes only stays for the phase (a
// second tile of the phase hits it) and is freed at the next phase boundary once no open
// tile holds it; a non-transient use keeps it; what the device then reads again is the
// current data.
TEST_P(RuntimeConformance, TransientReadsAreFreedAtThePhaseBoundary) {
  std::vector<double> x = iota_doubles(64);
  auto rt = make_runtime(2, 0);
  Array* a = reg(*rt, "X", x.data(), 8, {64});
  auto bad = std::make_shared<std::atomic<int>>(0);
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({0}, {8}), Access::kReadTransient}}, check_1d(bad, B({0}, {8}))).ok());
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({0}, {8}), Access::kReadTransient}}, check_1d(bad, B({0}, {8}))).ok());
  EXPECT_EQ(rt->stats(1).instances, 1u);
  EXPECT_EQ(rt->stats(1).misses, 1u);
  EXPECT_EQ(rt->stats(1).hits_exact, 1u);
  ASSERT_TRUE(rt->phase_boundary().ok());
  EXPECT_EQ(rt->stats(1).instances, 0u);
  EXPECT_EQ(rt->stats(1).bytes_allocated, 0u);
  EXPECT_EQ(rt->stats(1).evictions, 0u) << "a transient free is not a box-out";
  // Held by an open tile at the boundary: freed at the next one.
  absl::StatusOr<Tile> open = rt->begin_tile(1);
  ASSERT_TRUE(open.ok());
  ASSERT_TRUE(open->require(a, B({8}, {16}), Access::kReadTransient).ok());
  ASSERT_TRUE(open->acquire().ok());
  ASSERT_TRUE(rt->phase_boundary().ok());
  EXPECT_EQ(rt->stats(1).instances, 1u);
  const std::vector<PieceCopy> views = {PieceCopy(*open->view(a))};
  ASSERT_TRUE(open->launch([views, bad](const bbmm_launch_info& info) {
                    run_host_kernel(info, views, check_1d(bad, B({8}, {16})));
                  }).ok());
  ASSERT_TRUE(open->release().ok());
  ASSERT_TRUE(rt->phase_boundary().ok());
  EXPECT_EQ(rt->stats(1).instances, 0u);
  // A plain read of the same instance in the phase keeps it.
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({16}, {24}), Access::kReadTransient}}, check_1d(bad, B({16}, {24}))).ok());
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({16}, {24}), Access::kRead}}, check_1d(bad, B({16}, {24}))).ok());
  ASSERT_TRUE(rt->phase_boundary().ok());
  EXPECT_EQ(rt->stats(1).instances, 1u);
  // Device 0 rewrites [0,8); device 1's transient read gets the new values.
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {8}), Access::kWrite}},
                       write_1d(B({0}, {8}), [](int64_t i) { return value(i) + 100.0; }))
                  .ok());
  ASSERT_TRUE(rt->phase_boundary().ok());
  auto bad2 = std::make_shared<std::atomic<int>>(0);
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({0}, {8}), Access::kReadTransient}},
                       [bad2](const std::vector<PieceCopy>& v) {
                         for (int64_t i = 0; i < 8; ++i) {
                           if (*static_cast<const double*>(v[0].at(&i)) != value(i) + 100.0) ++*bad2;
                         }
                       })
                  .ok());
  ASSERT_TRUE(rt->phase_boundary().ok());
  EXPECT_EQ(bad->load(), 0);
  EXPECT_EQ(bad2->load(), 0);
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int i = 0; i < 64; ++i) EXPECT_EQ(x[i], i < 8 ? value(i) + 100.0 : value(i)) << i;
}

TEST_P(RuntimeConformance, WithoutCheckingModeOverlappingWritesAreNotReported) {
  std::vector<double> x(32, 0.0);
  auto rt = make_runtime(2, 0);
  Array* a = reg(*rt, "X", x.data(), 8, {32});
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {16}), Access::kWrite}},
                       write_1d(B({0}, {16}), [](int64_t) { return 1.0; }))
                  .ok());
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({8}, {24}), Access::kWrite}},
                       write_1d(B({8}, {24}), [](int64_t) { return 2.0; }))
                  .ok());
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int i = 0; i < 32; ++i) EXPECT_EQ(x[i], i < 8 ? 1.0 : i < 24 ? 2.0 : 0.0) << i;
}

// ------------------------------------------------------------------ accounting & views

TEST_P(RuntimeConformance, CapacityAccountingIsExact) {
  const size_t align = GetParam().pitch_alignment;
  std::vector<uint8_t> h1(7 * 9 * 12), h2(5 * 6 * 7 * 16), h3(100);
  auto rt = make_runtime(1, 0);
  Array* a = reg(*rt, "a12", h1.data(), 12, {7, 9});
  Array* b = reg(*rt, "b16", h2.data(), 16, {5, 6, 7});
  Array* c = reg(*rt, "c1", h3.data(), 1, {100});
  const std::vector<std::pair<Array*, Box>> boxes = {
      {a, B({0, 0}, {3, 5})}, {a, B({4, 2}, {7, 9})}, {b, B({1, 2, 3}, {3, 5, 6})},
      {c, B({10}, {13})},     {c, B({50}, {99})}};
  const size_t elems[] = {12, 12, 16, 1, 1};
  size_t want = 0;
  for (size_t k = 0; k < boxes.size(); ++k) {
    ASSERT_TRUE(touch(*rt, 0, boxes[k].first, boxes[k].second).ok());
    want += expected_bytes(boxes[k].second, elems[k], align);
    EXPECT_EQ(rt->stats(0).bytes_allocated, want) << "after " << boxes[k].second;
  }
  EXPECT_EQ(rt->stats(0).instances, boxes.size());
  EXPECT_EQ(rt->stats(0).peak_bytes_allocated, want);
  if (align == 1) {
    // Dense rows: exactly volume x element size.
    size_t dense = 0;
    for (size_t k = 0; k < boxes.size(); ++k) dense += boxes[k].second.volume() * elems[k];
    EXPECT_EQ(want, dense);
  }
  ASSERT_TRUE(rt->unregister_array(b).ok());
  EXPECT_EQ(rt->stats(0).bytes_allocated, want - expected_bytes(boxes[2].second, 16, align));
  EXPECT_EQ(rt->stats(0).peak_bytes_allocated, want);
}

TEST_P(RuntimeConformance, ViewPiecesAddressEveryElement) {
  const size_t align = GetParam().pitch_alignment;
  const int64_t n0 = 6, n1 = 10;
  std::vector<double> x(n0 * n1, 0.0);
  auto rt = make_runtime(1, 0);
  Array* a = reg(*rt, "grid", x.data(), 8, {n0, n1});
  ASSERT_TRUE(touch(*rt, 0, a, B({0, 0}, {6, 7})).ok());  // instance [0,6)x[0,7)
  absl::StatusOr<Tile> t = rt->begin_tile(0);
  ASSERT_TRUE(t.ok());
  // A contained box, and a box sticking out of the instance by 3 columns
  // (with growth disabled by the in-use hold below, this is several pieces).
  absl::StatusOr<Tile> hold = rt->begin_tile(0);
  ASSERT_TRUE(hold->require(a, B({0, 0}, {1, 1}), Access::kRead).ok());
  ASSERT_TRUE(hold->acquire().ok());
  ASSERT_TRUE(t->require(a, B({1, 2}, {3, 5}), Access::kWrite).ok());
  ASSERT_TRUE(t->require(a, B({3, 4}, {5, 10}), Access::kWrite).ok());
  ASSERT_TRUE(t->acquire().ok());
  const bbmm_view v = *t->view(a);
  ASSERT_GE(v.npieces, 2);
  for (int p = 0; p < v.npieces; ++p) {
    const bbmm_piece& pc = v.pieces[p];
    EXPECT_EQ(pc.stride[1], 1);
    EXPECT_GE(pc.stride[0], pc.hi[1] - pc.lo[1]);
    EXPECT_EQ((pc.stride[0] * 8) % std::lcm(align, size_t{8}), 0u) << "rows padded to the alignment";
    // bbmm_piece_at is offset + elem * sum (i - lo) * stride.
    const int64_t idx[2] = {pc.hi[0] - 1, pc.hi[1] - 1};
    EXPECT_EQ(bbmm_piece_at(&pc, 8, 2, idx),
              static_cast<char*>(pc.data) + pc.offset +
                  8 * ((idx[0] - pc.lo[0]) * pc.stride[0] + (idx[1] - pc.lo[1])));
  }
  const Box b1 = B({1, 2}, {3, 5}), b2 = B({3, 4}, {5, 10});
  PieceCopy pc(v);
  ASSERT_TRUE(t->launch([pc, b1, b2](const bbmm_launch_info& info) {
                    run_host_kernel(info, {pc}, [b1, b2](const std::vector<PieceCopy>& v) {
                      for (const Box& b : {b1, b2}) {
                        for_each_point(b, [&](const int64_t* idx) {
                          *static_cast<double*>(v[0].at(idx)) = 100.0 * idx[0] + idx[1];
                        });
                      }
                    });
                  }).ok());
  ASSERT_TRUE(t->release().ok());
  ASSERT_TRUE(hold->release().ok());
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int64_t i = 0; i < n0; ++i)
    for (int64_t j = 0; j < n1; ++j) {
      const bool in = b1.contains({i, j}) || b2.contains({i, j});
      EXPECT_EQ(x[i * n1 + j], in ? 100.0 * i + j : 0.0) << i << "," << j;
    }
}

// ------------------------------------------------------------------ threads

TEST_P(RuntimeConformance, OneHostThreadPerDevice) {
  constexpr int kDevices = 4, kRounds = 30;
  const int64_t rows = 8 * kDevices, cols = 16;
  // Capacity for about two tiles per device: box-out happens concurrently.
  std::vector<double> x(rows * cols, 0.0), w(rows, 0.0);
  for (int64_t i = 0; i < rows; ++i) w[i] = static_cast<double>(i);
  auto rt = make_runtime(kDevices, 4 * cols * 8 * 3 / 2 + rows * 8);
  Array* a = reg(*rt, "x", x.data(), 8, {rows, cols});
  Array* ro = reg(*rt, "w", w.data(), 8, {rows}, {}, /*read_only=*/true);
  std::vector<std::thread> threads;
  std::vector<absl::Status> status(kDevices);
  for (int d = 0; d < kDevices; ++d) {
    threads.emplace_back([&, d] {
      for (int r = 0; r < kRounds && status[d].ok(); ++r) {
        // Two half-blocks of this device's 8 rows, alternately; x += w[i].
        const int64_t lo = 8 * d + 4 * (r % 2);
        const Box box = B({lo, 0}, {lo + 4, cols});
        status[d] = run_tile(*rt, d, {{a, box, Access::kReadWrite}, {ro, B({0}, {rows}), Access::kRead}},
                             [box](const std::vector<PieceCopy>& v) {
                               for_each_point(box, [&](const int64_t* idx) {
                                 *static_cast<double*>(v[0].at(idx)) +=
                                     *static_cast<const double*>(v[1].at(&idx[0]));
                               });
                             });
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int d = 0; d < kDevices; ++d) ASSERT_TRUE(status[d].ok()) << d << ": " << status[d];
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      ASSERT_EQ(x[i * cols + j], (kRounds / 2) * static_cast<double>(i)) << i << "," << j;
  EXPECT_EQ(rt->stats(-1).tiles, static_cast<uint64_t>(kDevices * kRounds));
}

// ------------------------------------------------------------------ reservations

// A device's allocation hull reserved up front: every tile inside it is a hit
// (no instance grows, nothing moves within the device), only the read-ins
// and write-backs cross, and the values are right.
TEST_P(RuntimeConformance, ReservedHullServesEveryTileWithoutGrowth) {
  const int64_t rows = 32, cols = 16;
  std::vector<double> x(rows * cols), y(rows * cols, 0.0);
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = value(i);
  auto rt = make_runtime(2, 0);
  Array* a = reg(*rt, "A", x.data(), 8, {rows, cols});
  Array* b = reg(*rt, "B", y.data(), 8, {rows, cols});
  // Device d owns rows [16d, 16d+16) and reads one halo row each side.
  for (int d = 0; d < 2; ++d) {
    const int64_t lo = std::max<int64_t>(0, 16 * d - 1), hi = std::min<int64_t>(rows, 16 * d + 17);
    ASSERT_TRUE(rt->reserve(d, a, B({lo, 0}, {hi, cols})).ok());
    ASSERT_TRUE(rt->reserve(d, b, B({lo, 0}, {hi, cols})).ok());
    // Reserving again, or a box inside, changes nothing.
    ASSERT_TRUE(rt->reserve(d, b, B({16 * d, 0}, {16 * d + 4, cols})).ok());
  }
  const bbmm_stats before = rt->stats(-1);
  EXPECT_EQ(before.reservations, 4u);
  EXPECT_EQ(before.instances, 4u);
  EXPECT_EQ(before.bytes_h2d, 0u) << "a reservation reads nothing in";
  // Two tiles per device: B = A + 1 on the tile's rows, reading A's halo.
  for (int k = 0; k < 4; ++k) {
    const int64_t lo = 8 * k, hi = 8 * k + 8;
    const Box rd = B({std::max<int64_t>(0, lo - 1), 0}, {std::min(rows, hi + 1), cols});
    const Box wr = B({lo, 0}, {hi, cols});
    ASSERT_TRUE(run_tile(*rt, k / 2, {{a, rd, Access::kRead}, {b, wr, Access::kWrite}},
                         [wr](const std::vector<PieceCopy>& v) {
                           for_each_point(wr, [&](const int64_t* idx) {
                             *static_cast<double*>(v[1].at(idx)) =
                                 *static_cast<const double*>(v[0].at(idx)) + 1.0;
                           });
                         })
                    .ok());
  }
  ASSERT_TRUE(rt->sync_to_host(b).ok());
  for (int64_t i = 0; i < rows * cols; ++i) ASSERT_EQ(y[i], value(i) + 1.0) << i;
  const bbmm_stats s = rt->stats(-1);
  EXPECT_EQ(s.instances, 4u);
  EXPECT_EQ(s.misses, 0u);
  EXPECT_EQ(s.hits_grown, 0u);
  EXPECT_EQ(s.bytes_d2d, 0u);
  EXPECT_EQ(s.hits_contained + s.hits_exact, 8u);
}

// Unused instances the reservation overlaps are absorbed: their values move
// into the new instance (the only copy of device-written data survives).
TEST_P(RuntimeConformance, ReservationAbsorbsUnusedInstancesAndKeepsTheirData) {
  std::vector<double> x(64, 0.0);
  auto rt = make_runtime(1, 0);
  Array* a = reg(*rt, "A", x.data(), 8, {64});
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({8}, {16}), Access::kWrite}},
                       write_1d(B({8}, {16}), [](int64_t i) { return 3.0 * i; }))
                  .ok());
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({40}, {48}), Access::kWrite}},
                       write_1d(B({40}, {48}), [](int64_t i) { return -2.0 * i; }))
                  .ok());
  ASSERT_EQ(rt->stats(0).instances, 2u);
  ASSERT_TRUE(rt->reserve(0, a, B({12}, {44})).ok());  // overlaps both
  EXPECT_EQ(rt->stats(0).instances, 1u);
  // The new instance covers the hull of the box and what it absorbed.
  auto bad = std::make_shared<std::atomic<int>>(0);
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({8}, {48}), Access::kRead}},
                       [bad](const std::vector<PieceCopy>& v) {
                         if (v[0].pieces().size() != 1) ++*bad;
                       })
                  .ok());
  EXPECT_EQ(rt->stats(0).hits_exact, 1u);  // the hull is [8,48)
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  EXPECT_EQ(*bad, 0);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(x[i], (i >= 8 && i < 16) ? 3.0 * i : (i >= 40 && i < 48) ? -2.0 * i : 0.0) << i;
  }
}

TEST_P(RuntimeConformance, ReservationErrorsNameTheArrayAndChangeNothing) {
  std::vector<double> x(64, 1.0);
  auto rt = make_runtime(2, 32 * 8);
  Array* a = reg(*rt, "Res", x.data(), 8, {64});
  // Held by an open tile.
  absl::StatusOr<Tile> t = rt->begin_tile(0);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->require(a, B({0}, {8}), Access::kRead).ok());
  ASSERT_TRUE(t->acquire().ok());
  absl::Status s = rt->reserve(0, a, B({4}, {16}));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(std::string(s.message()).find("'Res'"), std::string::npos) << s;
  EXPECT_NE(std::string(s.message()).find("[0,8)"), std::string::npos) << s;
  ASSERT_TRUE(t->release().ok());
  // Too large for the device.
  s = rt->reserve(1, a, B({0}, {64}));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(std::string(s.message()).find("'Res'"), std::string::npos) << s;
  EXPECT_EQ(rt->stats(1).instances, 0u);
  // Bad box, bad device.
  EXPECT_EQ(rt->reserve(0, a, B({0}, {65})).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(rt->reserve(0, a, B({0, 0}, {1, 1})).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(rt->reserve(2, a, B({0}, {8})).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(rt->reserve(0, nullptr, B({0}, {8})).code(), absl::StatusCode::kInvalidArgument);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(x[i], 1.0);
}

// ------------------------------------------------------------------ handles and checking

TEST_P(RuntimeConformance, StaleTileHandlesAreErrorsNotCrashes) {
  std::vector<double> x(16, 0.0);
  auto rt = make_runtime(1, 0);
  Array* a = reg(*rt, "A", x.data(), 8, {16});
  absl::StatusOr<Tile> t = rt->begin_tile(0);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->require(a, B({0}, {8}), Access::kRead).ok());
  ASSERT_TRUE(t->acquire().ok());
  ASSERT_TRUE(t->release().ok());
  for (const absl::Status& s :
       {t->release(), t->require(a, B({0}, {4}), Access::kRead), t->acquire(),
        t->launch([](const bbmm_launch_info&) {}), t->flow_out(a, B({0}, {4})),
        t->view(a).status()}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_NE(std::string(s.message()).find("stale tile handle"), std::string::npos) << s;
  }
  // The recycled state serves a new tile; the old handle stays stale.
  for (int k = 0; k < 40; ++k) {
    absl::StatusOr<Tile> u = rt->begin_tile(0);
    ASSERT_TRUE(u.ok());
    ASSERT_TRUE(u->require(a, B({0}, {8}), Access::kRead).ok());
    ASSERT_TRUE(u->acquire().ok());
    EXPECT_EQ(t->release().code(), absl::StatusCode::kFailedPrecondition);
    ASSERT_TRUE(u->release().ok());
  }
  // A moved-from handle is an error too.
  absl::StatusOr<Tile> v = rt->begin_tile(0);
  ASSERT_TRUE(v.ok());
  Tile w = *std::move(v);
  EXPECT_EQ(v->release().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(w.release().ok());
}

// Two tiles open at once on different devices writing the same elements:
// the second acquire reports the conflict (it does not wait for a release).
TEST_P(RuntimeConformance, CheckingModeReportsOverlappingWritesOfOpenTiles) {
  for (Access second : {Access::kWrite, Access::kReadWrite}) {
    RuntimeOptions opts;
    opts.check = true;
    std::vector<double> x(8 * 8, 0.0);
    auto rt = make_runtime(2, 0, opts);
    Array* a = reg(*rt, "A", x.data(), 8, {8, 8});
    absl::StatusOr<Tile> t0 = rt->begin_tile(0);
    absl::StatusOr<Tile> t1 = rt->begin_tile(1);
    ASSERT_TRUE(t0.ok() && t1.ok());
    ASSERT_TRUE(t0->require(a, B({0, 0}, {4, 4}), Access::kWrite).ok());
    ASSERT_TRUE(t1->require(a, B({0, 0}, {4, 4}), second).ok());
    ASSERT_TRUE(t0->acquire().ok());
    absl::Status s = t1->acquire();
    EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
    EXPECT_NE(std::string(s.message()).find("open tile of device 0"), std::string::npos) << s;
    EXPECT_NE(std::string(s.message()).find("[0,4)x[0,4)"), std::string::npos) << s;
    ASSERT_TRUE(t1->release().ok());
    ASSERT_TRUE(t0->release().ok());
    // A tile of the same device, or reading only, is no conflict; nor is the
    // same box after a synchronisation point... of a released tile, still
    // within the epoch, it is (device 0 wrote it).
    absl::StatusOr<Tile> t2 = rt->begin_tile(1);
    ASSERT_TRUE(t2->require(a, B({0, 0}, {4, 4}), Access::kRead).ok());
    EXPECT_TRUE(t2->acquire().ok());
    ASSERT_TRUE(t2->release().ok());
    ASSERT_TRUE(rt->synchronize().ok());
    absl::StatusOr<Tile> t3 = rt->begin_tile(1);
    ASSERT_TRUE(t3->require(a, B({0, 0}, {4, 4}), second).ok());
    EXPECT_TRUE(t3->acquire().ok());
    ASSERT_TRUE(t3->release().ok());
  }
}

// A box that grows with a serial loop ([0, i) for i = 2..256) is not copied
// into a new instance at every step: from its second growth an instance grows
// with headroom (half its extent again, within the array), so the growths are
// logarithmic in the steps; the values stay right.
TEST_P(RuntimeConformance, RepeatedGrowthGetsHeadroom) {
  std::vector<double> x = iota_doubles(256);
  auto rt = make_runtime(1, 0);
  Array* a = reg(*rt, "x", x.data(), 8, {256});
  for (int64_t i = 2; i <= 256; ++i) {
    ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {i}), Access::kReadWrite}},
                         [i](const std::vector<PieceCopy>& v) {
                           const int64_t last = i - 1;
                           *static_cast<double*>(v[0].at(&last)) += 1000;
                         })
                    .ok())
        << i;
  }
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int i = 0; i < 256; ++i) EXPECT_EQ(x[i], i == 0 ? value(0) : value(i) + 1000) << i;
  const bbmm_stats st = rt->stats(0);
  EXPECT_GE(st.hits_grown, 2u);
  EXPECT_LE(st.hits_grown, 16u) << "255 growing steps";
  EXPECT_LE(st.peak_bytes_allocated, 2u * 256 * 8 + 4096) << "never more than the array twice";
}

// ------------------------------------------------------------------ host tiles

// A host tile (kHostDevice) sees what a device wrote, its writes reach the
// devices' next tiles (their copies went stale) and the host copy, and it moves
// only what devices held newer than the host.
TEST_P(RuntimeConformance, HostTilesSeeDeviceWritesAndDevicesSeeTheirs) {
  std::vector<double> x = iota_doubles(64);
  auto rt = make_runtime(2, 0);
  Array* a = reg(*rt, "x", x.data(), 8, {64});
  // Device 0 writes [0,32), device 1 reads all of it (holds a copy).
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {32}), Access::kReadWrite}},
                       [](const std::vector<PieceCopy>& v) {
                         for (int64_t i = 0; i < 32; ++i) *static_cast<double*>(v[0].at(&i)) += 100;
                       })
                  .ok());
  ASSERT_TRUE(touch(*rt, 1, a, B({0}, {64})).ok());
  const uint64_t d2h_before = rt->stats(-1).bytes_d2h;
  // The host tile reads [16,48) (half of it device 0's) and writes [24,40).
  auto seen = std::make_shared<std::vector<double>>(64, 0.0);
  absl::StatusOr<Tile> t = rt->begin_tile(kHostDevice);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->device(), kHostDevice);
  ASSERT_TRUE(t->require(a, B({16}, {48}), Access::kRead).ok());
  ASSERT_TRUE(t->require(a, B({24}, {40}), Access::kReadWrite).ok());
  ASSERT_TRUE(t->acquire().ok());
  absl::StatusOr<bbmm_view> v = t->view(a);
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->npieces, 1);
  EXPECT_EQ(v->pieces[0].data, static_cast<void*>(x.data())) << "the view is the host array";
  // Acquire waited: the host array holds device 0's values already.
  for (int i = 16; i < 32; ++i) EXPECT_EQ(x[i], value(i) + 100) << i;
  const PieceCopy pc(*v);
  bool on_host_thread = false;
  ASSERT_TRUE(t->launch([pc, seen, &on_host_thread](const bbmm_launch_info& info) {
                 on_host_thread = info.device == kHostDevice && info.queue == nullptr;
                 std::this_thread::sleep_for(std::chrono::milliseconds(2));
                 for (int64_t i = 16; i < 48; ++i) (*seen)[i] = *static_cast<const double*>(pc.at(&i));
                 for (int64_t i = 24; i < 40; ++i) *static_cast<double*>(pc.at(&i)) = -1.0 * i;
               })
                  .ok());
  EXPECT_TRUE(on_host_thread) << "launch returns after the kernel ran, on this thread";
  ASSERT_TRUE(t->flow_out(a, B({24}, {40})).ok()) << "a host tile's flow_out does nothing";
  ASSERT_TRUE(t->release().ok());
  for (int i = 16; i < 48; ++i) EXPECT_EQ((*seen)[i], i < 32 ? value(i) + 100 : value(i)) << i;
  // Only device 0's part of the host tile's boxes came back ([16,32)), unless
  // device 1's read-in staged it through the host already (no peer access).
  const bool peer = rt->core()->backend().can_access_peer(1, 0);
  EXPECT_EQ(rt->stats(-1).bytes_d2h - d2h_before, peer ? 16u * 8 : 0u);
  // Device 1's copy of [24,40) is stale now: its next tile reads the host's values.
  auto seen1 = std::make_shared<std::vector<double>>(64, 0.0);
  ASSERT_TRUE(run_tile(*rt, 1, {{a, B({0}, {64}), Access::kRead}},
                       [seen1](const std::vector<PieceCopy>& w) {
                         for (int64_t i = 0; i < 64; ++i) (*seen1)[i] = *static_cast<double*>(w[0].at(&i));
                       })
                  .ok());
  ASSERT_TRUE(rt->synchronize().ok());
  auto want = [](int64_t i) { return i >= 24 && i < 40 ? -1.0 * i : i < 32 ? value(i) + 100 : value(i); };
  for (int i = 0; i < 64; ++i) EXPECT_EQ((*seen1)[i], want(i)) << i;
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  for (int i = 0; i < 64; ++i) EXPECT_EQ(x[i], want(i)) << i;
  const bbmm_stats all = rt->stats(-1);
  EXPECT_EQ(all.host_tiles, 1u);
  EXPECT_GE(all.host_tile_seconds, 0.002) << "the kernel slept 2 ms";
  EXPECT_EQ(rt->stats(0).tiles + rt->stats(1).tiles, 3u) << "host tiles count apart";
}

// A host tile writing a box waits for the read-ins still reading it, so that a
// device tile issued before it reads the values from before.
TEST_P(RuntimeConformance, HostTileWaitsForReadInsOfTheBoxesItWrites) {
  std::vector<double> x = iota_doubles(4096);
  auto rt = make_runtime(1, 0);
  Array* a = reg(*rt, "x", x.data(), 8, {4096});
  auto bad = std::make_shared<std::atomic<int>>(0);
  ASSERT_TRUE(run_tile(*rt, 0, {{a, B({0}, {4096}), Access::kRead}}, check_1d(bad, B({0}, {4096})))
                  .ok());
  ASSERT_TRUE(run_tile(*rt, kHostDevice, {{a, B({0}, {4096}), Access::kWrite}},
                       write_1d(B({0}, {4096}), [](int64_t) { return 0.0; }))
                  .ok());
  ASSERT_TRUE(rt->synchronize().ok());
  EXPECT_EQ(bad->load(), 0) << "the device read values the host tile had overwritten";
  ASSERT_TRUE(rt->sync_to_host(a).ok());
  EXPECT_EQ(x[7], 0.0);
}

// Checking mode: a host tile writing what an open device tile writes conflicts,
// and the message names the host.
TEST_P(RuntimeConformance, CheckingModeReportsHostTilesWritingWhatADeviceWrites) {
  RuntimeOptions opts;
  opts.check = true;
  std::vector<double> x(64, 0.0);
  auto rt = make_runtime(1, 0, opts);
  Array* a = reg(*rt, "x", x.data(), 8, {64});
  absl::StatusOr<Tile> t0 = rt->begin_tile(0);
  ASSERT_TRUE(t0.ok());
  ASSERT_TRUE(t0->require(a, B({0}, {16}), Access::kWrite).ok());
  ASSERT_TRUE(t0->acquire().ok());
  absl::StatusOr<Tile> th = rt->begin_tile(kHostDevice);
  ASSERT_TRUE(th.ok());
  ASSERT_TRUE(th->require(a, B({8}, {24}), Access::kReadWrite).ok());
  absl::Status s = th->acquire();
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_NE(std::string(s.message()).find("the host"), std::string::npos) << s;
  ASSERT_TRUE(th->release().ok());
  ASSERT_TRUE(t0->release().ok());
}

TEST_P(RuntimeConformance, TilesOnDevicesThatDoNotExistAreErrors) {
  auto rt = make_runtime(1, 0);
  for (int d : {-1, -3, 1}) {
    absl::StatusOr<Tile> t = rt->begin_tile(d);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << d;
    EXPECT_NE(std::string(t.status().message()).find("BBMM_DEVICE_HOST"), std::string::npos)
        << t.status();
  }
}

TEST_P(RuntimeConformance, ShutdownWithArraysStillRegisteredIsAnErrorNamingThem) {
  std::vector<double> x(16, 0.0), y(16, 0.0);
  auto rt = make_runtime(1, 0);
  Array* a = reg(*rt, "kept", x.data(), 8, {16});
  Array* b = reg(*rt, "gone", y.data(), 8, {16});
  (void)a;
  ASSERT_TRUE(rt->unregister_array(b).ok());
  EXPECT_EQ(rt->unregister_array(b).code(), absl::StatusCode::kInvalidArgument);
  absl::Status s = rt->shutdown();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(std::string(s.message()).find("'kept'"), std::string::npos) << s;
  EXPECT_EQ(std::string(s.message()).find("'gone'"), std::string::npos) << s;
  EXPECT_TRUE(rt->shutdown().ok());  // once
}

}  // namespace
}  // namespace bbmm::testing
