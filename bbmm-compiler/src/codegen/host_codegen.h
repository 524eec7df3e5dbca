#pragma once
// Host code generation (ARCHITECTURE.md section 5, pass 6): the output file of bbmmc is the
// input file with every scop replaced by code that drives libbbmm through its public C API
// (include/bbmm/bbmm.h) and launches the tile kernels of kernel_codegen.h; code outside the
// scops is copied through, so the functions keep their signatures and callers do not change.

#include <string>
#include <vector>

#include "frontend/diagnostics.h"
#include "poly/boxes.h"
#include "poly/model.h"

namespace bbmm::compiler {

enum class Target { kHost, kOpenCL };

struct CodegenOptions {
  Target target = Target::kHost;
};

// The generated pieces of one scop.
struct GeneratedScop {
  std::string kernels;  // argument structs, kernels and per-phase host functions
  std::string body;     // replaces the scop's lines (from `#pragma scop` to `#pragma endscop`)
};

// Generates one scop. User errors (constructs code generation does not support) go to
// "diag"; returns false then.
bool generate_scop(const Scop& scop, const ScopBoxes& boxes, const CodegenOptions& opts,
                   Diagnostics& diag, GeneratedScop& out);

// The whole output file: the main file of "prog" with its scops replaced by "gen" (one per
// scop, same order), the generated definitions inserted before each function holding a scop.
bool generate_file(const Program& prog, const std::vector<GeneratedScop>& gen,
                   const CodegenOptions& opts, Diagnostics& diag, std::string& out);

// The definitions every generated file starts with (includes, helpers, the lazily created
// runtime); printed once per file, before the first generated block.
std::string generated_prelude(const CodegenOptions& opts);

}  // namespace bbmm::compiler
