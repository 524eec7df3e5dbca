// Pieces the GPU benchmark programs share (bench/gpu/ceilings.cu,
// bench/gpu/kernels/handwritten.cu and bench/gpu/baselines/baseline_stencils.cu): the copy
// kernel whose bandwidth is the "device" ceiling, and the parsers of byte sizes and
// integers on their command lines.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace bbmm_bench {

// A grid-stride copy with 16-byte loads and stores: launched with 8 blocks of 256
// threads per SM over a large buffer, its bytes read + written per second are the
// device-memory ceiling of the performance reports.
__global__ void copy_kernel(const double2* __restrict__ src, double2* __restrict__ dst,
                            size_t count) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    dst[i] = src[i];
  }
}

// "N", "NB", "NKiB", "NMiB" or "NGiB" (N a positive decimal number) into *out, rounded
// down to a multiple of 256 bytes; false for anything else or a result of 0.
inline bool parse_bytes(const char* text, size_t* out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (errno != 0 || end == text || !(v > 0)) return false;
  const std::string unit(end);
  double f = 0;
  if (unit.empty() || unit == "B")
    f = 1;
  else if (unit == "KiB")
    f = 1024.0;
  else if (unit == "MiB")
    f = 1048576.0;
  else if (unit == "GiB")
    f = 1073741824.0;
  else
    return false;
  *out = static_cast<size_t>(v * f) / 256 * 256;
  return *out > 0;
}

// A decimal integer in [lo, hi] (the whole of "text") into *out; false for anything else.
inline bool parse_int(const char* text, int64_t lo, int64_t hi, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace bbmm_bench
