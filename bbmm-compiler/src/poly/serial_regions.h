#pragma once
// Notes on the parts of a scop that run serially: a phase with no parallel loop runs as
// one tile (one kernel) per step of its serial loops, on one device. The note names each
// loop of that region and the dependences it carries (what exact analysis found), and
// says that `#pragma bbmm parallel` asserts a loop parallel when the dependences do not
// hold in fact (Floyd-Warshall's row and column k during iteration k).

#include "frontend/diagnostics.h"
#include "poly/model.h"

namespace bbmm::compiler {

// Adds one note per phase of "scop" that has no parallel loop (needs scop.phases and the
// loops' verdicts: compute_dependences).
void note_serial_regions(const Scop& scop, Diagnostics& diag);

}  // namespace bbmm::compiler
