// Checks the claim of box_set.h that sets of up to 16 boxes of rank <= 3 live
// in inline storage: building such sets, `disjoint`, `coalesce`, the set
// algebra and the Box operations must not touch the heap. These run on every
// tile, so an allocation there is a performance bug even when the results are
// right.
//
// The binary replaces the global operator new/delete with counting versions
// (forwarding to malloc/free, so sanitizers still see every block); that is
// why these tests have a binary of their own.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "bbmm/box.h"
#include "bbmm/box_set.h"

#include "counting_new.h"

namespace bbmm {
namespace {

using bbmm::testing::allocations_in;

Box cube(int64_t x, int64_t y, int64_t z, int64_t size) {
  return *Box::create({x, y, z}, {x + size, y + size, z + size});
}

// 16 disjoint rank-3 boxes: a 4x4 grid of 8x8x8 cubes.
std::vector<Box> grid_of_16() {
  std::vector<Box> v;
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 4; ++j) v.push_back(cube(8 * i, 8 * j, 0, 8));
  }
  return v;
}

// The reads of a 7-point stencil on a 32^3 tile: the tile shifted by +-1
// along each axis.
std::vector<Box> stencil_7() {
  std::vector<Box> v = {cube(0, 0, 0, 32)};
  for (int d = 0; d < 3; ++d) {
    for (int64_t s : {-1, 1}) {
      int64_t o[3] = {0, 0, 0};
      o[d] = s;
      v.push_back(cube(o[0], o[1], o[2], 32));
    }
  }
  return v;
}

TEST(BoxAlloc, TheCounterSeesHeapAllocations) {
  // Without this control, a counter that never counts would pass every test.
  EXPECT_GE(allocations_in([] { std::vector<int> v(100); }), 1);
  // Past the inline capacity (96 coordinates) a set does allocate: 17 boxes
  // of rank 3, or 13 of rank 4.
  EXPECT_GE(allocations_in([] {
              BoxSet s(3);
              for (int64_t i = 0; i < 17; ++i) s.append_unchecked(cube(8 * i, 0, 0, 8));
            }),
            1);
  EXPECT_GE(allocations_in([] {
              BoxSet s(4);
              for (int64_t i = 0; i < 13; ++i) {
                s.append_unchecked(*Box::create({i, 0, 0, 0}, {i + 1, 1, 1, 1}));
              }
            }),
            1);
}

TEST(BoxAlloc, SixteenRank3BoxesStayInline) {
  const std::vector<Box> boxes = grid_of_16();  // the vector itself is outside the count
  BoxSet s(3);
  EXPECT_EQ(allocations_in([&] {
              for (const Box& b : boxes) ASSERT_TRUE(s.add(b).ok());
            }),
            0);
  ASSERT_EQ(s.size(), 16u);
  int64_t volume = 0;
  bool has_point = false;
  const int64_t point[] = {9, 9, 1};
  EXPECT_EQ(allocations_in([&] {
              BoxSet copy = s;
              volume = copy.volume();
              has_point = copy.contains(point);
              (void)copy.hull();
              for (size_t i = 0; i < copy.size(); ++i) (void)copy[i];
            }),
            0);
  EXPECT_EQ(volume, 16 * 512);
  EXPECT_TRUE(has_point);
}

TEST(BoxAlloc, DisjointOfStencilReadsStaysInline) {
  for (const std::vector<Box>& in : {stencil_7(), grid_of_16()}) {
    const size_t size = BoxSet::disjoint(in)->size();
    ASSERT_LE(size, 16u) << "the claim covers results of up to 16 boxes";
    size_t again = 0;
    EXPECT_EQ(allocations_in([&] { again = BoxSet::disjoint(in)->size(); }), 0);
    EXPECT_EQ(again, size);
  }
}

TEST(BoxAlloc, CoalesceStaysInline) {
  BoxSet s(3);
  for (const Box& b : grid_of_16()) s.append_unchecked(b);
  EXPECT_EQ(allocations_in([&] { s.coalesce(); }), 0);
  EXPECT_EQ(s.size(), 1u);  // the grid is one 32x32x8 box
}

TEST(BoxAlloc, RemoveAndSetAlgebraStayInline) {
  BoxSet a(3);
  for (int64_t i = 0; i < 8; ++i) a.append_unchecked(cube(8 * i, 0, 0, 8));
  BoxSet b(3);
  b.append_unchecked(cube(4, 2, 2, 3));   // a hole in box 0: 6 pieces
  b.append_unchecked(cube(20, 0, 0, 8));  // half of boxes 2 and 3
  int64_t n = 0;
  EXPECT_EQ(allocations_in([&] {
              BoxSet c = a;
              ASSERT_TRUE(c.remove(cube(4, 2, 2, 3)).ok());
              n += static_cast<int64_t>(c.size());
              n += static_cast<int64_t>(set_union(a, b)->size());
              n += static_cast<int64_t>(set_intersection(a, b)->size());
              n += static_cast<int64_t>(set_difference(a, b)->size());
              n += *same_points(a, b) ? 1 : 0;
            }),
            0);
  EXPECT_GT(n, 0);
}

TEST(BoxAlloc, BoxOperationsStayInline) {
  const Box a = cube(0, 0, 0, 3), b = cube(1, 1, 1, 1);
  size_t pieces = 0;
  EXPECT_EQ(allocations_in([&] {
              pieces += subtract(a, b)->size();
              pieces += simple_union(b, a)->size();
              (void)intersection(a, b);
              (void)convex_union(a, b);
              (void)is_subset(b, a);
              (void)overlaps(a, b);
            }),
            0);
  EXPECT_EQ(pieces, 6u + 7u);
}

}  // namespace
}  // namespace bbmm
