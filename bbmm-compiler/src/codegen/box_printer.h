#pragma once
// C text of the boxes of a tile (poly/boxes.h: TileBox, RowEnumeration) and of partition
// ranges (poly/partition.h: PartitionDim), as isl's C printer writes it (with its macros
// min, max and floord: the generated code renames them, rename_isl_macros in loop_ast.h).
// Each expression is printed assuming its object's context: the tile context, the box's
// guard for its bounds, the row for a row's segment. The names are those of poly/boxes.h
// (scop parameters, serial iterators, tile parameters bbmm_lo..., row iterators bbmm_r0...).
// Used by the host code (host_codegen.cpp) and by --emit=boxes (poly/boxes_print.cpp); the
// boxes oracle test evaluates exactly this text.

#include <string>
#include <vector>

#include "poly/boxes.h"
#include "poly/partition.h"

namespace bbmm::compiler {

// A box as C: elements lo[d] <= x_d < hi[d] wherever "guard" holds.
struct BoxText {
  std::vector<std::string> lo;  // inclusive, one per dimension
  std::vector<std::string> hi;  // exclusive
  std::string guard;            // "1" when the box is nonempty in its whole context
};

// A row enumeration as C: for each row (bbmm_r0, ...) of "rows", the columns
// [seg_lo, seg_hi) where seg_guard holds (these may use bbmm_r0.. too).
struct RowsText {
  BoxText rows;
  std::string seg_lo;     // inclusive
  std::string seg_hi;     // exclusive
  std::string seg_guard;  // "1" when every row of "rows" has a segment
};

// A partition range as C: [lo, hi), over the serial iterators and the scop parameters,
// valid where the range is nonempty.
struct RangeText {
  std::string lo;  // inclusive
  std::string hi;  // exclusive
};

// The C text of "box". Throws std::logic_error when isl cannot build an expression.
BoxText box_c_text(const TileBox& box);

// The C text of "rows". Throws std::logic_error when isl cannot build an expression.
RowsText rows_c_text(const RowEnumeration& rows);

// The C text of the range of "dim". Throws std::logic_error as above.
RangeText partition_range_c_text(const PartitionDim& dim);

}  // namespace bbmm::compiler
