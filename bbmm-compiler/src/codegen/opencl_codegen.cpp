#include "codegen/opencl_codegen.h"

namespace bbmm::compiler {

std::string opencl_prelude() { return "#error \"bbmmc: --target=opencl is not implemented yet\"\n"; }

std::string opencl_kernel_launcher(const Scop&, const ScopBoxes&, int, const KernelSignature&,
                                   const std::string&) {
  return "";
}

}  // namespace bbmm::compiler
