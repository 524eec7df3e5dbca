#include "cuda/cuda_events.h"

#include <chrono>

#include "core/slow_calls.h"
#include "cuda/cuda_status.h"

namespace bbmm {

EventPool::~EventPool() {
  // Errors are ignored: at process exit the CUDA runtime may be gone already.
  for (cudaEvent_t e : free_) (void)cudaEventDestroy(e);
}

cudaError_t EventPool::create(cudaEvent_t* out) {
  int current = -1;
  cudaError_t e = cudaGetDevice(&current);
  if (e != cudaSuccess) return e;
  if (current != gpu_ && (e = cudaSetDevice(gpu_)) != cudaSuccess) return e;
  e = cudaEventCreateWithFlags(out, flags_);
  if (current != gpu_) {
    const cudaError_t back = cudaSetDevice(current);
    if (e == cudaSuccess) e = back;
  }
  return e;
}

cudaError_t EventPool::get(cudaEvent_t* out) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      *out = free_.back();
      free_.pop_back();
      return cudaSuccess;
    }
  }
  return create(out);
}

void EventPool::put(cudaEvent_t e) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(e);
}

cudaError_t EventPool::reserve(size_t n) {
  std::vector<cudaEvent_t> made;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() >= n) return cudaSuccess;
    n -= free_.size();
  }
  made.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    cudaEvent_t e;
    const cudaError_t err = create(&e);
    if (err != cudaSuccess) {
      for (cudaEvent_t m : made) put(m);
      return err;
    }
    made.push_back(e);
  }
  std::lock_guard<std::mutex> lock(mu_);
  free_.insert(free_.end(), made.begin(), made.end());
  return cudaSuccess;
}

void IssueSignal::notify() {
  if (waiters.load(std::memory_order_seq_cst) == 0) return;
  // Taking the lock orders this notification after a waiter's predicate
  // check: it either saw the new state or is inside cv.wait already.
  { std::lock_guard<std::mutex> lock(mu); }
  cv.notify_all();
}

CudaOpEvent::~CudaOpEvent() {
  if (ev_ != nullptr) gpu_->events.put(ev_);
}

void CudaOpEvent::publish(uint8_t bits) {
  state_.store(bits, std::memory_order_seq_cst);
  gpu_->signal.notify();
}

void CudaOpEvent::mark_issued(cudaEvent_t ev, StreamKey key, uint64_t seq) {
  ev_ = ev;
  key_ = key;
  seq_ = seq;
  publish(kIssued | kHasEvent);
}

void CudaOpEvent::mark_failed(absl::Status error, cudaEvent_t ev, StreamKey key, uint64_t seq) {
  error_ = std::move(error);
  ev_ = ev;
  key_ = key;
  seq_ = seq;
  publish(static_cast<uint8_t>(kIssued | kFailed | (ev != nullptr ? kHasEvent : 0)));
}

void CudaOpEvent::wait_issued() const {
  if (state_.load(std::memory_order_acquire) != 0) return;
  IssueSignal& s = gpu_->signal;
  s.waiters.fetch_add(1, std::memory_order_seq_cst);
  {
    std::unique_lock<std::mutex> lock(s.mu);
    s.cv.wait(lock, [this] { return state_.load(std::memory_order_seq_cst) != 0; });
  }
  s.waiters.fetch_sub(1, std::memory_order_seq_cst);
}

bool CudaOpEvent::query() const {
  const uint8_t st = state_.load(std::memory_order_acquire);
  if (st == 0) return false;
  if ((st & kComplete) != 0 || (st & kHasEvent) == 0) return true;
  cudaError_t e;
  {
    detail::SlowScope scope("cuda: cudaEventQuery (is an operation complete?)");
    e = cudaEventQuery(ev_);
  }
  if (e == cudaErrorNotReady) return false;
  if (e == cudaSuccess) {
    set_complete();
  } else {
    // A sticky error (a kernel fault): the event will never complete
    // normally; wait() reports the error. Clear it from this thread's
    // last-error slot so that it does not surface in an unrelated check.
    (void)cudaGetLastError();
  }
  return true;
}

absl::Status CudaOpEvent::wait() const {
  wait_issued();
  const uint8_t st = state_.load(std::memory_order_acquire);
  if ((st & kHasEvent) != 0 && (st & kComplete) == 0) {
    const cudaError_t e = cudaEventSynchronize(ev_);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      // The operation's own error says more than the fault that followed.
      if ((st & kFailed) != 0) return error_;
      return cuda_status("cudaEventSynchronize", e, __FILE__, __LINE__);
    }
    set_complete();
  }
  if ((st & kFailed) != 0) return error_;
  return absl::OkStatus();
}

}  // namespace bbmm
