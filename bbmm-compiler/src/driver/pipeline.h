#pragma once
// The front half of bbmmc as one call: preprocess, lex, parse, build the models and
// compute dependences. Used by the driver, the tests, the fuzzer and the benchmark.

#include <memory>
#include <string>
#include <vector>

#include "frontend/diagnostics.h"
#include "poly/block_wavefronts.h"
#include "poly/model.h"
#include "poly/wavefront_tiles.h"

namespace bbmm::compiler {

struct PipelineOptions {
  std::string cpp = "cc -E";           // preprocessor command (split on blanks)
  std::vector<std::string> cpp_args;   // -D, -I, -U options
  // Per scop and pass (model, dependences, boxes, code generation); 0 = unlimited. The
  // heaviest PolyBench kernel needs about 1.1 million (heat-3d); isl does 0.5 to 5 million
  // a second, so an input past the limit is reported within seconds, not minutes.
  unsigned long max_isl_operations = 10'000'000;
  // Run isl's scheduler on nests whose source order hides parallel loops
  // (poly/reschedule.h); false keeps every source schedule.
  bool reschedule = true;
  // With "reschedule": also skew a nest of one statement into a wavefront (poly/reschedule.h;
  // --schedule=isl+wavefront).
  bool wavefront = false;
  // With "reschedule": how wavefronts inside time steps are tiled (poly/wavefront_tiles.h;
  // --wavefront-tiles).
  WavefrontTiles wavefront_tiles;
  // With "reschedule": which wavefronts run their steps inside one kernel per step of the
  // loops outside them, in one thread block on CUDA (poly/block_wavefronts.h;
  // --wavefront-steps); the others have one phase (one kernel launch per tile) per step.
  WavefrontSteps wavefront_steps = WavefrontSteps::kAuto;
  // --reductions=reassociate: loops of serial regions that only a reduction keeps serial
  // are summed in blocks of this many iterations (poly/reductions.h); 0 keeps their order.
  int reduction_block = 0;
};

// Runs the preprocessor on "path" and analyses the result. Never throws; problems are
// in "diag" (user errors, or internal ones: diag.has_internal_error()). The returned
// program holds the source manager even when there are errors (to render them).
std::unique_ptr<Program> analyze_file(const std::string& path, const PipelineOptions& opts,
                                      Diagnostics& diag);

// Analyses already preprocessed text "text" named "file" (its own original source).
std::unique_ptr<Program> analyze_text(std::string text, const std::string& file,
                                      const PipelineOptions& opts, Diagnostics& diag);

// Runs "cpp" with "args" and "path"; returns false with the preprocessor's messages
// in "errors" when it fails or cannot be started.
bool run_preprocessor(const std::string& cpp, const std::vector<std::string>& args,
                      const std::string& path, std::string& output, std::string& errors);

}  // namespace bbmm::compiler
