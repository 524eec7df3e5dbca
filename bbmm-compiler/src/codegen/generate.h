#pragma once
// Code generation as one call for the driver: partition and boxes (poly/boxes.h), then the
// host code and kernels of every scop, assembled into the output file (or only the host code
// or only the kernels for --emit=host / --emit=kernel).

#include <string>

#include "codegen/host_codegen.h"
#include "frontend/diagnostics.h"
#include "poly/model.h"

namespace bbmm::compiler {

enum class GenerateWhat { kFile, kHost, kKernels };

// Generates "prog" for "opts" into "out". Problems go to "diag"; returns false then.
// For the CUDA target, kFile also fills "device_out" (the CUDA file, STEM.cu) when given,
// and kKernels prints the CUDA file's kernels and launch functions.
bool generate_code(const Program& prog, const CodegenOptions& opts, GenerateWhat what,
                   Diagnostics& diag, std::string& out, std::string* device_out = nullptr);

}  // namespace bbmm::compiler
