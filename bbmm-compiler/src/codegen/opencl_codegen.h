#pragma once
// OpenCL target (--target=opencl): kernels as OpenCL C source strings compiled at run time
// on the queue's context, one work-item per value of the partitioned iterator, and the
// host-side launch functions that bind the pieces' buffers. The helpers they share (program
// cache, argument binding, error checks) are in include/bbmm/generated_support_opencl.h.

#include <string>

#include "codegen/kernel_codegen.h"

namespace bbmm::compiler {

// The kernel source and the launch functions "<name>_launch" / "<name>_launch_pieces" of
// "phase" (same argument block as the host target).
std::string opencl_kernel_launcher(const Scop& scop, const ScopBoxes& boxes, int phase,
                                   const KernelSignature& sig, const std::string& name);

}  // namespace bbmm::compiler
