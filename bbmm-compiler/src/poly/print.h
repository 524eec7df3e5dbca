#pragma once
// Deterministic text forms of the model (`--emit=model`) and of the dependences and
// loop verdicts (`--emit=deps`). isl sets and maps are printed in isl notation.

#include <ostream>

#include "poly/model.h"

namespace bbmm::compiler {

void print_model(std::ostream& os, const Scop& scop);
void print_deps(std::ostream& os, const Scop& scop);

}  // namespace bbmm::compiler
