// Rectangular 3-D copies done by a kernel instead of the copy engine: the
// destination device's threads load from the source (same device, or a peer
// reachable over NVLink) and store to the destination. Faster than
// cudaMemcpy2D/3D for strided device-to-device boxes (bench/gpu/gpu_bench).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace bbmm {

// Enqueues the copy of `depth` planes of `height` rows of `width` bytes on
// `stream` (whose device must be able to read `src` and write `dst`).
cudaError_t launch_copy_kernel(char* dst, size_t dst_row, size_t dst_slice, const char* src,
                               size_t src_row, size_t src_slice, size_t width, size_t height,
                               size_t depth, cudaStream_t stream);

// One rectangle of a batched kernel copy: `depth` planes of `height` rows of
// `width` bytes, from `src` (rows `src_row` bytes apart, planes `src_slice`)
// to `dst` (likewise).
struct CopyKernelOp {
  char* dst;
  const char* src;
  size_t dst_row, dst_slice, src_row, src_slice;
  size_t width, height, depth;
};

// Enqueues the copies of `ops[0..count)` on `stream` as few kernel launches
// (one per kCopyKernelBatchOps rectangles; rectangles are passed by value in
// the kernel's parameters, so nothing is staged in device memory). The
// rectangles must not overlap one another's destinations. The stream's device
// must be able to read every source and write every destination.
inline constexpr size_t kCopyKernelBatchOps = 48;
cudaError_t launch_copy_kernel_batch(const CopyKernelOp* ops, size_t count, cudaStream_t stream);

// Loads the copy kernels on the current device now (cudaFuncGetAttributes of
// each). Under CUDA's lazy module loading, the first launch of a kernel waits
// until its device is idle; loading them when the backend starts keeps that wait
// off the issue workers.
cudaError_t preload_copy_kernels();

}  // namespace bbmm
