#include "cuda/cuda_status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace bbmm {

absl::Status cuda_status(const char* call, cudaError_t e, const char* file, int line) {
  const std::string msg = absl::StrCat(call, " failed at ", file, ":", line, ": ",
                                       cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
  if (e == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(msg);
  if (e == cudaErrorInvalidValue) return absl::InvalidArgumentError(msg);
  return absl::UnknownError(msg);
}

}  // namespace bbmm
