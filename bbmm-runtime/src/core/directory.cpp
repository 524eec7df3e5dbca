#include "core/directory.h"

#include <algorithm>
#include <optional>

namespace bbmm::detail {

Directory::Directory(const Box& whole) {
  if (!whole.empty()) put(0, {whole, kHostBit});
}

void Directory::put(size_t i, Region r) {
  const Span sp = span_of(r);
  const size_t b = i / kBlock;
  if (i == regions_.size()) {
    // Appended: the block's summary only takes the new region in.
    regions_.push_back(std::move(r));
    spans_.push_back(sp);
    is_changed_.push_back(0);
    if (b == blocks_.size()) {
      blocks_.push_back(Block{sp.lo, sp.hi, sp.valid, sp.valid});
    } else {
      Block& k = blocks_[b];
      k.lo = std::min(k.lo, sp.lo);
      k.hi = std::max(k.hi, sp.hi);
      k.all &= sp.valid;
      k.any |= sp.valid;
    }
    return;
  }
  const Span old = spans_[i];
  regions_[i] = std::move(r);
  spans_[i] = sp;
  if (sp.valid == old.valid && sp.lo <= old.lo && old.hi <= sp.hi) {
    // Grown with the same holders (merge()): the block's hull only widens.
    Block& k = blocks_[b];
    k.lo = std::min(k.lo, sp.lo);
    k.hi = std::max(k.hi, sp.hi);
    return;
  }
  rebuild_blocks(b, b + 1);
}

void Directory::set_valid(size_t i, HolderMask valid) {
  regions_[i].valid = valid;
  spans_[i].valid = valid;
  rebuild_blocks(i / kBlock, i / kBlock + 1);
}

void Directory::rebuild_blocks(size_t first, size_t last) {
  const size_t n = (regions_.size() + kBlock - 1) / kBlock;
  blocks_.resize(n);
  last = std::min(last, n);
  for (size_t b = first; b < last; ++b) {
    Block k;
    k.all = ~HolderMask{0};
    k.lo = spans_[b * kBlock].lo;
    k.hi = spans_[b * kBlock].hi;
    for (size_t i = b * kBlock, end = block_end(b); i < end; ++i) {
      k.lo = std::min(k.lo, spans_[i].lo);
      k.hi = std::max(k.hi, spans_[i].hi);
      k.all &= spans_[i].valid;
      k.any |= spans_[i].valid;
    }
    blocks_[b] = k;
  }
}

std::vector<Directory::Region> Directory::query(const Box& box) const {
  std::vector<Region> out;
  for_each(box, [&](const Region& r) { out.push_back(r); });
  return out;
}

template <typename F>
void Directory::update(const Box& box, F f) {
  if (box.empty()) return;
  // The regions there before the update; the pieces split off are appended
  // (a block's regions change only while the loop is in it, so a block that
  // missed `box` at the start still does).
  const size_t n = regions_.size();
  for (size_t b = 0; b * kBlock < n; ++b) {
    if (!blocks_[b].meets(box)) continue;
    for (size_t i = b * kBlock, end = std::min(n, (b + 1) * kBlock); i < end; ++i) {
      if (!spans_[i].meets(box) || !overlaps(regions_[i].box, box)) continue;
      const HolderMask old = regions_[i].valid;
      const HolderMask now = f(old);
      if (now == old) continue;
      mark_changed(i);
      const Box region = regions_[i].box;
      const Box inside = *intersection(region, box);
      if (inside == region) {
        set_valid(i, now);
        continue;
      }
      // Split: the part inside `box` takes the new holders, the rest keeps the
      // old ones.
      put(i, {inside, now});
      for_each_difference_piece(region, box, [&](const Box& piece) {
        put(regions_.size(), {piece, old});
        mark_changed(regions_.size() - 1);
      });
    }
  }
  if (changed_.size() > merge_slack()) merge(changed_);
}

void Directory::compact() {
  if (!changed_.empty()) merge(changed_);
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

void Directory::merge(std::vector<size_t>& work) {
  // Merge two regions with equal holders whose union is a box, until none is
  // left. After the last merge no such pair existed, so every pair to merge
  // has a region changed since in it: only those (and the merged results) are
  // tried, which keeps a merge at O(changed x regions) instead of rescanning
  // all pairs after each merge (LU's fragmented directory spent most of its
  // runtime there).
  std::vector<char>& dead = dead_;
  dead.assign(regions_.size(), 0);
  size_t first_dead = regions_.size();
  while (!work.empty()) {
    const size_t i = work.back();
    work.pop_back();
    if (dead[i]) continue;
    const Span si = spans_[i];
    size_t partner = regions_.size();
    // Mergeable regions have equal holders and touch or coincide in dimension 0.
    for (size_t b = 0; b < blocks_.size() && partner == regions_.size(); ++b) {
      const Block& k = blocks_[b];
      if ((k.any & si.valid) != si.valid || (k.all & ~si.valid) != 0 || k.hi < si.lo ||
          si.hi < k.lo) {
        continue;
      }
      for (size_t j = b * kBlock, end = block_end(b); j < end; ++j) {
        if (j == i || dead[j] || spans_[j].valid != si.valid) continue;
        if (spans_[j].hi < si.lo || si.hi < spans_[j].lo) continue;
        if (box_union(regions_[i].box, regions_[j].box)) {
          partner = j;
          break;
        }
      }
    }
    if (partner == regions_.size()) continue;
    put(i, {*box_union(regions_[i].box, regions_[partner].box), si.valid});
    dead[partner] = 1;
    first_dead = std::min(first_dead, partner);
    work.push_back(i);  // the larger region may now merge further
  }
  // Close the gaps left by the merged-away regions (none: nothing moves).
  size_t out = first_dead;
  for (size_t k = first_dead; k < regions_.size(); ++k) {
    if (dead[k]) continue;
    regions_[out] = regions_[k];
    spans_[out++] = spans_[k];
  }
  regions_.resize(out);
  spans_.resize(out);
  is_changed_.assign(out, 0);  // `work` (changed_) is consumed
  rebuild_blocks(first_dead / kBlock, blocks_.size());
  merged_size_ = regions_.size();
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
