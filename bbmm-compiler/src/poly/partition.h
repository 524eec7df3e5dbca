#pragma once
// Partition pass (ARCHITECTURE.md section 5, pass 4): which loops of each phase are split into
// tiles [lo, hi), and which phases share a partition (owner computes).

#include <string>
#include <vector>

#include "poly/box_util.h"
#include "poly/boxes.h"

namespace bbmm::compiler {

// The C names of the serial loops of "phase" (the isl parameter names of its tiles).
std::vector<std::string> serial_names(const Scop& scop, const Phase& phase);

// The loops of phase "p" to split: its parallel loop, and with "two_d" the parallel loop
// directly inside it when every statement of the phase is in it. Empty when the phase has
// no parallel loop. "note" says why a 2-D request fell back to 1-D.
std::vector<int> partition_loops(const Scop& scop, int p, bool two_d, std::string& note);

// The tile frame of phase "p" when "loops" are split with the parameter names of "part".
TileFrame make_frame(const Scop& scop, int p, const std::vector<int>& loops);

// Groups the phases into partitions: phases with the same serial loops whose split loops'
// ranges differ by constants share one; a phase with no split loops gets its own.
// "loops[p]" are phase p's split loops; "notes[p]" goes into the partition's reason.
std::vector<Partition> group_partitions(const Scop& scop, const std::vector<std::vector<int>>& loops,
                                        const std::vector<std::string>& notes);

// The parameter set a tile of "part" assumes: the partition range is nonempty and
// range_lo <= lo < hi <= range_hi per dimension (universe for a partition without dims).
isl::set tile_context(const Scop& scop, const Partition& part);

// The range of loop "loop" over the instances of phase "p" (parameters: scop + serial).
isl::set loop_range(const Scop& scop, int p, int loop);

}  // namespace bbmm::compiler
