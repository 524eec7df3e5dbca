// Widening a running hull of boxes in place, without the status and copy of
// convex_union (bbmm/box.h): the instance lists' block hulls and an
// instance's used part grow this way on the tile path.
//
// Thread-safety: a pure function.
#pragma once

#include <algorithm>
#include <cstdint>

#include "bbmm/box.h"

namespace bbmm::detail {

// Widens hull `h` to hold `box`: an empty `box` changes nothing, a rank-0 `h`
// (nothing yet) becomes `box`. Requires equal ranks otherwise.
inline void widen_hull(Box& h, const Box& box) {
  if (box.empty()) return;
  if (h.rank() == 0) {
    h = box;
    return;
  }
  int64_t lo[Box::kMaxRank], hi[Box::kMaxRank];
  for (int d = 0; d < box.rank(); ++d) {
    lo[d] = std::min(h.lo(d), box.lo(d));
    hi[d] = std::max(h.hi(d), box.hi(d));
  }
  h = Box::make_unchecked(box.rank(), lo, hi);
}

}  // namespace bbmm::detail
