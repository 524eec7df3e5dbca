#pragma once
// Rescheduling (issue 13; skewing only into wavefronts). isl's scheduler finds outer parallel
// loops that the source order hides (interchange, distribution, fusion of loops: atax's
// and bicg's column sums, trisolv's, cholesky's and lu's inner updates), and the model is
// rewritten so that the rule the later passes rely on holds again: domain dimension d of a
// statement is the iterator of Statement::loops[d], at schedule dimension 2d+1.
//
// Per top-level loop nest that has a statement in a serial region (a phase without a
// parallel loop) and no loop asserted by `#pragma bbmm parallel`:
// isl_schedule_constraints_compute_schedule with validity = coincidence = the nest's RAW,
// WAR and WAW dependences (scalars included), proximity = RAW, outer coincidence on. The
// result is accepted only when
//  - every dimension of it is, per statement, plus or minus one of its iterators (each
//    used once) or a constant, and the loop tree built from it respects every dependence
//    of the scop (checked again with isl on the rewritten model);
//  - no statement of the nest gets more serial loops (loops outside its phase's parallel
//    loop; all its loops when it has none) and at least one statement of a serial region
//    gets fewer.
// So gemm and the stencils keep their source schedules. An accepted nest is rewritten:
// each statement's domain, access relations, iterators, loops, position and schedule are
// permuted; a loop shared by statements whose source iterators have different C names is
// named bbmm_it<k>; Statement::to_source maps back to the source iterators (the kernels
// bind the statement's C names to the new loops). The dependences, verdicts, phases and
// scalars are then recomputed.

#include "frontend/diagnostics.h"
#include "poly/model.h"
#include "poly/wavefront_tiles.h"

namespace bbmm::compiler {

// Reschedules the nests of "scop" (dependences computed) as above, under "isl"'s operation
// budget (poly/budget.h), capped at 300,000 operations. Returns true when the model changed. Past the budget the source
// schedule is kept and a note on "diag" says so. Throws isl::exception (not a quota) on an
// isl failure, as compute_dependences does.
// By default, a nest of several statements whose isl schedule starts, for one of them, with
// a hyperplane of coefficients -1, 0, 1 over loops all of them run in (nussinov: j - i) is
// skewed by it, statement by statement (its inner loop parallel when the new nest's
// dependences say so; the order checked as for any rewrite).
// By default too, a nest of one statement whose dependences inside one iteration of its
// outer loop are uniform (seidel-2d inside a time step t; not Floyd-Warshall inside a step k)
// gets isl's schedule over its inner loops alone: its first row, when it strictly carries
// those dependences (seidel-2d: 2i + j), becomes a serial wavefront loop inside the outer
// loop, with the other inner loops parallel inside it (the statement skewed as below).
// With "wavefront", a nest of one statement whose isl schedule starts with a hyperplane over
// several iterators that carries every dependence (seidel-2d: 4t + 2i + j) is skewed: the
// hyperplane becomes a new serial loop (bbmm_it<k>) and the other iterators, parallel inside
// it, its loops (the iterator of the write's first subscript outermost); the statement's
// domain and accesses are mapped by that unimodular matrix and Statement::source_rows gives
// the source iterators back (the kernels bind them, kernel_codegen.h).
// Wavefronts inside outer loops are then tiled as "tiles" says (poly/wavefront_tiles.h;
// steps 0: one phase per wavefront step).
bool reschedule(Scop& scop, IslContext& isl, Diagnostics& diag, bool wavefront = false,
                const WavefrontTiles& tiles = WavefrontTiles());

// The rewriting alone, for tests: the model of "scop" with the nests at top-level body
// positions "nests" rescheduled by isl, without the acceptance rule on serial depths (the
// legality check still applies). False when isl's result cannot be expressed or is refused.
bool reschedule_nests_unchecked(const Scop& scop, const std::vector<int>& nests, Scop& out,
                                bool wavefront = false,
                                const WavefrontTiles& tiles = WavefrontTiles());

}  // namespace bbmm::compiler
