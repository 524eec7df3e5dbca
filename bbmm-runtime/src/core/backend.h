// The one interface between the runtime core and a device backend (host
// simulation, CUDA, OpenCL). The core never includes a backend's headers.
//
// Every asynchronous operation takes the events it must wait for and returns
// the event of its own completion (Legion Realm style). Operations are ordered
// ONLY by those events: a backend may run the operations of one device
// concurrently and in any order (CUDA: a compute stream and several copy
// streams per GPU; the host backend: one or several worker queues per
// device). The runtime core tracks every hazard (read after write, write after
// read, write after write, reuse after free) with events.
//
// No method blocks on device work except EventState::wait() and
// synchronize(): allocate, free, copy, copy_batch, launch and record return
// once the operation is issued (a backend may hand it to a worker thread).
//
// Thread-safety: a Backend's methods may be called from several host threads
// at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bbmm/bbmm.h"

namespace bbmm {

class Tracer;

// Where a copy endpoint lives: the host or device `0..device_count()-1`.
inline constexpr int kHost = -1;

// Backend-specific state of one event. `query` and `wait` are called from
// host threads.
class EventState {
 public:
  virtual ~EventState() = default;
  // True once the operation has completed (successfully or not).
  virtual bool query() const = 0;
  // Blocks the calling host thread until completion; returns the operation's
  // error, if it failed.
  virtual absl::Status wait() const = 0;
  // The in-order queue the operation ran on (nullptr: unknown) and its
  // position there: operations of one queue complete in that order. Plain
  // fields, not virtual calls: the hazard lists compare them for every pair
  // of events on the tile path.
  const void* queue() const { return queue_; }
  uint64_t sequence() const { return sequence_; }
  // True when this operation's completion implies `other`'s (both on one
  // in-order queue, `other` earlier). Lets hazard lists drop entries.
  bool implies(const EventState& other) const {
    return queue_ != nullptr && queue_ == other.queue_ && sequence_ >= other.sequence_;
  }

 protected:
  // Sets the queue and position; only before the state is shared (an Event
  // handed out), since readers do not synchronise with it.
  void set_queue(const void* queue, uint64_t sequence) {
    queue_ = queue;
    sequence_ = sequence;
  }

 private:
  const void* queue_ = nullptr;
  uint64_t sequence_ = 0;
};

// Completion of an asynchronous operation. A default Event is already
// complete. Cheap to copy.
class Event {
 public:
  Event() = default;
  explicit Event(std::shared_ptr<const EventState> s) : state_(std::move(s)) {}
  bool done() const { return state_ == nullptr || state_->query(); }
  absl::Status wait() const { return state_ == nullptr ? absl::OkStatus() : state_->wait(); }
  const EventState* state() const { return state_.get(); }

 private:
  std::shared_ptr<const EventState> state_;
};

// Device memory as the backend sees it: `base` is a device pointer (CUDA, the
// host simulation) or a cl_mem (OpenCL); `offset` bytes into it. `ready`
// (from allocate) completes when the memory may be used by operations that
// wait for it (CUDA: the stream-ordered allocation is visible to every
// stream); a default Event is complete at once.
struct DeviceBuffer {
  void* base = nullptr;
  size_t offset = 0;
  size_t bytes = 0;
  Event ready;
};

// One side of a rectangular copy: the bytes at `offset` from `base`, rows
// `row_pitch` bytes apart, planes `slice_pitch` bytes apart. `base` is a host
// pointer when `device == kHost`, else DeviceBuffer::base of that device.
struct Endpoint {
  int device = kHost;
  void* base = nullptr;
  size_t offset = 0;
  size_t row_pitch = 0;
  size_t slice_pitch = 0;
};

// A 3-D block of `depth` planes of `height` rows of `width_bytes` bytes.
struct CopyShape {
  size_t width_bytes = 0;
  size_t height = 1;
  size_t depth = 1;
};

// One rectangular copy of a batch (Backend::copy_batch).
struct CopyOp {
  Endpoint dst;
  Endpoint src;
  CopyShape shape;
};

// What a launched callable receives: {device, queue} with queue the
// cudaStream_t (CUDA), cl_command_queue (OpenCL) or nullptr (host). The C API's
// own struct, so that the user's launch function reaches the backend as it
// was given (no wrapper, no allocation per launch).
using LaunchContext = bbmm_launch_info;

enum class BackendKind { kHost, kCuda, kOpenCL };

class Backend {
 public:
  virtual ~Backend() = default;

  virtual BackendKind kind() const = 0;
  virtual std::string name() const = 0;
  virtual int device_count() const = 0;
  // Bytes the device can still hand out (the capacity limit for simulated
  // devices). The core keeps its own exact accounting on top.
  virtual size_t free_memory(int device) const = 0;
  // Bytes each row of an allocation should be padded to (1 = none).
  virtual size_t pitch_alignment() const { return 1; }
  // True when `dst` can copy directly from `src` without the host.
  virtual bool can_access_peer(int dst, int src) const = 0;

  // Allocates `bytes` on `device`; the result's `ready` event says when the
  // memory may be used. Fails with kResourceExhausted when the device is full
  // (the core then evicts and retries), other codes otherwise.
  virtual absl::StatusOr<DeviceBuffer> allocate(int device, size_t bytes) = 0;
  // Frees `buffer` once `after` has completed. Its bytes count as free at
  // once (free_memory, allocate).
  virtual absl::Status free(int device, const DeviceBuffer& buffer, std::span<const Event> after) = 0;

  // Copies `shape` from `src` to `dst` after `wait`: host->device,
  // device->host, within a device, or between devices (peer, or staged
  // through host memory when the devices cannot reach each other).
  virtual absl::StatusOr<Event> copy(const Endpoint& dst, const Endpoint& src,
                                     const CopyShape& shape, std::span<const Event> wait) = 0;

  // Copies every op of `ops` after `wait`; the event completes when all have.
  // The ops may run in any order or concurrently, so no op may write bytes
  // another op reads or writes. Every op has the same source device and the
  // same destination device. On error nothing of the batch is still running.
  // Default: the ops one after another through copy(), each waiting for the
  // previous one.
  virtual absl::StatusOr<Event> copy_batch(std::span<const CopyOp> ops,
                                           std::span<const Event> wait);

  // Runs `fn` on `device` after `wait`; the event completes when what `fn`
  // enqueued on ctx.queue has. On the host backend `fn` is the kernel itself;
  // on CUDA and OpenCL it enqueues kernels on ctx.queue. `fn` may run on
  // another host thread (a device worker), after launch() has returned: it
  // must own what it captures.
  virtual absl::StatusOr<Event> launch(int device, std::function<void(const LaunchContext&)> fn,
                                       std::span<const Event> wait) = 0;

  // Tells the backend that `bytes` at `host` are a registered array that
  // copies will read and write, so it can pin them (CUDA page-locks them for
  // full-speed DMA). `unregister_host` undoes it. Default: nothing to do.
  virtual absl::Status register_host(void* host, size_t bytes) {
    (void)host;
    (void)bytes;
    return absl::OkStatus();
  }
  virtual absl::Status unregister_host(void* host) {
    (void)host;
    return absl::OkStatus();
  }
  // True when copies of the registered array at `host` pass through a host-side
  // copy (CUDA: staged, not pinned): host bandwidth shared by every device, so
  // a box a peer device is already reading in is better taken from that peer.
  // Default: false (copies from the host cost the device's own link only).
  virtual bool host_copies_staged(const void* host) const {
    (void)host;
    return false;
  }

  // An event that completes when everything issued to `device` so far has
  // (on every queue of the device).
  virtual absl::StatusOr<Event> record(int device) = 0;
  // Blocks until everything issued to `device` has completed; returns the
  // first error of a failed operation since the last synchronize.
  virtual absl::Status synchronize(int device) = 0;

  // Where backends report copies, kernels and frees as they run on the
  // devices (may be null). The runtime calls flush_trace() after
  // synchronize() of every device and before writing the trace, so a backend
  // that learns device timings late (CUDA timing events) reports them then.
  virtual void set_tracer(Tracer* tracer) { tracer_ = tracer; }
  virtual void flush_trace() {}

  // What creating the backend cost, phase by phase ("contexts 0.120 s, ..."),
  // for the statistics; empty when the backend has nothing to say.
  virtual std::string creation_report() const { return {}; }

 protected:
  Tracer* tracer_ = nullptr;
};

}  // namespace bbmm
