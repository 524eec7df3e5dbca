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
  // Takes the next box of one list (in order of lo(0)): pairs it with the
  // other list's boxes still open at its start, then opens it. `emit(mine,
  // theirs)` reports the pair in f's (a, b) order.
  auto advance = [&](std::span<const Box> mine, const std::vector<uint32_t>& order, size_t& at,
                     std::vector<uint32_t>& mine_active, std::span<const Box> theirs,
                     std::vector<uint32_t>& theirs_active, auto emit) {
    const uint32_t k = order[at++];
    if (mine[k].empty()) return;
    retire(theirs, theirs_active, mine[k].lo(0));
    for (uint32_t o : theirs_active) {
      if (overlaps(mine[k], theirs[o])) emit(k, o);
    }
    mine_active.push_back(k);
  };
  size_t ia = 0, ib = 0;
  while (ia < s.order_a.size() || ib < s.order_b.size()) {
    const bool take_a = ib == s.order_b.size() ||
                        (ia < s.order_a.size() &&
                         a[s.order_a[ia]].lo(0) <= b[s.order_b[ib]].lo(0));
    if (take_a) {
      advance(a, s.order_a, ia, s.active_a, b, s.active_b,
              [&](uint32_t i, uint32_t j) { f(i, j); });
    } else {
      advance(b, s.order_b, ib, s.active_b, a, s.active_a,
              [&](uint32_t j, uint32_t i) { f(i, j); });
    }
  }
}

}  // namespace bbmm::detail
