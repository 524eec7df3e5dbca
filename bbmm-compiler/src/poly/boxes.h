#pragma once
// Boxes of a scop (ARCHITECTURE.md section 5, pass 5): what the code generator needs to drive
// libbbmm for one tile of one phase. compute_boxes runs the partition pass (partition.h),
// computes the required and write boxes (boxes.cpp) and runs the flow-out pass (flow_out.h).
//
// Vocabulary: the parameters of every isl object below, and the names the code generator
// prints them with (codegen/box_printer.h):
// - Tile parameters: a 1-D partition has "bbmm_lo" and "bbmm_hi": the tile holds the instances
//   of the phase whose partitioned iterator i satisfies bbmm_lo <= i < bbmm_hi (half-open, in
//   the iterator's value space). This holds for decreasing loops too (step < 0): the tile is
//   still the value range [bbmm_lo, bbmm_hi) and its kernel runs i from bbmm_hi - 1 down to
//   bbmm_lo (clamped by the loop bounds); lo < hi always. A 2-D partition has "bbmm_lo0",
//   "bbmm_hi0" (outer loop) and "bbmm_lo1", "bbmm_hi1" (inner loop).
// - Serial iterators: the phase's enclosing serial loops, by their C names (Loop::c_name);
//   the host code has them in scope when it runs the phase.
// - Scop parameters: by their C names (Scop::params).
// The isl parameters are the scop parameters, then the serial iterators (isl names = the C
// names), then the tile parameters. This pass produces isl objects only; their C text is the
// code generator's (codegen/box_printer.h), which also prints them for --emit=boxes.
//
// Thread-safety: plain data; the isl objects belong to the Program's isl context and are
// never null (an empty set where there is nothing).

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "poly/model.h"
#include "poly/partition.h"

namespace bbmm::compiler {

// Access mode of a required box; the values are libbbmm's bbmm_access (include/bbmm/bbmm.h).
// kWrite promises that the tile writes EVERY element of the box (the runtime reads nothing
// in): it is used only where the tile's exact write set equals the box. A box the tile writes
// only in part, or reads and writes, is kReadWrite.
enum class BoxAccess { kRead = 1, kWrite = 2, kReadWrite = 3 };
const char* box_access_name(BoxAccess a);  // "READ", "WRITE", "READ_WRITE"

// One dimension of a box: elements min <= x <= max (half-open in C: [min, max + 1)).
struct TileBoxDim {
  isl::pw_aff min;  // the inclusive minimum (isl_set_dim_min), defined where nonempty
  isl::pw_aff max;  // the inclusive maximum (isl_set_dim_max)
};

// A rectangular box of one array for one tile, valid (nonempty) where "guard" holds: its
// bounds are functions of the tile (not the runtime's concrete bbmm::Box, include/bbmm/box.h).
struct TileBox {
  std::vector<TileBoxDim> dims;  // one per array dimension, outermost first
  isl::set guard;                // the parameter set where the box is nonempty
  isl::set context;              // the parameters assumed (the tile context): its C may use them
  isl::set set;                  // the box itself as a set of array elements (exact hull)
};

// A union of row segments, for a write set (or flow-out set) that is not a union of a few
// boxes but is, per row, one interval: for each point (bbmm_r0, ..., bbmm_r<rank-2>) of
// "rows" (a box over the first rank-1 dimensions), the elements of the last dimension in
// [seg_min, seg_max] where seg_guard holds. The seg_ objects have the row iterators
// bbmm_r0.. as parameters too. Rank-1 arrays never need this (their sets are intervals or
// rejected).
struct RowEnumeration {
  TileBox rows;          // over the first rank-1 dimensions
  isl::pw_aff seg_min;   // inclusive, defined where the segment is nonempty
  isl::pw_aff seg_max;   // inclusive
  isl::set seg_guard;    // the parameter set where the row's segment is nonempty
  isl::set seg_context;  // the parameters assumed: rows' context, the row inside "rows"
  isl::set exact;        // the exact set enumerated (array elements)
};

// How the elements a tile writes are declared to the runtime (write-back and flow-out).
enum class WriteStrategy {
  kExactBoxes,   // the write set is exactly the union of "write_boxes"
  kPerRow,       // the write set is "write_rows" (exact), enumerated row by row, with
                 // "write_boxes" (exact) and "write_hulls" (supersets) when taken per access
  kWidened,      // rows of intervals too, declared as their hull "write_boxes[0]", READ_WRITE:
                 // no other tile of the phase touches the hull (boxes.cpp, widen_writes)
  kSingleDevice  // neither: the phase runs as one tile on one device (see reason)
};
const char* write_strategy_name(WriteStrategy s);  // "exact boxes", "per-row", ...

// Convex hull vs disjoint boxes for one array in one tile.
enum class BoxChoice { kConvex, kDisjoint };

// The boxes of one array for one tile of one phase.
struct ArrayBoxes {
  int array = 0;  // index into Scop::arrays
  bool read = false;
  bool written = false;

  // The bounding box of each access's image (for reports; "accesses" indexes Scop::accesses).
  std::vector<int> accesses;
  std::vector<TileBox> access_boxes;

  // What to require: the boxes to pass to bbmm_tile_require, each with its mode. With
  // kConvex, one box (the hull of all accesses); with kDisjoint, one box per group of
  // accesses (the runtime refines overlapping requests into disjoint pieces). With the
  // kPerRow write strategy, the written rows are additionally in "write_rows", and the
  // required boxes covering them are kReadWrite (never kWrite).
  BoxChoice choice = BoxChoice::kConvex;
  std::vector<TileBox> required;
  std::vector<BoxAccess> required_mode;  // parallel to "required"
  // The rule and the numbers behind "choice", evaluated at the representative parameter
  // values (BoxOptions::params and a middle tile): elements covered by the convex hull, by
  // the disjoint boxes (union, counted once), and touched exactly.
  int64_t convex_volume = 0;
  int64_t disjoint_volume = 0;
  int64_t exact_volume = 0;
  std::string choice_reason;  // e.g. "disjoint: hull wastes 48% (> 10%), boxes waste 0%"

  // Writes (empty unless "written").
  WriteStrategy write_strategy = WriteStrategy::kExactBoxes;
  std::string write_reason;     // why this strategy
  // kExactBoxes: pairwise disjoint, union == the write set; kWidened: the hull; kPerRow:
  // the pieces of the write set that are boxes (write one access at a time, boxes.cpp).
  std::vector<TileBox> write_boxes;
  // kPerRow: with "write_boxes" and "write_hulls", pairwise disjoint pieces whose union is
  // the write set.
  std::vector<RowEnumeration> write_rows;
  // kPerRow: row enumerations of at most two elements per row (a diagonal) declared as
  // their hulls, READ_WRITE: each holds its piece, and no other tile of the phase touches
  // it (what it holds besides the piece keeps its value).
  std::vector<TileBox> write_hulls;
  isl::set write_set;           // isl: the exact elements the tile writes

  // Flow-out: elements the tile writes whose value (value-based RAW) is read by an instance
  // outside the tile (another tile of this phase's partition, or any instance of a phase
  // with another partition), at any later time. A union of boxes, one per basic set of the
  // exact flow-out set, then coalesced; each box lies inside the write set (never widened).
  // When a piece is not a box inside the write set, it is enumerated per row instead.
  // A piece with strides (existential variables) is first replaced by its shadow without
  // them (see flow_out_note). With WriteStrategy::kSingleDevice the write set has no box
  // form, and the boxes are the pieces' hulls: they may hold elements the tile does not
  // write; the runtime pushes only what the tile's device holds valid (its directory),
  // so this costs transfers, never correctness.
  std::vector<TileBox> flow_out;
  std::vector<RowEnumeration> flow_out_rows;
  isl::set flow_out_set;  // isl: the exact flow-out elements
  std::string flow_out_note;  // where the boxes hold more than flow_out_set, why (else "")
};

// Everything for one tile of one phase.
struct PhaseBoxes {
  int phase = 0;      // index into Scop::phases
  int partition = 0;  // index into ScopBoxes::partitions
  bool single_device = false;  // some written array got WriteStrategy::kSingleDevice
  isl::set tile_domain_context;  // isl: the parameter constraints of a tile (lo < hi, ...)
  std::vector<ArrayBoxes> arrays;  // by increasing array index, accessed arrays only
};

// Exact footprint vs box coverage for concrete parameter values.
struct ExactnessRow {
  int phase = 0;
  int tile = 0;             // tile number in the split used
  std::string tile_text;    // "i in [0, 16)"
  std::string array;
  int64_t exact = 0;        // distinct elements the tile touches
  int64_t covered = 0;      // distinct elements its required boxes cover
};

struct ScopBoxes {
  std::vector<Partition> partitions;
  std::vector<PhaseBoxes> phases;  // one per Scop::phases entry, same order
  std::map<std::string, int64_t> params;  // the concrete values used for the report
  int tiles = 0;                          // tiles per partition dimension in the report
  std::vector<ExactnessRow> exactness;
};

// --partition: which loops of each phase are split into tiles (partition.h).
enum class PartitionMode {
  kOneD,  // 1d: the phase's parallel loop
  kTwoD,  // 2d: also a parallel loop nested in it (gemm's j), the devices as a grid
  kAuto,  // auto (default): 2-D only where a tile of the 1-D split one iteration wide
          // accesses a whole array (gemm's B), starting from the 1-D split
};

struct BoxOptions {
  PartitionMode partition = PartitionMode::kAuto;
  // Concrete parameter values for the choice and the exactness report (--params N=64,T=4);
  // parameters not given default to 32 (time-like ones too).
  std::map<std::string, int64_t> params;
  int report_tiles = 4;  // tiles per partition dimension in the exactness report
  double convex_waste_limit = 0.10;  // the convex hull is chosen when it wastes <= this
  // Per-row writes declared as their hull where that is exact (boxes.cpp, widen_writes);
  // false (--writes=rows) keeps them per row.
  bool widen_writes = true;
};

// Computes the partitions and the boxes of "scop" (dependences must be computed).
// Throws isl::exception on isl failure (the caller reports it as an internal error).
ScopBoxes compute_boxes(const Scop& scop, const BoxOptions& opts);

// Prints "boxes" deterministically (--emit=boxes).
void print_boxes(std::ostream& out, const Scop& scop, const ScopBoxes& boxes);

}  // namespace bbmm::compiler
