// Which GPU each logical device runs on, which GPUs reach each other, and
// the per-GPU stream-ordered memory pools: set up once by the backend's init.
//
// Thread-safety: read-only after setup_topology, so any thread may read it.
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "absl/status/status.h"

namespace bbmm {

struct CudaTopology {
  // gpu_of[d]: the GPU of logical device d (d % visible GPUs).
  std::vector<int> gpu_of;
  // GPUs in use (min(logical devices, visible GPUs)).
  int gpu_count = 0;
  // peer[dst_gpu * gpu_count + src_gpu]: peer access from `dst_gpu` to
  // `src_gpu`'s memory is enabled (false on the diagonal).
  std::vector<char> peer;
  // pool[g]: GPU g's default memory pool.
  std::vector<cudaMemPool_t> pool;
  // Every GPU reaches registered host memory at its host address
  // (cudaDevAttrCanUseHostPointerForRegisteredMem). Where one does not,
  // cudaMemcpy3DBatchAsync must not be given host pointers.
  bool host_pointers_ok = true;

  int device_count() const { return static_cast<int>(gpu_of.size()); }
  // True when logical device `dst` can read and write `src`'s memory
  // directly: same GPU, or peer access enabled. Devices must be valid.
  bool can_access_peer(int dst, int src) const {
    const int a = gpu_of[dst], b = gpu_of[src];
    return a == b || peer[static_cast<size_t>(a) * gpu_count + b] != 0;
  }
};

// Creates the primary contexts of GPUs 0..n-1 at once, one thread each
// (cudaSetDevice creates a GPU's context since CUDA 12, a tenth of a second
// or more per GPU; one after another they made a second GPU cost as much
// again at every start).
absl::Status create_contexts(int n);

// Maps `count` logical devices onto `visible` GPUs, raises each GPU's pool
// release threshold (freed memory stays in the pool: allocation is a pool
// hit, not a trip to the driver), enables peer access between every pair of
// GPUs that supports it when `peer_access` (else none: copies between GPUs
// then go through the host), and makes each pool's memory accessible to the
// GPUs that can reach it (peer access does not cover stream-ordered pools).
// Leaves GPU 0 current.
absl::Status setup_topology(int count, int visible, bool peer_access, CudaTopology* out);

}  // namespace bbmm
