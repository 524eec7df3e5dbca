// Compiled by the register-cap tests (test/compiler/CMakeLists.txt), never run: a kernel
// declared as bbmmc declares its kernels (BBMM_GEN_CUDA_KERNEL_BOUND), with a body that
// wants many registers (many independent loads kept live), so that ptxas's report shows
// whether BBMM_CUDA_MAX_REGISTERS capped it.
#include "bbmm/generated_support_cuda.h"

__global__ void BBMM_GEN_CUDA_KERNEL_BOUND regcap_probe(const double* __restrict__ in,
                                                        double* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i + 24 * n >= 25 * n) return;
  double v[24];
#pragma unroll
  for (int k = 0; k < 24; ++k) v[k] = in[i + k * n];
  double s = 0;
#pragma unroll
  for (int k = 0; k < 24; ++k) s += v[k] * v[(k * 7 + 3) % 24];
  out[i] = s;
}
