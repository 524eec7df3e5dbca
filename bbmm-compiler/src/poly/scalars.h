#pragma once
// Scalars written inside a scop (after the dependences and the phases): which phases keep
// a scalar in kernel locals and which scalars live in the runtime's memory.
//
// A phase keeps scalar s private when value-based dataflow (Scop::deps.raw, isl's
// isl_union_access_info_compute_flow) shows that s carries nothing into or out of one
// iteration of the phase's parallel loop (one execution of the phase when it has none):
// - every flow dependence on s from or to a statement of the phase joins two instances
//   of the phase with the same serial iterators and the same parallel-loop iteration;
// - no read of s in the phase sees a value from before the scop.
// Each tile, work-item or thread then has its own copy (a local declared at the top of
// the kernel), and the loop stays parallel: this is the loop analysis' privatisation
// (deps.h) applied per phase, so a loop parallel thanks to privatised scalars is a phase
// that keeps them private. When s is live-out and a write of s in the phase is a last
// write (one that no later write overwrites: the output dependences' sources are the
// others), a phase with a parallel loop copies the local out after that instance
// (Phase::copy_outs: "live-out only from the last iteration"), so s is promoted too; a
// phase without one has nothing to gain and writes such a scalar in memory.
// Every other phase accessing s reads and writes it in memory: s is *promoted*, a
// one-element array registered with the runtime like any array (its accesses are s[0]:
// Scop::memory_relation), so the phases touching it are ordered by its boxes like any
// array's, and its value returns to the host variable when the scop ends.
// Read-only scalars are neither: they are passed by value to every kernel.
//
// Small arrays follow the same rule (array privatisation: doitgen's `sum[NP]`, zeroed,
// accumulated and read within each (r, q) iteration): an array whose extents are constants
// and whose size is at most kMaxPrivateArrayBytes may be private to a phase with a
// parallel loop (a kernel-local C array per tile, work-item or thread), with the last value
// of each element copied out when the array is live-out. It is never promoted: it is a
// registered array in every other phase.

#include "poly/model.h"

#include <cstdint>
#include <vector>

namespace bbmm::compiler {

// The most bytes of an array privatised per thread: a kernel-local copy (CUDA local
// memory, an OpenCL private array, a host tile's stack).
constexpr int64_t kMaxPrivateArrayBytes = 4096;

// Can "arr" have a private copy at all: a scalar, or an array whose extents are
// constants (a C array declared in the kernel) of at most kMaxPrivateArrayBytes.
bool can_privatise(const ArrayInfo& arr);

// The extents of a privatisable array, outermost first (empty for a scalar or an array
// whose extents are not constants).
std::vector<int64_t> constant_extents(const ArrayInfo& arr);

// Fills Phase::private_scalars and Phase::copy_outs of every phase and ArrayInfo::promoted
// (with extents {1}) of every scalar of "scop" ("scop" has its dependences and phases,
// Statement::phase set).
// Throws isl::exception on isl failure.
void classify_scalars(Scop& scop);

}  // namespace bbmm::compiler
