#pragma once
// Partition pass (ARCHITECTURE.md section 5, pass 4): which loops of each phase are split into
// tiles [lo, hi), and which phases share a partition (owner computes); the tile of a phase
// (TileFrame) and its statement instances, on which the boxes and flow-out passes build.

#include <string>
#include <vector>

#include "poly/model.h"

namespace bbmm::compiler {

// The tile of one phase: which statement dimensions are serial (equated to parameters
// named after the serial loops) and which are partitioned (bounded by lo/hi parameters).
struct TileFrame {
  std::vector<std::string> serial_names;  // one per serial loop of the phase (C names)
  std::vector<int> part_depths;           // statement dimensions partitioned (0, 1 or 2)
  std::vector<std::string> lo_params;     // parallel to part_depths
  std::vector<std::string> hi_params;
};

// One dimension of a partition: one loop per phase of the partition, split into tiles.
struct PartitionDim {
  std::string lo_param;  // "bbmm_lo" (1-D), "bbmm_lo0"/"bbmm_lo1" (2-D)
  std::string hi_param;  // "bbmm_hi", ...
  std::vector<int> loops;  // per phase of the partition (same order): the loop split
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
};

// Per phase, the partition it belongs to and its tile frame.
struct TilePlan {
  std::vector<int> partition_of_phase;  // index into the partitions
  std::vector<TileFrame> frames;        // one per phase
  std::vector<bool> partitioned;        // the partition has dims
};

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
isl::set tile_context(const Scop& scop, const Partition& part);

// The range of loop "loop" over the instances of phase "p" (parameters: scop + serial).
isl::set loop_range(const Scop& scop, int p, int loop);

}  // namespace bbmm::compiler
