// BBMM_SLOW_CALL_US=N (0 or unset: off, read once): the calling thread's waits
// inside libbbmm that took N us or more are reported on stderr ("bbmm: slow
// call: acquire took 1234 us"). A diagnostic of where the application thread
// waits without the trace, which changes the timing it observes: the runtime's
// calls (ManagerTimer) and, inside them, the backends' waits (an allocation
// waiting for an issue worker, for instance). The same scopes feed the call
// profile (BBMM_CALL_PROFILE, core/call_profile.h).
#pragma once

#include <chrono>

#include "core/call_profile.h"

namespace bbmm::detail {

// The threshold in us; 0 when off.
int slow_call_threshold_us();

// Whether slow calls are reported at all (BBMM_SLOW_CALL_US set): when not,
// the paths that time themselves only for the report skip reading the clock.
inline bool slow_calls_on() {
  static const bool on = slow_call_threshold_us() > 0;
  return on;
}

// Whether a wait of `seconds` is to be reported.
inline bool slow_call(double seconds) {
  static const int us = slow_call_threshold_us();
  return us > 0 && seconds * 1e6 >= us;
}

// "bbmm: slow call: <what> took <us> us" on stderr.
void report_slow_call(const char* what, double seconds);

// Whether scopes read the clock at all: slow calls reported or a call profile.
inline bool scopes_timed() {
  static const bool on = slow_calls_on() || call_profile_on();
  return on;
}

// Reports the time between its construction and destruction when it is slow,
// and adds it to the call profile: a part of a call ("acquire: placing the
// boxes"). `what` must be a string literal (the profile keys on its address).
class SlowScope {
 public:
  explicit SlowScope(const char* what) : what_(what) {
    if (scopes_timed()) start_ = std::chrono::steady_clock::now();
  }
  // Inline and small: when nothing is timed (the default) a scope costs a
  // flag test, not a call (the tile path passes a dozen scopes per tile).
  ~SlowScope() {
    if (scopes_timed()) finish();
  }
  SlowScope(const SlowScope&) = delete;
  SlowScope& operator=(const SlowScope&) = delete;

 private:
  // Reads the clock, reports the scope if slow, adds it to the call profile.
  [[gnu::noinline]] void finish() const;

  const char* what_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace bbmm::detail
