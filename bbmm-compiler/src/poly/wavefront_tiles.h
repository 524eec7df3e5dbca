#pragma once
// Tiles of a wavefront (issue 13). A wavefront inside the outer loops of a one-statement
// nest (poly/reschedule.h: seidel-2d's t, then the serial hyperplane h = 2i + j, then the
// loop the tiles split, i) makes one phase per value of h: 2,996,000 phases of ~667
// instances at seidel-2d's LARGE size, each a tile paying the runtime's cost. Tiling the
// band (h, i) groups them: blocks of W steps of h and R rows of i,
//
//   r = floor(s * i / R),  b = floor(h / W),  T = b + r,
//
// scheduled as the outer loops, then T (serial), then r (parallel: the loop tiles split),
// then h and i as before. s is +1 when every dependence inside one iteration of the outer
// loops has a distance >= 0 along i, -1 when <= 0 (no tiling otherwise). h carries each of
// them (distance >= 1), so a dependence goes from block (b, r) to a block (b', r') with
// b' >= b and r' >= r: T' > T, or the same block, where h orders the instances as before.
// Blocks at one T are therefore independent, and a tile of rows of blocks runs W steps of
// the wavefront in one kernel. seidel-2d at LARGE with R = 8, W = 16: 500 x (375 + 250)
// phases instead of 500 x 5,992.

#include <string>

#include "poly/model.h"

namespace bbmm::compiler {

struct WavefrontTiles {
  // Rows R of the split loop per block; 0: from the written array's first extent when it
  // is a constant (extent / kBlocksPerExtent, between 1 and kMaxRows), else kMaxRows.
  int rows = 0;
  // Steps W of the wavefront per block; 0 (the default, --wavefront-tiles=off): no tiling,
  // one phase per wavefront step. Opt-in: with rows above 1 the tiles' boxes cost isl
  // seconds to minutes (seidel-2d: 18-180 s at R = 4), and at R = 1 1.4 s.
  int steps = 0;
  static constexpr int kBlocksPerExtent = 64;
  static constexpr int kMaxRows = 8;
};

// Tiles the wavefront of statement "stmt" of "s", a nest of one statement skewed by the
// rescheduling pass: its loops[outer] is the wavefront's serial loop h and loops[outer + 1]
// the loop inside it. "src_deps" are the source model's dependences (untagged instances,
// source coordinates). Inserts the loops T and r above h (iterators bbmm_it<k>), extends the
// statement's domain, accesses, iterators and source_rows, renumbers the loops in tree
// order and rebuilds the schedules. False (and "s" unchanged) when the dependences inside
// one iteration of the outer loops have distances of both signs along loops[outer + 1], or
// "tiles.steps" is 0; "why" then says which.
bool tile_wavefront(Scop& s, int stmt, int outer, const isl::union_map& src_deps,
                    const WavefrontTiles& tiles, std::string* why = nullptr);

}  // namespace bbmm::compiler
