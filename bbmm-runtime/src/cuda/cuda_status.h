// CUDA errors as absl::Status: every CUDA call of the backend goes through
// BBMM_CUDA (or cuda_status directly), so that a failure names the call, the
// file and the line.
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"

namespace bbmm {

// The status for CUDA error `e` returned by `call` (its source text) at
// `file`:`line`: kResourceExhausted for an out-of-memory error (the core
// evicts and retries), kInvalidArgument for cudaErrorInvalidValue, kUnknown
// otherwise. The message names the call, the place and CUDA's error name and
// text.
absl::Status cuda_status(const char* call, cudaError_t e, const char* file, int line);

}  // namespace bbmm

// Evaluates the CUDA call `call`; on an error returns its status from the
// enclosing function (which returns absl::Status or absl::StatusOr<T>).
#define BBMM_CUDA(call)                                                \
  do {                                                                 \
    const cudaError_t bbmm_e_ = (call);                                \
    if (bbmm_e_ != cudaSuccess) {                                      \
      return ::bbmm::cuda_status(#call, bbmm_e_, __FILE__, __LINE__);  \
    }                                                                  \
  } while (0)
