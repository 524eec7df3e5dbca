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

enum class Target { kHost, kOpenCL, kCuda };
const char* target_name(Target t);  // "host", "opencl", "cuda"

struct CodegenOptions {
  Target target = Target::kHost;
  // CUDA: the default thread block shape (--block=X,Y,Z; 0: 32, 8, 1), see cuda_codegen.h.
  int block[3] = {0, 0, 0};
  // CUDA: values of the outermost grid coordinate per thread in 2-D and 3-D kernels
  // (--march=R; 0: 32), see cuda_codegen.h.
  int march = 0;
  // Prefix of the generated names ("<prefix>_s<scop>_p<phase>..."). The CUDA target's
  // launch functions are external: the driver makes it unique per input file.
  std::string symbol_prefix = "bbmm";
  // How the tiles and their boxes are chosen (--partition, --writes; poly/boxes.h).
  BoxOptions boxes;
};

// The generated pieces of one scop.
struct GeneratedScop {
  std::string kernels;  // argument structs, kernels and per-phase host functions
  std::string body;     // replaces the scop's lines (from `#pragma scop` to `#pragma endscop`)
  std::string device;   // CUDA: argument structs, kernels and launch functions (STEM.cu)
};

// Generates one scop. User errors (constructs code generation does not support) go to
// "diag"; returns false then.
bool generate_scop(const Scop& scop, const ScopBoxes& boxes, const CodegenOptions& opts,
                   Diagnostics& diag, GeneratedScop& out);

// The whole output file: the main file of "prog" with its scops replaced by "gen" (one per
// scop, same order), the generated definitions inserted before each function holding a scop.
bool generate_file(const Program& prog, const std::vector<GeneratedScop>& gen,
                   const CodegenOptions& opts, Diagnostics& diag, std::string& out);

// The CUDA target's second file (STEM.cu): the CUDA prelude and every scop's "device".
std::string generate_device_file(const Program& prog, const std::vector<GeneratedScop>& gen,
                                 const CodegenOptions& opts);

// What every generated file starts with: the target (BBMM_GEN_TARGET) and the include of
// the helpers (include/bbmm/generated_support.h: arithmetic, checks, the lazily created
// runtime, box requests); printed once per file, before the first generated block.
std::string generated_prelude(const CodegenOptions& opts);

}  // namespace bbmm::compiler
