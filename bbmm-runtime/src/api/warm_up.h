// Initialising a backend's devices ahead of the runtime (bbmm_warm_up): the
// CUDA driver and contexts take 0.25 s for one GPU and 0.5 s for two (2 x
// H100), most of a short program's time on GPUs when paid at its first scop.
#pragma once

#include "absl/status/status.h"
#include "bbmm/runtime.h"

namespace bbmm::detail {

// Starts initialising the devices of the backend `options` names (CUDA: the
// driver and the primary contexts of the GPUs the runtime would use; nothing
// for the host and OpenCL backends) on a thread of its own, and returns. A
// call while a warm-up runs does nothing. Fails only when no thread starts.
absl::Status start_warm_up(const RuntimeOptions& options);

// Waits for the warm-up, if one was started (Runtime::create calls it before
// making the backend, which then finds the devices ready), and returns the seconds it
// waited (0 when none ran). Its failure, if any, is not reported here:
// creating the backend meets the same error and reports it.
double finish_warm_up();

}  // namespace bbmm::detail
