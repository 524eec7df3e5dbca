// Chooses and creates the backend named by the runtime options.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "bbmm/runtime.h"
#include "core/backend.h"

namespace bbmm::detail {

// BBMM_BACKEND_AUTO picks CUDA when it is built in and a GPU is present,
// else the host backend. Fails with kUnavailable for a backend this build
// lacks or a machine without its devices.
absl::StatusOr<std::unique_ptr<Backend>> make_backend(const RuntimeOptions& options);

}  // namespace bbmm::detail
