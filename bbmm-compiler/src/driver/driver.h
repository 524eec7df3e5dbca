#pragma once
// bbmmc's command line: options, the pipeline, emission, exit status
// (0 success, 1 user error, 2 internal error).

#include <ostream>
#include <string>
#include <vector>

namespace bbmm::compiler {

// Runs bbmmc with "args" (without the program name); regular output goes to "out"
// unless -o names a file, diagnostics to "err". Never throws.
int run_bbmmc(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

extern const char* const kBbmmcVersion;

}  // namespace bbmm::compiler
