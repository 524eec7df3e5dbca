#pragma once
// Flow-out (ARCHITECTURE.md section 5, pass 5): the elements a tile writes whose values an
// instance outside the tile reads later (value-based RAW, with asserted-parallel loops'
// iterations unordered).

#include <vector>

#include "poly/box_util.h"
#include "poly/boxes.h"

namespace bbmm::compiler {

// Per phase, the partition it belongs to and its tile frame.
struct TilePlan {
  std::vector<int> partition_of_phase;  // index into the partitions
  std::vector<TileFrame> frames;        // one per phase
  std::vector<bool> partitioned;        // the partition has dims
};

// The exact set of elements of array "array" that a tile of phase "p" writes and that an
// instance outside the tile reads: a reader in the same partition whose partitioned
// iterators are outside the tile, or any reader in another phase with another partition.
// Readers in the same single-tile phase (no partition dims) run on the same device.
// Parameters: scop + serial + tile parameters.
isl::set flow_out_set(const Scop& scop, const TilePlan& plan, int p, int array);

}  // namespace bbmm::compiler
