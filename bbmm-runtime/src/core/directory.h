// The coherency directory of one array: which copies (host, devices) of each
// region hold valid data.
//
// Region-based, never per element: the array is covered by disjoint boxes,
// each with the set of holders whose copy is valid. Its size grows with the
// number of distinct regions, not with the array. Neighbouring regions with
// the same holders are merged after every update (see merge()).
//
// Thread-safety: none; the runtime core serialises access.
#pragma once

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
    for (const Region& r : regions_) {
      if (overlaps(r.box, box)) f(Region{*intersection(r.box, box), r.valid});
    }
  }
  // True when every point of `box` is valid in every holder of `bits`.
  bool all_valid(const Box& box, HolderMask bits) const {
    for (const Region& r : regions_) {
      if ((r.valid & bits) != bits && overlaps(r.box, box)) return false;
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

  const std::vector<Region>& regions() const { return regions_; }

 private:
  template <typename F>
  void update(const Box& box, F f);
  // Merges regions with equal holders whose union is a box; `work` holds the
  // indices of the regions the update changed or added.
  void merge(std::vector<size_t> work);

  std::vector<Region> regions_;
};

}  // namespace bbmm::detail
