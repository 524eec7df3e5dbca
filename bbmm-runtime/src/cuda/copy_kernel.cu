#include <cstdint>

#include "cuda/copy_kernel.h"

namespace bbmm {
namespace {

// One block per group of rows; threads stride over the row in units of V.
template <typename V>
__global__ void copy_rows(char* dst, size_t dst_row, size_t dst_slice, const char* src,
                          size_t src_row, size_t src_slice, size_t units, size_t height,
                          size_t rows) {
  for (size_t r = blockIdx.x * static_cast<size_t>(blockDim.y) + threadIdx.y; r < rows;
       r += static_cast<size_t>(gridDim.x) * blockDim.y) {
    const size_t z = r / height, y = r % height;
    const V* s = reinterpret_cast<const V*>(src + z * src_slice + y * src_row);
    V* d = reinterpret_cast<V*>(dst + z * dst_slice + y * dst_row);
    for (size_t x = threadIdx.x; x < units; x += blockDim.x) d[x] = s[x];
  }
}

template <typename V>
cudaError_t launch(char* dst, size_t dst_row, size_t dst_slice, const char* src, size_t src_row,
                   size_t src_slice, size_t width, size_t height, size_t depth,
                   cudaStream_t stream) {
  const size_t units = width / sizeof(V), rows = height * depth;
  // Narrow rows: several rows per block so that every warp has work.
  unsigned tx = 32;
  while (tx < 256 && tx < units) tx *= 2;
  const unsigned ty = 256 / tx;
  size_t blocks = (rows + ty - 1) / ty;
  if (blocks > 65535u * 16u) blocks = 65535u * 16u;
  copy_rows<V><<<static_cast<unsigned>(blocks), dim3(tx, ty), 0, stream>>>(
      dst, dst_row, dst_slice, src, src_row, src_slice, units, height, rows);
  return cudaPeekAtLastError();
}

bool aligned(size_t a, size_t n) { return a % n == 0; }

}  // namespace

cudaError_t launch_copy_kernel(char* dst, size_t dst_row, size_t dst_slice, const char* src,
                               size_t src_row, size_t src_slice, size_t width, size_t height,
                               size_t depth, cudaStream_t stream) {
  const size_t all = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) |
                     dst_row | src_row | width | (depth > 1 ? (dst_slice | src_slice) : 0);
  if (aligned(all, 16)) {
    return launch<uint4>(dst, dst_row, dst_slice, src, src_row, src_slice, width, height, depth, stream);
  }
  if (aligned(all, 8)) {
    return launch<uint2>(dst, dst_row, dst_slice, src, src_row, src_slice, width, height, depth, stream);
  }
  if (aligned(all, 4)) {
    return launch<unsigned>(dst, dst_row, dst_slice, src, src_row, src_slice, width, height, depth, stream);
  }
  return launch<unsigned char>(dst, dst_row, dst_slice, src, src_row, src_slice, width, height,
                               depth, stream);
}

}  // namespace bbmm
