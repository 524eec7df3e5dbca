#pragma once
// Partition pass (ARCHITECTURE.md section 5, pass 4): which loops of each phase are split into
// tiles [lo, hi), and which phases share a partition (owner computes); the tile of a phase
// (TileFrame) and its statement instances, on which the boxes and flow-out passes build.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "poly/model.h"

namespace bbmm::compiler {

// The tile of one phase: which statement dimensions are serial (equated to parameters
// named after the serial loops) and which are partitioned (bounded by lo/hi parameters).
struct TileFrame {
  std::vector<std::string> serial_names;  // one per serial loop of the phase (C names)
  // Per partitioned dimension (0, 1 or 2), the loops split: a statement's coordinate along
  // the dimension is the iterator of the innermost of them that encloses it (split_dim).
  // One loop; or, along dimension 1, one per loop nest where the split loop sits at
  // different depths (gemm's j directly under i in one nest and under k in the other), and
  // the outer split loop itself for the statements in none of those (correlation's
  // corr[i][i] = 1 beside its j loop: its tile is the column block holding i).
  std::vector<std::vector<int>> part_loops;
  std::vector<std::string> lo_params;  // parallel to part_loops
  std::vector<std::string> hi_params;
};

// The dimension of "st" (its position in st.loops) of the innermost of "loops" enclosing
// it; -1 when the statement lies in none of them.
int split_dim(const Statement& st, const std::vector<int>& loops);

// One dimension of a partition: one loop per phase of the partition, split into tiles.
struct PartitionDim {
  std::string lo_param;  // "bbmm_lo" (1-D), "bbmm_lo0"/"bbmm_lo1" (2-D)
  std::string hi_param;  // "bbmm_hi", ...
  // Per phase of the partition (same order): the loops split (TileFrame::part_loops).
  std::vector<std::vector<int>> loops;
  // The range to split, [range_min, range_max]: the hull of the loops' iterator ranges, over
  // the serial iterators and the scop parameters, defined where it is nonempty. Tiles
  // [lo, hi) must cover it; a tile outside a phase's own range is simply empty for that
  // phase.
  isl::pw_aff range_min;  // inclusive
  isl::pw_aff range_max;  // inclusive
};

// A partition shared by phases (owner computes: the tile [lo, hi) of every phase in it runs
// on the same device). dims is empty for a phase without a parallel loop: it runs as one
// tile on one device.
struct Partition {
  int id = 0;
  std::vector<int> phases;        // indices into Scop::phases, increasing
  std::vector<PartitionDim> dims;  // 0, 1 or 2
  std::string reason;             // why these phases share it / why 1-D although 2-D asked
  std::string one_loop_why;       // 2-D asked: why a phase splits one loop only (else empty)
  // 2-D chosen by --partition=auto (a tile of the 1-D split reads a whole array whatever
  // its width): the generated code starts from the 1-D split (one tile along dimension 1)
  // and splits dimension 1 only when a tile does not fit a device. With --partition=2d the
  // devices form a grid as square as possible.
  bool rows_first = false;
};

// Per phase, the partition it belongs to and its tile frame.
struct TilePlan {
  std::vector<int> partition_of_phase;  // index into the partitions
  std::vector<TileFrame> frames;        // one per phase
  std::vector<bool> partitioned;        // the partition has dims
};

// The C names of the serial loops of "phase" (the isl parameter names of its tiles).
std::vector<std::string> serial_names(const Scop& scop, const Phase& phase);

// The loops of phase "p" to split, per partition dimension: its parallel loop; with
// "two_d" also, per statement, the outermost parallel loop nested in it (gemm: j in both
// nests, under k in the second; a statement in none, the parallel loop itself), provided
// that some statement lies in such a loop and that every dependence of the phase joins
// instances with the same coordinates along both dimensions (within.h), so that the tiles
// of the grid are independent. Empty when the phase has no parallel loop. "note" says why a
// 2-D request fell back to 1-D.
std::vector<std::vector<int>> partition_loops(const Scop& scop, int p, bool two_d, std::string& note);

// --partition=auto for phase "p": the 2-D loops of partition_loops when the phase has no
// serial loop and some array of rank 2 or more is accessed whole by a tile of the 1-D split
// one iteration wide but not by a tile of the 2-D split one iteration wide along both
// (gemm's B: every row of C reads all of B; a block of C reads a block of columns of B; a
// vector read whole, gemver's v1, is no larger than a row and does not count), at the parameter
// values "params" (a value for every scop parameter: BoxOptions' report values); else the
// 1-D loops. "why" says which array made the split 2-D (empty when 1-D).
std::vector<std::vector<int>> auto_partition_loops(const Scop& scop, int p,
                                                   const std::map<std::string, int64_t>& params,
                                                   std::string& why);

// The tile frame of phase "p" when "loops" (per dimension) are split.
TileFrame make_frame(const Scop& scop, int p, const std::vector<std::vector<int>>& loops);

// Groups the phases into partitions: phases with the same serial loops whose split loops'
// ranges differ by constants share one; a phase with no split loops gets its own.
// "loops[p]" are phase p's split loops (per dimension); "notes[p]" goes into the
// partition's reason; "rows_first[p]": Partition::rows_first.
std::vector<Partition> group_partitions(const Scop& scop,
                                        const std::vector<std::vector<std::vector<int>>>& loops,
                                        const std::vector<std::string>& notes,
                                        const std::vector<bool>& rows_first);

// The instances of "stmt" in the tile "frame": its domain with the serial dimensions equal
// to the serial parameters and lo <= x < hi on the partitioned dimensions ("with_tile").
isl::set tile_instances(const Statement& stmt, const TileFrame& frame, bool with_tile = true);

// The instances of "stmt" outside the tile "frame" (some partitioned dimension outside
// [lo, hi)); the serial dimensions are free.
isl::set outside_instances(const Statement& stmt, const TileFrame& frame);

// Per phase of "scop", the partition (of "partitions") it belongs to and its tile frame.
TilePlan make_tile_plan(const Scop& scop, const std::vector<Partition>& partitions);

// The parameter set a tile of "part" assumes: the partition range is nonempty and
// range_min <= lo < hi <= range_max + 1 per dimension (universe for a partition without dims).
// Where those bounds need divisions (existential variables), their relaxation without them
// (a superset, isl_set_remove_divs), and "relaxed" (when given) says so.
isl::set tile_context(const Scop& scop, const Partition& part, bool* relaxed = nullptr);

// The range of the iterators of "loops" (one per statement, split_dim) over the instances
// of phase "p" (parameters: scop + serial).
isl::set loop_range(const Scop& scop, int p, const std::vector<int>& loops);

}  // namespace bbmm::compiler
