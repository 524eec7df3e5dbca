// Small CUDA kernels for the CUDA backend tests (cuda_test_kernels.cu), callable
// from host-compiled test code. Each launcher enqueues on `stream` and returns
// cudaGetLastError() of the launch.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace bbmm::testing {

// p[i] += v for i < n (bytes, wrapping).
cudaError_t launch_add_bytes(void* p, size_t n, unsigned char v, cudaStream_t stream);

// One thread spins until the host-mapped `*flag` (cudaHostAllocMapped memory,
// read through a volatile pointer) is nonzero, then sets `*seen` to 1 (also
// host-mapped; may be null). Keeps its stream busy until the host releases it.
cudaError_t launch_spin_until(const int* flag, int* seen, cudaStream_t stream);

// A launch that fails at once (a block of 4096 threads): cudaGetLastError()
// reports cudaErrorInvalidConfiguration. Returns that error.
cudaError_t launch_invalid(cudaStream_t stream);

}  // namespace bbmm::testing
