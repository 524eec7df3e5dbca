// The overlapping pairs between two lists of boxes, found by a sweep along
// dimension 0 instead of comparing every pair: a tile that writes its rows one
// segment at a time (a triangular write: PolyBench's cholesky requires one
// box per row, hundreds per tile) pairs hundreds of pieces with hundreds of
// boxes, and the pairwise loops of acquire and launch cost milliseconds per
// tile. Short lists (at most 64 pairs) are compared pairwise.
//
// Thread-safety: none (the caller owns the scratch).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "bbmm/box.h"
#include "bbmm/box_set.h"

namespace bbmm::detail {

// Index lists kept between calls so that a sweep allocates nothing once grown.
struct BoxPairScratch {
  std::vector<uint32_t> order_a, order_b, active_a, active_b;
};

// Copies the boxes of `set` into `out` (replacing its contents, keeping capacity).
inline void boxes_of(const BoxSet& set, std::vector<Box>& out) {
  out.clear();
  for (size_t i = 0; i < set.size(); ++i) out.push_back(set[i]);
}

// Calls f(i, j) once for every pair with overlaps(a[i], b[j]), in no particular order.
template <typename F>
void for_each_overlapping_pair(std::span<const Box> a, std::span<const Box> b,
                               BoxPairScratch& s, F f) {
  if (a.empty() || b.empty()) return;
  if (a.size() * b.size() <= 64 || a[0].rank() == 0) {
    for (size_t i = 0; i < a.size(); ++i) {
      for (size_t j = 0; j < b.size(); ++j) {
        if (overlaps(a[i], b[j])) f(i, j);
      }
    }
    return;
  }
  auto sorted = [](std::span<const Box> boxes, std::vector<uint32_t>& order) {
    order.resize(boxes.size());
    for (size_t i = 0; i < boxes.size(); ++i) order[i] = static_cast<uint32_t>(i);
    std::sort(order.begin(), order.end(),
              [&](uint32_t x, uint32_t y) { return boxes[x].lo(0) < boxes[y].lo(0); });
  };
  sorted(a, s.order_a);
  sorted(b, s.order_b);
  s.active_a.clear();
  s.active_b.clear();
  // Drops from `active` the boxes that end (in dimension 0) at or before `at`.
  auto retire = [](std::span<const Box> boxes, std::vector<uint32_t>& active, int64_t at) {
    size_t kept = 0;
    for (uint32_t k : active) {
      if (boxes[k].hi(0) > at) active[kept++] = k;
    }
    active.resize(kept);
  };
  size_t ia = 0, ib = 0;
  while (ia < s.order_a.size() || ib < s.order_b.size()) {
    const bool take_a = ib == s.order_b.size() ||
                        (ia < s.order_a.size() &&
                         a[s.order_a[ia]].lo(0) <= b[s.order_b[ib]].lo(0));
    if (take_a) {
      const uint32_t i = s.order_a[ia++];
      if (a[i].empty()) continue;
      retire(b, s.active_b, a[i].lo(0));
      for (uint32_t j : s.active_b) {
        if (overlaps(a[i], b[j])) f(i, j);
      }
      s.active_a.push_back(i);
    } else {
      const uint32_t j = s.order_b[ib++];
      if (b[j].empty()) continue;
      retire(a, s.active_a, b[j].lo(0));
      for (uint32_t i : s.active_a) {
        if (overlaps(a[i], b[j])) f(i, j);
      }
      s.active_b.push_back(j);
    }
  }
}

}  // namespace bbmm::detail
