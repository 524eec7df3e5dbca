#pragma once
// Flow-out pass (ARCHITECTURE.md section 5, pass 5, after the required and write boxes of
// boxes.cpp): the elements a tile writes whose values an instance outside the tile reads
// later (value-based RAW, with asserted-parallel loops' iterations unordered), as boxes or
// row enumerations inside the tile's write set (ArrayBoxes::flow_out in boxes.h).

#include "poly/boxes.h"
#include "poly/partition.h"

namespace bbmm::compiler {

// The flow-out of array "ab.array" for a tile of phase "p" (tiles of "plan"; "tile_context"
// is the parameter set a tile assumes): sets ab.flow_out_set, ab.flow_out, ab.flow_out_rows
// and ab.flow_out_note. ab's write set and write strategy must be computed already.
// Throws isl::exception on isl failure.
void compute_flow_out(const Scop& scop, const TilePlan& plan, int p, const isl::set& tile_context,
                      ArrayBoxes& ab);

// The exact set of elements of array "array" that a tile of phase "p" writes and that an
// instance outside the tile reads: a reader in the same partition whose partitioned
// iterators are outside the tile, or any reader in another phase with another partition.
// Readers in the same single-tile phase (no partition dims) run on the same device.
// Parameters: scop + serial + tile parameters.
isl::set flow_out_set(const Scop& scop, const TilePlan& plan, int p, int array);

}  // namespace bbmm::compiler
