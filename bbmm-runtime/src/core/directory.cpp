#include "core/directory.h"

#include <algorithm>
#include <optional>

#include "bbmm/box_set.h"

namespace bbmm::detail {

Directory::Directory(const Box& whole) {
  if (!whole.empty()) put(0, {whole, kHostBit});
}

void Directory::put(size_t i, Region r) {
  const Span sp = span_of(r);
  if (i == regions_.size()) {
    regions_.push_back(std::move(r));
    spans_.push_back(sp);
  } else {
    regions_[i] = std::move(r);
    spans_[i] = sp;
  }
}

std::vector<Directory::Region> Directory::query(const Box& box) const {
  std::vector<Region> out;
  for (size_t i = 0; i < regions_.size(); ++i) {
    const Region& r = regions_[i];
    if (!spans_[i].meets(box) || !overlaps(r.box, box)) continue;
    out.push_back({*intersection(r.box, box), r.valid});
  }
  return out;
}

template <typename F>
void Directory::update(const Box& box, F f) {
  if (box.empty()) return;
  std::vector<size_t> changed;
  const size_t n = regions_.size();
  for (size_t i = 0; i < n; ++i) {
    if (!spans_[i].meets(box) || !overlaps(regions_[i].box, box)) continue;
    const HolderMask old = regions_[i].valid;
    const HolderMask now = f(old);
    if (now == old) continue;
    changed.push_back(i);
    const Box region = regions_[i].box;
    const Box inside = *intersection(region, box);
    if (inside == region) {
      regions_[i].valid = now;
      spans_[i].valid = now;
      continue;
    }
    // Split: the part inside `box` takes the new holders, the rest keeps the
    // old ones.
    put(i, {inside, now});
    BoxSet rest = *subtract(region, box);
    for (size_t k = 0; k < rest.size(); ++k) {
      changed.push_back(regions_.size());
      put(regions_.size(), {rest[k], old});
    }
  }
  if (!changed.empty()) merge(std::move(changed));
}

namespace {

// The union of two disjoint nonempty boxes `a` and `b` of equal rank when it is a
// box (they agree on every dimension but one, where they touch), else nullopt.
// Equivalent to "the hull's volume is the sum of theirs", without building the hull.
std::optional<Box> box_union(const Box& a, const Box& b) {
  int differ = -1;
  for (int d = 0; d < a.rank(); ++d) {
    if (a.lo(d) == b.lo(d) && a.hi(d) == b.hi(d)) continue;
    if (differ >= 0) return std::nullopt;
    differ = d;
  }
  if (differ < 0 || (a.hi(differ) != b.lo(differ) && b.hi(differ) != a.lo(differ))) {
    return std::nullopt;
  }
  int64_t lo[Box::kMaxRank], hi[Box::kMaxRank];
  for (int d = 0; d < a.rank(); ++d) {
    lo[d] = std::min(a.lo(d), b.lo(d));
    hi[d] = std::max(a.hi(d), b.hi(d));
  }
  return Box::make_unchecked(a.rank(), lo, hi);
}

}  // namespace

void Directory::merge(std::vector<size_t> work) {
  // Merge two regions with equal holders whose union is a box, until none is
  // left. Before the update no such pair existed, so every pair to merge has
  // a changed region in it: only those (and the merged results) are tried,
  // which keeps an update at O(changed x regions) instead of rescanning all
  // pairs after each merge (LU's fragmented directory spent most of its
  // runtime there).
  std::vector<char> dead(regions_.size(), 0);
  while (!work.empty()) {
    const size_t i = work.back();
    work.pop_back();
    if (dead[i]) continue;
    for (size_t j = 0; j < regions_.size(); ++j) {
      if (j == i || dead[j] || spans_[j].valid != spans_[i].valid) continue;
      // Mergeable regions touch or coincide in dimension 0.
      if (spans_[j].hi < spans_[i].lo || spans_[i].hi < spans_[j].lo) continue;
      std::optional<Box> h = box_union(regions_[i].box, regions_[j].box);
      if (!h) continue;
      put(i, {*h, regions_[i].valid});
      dead[j] = 1;
      work.push_back(i);  // the larger region may now merge further
      break;
    }
  }
  size_t out = 0;
  for (size_t k = 0; k < regions_.size(); ++k) {
    if (dead[k]) continue;
    regions_[out] = regions_[k];
    spans_[out++] = spans_[k];
  }
  regions_.resize(out);
  spans_.resize(out);
}

void Directory::set(const Box& box, HolderMask valid) {
  update(box, [valid](HolderMask) { return valid; });
}

void Directory::add(const Box& box, HolderMask bits) {
  update(box, [bits](HolderMask m) { return m | bits; });
}

void Directory::remove(const Box& box, HolderMask bits) {
  update(box, [bits](HolderMask m) { return m & ~bits; });
}

}  // namespace bbmm::detail
