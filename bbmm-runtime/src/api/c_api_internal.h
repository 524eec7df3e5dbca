// What other parts of libbbmm (the MPI library, src/mpi/) need of the C API's
// handles: the runtime core behind a bbmm_runtime*, and the C status of an
// absl::Status (which also sets bbmm_last_error_message).
#pragma once

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "bbmm/bbmm.h"
#include "core/runtime_core.h"

namespace bbmm::detail {

// Null for a null runtime.
RuntimeCore* core_of(bbmm_runtime* rt);
bbmm_status c_status(const absl::Status& s);

// Makes every runtime created afterwards by bbmm_runtime_create take the
// transport `make` returns (with `global_tiles`, RuntimeCore::set_transport);
// an empty `make` stops it. For bbmm_mpi_use_by_default (bbmm/mpi.h).
using TransportMaker = std::function<absl::StatusOr<std::unique_ptr<Transport>>()>;
void set_default_transport(TransportMaker make, bool global_tiles, bool gather_all);

// What bbmm_fatal does instead of exiting alone, once a transport to other ranks exists
// (the MPI library sets it: print with the rank, then stop every rank). Null: exit.
using FatalHook = void (*)(const char* message, int code);
void set_fatal_hook(FatalHook hook);

}  // namespace bbmm::detail
