// Keeps free memory in a GPU's stream-ordered pool ahead of the allocations,
// so that the application thread's cudaMallocAsync is a pool hit and never
// the call that grows the pool.
//
// Why: growing a pool maps new physical memory (for every GPU the pool is
// accessible to), and the driver may first wait for the pool's pending frees
// — which in a busy run wait for kernels, possibly on another GPU. On two
// H200s (2026-11-26, run 2) an allocate() that grew device 0's pool blocked
// the application thread until device 1's kernel ended
// (CudaBackendTest.NoCallBlocksOnDeviceWork). The grower does that growing
// on its own thread, where a wait holds nobody.
//
// What it keeps: free pool bytes (ReservedMemCurrent - UsedMemCurrent) of at
// least `headroom(in_use)` = max(min_headroom, in_use / 4), never reserving
// beyond `limit` (the GPU's capacity as the backend counts it). start()
// primes the pool with min_headroom before any work is queued; afterwards
// add_in_use() (from allocate and free) wakes the thread when the bytes in
// use come within half a headroom of what it last saw reserved, and the
// thread grows the pool by one headroom-sized allocation freed at once (the
// pool keeps it: its release threshold is raised, cuda_topology.h). An
// allocation larger than the headroom, or faster than the thread, still
// grows the pool on the caller's thread, as without the grower.
//
// Memory cost: the pool holds up to in_use + headroom bytes of the GPU
// (1.25x the bytes in use, or 64 MiB more by default); the backend trims the
// pool when it is destroyed.
//
// Thread-safety: add_in_use may be called from any thread; start and stop
// from the owning thread, once each.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

#include "absl/status/status.h"

namespace bbmm {

class PoolGrower {
 public:
  // `pool` of GPU `gpu`; `limit`: reserve no more than this many bytes;
  // `min_headroom` (> 0) the free bytes kept at least.
  PoolGrower(int gpu, cudaMemPool_t pool, size_t limit, size_t min_headroom);
  ~PoolGrower();
  PoolGrower(const PoolGrower&) = delete;
  PoolGrower& operator=(const PoolGrower&) = delete;

  // Creates the grower's stream, primes the pool (on the calling thread, which
  // must have no work on this GPU in flight worth not waiting for) and starts
  // the thread. The failing CUDA call's status otherwise.
  absl::Status start();
  // The GPU's bytes in use changed by `delta` (allocate: +, free: -).
  void add_in_use(int64_t delta);
  // Ends the thread (after its current growth) and destroys the stream.
  void stop();


 private:
  // The free bytes the grower keeps when `in_use` bytes are in use.
  size_t headroom(size_t in_use) const;
  void run();
  // Grows the pool by one headroom when its free bytes are under half a
  // headroom. True when it grew; false when it needed not, or a CUDA call
  // failed (a GPU short of memory: the thread then waits for the next
  // allocation, which grows the pool itself if it must).
  bool grow_if_short();

  const int gpu_;
  const cudaMemPool_t pool_;
  const size_t limit_;
  const size_t min_headroom_;
  cudaStream_t stream_ = nullptr;
  std::thread thread_;

  std::atomic<int64_t> in_use_{0};
  // ReservedMemCurrent as last seen by the thread (or start).
  std::atomic<uint64_t> reserved_seen_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  bool wake_ = false;  // under mu_
  bool stop_ = false;  // under mu_
};

}  // namespace bbmm
