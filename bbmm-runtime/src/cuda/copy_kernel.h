// A rectangular 3-D copy done by a kernel instead of the copy engine: the
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

}  // namespace bbmm
