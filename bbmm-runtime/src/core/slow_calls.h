// BBMM_SLOW_CALL_US=N (0 or unset: off, read once): the calling thread's waits
// inside libbbmm that took N us or more are reported on stderr ("bbmm: slow
// call: acquire took 1234 us"). A diagnostic of where the application thread
// waits without the trace, which changes the timing it observes: the runtime's
// calls (ManagerTimer) and, inside them, the backends' waits (an allocation
// waiting for an issue worker, for instance).
#pragma once

namespace bbmm::detail {

// The threshold in us; 0 when off.
int slow_call_threshold_us();

// Whether a wait of `seconds` is to be reported.
inline bool slow_call(double seconds) {
  static const int us = slow_call_threshold_us();
  return us > 0 && seconds * 1e6 >= us;
}

// "bbmm: slow call: <what> took <us> us" on stderr.
void report_slow_call(const char* what, double seconds);

}  // namespace bbmm::detail
