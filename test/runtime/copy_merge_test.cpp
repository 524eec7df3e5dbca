// merge_adjacent_copies (core/copy_merge.h) against executing the batch as
// given: random batches of rectangles cut from a grid of a 3-D region of two
// strided byte buffers (some cells left out, so that holes stop merges; ops of
// a second array in the same batch), each run unmerged and merged into
// destination buffers of a pattern, which must end byte for byte equal; and
// table cases for how many copies a batch becomes (BBMM_MERGE_CASES, default
// 3,000 random batches).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "bbmm/bbmm.h"
#include "bbmm/view.h"
#include "core/backend.h"
#include "core/copy_merge.h"

namespace bbmm {
namespace {

// Executes `op` as the backends' rectangle copies do (planes, rows, bytes).
void run_copy(const CopyOp& op) {
  for (size_t z = 0; z < op.shape.depth; ++z) {
    for (size_t y = 0; y < op.shape.height; ++y) {
      std::memcpy(static_cast<char*>(op.dst.base) + op.dst.offset + z * op.dst.slice_pitch +
                      y * op.dst.row_pitch,
                  static_cast<const char*>(op.src.base) + op.src.offset +
                      z * op.src.slice_pitch + y * op.src.row_pitch,
                  op.shape.width_bytes);
    }
  }
}

// One strided 3-D byte layout: rows of `row` bytes, planes of `slice`.
struct Layout {
  size_t row, slice, bytes;
};

// The copy of cell [lo, hi) (planes, rows, bytes) between layouts `s` and
// `d`, written as the copy planner writes it (a one-plane copy's slice pitches
// are its rows' pitch times its height).
CopyOp cell_op(void* dst, const Layout& d, void* src, const Layout& s, const size_t lo[3],
               const size_t hi[3]) {
  CopyOp op;
  op.shape = {hi[2] - lo[2], hi[1] - lo[1], hi[0] - lo[0]};
  op.dst = Endpoint{0, dst, lo[0] * d.slice + lo[1] * d.row + lo[2], d.row, d.slice};
  op.src = Endpoint{kHost, src, lo[0] * s.slice + lo[1] * s.row + lo[2], s.row, s.slice};
  if (op.shape.depth == 1) {
    op.dst.slice_pitch = d.row * op.shape.height;
    op.src.slice_pitch = s.row * op.shape.height;
  }
  return op;
}

// Random cuts of [0, n) into 1..4 pieces: the boundaries, 0 and n included.
std::vector<size_t> cuts(std::mt19937_64& g, size_t n) {
  std::vector<size_t> c = {0, n};
  const int k = static_cast<int>(g() % 4);
  for (int i = 0; i < k; ++i) c.push_back(1 + g() % n);
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

TEST(CopyMerge, MergedBatchesCopyTheSameBytes) {
  const char* env = std::getenv("BBMM_MERGE_CASES");
  const int cases = env && *env ? std::atoi(env) : 3000;
  size_t before = 0, after = 0;
  for (int k = 0; k < cases; ++k) {
    std::mt19937_64 g(20261204 + static_cast<uint64_t>(k));
    const size_t ext[3] = {1 + g() % 4, 1 + g() % 10, 1 + g() % 24};  // planes, rows, bytes
    // Source and destination layouts: dense or padded rows, dense or padded planes.
    auto layout = [&] {
      Layout l;
      l.row = ext[2] + (g() % 2 ? 0 : g() % 9);
      l.slice = ext[1] * l.row + (g() % 2 ? 0 : (g() % 3) * l.row + g() % 5);
      l.bytes = ext[0] * l.slice;
      return l;
    };
    const Layout s = layout(), d = layout(), s2 = layout(), d2 = layout();
    std::vector<char> src(s.bytes), src2(s2.bytes);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(g());
    for (size_t i = 0; i < src2.size(); ++i) src2[i] = static_cast<char>(g());
    std::vector<char> dst(d.bytes, 'x'), dst2(d2.bytes, 'y');
    std::vector<CopyOp> ops;
    // Array 1: a grid of cells, each copied with probability 3/4; array 2: a few cells.
    const std::vector<size_t> cz = cuts(g, ext[0]), cy = cuts(g, ext[1]), cx = cuts(g, ext[2]);
    for (size_t a = 0; a + 1 < cz.size(); ++a) {
      for (size_t b = 0; b + 1 < cy.size(); ++b) {
        for (size_t c = 0; c + 1 < cx.size(); ++c) {
          if (g() % 4 == 0) continue;
          const size_t lo[3] = {cz[a], cy[b], cx[c]}, hi[3] = {cz[a + 1], cy[b + 1], cx[c + 1]};
          ops.push_back(cell_op(dst.data(), d, src.data(), s, lo, hi));
        }
      }
    }
    if (g() % 2 == 0) {
      const size_t lo[3] = {0, 0, 0}, mid[3] = {ext[0], ext[1], ext[2] / 2};
      if (mid[2] > 0) ops.push_back(cell_op(dst2.data(), d2, src2.data(), s2, lo, mid));
      const size_t lo2[3] = {0, 0, ext[2] / 2}, hi2[3] = {ext[0], ext[1], ext[2]};
      ops.push_back(cell_op(dst2.data(), d2, src2.data(), s2, lo2, hi2));
    }
    std::shuffle(ops.begin(), ops.end(), g);
    std::vector<char> want(dst), want2(dst2);
    {
      std::vector<char> keep(dst), keep2(dst2);
      for (const CopyOp& op : ops) run_copy(op);
      want = dst;
      want2 = dst2;
      dst = keep;
      dst2 = keep2;
    }
    std::vector<CopyOp> merged = ops;
    merge_adjacent_copies(&merged);
    ASSERT_LE(merged.size(), ops.size());
    before += ops.size();
    after += merged.size();
    for (const CopyOp& op : merged) run_copy(op);
    ASSERT_EQ(dst, want) << "case " << k << ": " << ops.size() << " ops merged into "
                         << merged.size();
    ASSERT_EQ(dst2, want2) << "case " << k;
  }
  std::printf("%d batches: %zu copies, %zu after merging\n", cases, before, after);
  EXPECT_LT(after, before);
}

// 16 boxes of rows W out of host rows of 2W, one below the other on both sides
// (as gpu_bench's batches): one copy; with a row of gap between them: 16.
TEST(CopyMerge, BoxesOneBelowTheOtherBecomeOneCopy) {
  std::vector<char> host(64 * 1024), dev(64 * 1024);
  const size_t w = 64, rows = 4;
  for (size_t gap : {size_t{0}, size_t{1}}) {
    std::vector<CopyOp> ops;
    for (size_t k = 0; k < 16; ++k) {
      const size_t h_off = k * (rows + gap) * 2 * w, d_off = k * (rows + gap) * w;
      ops.push_back(CopyOp{Endpoint{0, dev.data(), d_off, w, w * rows},
                           Endpoint{kHost, host.data(), h_off, 2 * w, 2 * w * rows},
                           CopyShape{w, rows, 1}});
    }
    merge_adjacent_copies(&ops);
    if (gap == 0) {
      ASSERT_EQ(ops.size(), 1u);
      EXPECT_EQ(ops[0].shape.height, 16 * rows);
      EXPECT_EQ(ops[0].shape.width_bytes, w);
      EXPECT_EQ(ops[0].src.offset, 0u);
      EXPECT_EQ(ops[0].src.slice_pitch, 2 * w * 16 * rows);
    } else {
      EXPECT_EQ(ops.size(), 16u);
    }
  }
}

// A 2 x 2 grid of boxes: one copy (rows widened in the first pass, stacked in
// the second); the same with different row pitches on the two sides of one
// box, or on other devices, stays apart.
TEST(CopyMerge, GridsMergeAndDifferentMemoryDoesNot) {
  std::vector<char> a(4096), b(4096), c(4096);
  auto op = [&](void* dst, int dev, size_t row, size_t y, size_t x) {
    return CopyOp{Endpoint{dev, dst, y * row + x, row, row * 4},
                  Endpoint{kHost, a.data(), y * 64 + x, 64, 64 * 4}, CopyShape{8, 4, 1}};
  };
  std::vector<CopyOp> grid = {op(b.data(), 0, 16, 0, 0), op(b.data(), 0, 16, 0, 8),
                              op(b.data(), 0, 16, 4, 0), op(b.data(), 0, 16, 4, 8)};
  merge_adjacent_copies(&grid);
  ASSERT_EQ(grid.size(), 1u);
  EXPECT_EQ(grid[0].shape.width_bytes, 16u);
  EXPECT_EQ(grid[0].shape.height, 8u);
  std::vector<CopyOp> apart = {op(b.data(), 0, 16, 0, 0), op(c.data(), 0, 16, 0, 8),
                               op(b.data(), 0, 32, 4, 0), op(b.data(), 1, 16, 8, 0)};
  merge_adjacent_copies(&apart);
  EXPECT_EQ(apart.size(), 4u);
}

// Planes behind one another merge into a deeper copy; planes that are just
// consecutive rows on both sides become one 2-D copy.
TEST(CopyMerge, PlanesMergeDeeper) {
  std::vector<char> s(1 << 16), d(1 << 16);
  // Six planes of 4 rows of 32 bytes, dense on the device, rows 64 bytes apart on the host
  // and planes `src_slice` apart there, as copies of `depth` planes each, merged.
  auto stacked = [&](size_t src_slice, size_t depth) {
    std::vector<CopyOp> ops;
    for (size_t z = 0; z < 6; z += depth) {
      ops.push_back(CopyOp{Endpoint{0, d.data(), z * 128, 32, 128},
                           Endpoint{kHost, s.data(), z * src_slice, 64, src_slice},
                           CopyShape{32, 4, depth}});
    }
    merge_adjacent_copies(&ops);
    return ops;
  };
  // 4 of a host plane's 8 rows: one 3-D copy of 6 planes.
  const std::vector<CopyOp> ops = stacked(512, 2);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].shape.depth, 6u);
  EXPECT_EQ(ops[0].shape.height, 4u);
  // Whole planes of dense rows on both sides: one 2-D copy of 24 rows.
  const std::vector<CopyOp> dense = stacked(256, 3);
  ASSERT_EQ(dense.size(), 1u);
  EXPECT_EQ(dense[0].shape.depth, 1u);
  EXPECT_EQ(dense[0].shape.height, 24u);
  // Two copies of planes whose host planes are not equally far apart: apart.
  std::vector<CopyOp> uneven = {
      CopyOp{Endpoint{0, d.data(), 0, 32, 128}, Endpoint{kHost, s.data(), 0, 64, 512},
             CopyShape{32, 4, 2}},
      CopyOp{Endpoint{0, d.data(), 256, 32, 128}, Endpoint{kHost, s.data(), 1024, 64, 1024},
             CopyShape{32, 4, 2}}};
  merge_adjacent_copies(&uneven);
  EXPECT_EQ(uneven.size(), 2u);
}

// Through the runtime: a tile on device 0 writes all of an 8 x 8 array, a tile on device 1
// reads its lower half; at unregister the array goes back to the host from device 0 as two
// boxes (the directory keeps the halves apart: one is also on device 1), one below the
// other on both sides (the instance's rows and the host's): one copy with merge_copies (the
// default), two without; the host gets the kernel's values either way.
void write_kernel(const bbmm_launch_info*, void* p) {
  const bbmm_piece& piece = **static_cast<bbmm_piece**>(p);
  for (int64_t i = 0; i < 8; ++i) {
    for (int64_t j = 0; j < 8; ++j) {
      const int64_t idx[2] = {i, j};
      *static_cast<double*>(bbmm_piece_at(&piece, sizeof(double), 2, idx)) =
          static_cast<double>(100 * i + j);
    }
  }
}

void no_kernel(const bbmm_launch_info*, void*) {}

TEST(CopyMerge, TheRuntimeCopiesBoxesThatContinueOneAnotherOnce) {
  for (int merge : {1, 0}) {
    bbmm_options o;
    ASSERT_EQ(bbmm_options_init(&o), BBMM_OK);
    o.backend = BBMM_BACKEND_HOST;
    o.devices = 2;
    o.merge_copies = merge;
    bbmm_runtime* rt = nullptr;
    ASSERT_EQ(bbmm_runtime_create(&o, &rt), BBMM_OK) << bbmm_last_error_message();
    std::vector<double> a(64, -1.0);
    const int64_t ext[2] = {8, 8};
    bbmm_array* A = nullptr;
    ASSERT_EQ(bbmm_array_register(rt, "A", a.data(), sizeof(double), 2, ext, nullptr, 0, &A),
              BBMM_OK);
    const int64_t all_lo[2] = {0, 0}, half_lo[2] = {4, 0}, hi[2] = {8, 8};
    bbmm_tile* t = nullptr;
    ASSERT_EQ(bbmm_tile_begin(rt, 0, &t), BBMM_OK);
    ASSERT_EQ(bbmm_tile_require(t, A, all_lo, hi, BBMM_WRITE), BBMM_OK);
    ASSERT_EQ(bbmm_tile_acquire(t), BBMM_OK) << bbmm_last_error_message();
    bbmm_view v;
    ASSERT_EQ(bbmm_tile_view(t, A, &v), BBMM_OK);
    ASSERT_EQ(v.npieces, 1);
    bbmm_piece piece = v.pieces[0];
    bbmm_piece* pp = &piece;
    ASSERT_EQ(bbmm_tile_launch(t, write_kernel, &pp, sizeof pp), BBMM_OK);
    ASSERT_EQ(bbmm_tile_release(t), BBMM_OK);
    ASSERT_EQ(bbmm_tile_begin(rt, 1, &t), BBMM_OK);
    ASSERT_EQ(bbmm_tile_require(t, A, half_lo, hi, BBMM_READ), BBMM_OK);
    ASSERT_EQ(bbmm_tile_acquire(t), BBMM_OK) << bbmm_last_error_message();
    ASSERT_EQ(bbmm_tile_launch(t, no_kernel, nullptr, 0), BBMM_OK);
    ASSERT_EQ(bbmm_tile_release(t), BBMM_OK);
    bbmm_stats before{};
    ASSERT_EQ(bbmm_stats_get(rt, -1, &before), BBMM_OK);
    ASSERT_EQ(bbmm_array_unregister(rt, A), BBMM_OK) << bbmm_last_error_message();
    for (int64_t i = 0; i < 8; ++i) {
      for (int64_t j = 0; j < 8; ++j) {
        EXPECT_EQ(a[i * 8 + j], static_cast<double>(100 * i + j))
            << "[" << i << "][" << j << "] merge " << merge;
      }
    }
    bbmm_stats st{};
    ASSERT_EQ(bbmm_stats_get(rt, -1, &st), BBMM_OK);
    EXPECT_EQ(st.bytes_d2h - before.bytes_d2h, 64 * sizeof(double)) << "merge " << merge;
    EXPECT_EQ(st.boxes_copied - before.boxes_copied, merge ? 1u : 2u) << "merge " << merge;
    ASSERT_EQ(bbmm_runtime_destroy(rt), BBMM_OK);
  }
}

}  // namespace
}  // namespace bbmm
