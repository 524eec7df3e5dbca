// Where a tile's boxes live on the CUDA backend (over the host-only fake of the CUDA
// runtime, so this runs in CI): a tile's fresh boxes of one array take one instance, their
// hull, whenever the hull is small beside the device, even where it wastes more than the
// growth threshold; the host backend keeps one instance per box there. A kernel over
// several pieces of one array looks its elements up and loses the compiler's alias
// analysis (PolyBench's correlation: 3 times slower on one H100, docs/performance.md).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "bbmm/bbmm.h"

namespace {

constexpr int64_t kN = 256;

void kernel(const bbmm_launch_info*, void*) {}

// The pieces of the view of one tile that requires an L of a kN x kN array: a row band
// [0, 64) x [0, kN) and a column band [64, kN) x [0, 64) (correlation's corr[i][j] and
// corr[j][i] for rows [0, 64)): the hull, the whole array, wastes 56% of itself.
int pieces_of_an_l(bbmm_backend_kind backend) {
  std::vector<double> a(kN * kN, 1.0);
  bbmm_options o;
  EXPECT_EQ(bbmm_options_init(&o), BBMM_OK);
  o.backend = backend;
  o.devices = 1;
  bbmm_runtime* rt = nullptr;
  EXPECT_EQ(bbmm_runtime_create(&o, &rt), BBMM_OK) << bbmm_last_error_message();
  if (rt == nullptr) return -1;
  const int64_t ext[2] = {kN, kN};
  bbmm_array* arr = nullptr;
  EXPECT_EQ(bbmm_array_register(rt, "corr", a.data(), 8, 2, ext, nullptr, 0, &arr), BBMM_OK);
  bbmm_tile* tile = nullptr;
  EXPECT_EQ(bbmm_tile_begin(rt, 0, &tile), BBMM_OK);
  const int64_t rlo[2] = {0, 0}, rhi[2] = {64, kN};
  const int64_t clo[2] = {64, 0}, chi[2] = {kN, 64};
  EXPECT_EQ(bbmm_tile_require(tile, arr, rlo, rhi, BBMM_READ_WRITE), BBMM_OK);
  EXPECT_EQ(bbmm_tile_require(tile, arr, clo, chi, BBMM_READ_WRITE), BBMM_OK);
  EXPECT_EQ(bbmm_tile_acquire(tile), BBMM_OK) << bbmm_last_error_message();
  bbmm_view v;
  EXPECT_EQ(bbmm_tile_view(tile, arr, &v), BBMM_OK);
  const int pieces = v.npieces;
  EXPECT_EQ(bbmm_tile_launch(tile, kernel, nullptr, 0), BBMM_OK) << bbmm_last_error_message();
  EXPECT_EQ(bbmm_tile_release(tile), BBMM_OK) << bbmm_last_error_message();
  EXPECT_EQ(bbmm_array_unregister(rt, arr), BBMM_OK);
  // The host array came back whole: nothing was lost in either layout.
  for (double x : a) EXPECT_EQ(x, 1.0);
  EXPECT_EQ(bbmm_runtime_destroy(rt), BBMM_OK) << bbmm_last_error_message();
  return pieces;
}

TEST(CudaPlacement, ATilesBoxesOfOneArrayTakeOneInstance) {
  EXPECT_EQ(pieces_of_an_l(BBMM_BACKEND_CUDA), 1);
}

TEST(CudaPlacement, TheHostBackendKeepsTheGrowthThreshold) {
  EXPECT_EQ(pieces_of_an_l(BBMM_BACKEND_HOST), 2);
}

}  // namespace
