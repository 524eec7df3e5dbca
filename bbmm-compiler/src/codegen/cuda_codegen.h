#pragma once
// CUDA target (--target=cuda): per phase, two CUDA kernels (one piece per array, with the
// index arithmetic hoisted; any number of pieces, each access finding its piece) over the
// grid of thread_mapping.h, and their launch functions, run by bbmm_tile_launch on the
// tile's device stream (bbmm_launch_info::queue) after its read-ins.
//
// bbmmc writes the CUDA target as two files: STEM.c, the input with its scops replaced
// (C, as for --target=host: C99 inputs such as VLA parameters are not C++), and STEM.cu,
// the kernels and launch functions (CUDA C++, `extern "C"` launchers the C file calls).

#include <string>

#include "codegen/host_codegen.h"
#include "codegen/kernel_codegen.h"
#include "frontend/diagnostics.h"

namespace bbmm::compiler {

// The beginning of STEM.cu: the generation-time defaults (--block, --march) and the
// include of bbmm/generated_support_cuda.h (block, march and grid of a launch with their
// BBMM_CUDA_* overrides, piece lookup, error checks).
std::string cuda_prelude(const CodegenOptions& opts);

// Kernels and launch functions "<name>_launch" / "<name>_launch_pieces" of "phase" (the
// argument struct "<name>_args" is printed by the caller, in both files).
std::string cuda_kernel_launcher(const Scop& scop, const ScopBoxes& boxes, int phase,
                                 const KernelSignature& sig, const std::string& name);

// The C declarations of the two launch functions, for STEM.c.
std::string cuda_launcher_declarations(const std::string& name);

// Checks that every statement of "scop" can run on a GPU (calls only to CUDA's math
// functions); errors go to "diag".
bool cuda_check_statements(const Scop& scop, Diagnostics& diag);

}  // namespace bbmm::compiler
