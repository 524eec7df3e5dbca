#include "codegen/generate.h"

#include "poly/boxes.h"
#include "poly/budget.h"

namespace bbmm::compiler {

bool generate_code(const Program& prog, const CodegenOptions& opts, GenerateWhat what,
                   Diagnostics& diag, std::string& out, std::string* device_out) {
  std::vector<GeneratedScop> gen;
  for (const Scop& s : prog.scops) {
    GeneratedScop g;
    bool ok = true;
    const char* pass = "computing its tiles' boxes";
    // isl work per scop is bounded like the analysis (poly/budget.h).
    const bool within = run_within_isl_budget(*prog.isl, [&] {
      // Not stored: isl 0.25's C++ objects cannot be copied while null.
      const ScopBoxes boxes = compute_boxes(s, opts.boxes);
      pass = "generating its code";
      ok = generate_scop(s, boxes, opts, diag, g);
    });
    if (!within) {
      report_scop_too_complex(diag, s.begin_loc, s.end_loc, s.function, pass, prog.isl->budget());
      return false;
    }
    if (!ok) return false;
    gen.push_back(std::move(g));
  }
  if (what == GenerateWhat::kFile) {
    if (opts.target == Target::kCuda && device_out) *device_out = generate_device_file(prog, gen, opts);
    return generate_file(prog, gen, opts, diag, out);
  }
  out.clear();
  if (what == GenerateWhat::kKernels && opts.target == Target::kCuda) {
    out = generate_device_file(prog, gen, opts);
    return true;
  }
  if (what == GenerateWhat::kKernels) out += generated_prelude(opts);
  for (const GeneratedScop& g : gen) out += what == GenerateWhat::kHost ? g.body : g.kernels;
  return true;
}

}  // namespace bbmm::compiler
