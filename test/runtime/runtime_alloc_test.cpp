// Checks that the hit path allocates nothing: a tile whose boxes are all
// resident (begin, require, acquire, view, release, through the C++ and the C
// API) must not touch the heap on the calling thread once the runtime has
// warmed up (tile states are recycled, their vectors keep their capacity, the
// directory is queried without copies). An allocation there is a
// performance bug even when the results are right (runtime_bench times it).
//
// The binary replaces the global operator new/delete with counting versions
// (forwarding to malloc/free, so sanitizers still see every block), counting
// only on the test's thread while it measures: that is why these tests have a
// binary of their own.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "bbmm/bbmm.h"
#include "bbmm/box.h"
#include "bbmm/runtime.h"
#include "core/backend.h"
#include "host/host_backend.h"

#include "counting_new.h"

namespace bbmm {
namespace {

using bbmm::testing::allocations_in;

constexpr int64_t kN = 256;

Box box2(int64_t i0, int64_t j0, int64_t i1, int64_t j1) { return *Box::create({i0, j0}, {i1, j1}); }

// A 5-point stencil tile: the centre and four halos of `in` (READ), the
// centre of `out` (WRITE); as runtime_bench's HitStencil.
const std::vector<Box>& stencil_reads() {
  static const std::vector<Box> boxes = {box2(64, 1, 128, kN - 1), box2(63, 1, 64, kN - 1),
                                         box2(128, 1, 129, kN - 1), box2(64, 0, 128, 1),
                                         box2(64, kN - 1, 128, kN)};
  return boxes;
}

class HitPathAllocations : public ::testing::TestWithParam<int> {};  // host queues

TEST_P(HitPathAllocations, CppApiStencilTileAllocatesNothing) {
  std::vector<double> hin(kN * kN, 1.0), hout(kN * kN, 0.0);
  absl::StatusOr<std::unique_ptr<Backend>> b = make_host_backend({.devices = 2, .queues = GetParam()});
  ASSERT_TRUE(b.ok()) << b.status();
  absl::StatusOr<std::unique_ptr<Runtime>> rt = Runtime::create_with_backend(*std::move(b), {});
  ASSERT_TRUE(rt.ok()) << rt.status();
  const int64_t ext[2] = {kN, kN};
  Array* in = *(*rt)->register_array("in", hin.data(), 8, ext);
  Array* out = *(*rt)->register_array("out", hout.data(), 8, ext);
  const Box w = box2(64, 1, 128, kN - 1);
  auto tile = [&] {
    absl::StatusOr<Tile> t = (*rt)->begin_tile(1);
    ASSERT_TRUE(t.ok());
    for (const Box& r : stencil_reads()) ASSERT_TRUE(t->require(in, r, Access::kRead).ok());
    ASSERT_TRUE(t->require(out, w, Access::kWrite).ok());
    ASSERT_TRUE(t->acquire().ok());
    ASSERT_TRUE(t->view(in).ok());
    ASSERT_TRUE(t->release().ok());
  };
  // Places the boxes and warms the pools (released tile states wait in a
  // short quarantine before reuse, see core/tile_state.h).
  for (int k = 0; k < 32; ++k) tile();
  ASSERT_TRUE((*rt)->synchronize().ok());
  const int64_t n = allocations_in([&] {
    for (int k = 0; k < 100; ++k) tile();
  });
  EXPECT_EQ(n, 0) << "heap allocations in 100 hit-path tiles";
  EXPECT_EQ((*rt)->stats(1).misses, 2u);  // the first tile's two instances only
  // The measured tiles are planned (core/tile_plans.h): the planned path allocates nothing.
  EXPECT_GE((*rt)->stats(1).planned_tiles, 100u);
  ASSERT_TRUE((*rt)->unregister_array(in).ok());
  ASSERT_TRUE((*rt)->unregister_array(out).ok());
}

TEST_P(HitPathAllocations, CApiStencilTileAllocatesNothing) {
  std::vector<double> hin(kN * kN, 1.0), hout(kN * kN, 0.0);
  bbmm_options o;
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK);
  o.backend = BBMM_BACKEND_HOST;
  o.devices = 1;
  bbmm_runtime* rt = nullptr;
  ASSERT_EQ(bbmm_runtime_create(&o, &rt), BBMM_OK) << bbmm_last_error_message();
  const int64_t ext[2] = {kN, kN};
  bbmm_array *in = nullptr, *out = nullptr;
  ASSERT_EQ(bbmm_array_register(rt, "in", hin.data(), 8, 2, ext, nullptr, 0, &in), BBMM_OK);
  ASSERT_EQ(bbmm_array_register(rt, "out", hout.data(), 8, 2, ext, nullptr, 0, &out), BBMM_OK);
  auto tile = [&] {
    bbmm_tile* t = nullptr;
    ASSERT_EQ(bbmm_tile_begin(rt, 0, &t), BBMM_OK);
    for (const Box& r : stencil_reads()) {
      ASSERT_EQ(bbmm_tile_require(t, in, r.lo_data(), r.hi_data(), BBMM_READ), BBMM_OK);
    }
    const int64_t wlo[2] = {64, 1}, whi[2] = {128, kN - 1};
    ASSERT_EQ(bbmm_tile_require(t, out, wlo, whi, BBMM_WRITE), BBMM_OK);
    ASSERT_EQ(bbmm_tile_acquire(t), BBMM_OK) << bbmm_last_error_message();
    bbmm_view v;
    ASSERT_EQ(bbmm_tile_view(t, in, &v), BBMM_OK);
    ASSERT_EQ(bbmm_tile_release(t), BBMM_OK);
  };
  for (int k = 0; k < 32; ++k) tile();
  ASSERT_EQ(bbmm_synchronize(rt), BBMM_OK);
  const int64_t n = allocations_in([&] {
    for (int k = 0; k < 100; ++k) tile();
  });
  EXPECT_EQ(n, 0) << "heap allocations in 100 hit-path tiles";
  ASSERT_EQ(bbmm_array_unregister(rt, in), BBMM_OK);
  ASSERT_EQ(bbmm_array_unregister(rt, out), BBMM_OK);
  ASSERT_EQ(bbmm_runtime_destroy(rt), BBMM_OK) << bbmm_last_error_message();
}

INSTANTIATE_TEST_SUITE_P(Queues, HitPathAllocations, ::testing::Values(1, 4),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return "queues" + std::to_string(p.param);
                         });

}  // namespace
}  // namespace bbmm
