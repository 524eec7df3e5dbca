#include <algorithm>
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

namespace bbmm {
namespace {

struct BatchParams {
  CopyKernelOp op[kCopyKernelBatchOps];
};
// Kernel parameters are limited to 4 KiB on every toolkit we support.
static_assert(sizeof(BatchParams) <= 4000, "batch kernel parameters too large");

// Copies rectangle `o` with this block's share of rows, in units of V. The
// 256 threads form tx x ty with tx the row's unit count rounded up to a power
// of two (4..256), so that narrow rows keep every warp busy.
template <typename V>
__device__ void copy_rect_units(const CopyKernelOp& o) {
  const size_t units = o.width / sizeof(V), rows = o.height * o.depth;
  unsigned tx = 4;
  while (tx < 256 && tx < units) tx *= 2;
  const unsigned ty = 256 / tx;
  const unsigned x = threadIdx.x % tx, y = threadIdx.x / tx;
  for (size_t r = static_cast<size_t>(blockIdx.x) * ty + y; r < rows;
       r += static_cast<size_t>(gridDim.x) * ty) {
    const size_t z = r / o.height, yy = r % o.height;
    const V* s = reinterpret_cast<const V*>(o.src + z * o.src_slice + yy * o.src_row);
    V* d = reinterpret_cast<V*>(o.dst + z * o.dst_slice + yy * o.dst_row);
    for (size_t u = x; u < units; u += tx) d[u] = s[u];
  }
}

// blockIdx.y picks the rectangle; blocks stride over its rows.
__global__ void __launch_bounds__(256) copy_batch(const __grid_constant__ BatchParams p) {
  const CopyKernelOp& o = p.op[blockIdx.y];
  const size_t all = reinterpret_cast<uintptr_t>(o.dst) | reinterpret_cast<uintptr_t>(o.src) |
                     o.dst_row | o.src_row | o.width |
                     (o.depth > 1 ? (o.dst_slice | o.src_slice) : 0);
  if (all % 16 == 0) {
    copy_rect_units<uint4>(o);
  } else if (all % 8 == 0) {
    copy_rect_units<uint2>(o);
  } else if (all % 4 == 0) {
    copy_rect_units<unsigned>(o);
  } else {
    copy_rect_units<unsigned char>(o);
  }
}

// Blocks rectangle `o` can use: one per `ty` rows (as copy_rect_units
// computes ty, for the widest unit its alignment allows).
size_t blocks_for(const CopyKernelOp& o) {
  const size_t all = reinterpret_cast<uintptr_t>(o.dst) | reinterpret_cast<uintptr_t>(o.src) |
                     o.dst_row | o.src_row | o.width |
                     (o.depth > 1 ? (o.dst_slice | o.src_slice) : 0);
  const size_t unit = all % 16 == 0 ? 16 : all % 8 == 0 ? 8 : all % 4 == 0 ? 4 : 1;
  const size_t units = o.width / unit;
  size_t tx = 4;
  while (tx < 256 && tx < units) tx *= 2;
  const size_t ty = 256 / tx;
  return (o.height * o.depth + ty - 1) / ty;
}

}  // namespace

cudaError_t preload_copy_kernels() {
  cudaFuncAttributes attr;
  cudaError_t e = cudaFuncGetAttributes(&attr, copy_rows<uint4>);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&attr, copy_rows<uint2>);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&attr, copy_rows<unsigned>);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&attr, copy_rows<unsigned char>);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&attr, copy_batch);
  return e;
}

cudaError_t launch_copy_kernel_batch(const CopyKernelOp* ops, size_t count, cudaStream_t stream) {
  // Enough blocks to fill an H200 several times over; each strides further.
  constexpr size_t kMaxBlocksPerOp = 4096;
  for (size_t first = 0; first < count; first += kCopyKernelBatchOps) {
    const size_t n = std::min(kCopyKernelBatchOps, count - first);
    BatchParams p;
    size_t blocks = 1;
    for (size_t k = 0; k < n; ++k) {
      p.op[k] = ops[first + k];
      blocks = std::max(blocks, blocks_for(p.op[k]));
    }
    blocks = std::min(blocks, kMaxBlocksPerOp);
    copy_batch<<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(n)), 256, 0, stream>>>(p);
    // Get, not peek: a launch error is not sticky and is reported here.
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace bbmm
