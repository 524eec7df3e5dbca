// BBMM_CALL_PROFILE=1 (read once): where the threads calling libbbmm spend
// their time inside it, by named scope — the runtime's calls (ManagerTimer:
// "acquire", "launch"...) and the parts of them that SlowScope names
// (core/slow_calls.h: "launch: queueing the kernel (backend)", an issue
// worker's queue lock, the wake-up of a sleeping worker...). Each thread adds
// to its own table (no sharing on the measured path); the runtime prints the
// merged table on stderr when it is destroyed (call_profile_report). Scopes
// nest, so a call's row includes its parts' rows. Off by default: then a scope
// costs one predictable branch and no clock read.
//
// What it is for: the calling thread's time per tile on the GPU machines is
// several times what its instruction count predicts (issue 10); this says in
// which part the difference is spent, where no profiler runs.
#pragma once

#include <cstdint>
#include <string>

namespace bbmm::detail {

// Whether BBMM_CALL_PROFILE is set to a non-zero value (read once).
bool call_profile_on();

// Adds one call of `seconds` to scope `what` (a string literal: scopes are
// told apart by address, and named by it in the report) in this thread's table.
void call_profile_add(const char* what, double seconds);

// The merged table of every thread's scopes since the process started (or the
// last reset), by total time: scope, calls, total us, us per call. Empty when
// off or when nothing was recorded.
std::string call_profile_report();

// Forgets what was recorded (tests).
void call_profile_reset();

}  // namespace bbmm::detail
