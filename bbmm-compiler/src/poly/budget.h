#pragma once
// Bounded isl work. Every expensive pass (model, dependences, boxes, code generation) runs
// per scop under the isl context's operation budget (IslContext::budget), so that a scop too
// complex for it gets a diagnostic naming the scop and the pass instead of a hang.

#include <functional>
#include <string>

#include "frontend/diagnostics.h"
#include "poly/isl_util.h"

namespace bbmm::compiler {

// Runs "work" with isl limited to "isl".budget() operations (no limit when 0). Returns true
// when "work" finished within the budget, false when isl ran out of operations
// (isl_ctx_last_error is isl_error_quota), whatever exception that surfaced as: the C++
// interface throws isl::exception_quota, but a NULL returned by the C interface can surface
// later as another isl::exception or as a std::exception of ours. Any other exception
// propagates. On return the limit is lifted and isl's error state cleared, so that later
// work (printing) never trips over an exhausted counter. Not thread-safe (one isl_ctx).
bool run_within_isl_budget(IslContext& isl, const std::function<void()>& work);

// Reports that the scop from "begin" to "end" (the pragmas) in function "function" needed
// more than "limit" isl operations for "what" (e.g. "computing the dependences").
void report_scop_too_complex(Diagnostics& diag, const SourceLoc& begin, const SourceLoc& end,
                             const std::string& function, const std::string& what,
                             unsigned long limit);

}  // namespace bbmm::compiler
