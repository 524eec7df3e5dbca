// The coherency directory against a dense oracle: one holder mask per element of
// a small 2-D or 3-D array, updated by the same random set/add/remove calls. After
// every call the directory's regions must be disjoint, cover the array, agree with
// the oracle element by element (also through query() of a random box), and, once
// compact()ed, be merged: no two regions with equal holders whose union is a box.

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "bbmm/box.h"
#include "bbmm/box_set.h"
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

// Disjoint regions covering `whole` that agree with the oracle; when `merged`, no
// two with equal holders whose union is a box.
void check_regions(const std::vector<Directory::Region>& rs, Dense& dense, const Box& whole,
                   bool merged, const std::string& when) {
  int64_t covered = 0;
  for (size_t i = 0; i < rs.size(); ++i) {
    ASSERT_FALSE(rs[i].box.empty()) << when;
    covered += rs[i].box.volume();
    for (size_t j = i + 1; j < rs.size(); ++j) {
      ASSERT_FALSE(overlaps(rs[i].box, rs[j].box)) << when << ": " << rs[i].box << " and " << rs[j].box;
      if (!merged || rs[i].valid != rs[j].valid) continue;
      const Box h = *convex_union(rs[i].box, rs[j].box);
      EXPECT_NE(h.volume(), rs[i].box.volume() + rs[j].box.volume())
          << when << ": " << rs[i].box << " and " << rs[j].box << " should have been merged";
    }
    dense.each(rs[i].box, [&](HolderMask m) { ASSERT_EQ(m, rs[i].valid) << when << " in " << rs[i].box; });
  }
  ASSERT_EQ(covered, whole.volume()) << when;
}

void check(const Directory& dir, Dense& dense, const Box& whole, std::mt19937& rng,
           const std::string& when) {
  const auto& rs = dir.regions();
  check_regions(rs, dense, whole, /*merged=*/false, when);
  if (::testing::Test::HasFatalFailure()) return;
  Directory compacted = dir;
  compacted.compact();
  check_regions(compacted.regions(), dense, whole, /*merged=*/true, when + " (compacted)");
  if (::testing::Test::HasFatalFailure()) return;
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
    if (s % 50 == 49) dir.compact();  // from time to time, as a user of compact() would
  }
}

TEST(Directory, MatchesDenseOracle2d) {
  for (uint32_t seed = 1; seed <= 40; ++seed) run({12, 9}, seed, 200);
}

TEST(Directory, MatchesDenseOracle3d) {
  for (uint32_t seed = 1; seed <= 20; ++seed) run({6, 5, 7}, seed, 150);
}

// Row-by-row writes (LU's pattern) must not leave the directory fragmented: the
// rows of one holder merge back into one region per holder run, lazily (at most
// the merge slack of rows apart), at once on compact().
TEST(Directory, RowWritesMergeBack) {
  const Box whole = *Box::create({0, 0}, {64, 64});
  Directory dir(whole);
  for (int64_t r = 0; r < 64; ++r) {
    dir.set(*Box::create({r, 0}, {r + 1, 64}), device_bit(r < 32 ? 0 : 1));
    ASSERT_LE(dir.regions().size(), 2u + 9u) << "row " << r;
  }
  dir.compact();
  EXPECT_EQ(dir.regions().size(), 2u);
  for (int64_t r = 0; r < 64; ++r) {
    dir.add(*Box::create({r, 0}, {r + 1, 64}), kHostBit);
    ASSERT_LE(dir.regions().size(), 2u + 9u) << "row " << r;
  }
  dir.compact();
  EXPECT_EQ(dir.regions().size(), 2u);
}

// Many regions changed at once (a fragmented array written back whole) are
// merged by that update: past the slack, the directory does not wait.
TEST(Directory, ManyChangedRegionsMergeAtOnce) {
  const Box whole = *Box::create({0, 0}, {200, 8});
  Directory dir(whole);
  for (int64_t r = 0; r < 200; ++r) dir.set(*Box::create({r, 0}, {r + 1, 8}), device_bit(r % 2));
  dir.compact();
  ASSERT_EQ(dir.regions().size(), 200u);  // alternating holders: nothing merges
  dir.add(whole, kHostBit);  // every row's holders change; still alternating
  EXPECT_EQ(dir.regions().size(), 200u);
  dir.set(whole, kHostBit);  // one holder everywhere: 200 changed > 8 + 200 / 4
  EXPECT_EQ(dir.regions().size(), 1u);
}

// A stencil's tile writes its rows and pushes its boundary row to the next
// device, step after step: the regions stay as they are and only their holders
// flip (no split and merge of the same rows every step), and the directory
// stays exact.
TEST(Directory, BoundaryRowsFlipWithoutSplitting) {
  const Box whole = *Box::create({0, 0}, {64, 16});
  Directory dir(whole);
  const Box tile0 = *Box::create({0, 0}, {32, 16}), tile1 = *Box::create({32, 0}, {64, 16});
  const Box last0 = *Box::create({31, 0}, {32, 16}), first1 = *Box::create({32, 0}, {33, 16});
  std::vector<Box> before;
  // After warm-up, no call splits or merges: the boxes stay those of the call before.
  auto same_boxes = [&](int step, const char* call) {
    std::vector<Box> now;
    for (const Directory::Region& g : dir.regions()) now.push_back(g.box);
    if (step >= 2) {
      EXPECT_EQ(now, before) << "step " << step << ", after " << call;
    }
    before = std::move(now);
  };
  for (int step = 0; step < 40; ++step) {
    dir.set(tile0, device_bit(0));
    same_boxes(step, "the write of tile 0");
    dir.set(tile1, device_bit(1));
    same_boxes(step, "the write of tile 1");
    dir.add(last0, device_bit(1));
    same_boxes(step, "the flow-out of tile 0's last row");
    dir.add(first1, device_bit(0));
    same_boxes(step, "the flow-out of tile 1's first row");
    if (::testing::Test::HasFailure()) return;
    const auto& rs = dir.regions();
    // The holders of every row, from the calls above.
    for (const Directory::Region& g : rs) {
      for (int64_t r = g.box.lo(0); r < g.box.hi(0); ++r) {
        const HolderMask want = r == 31 || r == 32 ? device_bit(0) | device_bit(1)
                                                   : device_bit(r < 32 ? 0 : 1);
        ASSERT_EQ(g.valid, want) << "step " << step << " row " << r;
      }
    }
  }
  dir.compact();
  EXPECT_EQ(dir.regions().size(), 3u);
}

// The directory's algorithm without its filters (per-region spans, per-block
// summaries): every scan visits every region, as the first version did. The
// filters must change nothing, not even the order of the regions (it sets the
// order of the copies a read-in plans).
class PlainDirectory {
 public:
  explicit PlainDirectory(const Box& whole) { regions_.push_back({whole, kHostBit}); }
  const std::vector<Directory::Region>& regions() const { return regions_; }
  std::vector<Directory::Region> query(const Box& box) const {
    std::vector<Directory::Region> out;
    for (const auto& r : regions_) {
      if (overlaps(r.box, box)) out.push_back({*intersection(r.box, box), r.valid});
    }
    return out;
  }
  bool all_valid(const Box& box, HolderMask bits) const {
    for (const auto& r : regions_) {
      if ((r.valid & bits) != bits && overlaps(r.box, box)) return false;
    }
    return true;
  }
  // The same lazy merging: the regions changed since the last merge, each once;
  // a merge when more than 8 + a quarter of the last merge's regions changed.
  template <typename F>
  void update(const Box& box, F f) {
    if (box.empty()) return;
    const size_t n = regions_.size();
    for (size_t i = 0; i < n; ++i) {
      if (!overlaps(regions_[i].box, box)) continue;
      const HolderMask old = regions_[i].valid, now = f(old);
      if (now == old) continue;
      mark(i);
      const Box region = regions_[i].box, inside = *intersection(region, box);
      regions_[i] = {inside, now};
      if (inside == region) continue;
      BoxSet rest = *subtract(region, box);
      for (size_t k = 0; k < rest.size(); ++k) {
        regions_.push_back({rest[k], old});
        mark(regions_.size() - 1);
      }
    }
    if (work_.size() > merged_size_ / 4 + 8) merge();
  }
  void compact() {
    if (!work_.empty()) merge();
  }

 private:
  void mark(size_t i) {
    for (size_t w : work_) {
      if (w == i) return;
    }
    work_.push_back(i);
  }
  void merge() {
    std::vector<size_t>& work = work_;
    // Merge with the first region (in order) of equal holders whose union with
    // it is a box, until none is left.
    std::vector<char> dead(regions_.size(), 0);
    while (!work.empty()) {
      const size_t i = work.back();
      work.pop_back();
      if (dead[i]) continue;
      for (size_t j = 0; j < regions_.size(); ++j) {
        if (j == i || dead[j] || regions_[j].valid != regions_[i].valid) continue;
        const Box h = *convex_union(regions_[i].box, regions_[j].box);
        if (h.volume() != regions_[i].box.volume() + regions_[j].box.volume()) continue;
        regions_[i].box = h;
        dead[j] = 1;
        work.push_back(i);
        break;
      }
    }
    size_t out = 0;
    for (size_t k = 0; k < regions_.size(); ++k) {
      if (!dead[k]) regions_[out++] = regions_[k];
    }
    regions_.resize(out);
    merged_size_ = out;
  }

  std::vector<Directory::Region> regions_;
  std::vector<size_t> work_;
  size_t merged_size_ = 1;
};

bool same(const std::vector<Directory::Region>& a, const std::vector<Directory::Region>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!(a[i].box == b[i].box) || a[i].valid != b[i].valid) return false;
  }
  return true;
}

// Many regions (dozens of blocks): row strips written by their owners and read by
// others, as LU and Floyd-Warshall do, mixed with random boxes.
TEST(Directory, SameRegionsInTheSameOrderAsWithoutFilters) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    std::mt19937 rng(seed);
    const std::vector<int64_t> ext = {96, 40};
    const Box whole = *Box::from_extents(ext);
    Directory dir(whole);
    PlainDirectory plain(whole);
    for (int s = 0; s < 400; ++s) {
      Box b = random_box(rng, ext);
      if (s % 3 != 0) {  // a row strip [r, r + h) x [c, 40)
        const int64_t r = std::uniform_int_distribution<int64_t>(0, 95)(rng);
        const int64_t h = std::uniform_int_distribution<int64_t>(1, 4)(rng);
        const int64_t c = std::uniform_int_distribution<int64_t>(0, 39)(rng);
        b = *Box::create({r, c}, {std::min<int64_t>(r + h, 96), 40});
      }
      const HolderMask bits = device_bit(std::uniform_int_distribution<int>(0, 3)(rng));
      const int op = std::uniform_int_distribution<int>(0, 2)(rng);
      if (op == 0) {
        dir.set(b, bits);
        plain.update(b, [&](HolderMask) { return bits; });
      } else if (op == 1) {
        dir.add(b, bits);
        plain.update(b, [&](HolderMask m) { return m | bits; });
      } else {
        dir.add(b, kHostBit);
        plain.update(b, [&](HolderMask m) { return m | kHostBit; });
        dir.remove(b, bits);
        plain.update(b, [&](HolderMask m) { return m & ~bits; });
      }
      if (s % 37 == 36) {
        dir.compact();
        plain.compact();
      }
      const std::string when = "seed " + std::to_string(seed) + " step " + std::to_string(s);
      ASSERT_TRUE(same(dir.regions(), plain.regions())) << when << ": " << dir.regions().size()
                                                        << " vs " << plain.regions().size();
      const Box q = random_box(rng, ext);
      ASSERT_TRUE(same(dir.query(q), plain.query(q))) << when << " query " << q;
      std::vector<Directory::Region> seen;
      dir.for_each(q, [&](const Directory::Region& r) { seen.push_back(r); });
      ASSERT_TRUE(same(seen, plain.query(q))) << when << " for_each " << q;
      for (int d = 0; d < 4; ++d) {
        ASSERT_EQ(dir.all_valid(q, device_bit(d)), plain.all_valid(q, device_bit(d))) << when;
      }
      ASSERT_EQ(dir.all_valid(q, kHostBit), plain.all_valid(q, kHostBit)) << when;
    }
  }
}

}  // namespace
}  // namespace bbmm::detail
