// libFuzzer target: the front end and the model builder on arbitrary (already
// preprocessed) text. Every input must end in a model or in clean diagnostics: no
// crash, no leak, no hang (isl's work is capped per scop).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "driver/pipeline.h"
#include "poly/print.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return 0;
  using namespace bbmm::compiler;
  Diagnostics diag;
  PipelineOptions opts;
  opts.max_isl_operations = 300'000;  // keeps every input well under a second
  auto prog = analyze_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.c", opts, diag);
  std::ostringstream os;
  diag.render(os, prog->sm.get());
  for (const Scop& s : prog->scops) {
    print_model(os, s);
    print_deps(os, s);
  }
  return 0;
}
