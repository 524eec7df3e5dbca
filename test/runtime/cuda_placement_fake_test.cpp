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

namespace {

// Two devices read the whole of one array at once (gemm's B on every GPU). Staged host
// copies share the host's copier threads, so the second device takes the box from the
// first, behind its read-in (one host read, one peer copy); pinned, each device reads it
// from the host over its own link.
// 32 MiB, so that the first device's read-in is still in flight when the second asks.
constexpr int64_t kBig = 2048;

bbmm_stats broadcast_read(bbmm_host_copies host_copies) {
  std::vector<double> b(kBig * kBig);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<double>(i);
  bbmm_options o;
  EXPECT_EQ(bbmm_options_init(&o), BBMM_OK);
  o.backend = BBMM_BACKEND_CUDA;
  o.devices = 2;
  o.cuda_host_copies = host_copies;
  bbmm_runtime* rt = nullptr;
  EXPECT_EQ(bbmm_runtime_create(&o, &rt), BBMM_OK) << bbmm_last_error_message();
  bbmm_stats st = {};
  if (rt == nullptr) return st;
  const int64_t ext[2] = {kBig, kBig};
  bbmm_array* arr = nullptr;
  EXPECT_EQ(bbmm_array_register(rt, "B", b.data(), 8, 2, ext, nullptr, 0, &arr), BBMM_OK);
  const int64_t lo[2] = {0, 0}, hi[2] = {kBig, kBig};
  for (int device = 0; device < 2; ++device) {
    bbmm_tile* tile = nullptr;
    EXPECT_EQ(bbmm_tile_begin(rt, device, &tile), BBMM_OK);
    EXPECT_EQ(bbmm_tile_require(tile, arr, lo, hi, BBMM_READ), BBMM_OK);
    EXPECT_EQ(bbmm_tile_acquire(tile), BBMM_OK) << bbmm_last_error_message();
    EXPECT_EQ(bbmm_tile_launch(tile, kernel, nullptr, 0), BBMM_OK) << bbmm_last_error_message();
    EXPECT_EQ(bbmm_tile_release(tile), BBMM_OK) << bbmm_last_error_message();
  }
  EXPECT_EQ(bbmm_synchronize(rt), BBMM_OK) << bbmm_last_error_message();
  EXPECT_EQ(bbmm_stats_get(rt, -1, &st), BBMM_OK);
  EXPECT_EQ(bbmm_array_unregister(rt, arr), BBMM_OK);
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b[i], static_cast<double>(i));
  EXPECT_EQ(bbmm_runtime_destroy(rt), BBMM_OK) << bbmm_last_error_message();
  return st;
}

TEST(CudaPlacement, StagedArraysAreBroadcastThroughAPeer) {
  const uint64_t bytes = kBig * kBig * 8;
  // Staged: the peer, whether or not its read-in is still in flight (when it is done,
  // the peer is taken anyway).
  const bbmm_stats staged = broadcast_read(BBMM_HOST_COPIES_STAGED);
  EXPECT_EQ(staged.bytes_h2d, bytes);
  EXPECT_EQ(staged.bytes_peer, bytes);
  // Pinned: the host while the first read-in is in flight (nearly always here: 32 MiB),
  // the peer once it is done; the bytes add up either way.
  const bbmm_stats pinned = broadcast_read(BBMM_HOST_COPIES_PINNED);
  EXPECT_EQ(pinned.bytes_h2d + pinned.bytes_peer, 2 * bytes);
  if (pinned.bytes_peer == 0) {
    EXPECT_EQ(pinned.bytes_h2d, 2 * bytes);
  }
}

}  // namespace
