#pragma once
// OpenCL target (--target=opencl): kernels as OpenCL C source strings compiled at run time
// on the queue's context, one work-item per value of the partitioned iterator, and the
// host-side launch functions that bind the pieces' buffers.

#include <string>

#include "codegen/kernel_codegen.h"

namespace bbmm::compiler {

// Helpers the OpenCL launch functions share (program cache, error checks).
std::string opencl_prelude();

// The kernel source and the launch functions "<name>_launch" / "<name>_launch_pieces" of
// "phase" (same argument block as the host target).
std::string opencl_kernel_launcher(const Scop& scop, const ScopBoxes& boxes, int phase,
                                   const KernelSignature& sig, const std::string& name);

}  // namespace bbmm::compiler
