// Events of the CUDA backend.
//
// An operation's Event is handed to the caller when the operation is
// enqueued, before the device's issue worker has recorded any CUDA event for
// it (cuda_worker.h). So the event's state (CudaOpEvent) starts "pending" and
// the worker later publishes "issued" (with the recorded cudaEvent_t, the
// stream and the event's sequence number on that stream) or "failed" (with
// the status; with a cudaEvent_t too when part of the operation was issued
// before it failed). Until then, host waits block on the GPU's IssueSignal
// and workers of other devices wait the same way before they make a stream
// wait for it: a cudaStreamWaitEvent on an event not yet recorded would wait
// for an earlier use of the pooled cudaEvent_t instead.
//
// cudaEvent_t objects are pooled per GPU (EventPool): creating one costs as
// much as issuing a small copy, and an event can only be recorded on streams
// of the GPU it was created on.
//
// Thread-safety: EventPool, IssueSignal and CudaOpEvent may be used from any
// thread; mark_issued/mark_failed are called once, by the issuing thread.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "core/backend.h"

namespace bbmm {

// Identifies one stream of one backend (cuda_streams.h makes them): events of
// one stream complete in the order they were recorded.
using StreamKey = uint64_t;

// A free list of cudaEvent_t of GPU `gpu`, all created with `flags`.
class EventPool {
 public:
  EventPool(int gpu, unsigned flags) : gpu_(gpu), flags_(flags) {}
  // Destroys the pooled events. Events still in use cannot exist then: each
  // owner (CudaOpEvent, via GpuShared) keeps the pool alive.
  ~EventPool();
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  // Takes an event into `*out`, creating one on the pool's GPU when the list
  // is empty (the calling thread's current device is restored).
  cudaError_t get(cudaEvent_t* out);
  // Returns `e` to the pool. Safe although `e` may still be pending on the
  // GPU: a stream that waited for it captured that recording, and the next
  // owner records it anew.
  void put(cudaEvent_t e);
  // Creates events until `n` are in the list, so that get() creates none on
  // the hot path.
  cudaError_t reserve(size_t n);

 private:
  cudaError_t create(cudaEvent_t* out);
  const int gpu_;
  const unsigned flags_;
  std::mutex mu_;
  std::vector<cudaEvent_t> free_;
};

// Wakes host threads that wait for a CudaOpEvent to be issued. The issuer
// only takes the lock when somebody waits (a seq_cst store of the state
// followed by a seq_cst load of `waiters` on the issuer side, the converse on
// the waiter side, so one of them always sees the other).
struct IssueSignal {
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<int> waiters{0};

  void notify();
};

// What the events of one GPU share; owned jointly by the backend and every
// event, so that events may outlive the backend.
struct GpuShared {
  explicit GpuShared(int g)
      : gpu(g), events(g, cudaEventDisableTiming), timing(g, cudaEventDefault) {}
  const int gpu;
  EventPool events;  // completion and ready events (no timing: cheaper)
  EventPool timing;  // trace timestamps (cuda_trace.h)
  IssueSignal signal;
};

// The state of one operation's Event.
class CudaOpEvent final : public EventState {
 public:
  explicit CudaOpEvent(std::shared_ptr<GpuShared> gpu) : gpu_(std::move(gpu)) {}
  // Returns the cudaEvent_t to its GPU's pool.
  ~CudaOpEvent() override;

  // False while pending; then cudaEventQuery of the recorded event (an error
  // of the query counts as completion: wait() reports it); true for an
  // operation that failed before issuing anything.
  bool query() const override;
  // queue() is the stream the operation was assigned to at enqueue (a key,
  // not a pointer; nullptr when not assigned), sequence() its place there.
  // Called once, when the command is enqueued and before the Event is handed
  // out: the operation is the `order`-th of stream `key`.
  void set_order(StreamKey key, uint64_t order) {
    set_queue(reinterpret_cast<const void*>(static_cast<uintptr_t>(key) + 1), order);
  }
  // Blocks until issued, then cudaEventSynchronize; returns the operation's
  // error when it failed, or the error of the synchronisation.
  absl::Status wait() const override;

  // Issuer side. Publishes that the operation was issued and that `ev` was
  // recorded on stream `key` after it, as that stream's `seq`-th event.
  void mark_issued(cudaEvent_t ev, StreamKey key, uint64_t seq);
  // Publishes that the operation failed with `error`. `ev`, when not null, was
  // recorded on stream `key` (as its `seq`-th event) after what the operation
  // issued before it failed, so that frees can still wait for that part.
  void mark_failed(absl::Status error, cudaEvent_t ev, StreamKey key, uint64_t seq);

  // Waiter side: blocks until mark_issued or mark_failed has happened.
  void wait_issued() const;
  // The accessors below are valid once wait_issued() returned (or issued()
  // was true).
  bool issued() const { return state_.load(std::memory_order_acquire) != 0; }
  bool failed() const { return (state_.load(std::memory_order_acquire) & kFailed) != 0; }
  bool has_cuda_event() const { return (state_.load(std::memory_order_acquire) & kHasEvent) != 0; }
  // True once a query or wait saw the CUDA event complete.
  bool known_complete() const { return (state_.load(std::memory_order_acquire) & kComplete) != 0; }
  void set_complete() const { state_.fetch_or(kComplete, std::memory_order_acq_rel); }
  cudaEvent_t cuda_event() const { return ev_; }
  StreamKey stream() const { return key_; }
  uint64_t seq() const { return seq_; }
  const absl::Status& error() const { return error_; }

 private:
  enum : uint8_t { kIssued = 1, kFailed = 2, kHasEvent = 4, kComplete = 8 };
  void publish(uint8_t bits);

  std::shared_ptr<GpuShared> gpu_;
  // The fields below are the issuer's (written once, at the issue); those
  // above and the reference counts before them are the enqueueing thread's
  // (read by the hazard lists on every operation): apart by a cache line, so
  // that the issue does not take the line the enqueueing thread keeps using.
  char apart_[64] = {};
  mutable std::atomic<uint8_t> state_{0};
  // Written once by the issuer before the state is published (release), read
  // after it is seen (acquire).
  cudaEvent_t ev_ = nullptr;
  StreamKey key_ = 0;
  uint64_t seq_ = 0;
  absl::Status error_;
};

// The CUDA state of `e`, or null for a default (complete) Event or an event
// of another kind of backend.
inline const CudaOpEvent* cuda_op_event(const Event& e) {
  return dynamic_cast<const CudaOpEvent*>(e.state());
}

}  // namespace bbmm
