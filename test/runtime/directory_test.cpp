// The coherency directory against a dense oracle: one holder mask per element of
// a small 2-D or 3-D array, updated by the same random set/add/remove calls. After
// every call the directory's regions must be disjoint, cover the array, agree with
// the oracle element by element (also through query() of a random box), and be
// merged: no two regions with equal holders whose union is a box.

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "bbmm/box.h"
#include "core/directory.h"

namespace bbmm::detail {
namespace {

struct Dense {
  std::vector<int64_t> ext;
  std::vector<HolderMask> mask;
  explicit Dense(std::vector<int64_t> e) : ext(std::move(e)) {
    int64_t n = 1;
    for (int64_t x : ext) n *= x;
    mask.assign(n, kHostBit);
  }
  template <typename F>
  void each(const Box& b, F f) {
    std::vector<int64_t> p(ext.size());
    for (size_t d = 0; d < ext.size(); ++d) p[d] = b.lo(d);
    if (b.empty()) return;
    for (;;) {
      int64_t k = 0;
      for (size_t d = 0; d < ext.size(); ++d) k = k * ext[d] + p[d];
      f(mask[k]);
      size_t d = ext.size();
      while (d-- > 0) {
        if (++p[d] < b.hi(d)) break;
        p[d] = b.lo(d);
        if (d == 0) return;
      }
    }
  }
};

Box random_box(std::mt19937& rng, const std::vector<int64_t>& ext) {
  std::vector<int64_t> lo, hi;
  for (int64_t e : ext) {
    int64_t a = std::uniform_int_distribution<int64_t>(0, e)(rng);
    int64_t b = std::uniform_int_distribution<int64_t>(0, e)(rng);
    lo.push_back(std::min(a, b));
    hi.push_back(std::max(a, b));
  }
  return *Box::create(lo, hi);
}

void check(const Directory& dir, Dense& dense, const Box& whole, std::mt19937& rng, const std::string& when) {
  const auto& rs = dir.regions();
  int64_t covered = 0;
  for (size_t i = 0; i < rs.size(); ++i) {
    ASSERT_FALSE(rs[i].box.empty()) << when;
    covered += rs[i].box.volume();
    for (size_t j = i + 1; j < rs.size(); ++j) {
      ASSERT_FALSE(overlaps(rs[i].box, rs[j].box)) << when << ": " << rs[i].box << " and " << rs[j].box;
      if (rs[i].valid != rs[j].valid) continue;
      const Box h = *convex_union(rs[i].box, rs[j].box);
      EXPECT_NE(h.volume(), rs[i].box.volume() + rs[j].box.volume())
          << when << ": " << rs[i].box << " and " << rs[j].box << " should have been merged";
    }
    dense.each(rs[i].box, [&](HolderMask m) { ASSERT_EQ(m, rs[i].valid) << when << " in " << rs[i].box; });
  }
  ASSERT_EQ(covered, whole.volume()) << when;
  const Box q = random_box(rng, dense.ext);
  int64_t seen = 0;
  for (const Directory::Region& r : dir.query(q)) {
    ASSERT_TRUE(is_subset(r.box, q)) << when;
    seen += r.box.volume();
    dense.each(r.box, [&](HolderMask m) { ASSERT_EQ(m, r.valid) << when << " query " << q; });
  }
  ASSERT_EQ(seen, q.volume()) << when << " query " << q;
}

void run(std::vector<int64_t> ext, uint32_t seed, int steps) {
  std::mt19937 rng(seed);
  const Box whole = *Box::from_extents(ext);
  Directory dir(whole);
  Dense dense(ext);
  for (int s = 0; s < steps; ++s) {
    const Box b = random_box(rng, ext);
    const HolderMask bits = device_bit(std::uniform_int_distribution<int>(0, 3)(rng));
    const int op = std::uniform_int_distribution<int>(0, 2)(rng);
    std::string when = "seed " + std::to_string(seed) + " step " + std::to_string(s);
    if (op == 0) {  // a write: the writer holds the only valid copy
      dir.set(b, bits);
      dense.each(b, [&](HolderMask& m) { m = bits; });
    } else if (op == 1) {  // a read-in: one more valid copy
      dir.add(b, bits);
      dense.each(b, [&](HolderMask& m) { m |= bits; });
    } else {  // an eviction after write-back: the host holds it, the device no longer
      dir.add(b, kHostBit);
      dir.remove(b, bits);
      dense.each(b, [&](HolderMask& m) { m = (m | kHostBit) & ~bits; });
    }
    check(dir, dense, whole, rng, when);
    if (::testing::Test::HasFatalFailure() || ::testing::Test::HasFailure()) return;
  }
}

TEST(Directory, MatchesDenseOracle2d) {
  for (uint32_t seed = 1; seed <= 40; ++seed) run({12, 9}, seed, 200);
}

TEST(Directory, MatchesDenseOracle3d) {
  for (uint32_t seed = 1; seed <= 20; ++seed) run({6, 5, 7}, seed, 150);
}

// Row-by-row writes (LU's pattern) must not leave the directory fragmented: the
// rows of one holder merge back into one region per holder run.
TEST(Directory, RowWritesMergeBack) {
  const Box whole = *Box::create({0, 0}, {64, 64});
  Directory dir(whole);
  for (int64_t r = 0; r < 64; ++r) dir.set(*Box::create({r, 0}, {r + 1, 64}), device_bit(r < 32 ? 0 : 1));
  EXPECT_EQ(dir.regions().size(), 2u);
  for (int64_t r = 0; r < 64; ++r) dir.add(*Box::create({r, 0}, {r + 1, 64}), kHostBit);
  EXPECT_EQ(dir.regions().size(), 2u);
}

}  // namespace
}  // namespace bbmm::detail
