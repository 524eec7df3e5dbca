#pragma once
// Wavefronts run inside one kernel (--wavefront-steps=block, issue 13). A wavefront the
// rescheduling pass made (poly/reschedule.h: seidel-2d's h = 2i + j inside each time step,
// nussinov's diagonals) is a serial loop h whose body is one parallel loop i: one phase per
// value of h, each a kernel launch and a tile of the runtime for a few hundred instances
// (seidel-2d LARGE: 2,996,000 phases of ~667 instances, 28.96 s on one H200 of which the
// kernels' own work is a small part).
//
// This pass makes such a phase a serial region one level up: the region is h with i inside
// it, one tile (one kernel, on one device) per step of the loops outside h (per t), and
// Phase::block_loop names i. On the CUDA target the kernel runs h in order in every thread
// of one thread block, the threads sharing the iterations of i (thread k runs i = lo + k,
// lo + k + blockDim.x, ...) with __syncthreads() after each step of h: the barrier orders
// the steps as the phases did (i carries no dependence, so the instances of one step are
// independent; every dependence inside the region goes from an earlier step to a later
// one). The host and OpenCL kernels of a serial region run it in order, which is always
// correct. The price is the device parallelism of i: the region runs on one device.
//
// Legal for any serial loop whose body is one parallel loop; applied only to skewed
// statements (Statement::source_rows), where a step is short and the steps many.
//
// Which wavefronts (--wavefront-steps): kBlock every one; kAuto (the default) those whose
// steps are flat, the parallel loop's body made of statements only (seidel-2d: on one H200
// at LARGE 6.1 s against 28.8 s launched step by step), not those whose instances hold a
// loop (nussinov's k: a step's work fills the GPU, and one thread block runs it 3.4x
// slower than the launches, 4.7 s against 1.4 s; docs/performance.md); kLaunch none.

#include "poly/model.h"

namespace bbmm::compiler {

enum class WavefrontSteps { kLaunch, kAuto, kBlock };

// Rewrites every phase of "scop" whose last serial loop h is the wavefront of skewed
// statements and has the phase's parallel loop as its whole body, and which keeps no
// scalar private, as far as "mode" selects it (above): the phase loses h from its serial
// loops, its parallel loop becomes its block_loop (parallel_loop -1). Returns how many
// phases it rewrote. Needs the phases (compute_dependences); run after the rescheduling pass.
int block_wavefronts(Scop& scop, WavefrontSteps mode);

}  // namespace bbmm::compiler
