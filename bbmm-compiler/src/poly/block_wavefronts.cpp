#include "poly/block_wavefronts.h"

namespace bbmm::compiler {

namespace {

// No loop inside any instance of loop "p": its body is statements only.
bool flat(const Scop& scop, int p) {
  for (const Node& n : scop.loops[p].body)
    if (n.is_loop) return false;
  return true;
}

}  // namespace

int block_wavefronts(Scop& scop, WavefrontSteps mode) {
  if (mode == WavefrontSteps::kLaunch) return 0;
  int rewritten = 0;
  for (Phase& ph : scop.phases) {
    if (ph.parallel_loop < 0 || ph.serial_loops.empty() || ph.statements.empty()) continue;
    if (!ph.private_scalars.empty() || !ph.copy_outs.empty()) continue;
    const Loop& h = scop.loops[ph.serial_loops.back()];
    if (h.body.size() != 1 || !h.body[0].is_loop || h.body[0].index != ph.parallel_loop) continue;
    bool skewed = true;
    for (int s : ph.statements) skewed = skewed && !scop.statements[s].source_rows.empty();
    if (!skewed) continue;
    if (mode == WavefrontSteps::kAuto && !flat(scop, ph.parallel_loop)) continue;
    ph.serial_loops.pop_back();
    ph.block_loop = ph.parallel_loop;
    ph.parallel_loop = -1;
    ++rewritten;
  }
  return rewritten;
}

}  // namespace bbmm::compiler
