#pragma once
// Dependences of a scop (isl's value-based dataflow on tagged accesses) and what they
// mean for its loops: which loop carries a dependence, which scalars are privatised,
// which loops are parallel, and the phases (outermost parallel loop inside serial loops).

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "poly/model.h"

namespace bbmm::compiler {

// Fills scop.deps, every loop's verdict and scop.phases.
// Throws isl::exception on isl failure (the caller turns it into a diagnostic).
void compute_dependences(Scop& scop);

// What the analysis finds for one loop.
struct LoopAnalysis {
  bool carries = false;                 // after privatisation
  std::set<std::string> arrays;         // arrays (and kept scalars) with carried dependences
  std::set<std::string> reasons;        // "RAW on A: S1 -> S2"
  std::set<std::string> privatised;     // scalars privatised for the loop
  std::set<std::string> blocking_scalars;
};

// Per loop (indexed like scop.loops): carried dependences of the already computed
// scop.deps, restricted to parameter values in "params" when given (a parameter set).
std::vector<LoopAnalysis> analyse_loops(const Scop& scop, const isl::set* params);

}  // namespace bbmm::compiler
