#pragma once
// The front half of bbmmc as one call: preprocess, lex, parse, build the models and
// compute dependences. Used by the driver, the tests, the fuzzer and the benchmark.

#include <memory>
#include <string>
#include <vector>

#include "frontend/diagnostics.h"
#include "poly/model.h"

namespace bbmm::compiler {

struct PipelineOptions {
  std::string cpp = "cc -E";           // preprocessor command (split on blanks)
  std::vector<std::string> cpp_args;   // -D, -I, -U options
  unsigned long max_isl_operations = 50'000'000;  // per scop; 0 = unlimited
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
