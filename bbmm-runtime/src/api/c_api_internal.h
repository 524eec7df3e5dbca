// What other parts of libbbmm (the MPI library, src/mpi/) need of the C API's
// handles: the runtime core behind a bbmm_runtime*, and the C status of an
// absl::Status (which also sets bbmm_last_error_message).
#pragma once

#include "absl/status/status.h"
#include "bbmm/bbmm.h"
#include "core/runtime_core.h"

namespace bbmm::detail {

// Null for a null runtime.
RuntimeCore* core_of(bbmm_runtime* rt);
bbmm_status c_status(const absl::Status& s);

}  // namespace bbmm::detail
