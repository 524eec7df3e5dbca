// Fewer, larger copies: the rectangular copies of one batch that continue one
// another on both sides are merged into one.
//
// A copy engine pays a fixed cost per operation (~2.7 us of a 1 MiB
// host-to-device copy's ~21 us on an H200, docs/performance.md, issue 10), so
// a batch of 16 boxes of 1 MiB reaches 0.88 of the link as 16 copies and 0.98
// as one. Boxes that continue one another arise where one tile's box, or
// several tiles' boxes, is cut into pieces that the copy planner issues
// together: the row blocks of consecutive tiles written back at once, a box
// split by what is already valid where it goes.
//
// Two copies merge when both their sources and both their destinations are
// the same memory (device, base) with the same pitches, and the second starts,
// on both sides, where the first ends: right after its rows (same height and
// depth: one wider copy), below its last row (same width, one plane: one
// taller copy), or behind its last plane (same width and height: one deeper
// copy). Since the copies of a batch do not overlap (Backend::copy_batch), the
// merged copy moves exactly the same bytes.
//
// Thread-safety: reentrant.
#pragma once

#include <vector>

#include "core/backend.h"

namespace bbmm {

// Rewrites `ops` (one batch: no op writes what another reads or writes) as
// fewer copies of the same bytes where some continue one another; the order
// of the ops is not kept. A planar result (one plane, or planes that are
// consecutive rows on both sides) is a 2-D copy, its slice pitches the row
// pitch times the height.
void merge_adjacent_copies(std::vector<CopyOp>* ops);

}  // namespace bbmm
