#include "cuda_test_kernels.h"

namespace bbmm::testing {
namespace {

__global__ void add_bytes(unsigned char* p, size_t n, unsigned char v) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    p[i] = static_cast<unsigned char>(p[i] + v);
  }
}

__global__ void spin_until(const int* flag, int* seen) {
  const volatile int* f = flag;
  while (*f == 0) __nanosleep(1000);
  if (seen != nullptr) {
    *reinterpret_cast<volatile int*>(seen) = 1;
    __threadfence_system();
  }
}

__global__ void nothing() {}

}  // namespace

cudaError_t launch_add_bytes(void* p, size_t n, unsigned char v, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const size_t blocks = (n + 255) / 256;
  add_bytes<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), 256, 0, stream>>>(
      static_cast<unsigned char*>(p), n, v);
  return cudaGetLastError();
}

cudaError_t launch_spin_until(const int* flag, int* seen, cudaStream_t stream) {
  spin_until<<<1, 1, 0, stream>>>(flag, seen);
  return cudaGetLastError();
}

cudaError_t launch_invalid(cudaStream_t stream) {
  nothing<<<1, 4096, 0, stream>>>();
  return cudaPeekAtLastError();
}

}  // namespace bbmm::testing
