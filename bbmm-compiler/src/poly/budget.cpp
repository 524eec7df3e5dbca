#include "poly/budget.h"

#include <isl/ctx.h>

#include <exception>

namespace bbmm::compiler {

namespace {

// Arms the budget for one pass; lifts it (and clears isl's error) however the pass ends.
class ArmedBudget {
 public:
  explicit ArmedBudget(IslContext& isl) : isl_(isl) {
    isl_ctx_reset_error(isl_.get());
    isl_.reset_operations();
    isl_.set_max_operations(isl_.budget());
  }
  ~ArmedBudget() {
    isl_.set_max_operations(0);
    isl_.reset_operations();
    isl_ctx_reset_error(isl_.get());
  }
  bool exhausted() const { return isl_ctx_last_error(isl_.get()) == isl_error_quota; }

 private:
  IslContext& isl_;
};

}  // namespace

bool run_within_isl_budget(IslContext& isl, const std::function<void()>& work) {
  ArmedBudget armed(isl);
  try {
    work();
  } catch (const isl::exception_quota&) {
    return false;  // isl's C++ interface clears the error it throws
  } catch (const std::exception&) {  // isl::exception, or ours after a NULL from isl's C API
    if (armed.exhausted()) return false;
    throw;
  }
  // A pass that checks the C interface's NULLs itself may finish on a result isl gave up on.
  return !armed.exhausted();
}

void report_scop_too_complex(Diagnostics& diag, const SourceLoc& begin, const SourceLoc& end,
                             const std::string& function, const std::string& what,
                             unsigned long limit) {
  auto e = diag.error(begin);
  e << "scop";
  if (!function.empty()) e << " in function '" << function << "'";
  e << " (lines " << begin.line << "-" << end.line << ") is too complex: " << what
    << " needs more than " << limit << " isl operations";
  e.hint("split the loop nest into smaller scops or simplify its bounds and subscripts; "
         "--max-isl-operations=N raises the limit");
}

}  // namespace bbmm::compiler
