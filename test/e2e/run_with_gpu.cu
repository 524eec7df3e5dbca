// run_with_gpu PROGRAM [ARG...]: runs PROGRAM (execv) when a GPU is usable, else prints
// why and exits 77, which the e2e tests of the <name>_bbmmc_cuda samples declare as their
// SKIP_RETURN_CODE. The generated programs cannot skip by themselves: without a GPU they
// run the sequential original, then fail to create the runtime (exit 1).
//
// Usable: a device is visible and an empty kernel, built for the same
// CUDA_ARCHITECTURES as the samples, launches and completes on device 0 (so a GPU
// without a kernel image for them skips too, instead of failing every sample).
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdio>

namespace {

__global__ void probe_kernel() {}

int skip(const char* why, cudaError_t e) {
  std::printf("SKIP: no usable GPU: %s (%s: %s)\n", why, cudaGetErrorName(e),
              cudaGetErrorString(e));
  std::fflush(stdout);
  return 77;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PROGRAM [ARG...]\n", argv[0]);
    return 2;
  }
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return skip("cudaGetDeviceCount failed", e);
  if (count == 0) return skip("no CUDA device visible", cudaErrorNoDevice);
  probe_kernel<<<1, 1>>>();
  e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return skip("an empty kernel does not run on device 0", e);
  std::printf("run_with_gpu: %d CUDA device(s) visible; running %s\n", count, argv[1]);
  std::fflush(stdout);
  // The CUDA context of this process ends with it: execv replaces the image.
  execv(argv[1], argv + 1);
  std::perror(argv[1]);
  return 127;
}
