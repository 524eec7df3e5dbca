#pragma once
// Whether the dependences of a phase stay within one value of chosen loops: the test that
// the groups of statement instances indexed by those loops' iterators (the tiles of a
// partition, partition.h; the threads of a kernel, codegen/thread_mapping.h) are
// independent of one another within one iteration of the phase's serial loops.

#include <vector>

#include "poly/model.h"

namespace bbmm::compiler {

// True when giving every statement of "ph" (same order as Phase::statements) the
// coordinates of the loops "chosen[i]" (loop ids, the same count for every statement)
// keeps every dependence between two instances of the phase in one iteration of its serial
// loops at one coordinate tuple. Flow, anti and output dependences count; for a scalar or
// array private to the phase only flow ones (each group has its own copy and runs its
// instances in program order). Iterations of a loop asserted parallel in every statement
// (`#pragma bbmm parallel`) are independent by the user's word. Checked with isl on the
// dependences of the model.
bool dependences_within(const Scop& scop, const Phase& ph, const std::vector<std::vector<int>>& chosen);

}  // namespace bbmm::compiler
