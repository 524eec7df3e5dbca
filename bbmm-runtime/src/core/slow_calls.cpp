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

}  // namespace bbmm::detail
