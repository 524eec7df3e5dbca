// The coherency directory of one array: which copies (host, devices) of each
// region hold valid data.
//
// Region-based, never per element: the array is covered by disjoint boxes,
// each with the set of holders whose copy is valid. Its size grows with the
// number of distinct regions, not with the array. Neighbouring regions with
// the same holders are merged, lazily: once more regions changed since the
// last merge than merge_slack() allows, or on compact(). A tile that
// writes its rows and then pushes its boundary row to a neighbour flips a few
// regions between the same holder sets every step; merging them eagerly split
// the same region again at the next update (a split, a merge and a compaction
// per boundary per step on the tile path), lazily the regions stay and only
// their holders change.
//
// Thread-safety: none; the runtime core serialises access.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "bbmm/box.h"

namespace bbmm::detail {

// Bit 0: the host; bit d+1: device d.
using HolderMask = uint64_t;
inline constexpr HolderMask kHostBit = 1;
inline HolderMask device_bit(int device) { return HolderMask{1} << (device + 1); }
inline constexpr int kMaxDevices = 63;

class Directory {
 public:
  struct Region {
    Box box;
    HolderMask valid;
  };

  // A directory of `whole` (the array's extent) valid on the host only.
  explicit Directory(const Box& whole);

  // The parts of `box` with their holders, clipped to `box`; they cover it.
  std::vector<Region> query(const Box& box) const;
  // Calls `f(const Region&)` with each part of `box` (clipped), as query()
  // returns them, without allocating; `f` must not update the directory.
  template <typename F>
  void for_each(const Box& box, F f) const {
    for (size_t b = 0; b < blocks_.size(); ++b) {
      if (!blocks_[b].meets(box)) continue;
      for (size_t i = b * kBlock, end = block_end(b); i < end; ++i) {
        if (!spans_[i].meets(box)) continue;
        const Region& r = regions_[i];
        if (overlaps(r.box, box)) f(Region{*intersection(r.box, box), r.valid});
      }
    }
  }
  // True when every point of `box` is valid in every holder of `bits`.
  bool all_valid(const Box& box, HolderMask bits) const {
    for (size_t b = 0; b < blocks_.size(); ++b) {
      if ((blocks_[b].all & bits) == bits || !blocks_[b].meets(box)) continue;
      for (size_t i = b * kBlock, end = block_end(b); i < end; ++i) {
        if ((spans_[i].valid & bits) != bits && spans_[i].meets(box) &&
            overlaps(regions_[i].box, box)) {
          return false;
        }
      }
    }
    return true;
  }
  // valid := `valid` on every point of `box`.
  void set(const Box& box, HolderMask valid);
  // valid |= `bits` on `box`.
  void add(const Box& box, HolderMask bits);
  // valid &= ~`bits` on `box`. The caller guarantees no region loses its last
  // holder (write data back first).
  void remove(const Box& box, HolderMask bits);
  // Merges now every pair of regions with equal holders whose union is a box,
  // until none is left (the canonical form the updates reach lazily).
  void compact();

  // The regions, disjoint, covering the array.
  const std::vector<Region>& regions() const { return regions_; }

 private:
  // How many regions may change (holders changed, or split off) after a merge
  // before an update merges again: 8, and a quarter of the regions that merge
  // left. Bounds both the regions a merge has not caught up with and the
  // regions added since.
  size_t merge_slack() const { return merged_size_ / 4 + 8; }
  // Records that region `i` changed since the last merge (once).
  void mark_changed(size_t i) {
    if (is_changed_[i]) return;
    is_changed_[i] = 1;
    changed_.push_back(i);
  }
  template <typename F>
  void update(const Box& box, F f);
  // Merges regions with equal holders whose union is a box; `work` holds the
  // indices of the regions the updates since the last merge changed or added
  // (consumed).
  void merge(std::vector<size_t>& work);

  // What the scans test first, in a compact array beside regions_ (a Box is 136
  // bytes; LU's directories hold thousands of row strips): each region's extent
  // in dimension 0 and its holders.
  struct Span {
    int64_t lo = 0, hi = 1;  // dimension 0 ([0, 1) for rank 0)
    HolderMask valid = 0;
    // Whether the region can overlap `b` (a filter: overlaps() decides).
    bool meets(const Box& b) const { return b.rank() == 0 || (lo < b.hi(0) && b.lo(0) < hi); }
  };
  static Span span_of(const Region& r) {
    return r.box.rank() > 0 ? Span{r.box.lo(0), r.box.hi(0), r.valid} : Span{0, 1, r.valid};
  }
  // Writes region `i` (i == size: appends), keeping spans_ and blocks_ in step.
  void put(size_t i, Region r);
  // Sets region `i`'s holders, keeping spans_ and blocks_ in step.
  void set_valid(size_t i, HolderMask valid);

  // The scans skip whole blocks of kBlock consecutive regions first: the hull of
  // their extents in dimension 0 and the holders common to all of them (LU's
  // directory keeps the row strips of its early steps in order, so a block spans
  // a few rows). Exact: recomputed from spans_ whenever a region changes.
  static constexpr size_t kBlock = 16;
  struct Block {
    int64_t lo = 0, hi = 0;  // hull of the regions' spans in dimension 0
    HolderMask all = 0;      // holders of every region of the block
    HolderMask any = 0;      // holders of some region of the block
    bool meets(const Box& b) const { return b.rank() == 0 || (lo < b.hi(0) && b.lo(0) < hi); }
  };
  size_t block_end(size_t b) const { return std::min(regions_.size(), (b + 1) * kBlock); }
  // Recomputes blocks [first, last) from spans_ (blocks_ follows the number of
  // regions).
  void rebuild_blocks(size_t first, size_t last);

  std::vector<Region> regions_;
  std::vector<Span> spans_;  // parallel to regions_
  std::vector<Block> blocks_;  // per kBlock regions
  // The indices of the regions changed or added since the last merge, each once
  // (stable: only a merge moves regions), a flag per region (parallel to
  // regions_), and how many regions the last merge left.
  std::vector<size_t> changed_;
  std::vector<char> is_changed_;
  size_t merged_size_ = 1;
  std::vector<char> dead_;  // scratch of merge()
};

}  // namespace bbmm::detail
