// for_each_overlapping_pair (core/box_pairs.h) against every pair compared
// directly, on random lists of boxes of rank 1-3 (row segments, columns, blocks,
// empty boxes, duplicates), short lists (pairwise path) and long ones (sweep).
#include "core/box_pairs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

namespace bbmm::detail {
namespace {

std::vector<Box> random_boxes(std::mt19937_64& rng, int rank, size_t n) {
  std::vector<Box> out;
  std::uniform_int_distribution<int> kind(0, 3), coord(0, 40);
  for (size_t k = 0; k < n; ++k) {
    int64_t lo[3], hi[3];
    const int shape = kind(rng);
    for (int d = 0; d < rank; ++d) {
      lo[d] = coord(rng);
      hi[d] = lo[d] + 1 + coord(rng) / 4;
      if (shape == 0 && d == 0) hi[d] = lo[d] + 1;       // a row segment
      if (shape == 1 && d == 0) hi[d] = lo[d] + 30;      // a tall column
      if (shape == 2 && d == rank - 1) hi[d] = lo[d];    // empty
    }
    out.push_back(Box::make_unchecked(rank, lo, hi));
    if (shape == 3 && !out.empty()) out.push_back(out[out.size() / 2]);  // a duplicate
  }
  return out;
}

TEST(BoxPairs, FindsExactlyTheOverlappingPairs) {
  std::mt19937_64 rng(20261127);
  BoxPairScratch scratch;
  int long_lists = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int rank = 1 + trial % 3;
    const size_t na = trial % 7 == 0 ? 0 : 1 + rng() % (trial % 2 ? 8 : 120);
    const size_t nb = 1 + rng() % (trial % 3 ? 8 : 120);
    const std::vector<Box> a = random_boxes(rng, rank, na), b = random_boxes(rng, rank, nb);
    if (a.size() * b.size() > 64) ++long_lists;
    std::vector<std::pair<size_t, size_t>> want, got;
    for (size_t i = 0; i < a.size(); ++i) {
      for (size_t j = 0; j < b.size(); ++j) {
        if (overlaps(a[i], b[j])) want.emplace_back(i, j);
      }
    }
    for_each_overlapping_pair(a, b, scratch, [&](size_t i, size_t j) { got.emplace_back(i, j); });
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got, want) << "trial " << trial << ", " << a.size() << " x " << b.size() << " boxes";
  }
  EXPECT_GT(long_lists, 500) << "the sweep (more than 64 pairs) must be exercised";
}

}  // namespace
}  // namespace bbmm::detail
