#pragma once
// Thread mapping of the CUDA target: which loops of a phase's tile become the grid of a
// kernel launch (up to 3 dimensions, x first), per statement.
//
// Candidates, per statement: the loops inside the phase (not the serial ones) whose
// iterator appears in a subscript of the statement's write in memory (not a private
// array's), from the last (contiguous) subscript outward, then the phase's parallel loop;
// so the loop indexing the contiguous dimension goes to x and a warp touches consecutive
// addresses. Grid dimension k takes every statement's next candidate, or else a loop
// around every statement of the phase (its parallel loop, then the others innermost
// first); a dimension is kept only when it is legal: no dependence (flow, anti or output;
// for a private scalar or array only flow, each thread having its own copy) between two
// instances of the phase in one iteration of the serial loops joins different grid
// coordinates (checked with isl on the dependences of the model; iterations of a loop
// asserted parallel with `#pragma bbmm parallel` are taken as independent, as the
// partition does). A candidate that is not legal is skipped and the next one tried. A legal
// one whose coordinate the dimensions mapped before it already determine in every tile (a
// loop of one iteration per value of theirs: a tiled wavefront's block row of one row)
// ends the mapping: its grid dimension would only add threads without work. Every thread then runs, in the original order,
// the statement instances whose mapped iterators equal its coordinates; loops that are
// not mapped (a reduction such as gemm's k, a serial inner loop) run inside the thread.

#include <string>
#include <vector>

#include "codegen/kernel_codegen.h"
#include "poly/boxes.h"
#include "poly/model.h"

namespace bbmm::compiler {

struct ThreadMapping {
  int dims = 0;  // grid dimensions used, 0..3 (0: one thread runs the whole tile)
  // Per statement of the phase (same order as Phase::statements), the loop mapped to grid
  // dimension 0 (x), 1 (y), 2 (z): "dims" entries each.
  std::vector<std::vector<int>> loops;
  // The grid coordinates' range over one tile: [lo[d], hi[d]), C over the scop parameters,
  // the serial iterators and the tile parameters (the hull over the statements).
  std::vector<std::string> lo, hi;
  // C condition (same names) under which the tile has instances of the phase; the
  // launcher launches nothing otherwise.
  std::string nonempty = "1";
  // What a thread knows (for the loops inside it): the tile's constraints, the tile has
  // instances, and each coordinate lies in its range; over tile_param_names(sig, {bbmm_g0,
  // ...}).
  isl::set known;
  std::string note;  // e.g. "x: j (contiguous), y: i; k runs inside the thread"
};

// The mapping of "phase" (at most "max_dims" dimensions).
ThreadMapping map_threads(const Scop& scop, const ScopBoxes& boxes, int phase,
                          const KernelSignature& sig, int max_dims = 3);

// The parameter naming grid coordinate "d" in the kernels ("bbmm_g0", ...).
std::string grid_param(int d);

}  // namespace bbmm::compiler
