#include "core/slow_calls.h"

#include <cstdio>
#include <cstdlib>

namespace bbmm::detail {

int slow_call_threshold_us() {
  const char* v = std::getenv("BBMM_SLOW_CALL_US");
  if (v == nullptr || *v == '\0') return 0;
  const int us = std::atoi(v);
  return us > 0 ? us : 0;
}

void report_slow_call(const char* what, double seconds) {
  std::fprintf(stderr, "bbmm: slow call: %s took %.0f us\n", what, seconds * 1e6);
}

void SlowScope::finish() const {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (slow_call(s)) report_slow_call(what_, s);
  if (call_profile_on()) call_profile_add(what_, s);
}

}  // namespace bbmm::detail
