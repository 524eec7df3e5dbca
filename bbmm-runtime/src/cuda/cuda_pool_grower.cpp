#include "cuda/cuda_pool_grower.h"

#include <algorithm>

#include "cuda/cuda_status.h"

namespace bbmm {

PoolGrower::PoolGrower(int gpu, cudaMemPool_t pool, size_t limit, size_t min_headroom)
    : gpu_(gpu), pool_(pool), limit_(limit), min_headroom_(std::max<size_t>(min_headroom, 1)) {}

PoolGrower::~PoolGrower() { stop(); }

size_t PoolGrower::headroom(size_t in_use) const {
  return std::max(min_headroom_, in_use / 4);
}

absl::Status PoolGrower::start() {
  BBMM_CUDA(cudaSetDevice(gpu_));
  int least = 0, greatest = 0;
  BBMM_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  BBMM_CUDA(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, least));
  (void)grow_if_short();  // a GPU short of memory is not an error here
  thread_ = std::thread([this] { run(); });
  return absl::OkStatus();
}

void PoolGrower::add_in_use(int64_t delta) {
  const int64_t now = in_use_.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (delta <= 0 || !thread_.joinable()) return;
  const size_t in_use = static_cast<size_t>(std::max<int64_t>(now, 0));
  if (in_use + headroom(in_use) / 2 <= reserved_seen_.load(std::memory_order_relaxed)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (wake_) return;  // already asked
    wake_ = true;
  }
  cv_.notify_one();
}

void PoolGrower::stop() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  if (stream_ != nullptr) {
    (void)cudaSetDevice(gpu_);
    (void)cudaStreamDestroy(stream_);
    stream_ = nullptr;
    (void)cudaGetLastError();
  }
}

void PoolGrower::run() {
  if (cudaSetDevice(gpu_) != cudaSuccess) {
    (void)cudaGetLastError();
    return;  // allocations then grow the pool themselves, as without a grower
  }
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return wake_ || stop_; });
      if (stop_) return;
      wake_ = false;  // an allocation after this point asks again
    }
    // Several steps when the allocations ran ahead by more than a headroom.
    for (int step = 0; step < 64 && grow_if_short(); ++step) {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
  }
}

bool PoolGrower::grow_if_short() {
  uint64_t reserved = 0, used = 0;
  if (cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess ||
      cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  reserved_seen_.store(reserved, std::memory_order_relaxed);
  // The pool's own count: it also holds buffers whose free is still queued.
  const size_t in_use =
      std::max<size_t>(used, static_cast<size_t>(std::max<int64_t>(in_use_.load(), 0)));
  const size_t want = headroom(in_use);
  const size_t free_bytes = reserved > used ? reserved - used : 0;
  if (free_bytes >= want / 2 || reserved >= limit_) return false;
  const size_t bytes = std::min<size_t>(want, limit_ - reserved);
  void* p = nullptr;
  if (cudaMallocFromPoolAsync(&p, bytes, pool_, stream_) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  // Freed at once: the pool keeps the memory (release threshold raised).
  // Synchronising makes the free complete, so that allocations on other
  // streams may take the block (the pool's opportunistic reuse).
  if (cudaFreeAsync(p, stream_) != cudaSuccess || cudaStreamSynchronize(stream_) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  if (cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess) {
    reserved_seen_.store(reserved, std::memory_order_relaxed);
  } else {
    (void)cudaGetLastError();
  }
  return true;
}

}  // namespace bbmm
