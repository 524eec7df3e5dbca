// InstanceList (core/instance_list.h) against a plain list scanned in full: random
// sequences of appends and erasures of instances with random boxes (empty ones,
// boxes overlapping each other, ranks 1 to 3), some spread at random and some
// allocated along dimension 0 as a tiled loop does, so that the per-block hulls
// are both tight and wide. After every change, random query boxes must give
// exactly the plain list's answers, in its order: the instances overlapping the
// box, and the first instance holding it.

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "bbmm/box.h"
#include "core/instance.h"
#include "core/instance_list.h"

namespace bbmm::detail {
namespace {

Box random_box(std::mt19937& rng, int rank, int64_t extent, bool allow_empty) {
  std::uniform_int_distribution<int64_t> c(0, extent);
  int64_t lo[Box::kMaxRank], hi[Box::kMaxRank];
  for (int d = 0; d < rank; ++d) {
    int64_t a = c(rng), b = c(rng);
    if (a > b) std::swap(a, b);
    if (a == b && !allow_empty) b = a + 1;
    lo[d] = a;
    hi[d] = b;
  }
  return Box::make_unchecked(rank, lo, hi);
}

// Row `row` of a rank-`rank` array of `extent` per dimension (a pivot row).
Box row_box(int rank, int64_t row, int64_t extent) {
  int64_t lo[Box::kMaxRank], hi[Box::kMaxRank];
  for (int d = 0; d < rank; ++d) {
    lo[d] = 0;
    hi[d] = extent;
  }
  lo[0] = row;
  hi[0] = row + 1;
  return Box::make_unchecked(rank, lo, hi);
}

std::vector<Instance*> plain_overlapping(const std::vector<Instance*>& plain, const Box& q) {
  std::vector<Instance*> out;
  for (Instance* i : plain) {
    if (overlaps(i->box, q)) out.push_back(i);
  }
  return out;
}

Instance* plain_containing(const std::vector<Instance*>& plain, const Box& q) {
  for (Instance* i : plain) {
    if (is_subset(q, i->box)) return i;
  }
  return nullptr;
}

TEST(InstanceList, AnswersAsAPlainListScannedInFull) {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    const int rank = 1 + static_cast<int>(seed % 3);
    const int64_t extent = seed % 2 == 0 ? 12 : 200;
    std::vector<std::unique_ptr<Instance>> owned;
    std::vector<Instance*> plain;
    InstanceList list;
    int64_t next_row = 0;
    std::uniform_int_distribution<int> action(0, 9);
    for (int step = 0; step < 400; ++step) {
      const int a = action(rng);
      if (a < 6 || plain.empty()) {
        auto inst = std::make_unique<Instance>();
        // Rows in order (a tiled loop's fresh instances), or anywhere.
        inst->box = (a < 3 && next_row < extent) ? row_box(rank, next_row++, extent)
                                                 : random_box(rng, rank, extent, true);
        plain.push_back(inst.get());
        list.push_back(inst.get());
        owned.push_back(std::move(inst));
      } else {
        std::uniform_int_distribution<size_t> pick(0, plain.size() - 1);
        const size_t k = pick(rng);
        list.erase(plain[k]);
        plain.erase(plain.begin() + static_cast<std::ptrdiff_t>(k));
      }
      ASSERT_EQ(list.size(), plain.size());
      ASSERT_TRUE(std::equal(list.begin(), list.end(), plain.begin(), plain.end()));
      for (int q = 0; q < 8; ++q) {
        const Box box = q == 0 && !plain.empty() ? plain[rng() % plain.size()]->box
                                                 : random_box(rng, rank, extent, q % 4 == 1);
        std::vector<Instance*> got;
        list.for_each_overlapping(box, [&](Instance* i) { got.push_back(i); });
        ASSERT_EQ(got, plain_overlapping(plain, box))
            << "seed " << seed << " step " << step << " query " << box;
        ASSERT_EQ(list.find_containing(box), plain_containing(plain, box))
            << "seed " << seed << " step " << step << " query " << box;
      }
    }
  }
}

TEST(InstanceList, BoxesOfAnotherRankAndTheDefaultBoxMeetNothing) {
  Instance a, b;
  a.box = *Box::create({0, 0}, {4, 4});
  b.box = *Box::create({4, 0}, {8, 4});
  InstanceList list;
  list.push_back(&a);
  list.push_back(&b);
  int calls = 0;
  list.for_each_overlapping(*Box::create({0}, {8}), [&](Instance*) { ++calls; });
  list.for_each_overlapping(Box(), [&](Instance*) { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(list.find_containing(*Box::create({1}, {2})), nullptr);
  EXPECT_EQ(list.find_containing(Box()), nullptr);
  // An empty box of the array's rank is inside the first instance.
  EXPECT_EQ(list.find_containing(*Box::create({9, 9}, {9, 9})), &a);
  EXPECT_EQ(list.find_containing(*Box::create({5, 1}, {6, 2})), &b);
}

}  // namespace
}  // namespace bbmm::detail
