// A hand-written 1-D Jacobi stencil over several ranks through the C API, the
// way a compiled program will run over several hosts: every rank registers
// the whole arrays (all start from the same values), computes the rows it
// owns on its own devices (a tile per device and phase), exchanges its edge
// elements with the neighbouring ranks after each phase (bbmm_array_send /
// bbmm_array_receive), and at the end sends its rows to rank 0, which
// compares the result with the sequential program, exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "bbmm/bbmm.h"

namespace bbmm::testing {

// Runs on every rank of `rt`'s group; `rt` has `devices` devices. Reports
// failures with gtest assertions.
void run_rank_stencil(bbmm_runtime* rt, int64_t n, int steps);

// The same stencil written for one runtime, unchanged: its tiles go to the
// devices of all ranks (bbmm_device_count counts them all), and the runtime
// moves what each tile reads to its rank and gathers both arrays on rank 0 at
// unregistration, which compares them with the sequential program, exactly.
// With `every_rank`, every rank's arrays are compared (BBMM_MPI_GATHER_ALL).
void run_global_stencil(bbmm_runtime* rt, int64_t n, int steps, bool every_rank = false);

// The bytes each rank must receive in run_global_stencil (`ranks` ranks of
// `devices` devices): a dense model, independent of the runtime's region-based
// books, of which ranks hold each element's current value, tile by tile in
// program order; a rank receives an element when a tile of its reads it and it
// does not hold the current value; at the end rank 0 receives what it lacks.
std::vector<uint64_t> global_stencil_bytes_received(int64_t n, int steps, int ranks, int devices);

// A device memory with room for one tile's boxes of run_rank_stencil(n) on
// `ranks` ranks of `devices` devices, and little more: the tiles box out.
uint64_t tight_device_memory(int64_t n, int ranks, int devices);

}  // namespace bbmm::testing
