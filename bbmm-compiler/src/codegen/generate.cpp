#include "codegen/generate.h"

#include "poly/boxes.h"
#include "poly/budget.h"

namespace bbmm::compiler {
namespace {

// With --partition=2d: says which partitions split one loop only, and why (the partition
// pass's note: the phases' statements are not all in the same two nested loops, or the
// inner one is serial), so that the option is not silently without effect.
void note_one_dimensional(const Scop& s, const ScopBoxes& boxes, Diagnostics& diag) {
  for (const Partition& part : boxes.partitions) {
    if (part.one_loop_why.empty()) continue;
    std::string phases;
    for (int p : part.phases) phases += (phases.empty() ? "" : ", ") + std::to_string(p);
    const bool several = part.phases.size() > 1;
    diag.note(s.begin_loc) << "--partition=2d: phase" << (several ? "s " : " ") << phases
                           << " of this scop " << (several ? "split" : "splits")
                           << " one loop: " << part.one_loop_why;
  }
}

}  // namespace

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
      if (opts.boxes.partition == PartitionMode::kTwoD) note_one_dimensional(s, boxes, diag);
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
