#include "codegen/generate.h"

#include "poly/boxes.h"

namespace bbmm::compiler {

bool generate_code(const Program& prog, const CodegenOptions& opts, GenerateWhat what,
                   Diagnostics& diag, std::string& out) {
  std::vector<GeneratedScop> gen;
  for (const Scop& s : prog.scops) {
    // Not stored: isl 0.25's C++ objects cannot be copied while null.
    const ScopBoxes boxes = compute_boxes(s, BoxOptions{});
    GeneratedScop g;
    if (!generate_scop(s, boxes, opts, diag, g)) return false;
    gen.push_back(std::move(g));
  }
  if (what == GenerateWhat::kFile) return generate_file(prog, gen, opts, diag, out);
  out.clear();
  if (what == GenerateWhat::kKernels) out += generated_prelude(opts);
  for (const GeneratedScop& g : gen) out += what == GenerateWhat::kHost ? g.body : g.kernels;
  return true;
}

}  // namespace bbmm::compiler
