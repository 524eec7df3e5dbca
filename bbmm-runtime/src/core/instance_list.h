// The instances of one array on one device, in allocation order, with a
// filter that keeps overlap and containment queries from touching every
// instance.
//
// A device keeps the instances it no longer uses for reuse, so their number
// grows with the run: LU and Floyd-Warshall leave one instance of row k per
// step on every device that read it (1500 on one device for LU n = 1000), and
// every acquire asked each of them whether it overlaps or holds the tile's
// boxes (a pointer chase to a 136-byte box each). Here the instances are
// grouped in blocks of kBlock consecutive ones, each with the hull of its
// boxes; a query skips the blocks whose hull it misses, then tests a compact
// copy of each instance's extent in dimension 0 before its box. Instances
// allocated one after another tend to lie close together (the tiles of one
// loop), so the hulls stay small; at worst a query scans every block, as the
// plain list did. Answers come in allocation order, exactly as a scan of the
// plain list gives them (callers depend on that order: it sets the order of
// pieces, holds and copies).
//
// Thread-safety: none; the runtime core serialises access.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "bbmm/box.h"
#include "core/instance.h"

namespace bbmm::detail {

class InstanceList {
 public:
  static constexpr size_t kBlock = 16;

  using const_iterator = std::vector<Instance*>::const_iterator;
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  Instance* back() const { return items_.back(); }
  // Changes whenever an instance joins or leaves the list, to a value no list
  // of the process had before (so that a list made later at the same address
  // never repeats one): while it stays the same, the list holds the same
  // instances, with the same boxes and buffers (TilePlans relies on it).
  uint64_t generation() const { return generation_; }

  // Appends `inst` (its box must not change while it is in the list).
  void push_back(Instance* inst);
  // Removes `inst` (which must be in the list), keeping the others' order.
  void erase(Instance* inst);

  // Calls `f(Instance*)` for each instance whose box overlaps `box`, in list
  // order; `f` must not add or remove instances of this list.
  template <typename F>
  void for_each_overlapping(const Box& box, F f) const {
    if (box.rank() == 0) return;  // overlaps nothing
    const int64_t lo = box.lo(0), hi = box.hi(0);
    for (size_t b = 0; b < hulls_.size(); ++b) {
      if (!overlaps(hulls_[b], box)) continue;
      const size_t end = std::min(items_.size(), (b + 1) * kBlock);
      for (size_t i = b * kBlock; i < end; ++i) {
        if (spans_[i].lo < hi && lo < spans_[i].hi && overlaps(items_[i]->box, box)) f(items_[i]);
      }
    }
  }
  // The first instance (in list order) whose box holds `box`, or null.
  Instance* find_containing(const Box& box) const;

 private:
  // An instance's extent in dimension 0.
  struct Span {
    int64_t lo, hi;
  };
  static Span span_of(const Box& b) {
    return b.rank() > 0 ? Span{b.lo(0), b.hi(0)} : Span{0, 0};
  }
  // Recomputes the hulls of blocks first_block.. (after items moved).
  void rebuild_hulls(size_t first_block);

  std::vector<Instance*> items_;
  std::vector<Span> spans_;  // parallel to items_
  // Per block of kBlock items: the hull of their nonempty boxes (rank 0, which
  // meets nothing, when they are all empty).
  std::vector<Box> hulls_;
  uint64_t generation_ = 0;
};

}  // namespace bbmm::detail
