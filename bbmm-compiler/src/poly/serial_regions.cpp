#include "poly/serial_regions.h"

#include "poly/reductions.h"

#include <algorithm>
#include <string>
#include <vector>

namespace bbmm::compiler {

void note_serial_regions(const Scop& scop, Diagnostics& diag) {
  const std::vector<Reduction> reductions = find_reductions(scop);
  for (size_t p = 0; p < scop.phases.size(); ++p) {
    const Phase& ph = scop.phases[p];
    if (ph.parallel_loop >= 0 || ph.statements.empty()) continue;
    // The loops of the region: those around the phase's statements below its serial
    // loops, outermost first.
    std::vector<int> loops;
    for (int s : ph.statements) {
      for (int l : scop.statements[s].loops) {
        if (std::find(ph.serial_loops.begin(), ph.serial_loops.end(), l) != ph.serial_loops.end())
          continue;
        if (std::find(loops.begin(), loops.end(), l) == loops.end()) loops.push_back(l);
      }
    }
    std::sort(loops.begin(), loops.end(), [&](int a, int b) {
      return scop.loops[a].depth != scop.loops[b].depth ? scop.loops[a].depth < scop.loops[b].depth
                                                        : a < b;
    });
    if (loops.empty()) continue;  // statements outside any loop: nothing to parallelise
    const Loop& outer = scop.loops[loops.front()];
    if (ph.block_loop >= 0) {
      // A wavefront run in one kernel (poly/block_wavefronts.h): serial by choice.
      diag.note(outer.loc) << "the nest's wavefront (bbmmc's loop '" << outer.c_name
                           << "') runs its steps inside one kernel"
                           << (ph.serial_loops.empty() ? "" : " per step of its enclosing serial loops")
                           << ", on one device: on CUDA one thread block, its threads sharing loop '"
                           << scop.loops[ph.block_loop].c_name
                           << "', a barrier between steps (--wavefront-steps=launch launches "
                              "each step, its tiles spread over the devices)";
      continue;
    }
    // The sum of a blocked reduction's partials (poly/reductions.h): serial by design.
    if (outer.ast && outer.ast->sums_partials) continue;
    auto b = diag.note(outer.loc);
    b << "the loop nest of '" << outer.c_name << "' runs serially, as one tile on one device"
      << (ph.serial_loops.empty() ? "" : " per step of its enclosing serial loops")
      << ": no loop in it is parallel";
    for (int l : loops) {
      const Loop& loop = scop.loops[l];
      b << "\n  loop '" << loop.c_name << "' (line " << loop.loc.line << ")";
      if (loop.verdict.reasons.empty()) {
        b << " carries no dependence but is not mapped (it is inside a serial loop of the "
             "region)";
        continue;
      }
      b << " carries ";
      for (size_t k = 0; k < loop.verdict.reasons.size(); ++k)
        b << (k ? ", " : "") << loop.verdict.reasons[k];
      if (!loop.verdict.blocking_scalars.empty()) {
        b << " (through the scalar";
        if (loop.verdict.blocking_scalars.size() > 1) b << "s";
        for (size_t k = 0; k < loop.verdict.blocking_scalars.size(); ++k)
          b << (k ? ", '" : " '") << loop.verdict.blocking_scalars[k] << "'";
        b << ")";
      }
    }
    std::string sums;
    for (const Reduction& r : reductions)
      for (int l : loops)
        if (scop.loops[l].ast == r.loop)
          sums += std::string(sums.empty() ? "" : ", ") + "'" + scop.loops[l].c_name + "' sums into '" +
                  r.var + "'";
    if (!sums.empty()) {
      b.hint("loop " + sums + " and nothing else orders its iterations: --reductions=reassociate "
             "sums it in blocks of partial sums, in parallel (the floating-point rounding may "
             "change); bbmmc --emit=deps prints the dependences");
    } else {
      b.hint("if a loop's iterations are independent in fact (e.g. Floyd-Warshall's row and "
             "column k do not change during iteration k), '#pragma bbmm parallel' right before "
             "it asserts it; bbmmc --emit=deps prints the dependences");
    }
  }
}

}  // namespace bbmm::compiler
