// The CUDA streams of one logical device.
//
// - compute: the user's kernels (LaunchContext::queue), default priority;
// - h2d.k, d2h.k: host-to-device and device-to-host copies, `copies` of each,
//   used round-robin by the issue worker so that the fixed cost of one copy
//   overlaps with the next one on another copy engine;
// - d2d.k: copies INTO this device from itself or from a peer (a copy
//   between two devices runs on the destination's streams), round-robin;
// - memory: cudaMallocAsync / cudaFreeAsync (stream-ordered allocator);
// - join: where record() gathers every other stream;
// - trace: idle, used only for the tracer's reference event.
// Copy streams run at the greatest priority, so that a copy another device
// waits for is not queued behind a long kernel's blocks. All streams are
// cudaStreamNonBlocking: nothing orders them but events.
//
// Thread-safety: the streams themselves may be used from any thread; a
// slot's bookkeeping fields (seq, last, joined_seq, alloc_gen_seen) belong to
// the device's issue worker, except the memory slot's `seq`, guarded by
// `memory_mu` (allocate() records on the memory stream from the caller's
// thread).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cuda/cuda_events.h"
#include "cuda/cuda_staging.h"

namespace bbmm {

// The staging pipeline of a host<->device copy stream (cuda_staging.h):
// kStagingSlots pinned buffers of `bytes` each, a stream of its own
// for the host functions that pack or unpack them, and the events that order
// a buffer's reuse between the two streams.
struct StagingLane {
  cudaStream_t stream = nullptr;
  char* buffer[kStagingSlots] = {};
  size_t bytes = 0;  // of each buffer
  // Recorded on the copy stream where a multi-round staged copy starts (the
  // lane's first host function waits for it: for what the copy waits for,
  // and for the buffers' previous uses).
  cudaEvent_t start = nullptr;
  // moved[b]: recorded on the copy stream after the copies of the latest
  // round through buffer b; staged[b]: on the lane after its host function.
  cudaEvent_t moved[kStagingSlots] = {};
  cudaEvent_t staged[kStagingSlots] = {};
  bool ready() const { return buffer[0] != nullptr; }
};

struct StreamSlot {
  cudaStream_t stream = nullptr;
  StreamKey key = 0;
  std::string name;  // for the trace: "compute", "h2d.0", ...
  // Number of completion events recorded on the stream so far; an event's
  // sequence number orders it among the events of its stream.
  uint64_t seq = 0;
  // `seq` when the join stream last waited for the stream (record()).
  uint64_t joined_seq = 0;
  // The device's allocation generation this stream has waited for
  // (CudaBackendOptions::wait_for_allocations).
  uint64_t alloc_gen_seen = 0;
  // Copy streams to or from the host: the pipeline staged copies of
  // pageable host memory go through (cuda_staging.h), made by
  // allocate_staging; freed by destroy().
  StagingLane lane;
  // Commands assigned to the stream at enqueue (guarded by the worker's
  // queue mutex): the order of their events on it, known before they are
  // issued (EventState::queue/sequence), so that the runtime core can tell
  // that one event implies another. Every assigned command records its
  // completion event on the stream, failed ones too, so this is the order in
  // which they complete. Written by the threads that enqueue, on a cache
  // line of its own: the fields above are the issue worker's, and sharing a
  // line with them would cost each enqueue a transfer of that line.
  alignas(64) uint64_t order = 0;
};

class DeviceStreams {
 public:
  DeviceStreams() = default;
  DeviceStreams(const DeviceStreams&) = delete;
  DeviceStreams& operator=(const DeviceStreams&) = delete;
  // Destroys the streams (see destroy()).
  ~DeviceStreams() { destroy(); }

  // Creates the streams of logical device `device` on GPU `gpu`, `copies`
  // per copy direction; their keys are unique to backend `backend_id`. The
  // calling thread's current device must be `gpu`. Staging lanes, when made,
  // get buffers of `staging_buffer_bytes` each.
  absl::Status create(uint32_t backend_id, int device, int gpu, int copies,
                      size_t staging_buffer_bytes);
  // Waits for and destroys every stream and frees the staging buffers
  // (errors are ignored: used on teardown). Idempotent.
  void destroy();
  // Makes the staging lane (buffers pinned and mapped, stream, events) of
  // every host-to-device and device-to-host stream that has none yet; the
  // calling thread's current device must be the streams' GPU.
  absl::Status allocate_staging();
  // cudaStreamSynchronize of every stream; the first error.
  absl::Status synchronize_all();
  // Every stream that operations are issued on (not join or trace).
  const std::vector<StreamSlot*>& work_slots() const { return work_; }

  StreamSlot compute;
  std::vector<StreamSlot> h2d, d2h, d2d;
  StreamSlot memory;
  StreamSlot join;
  StreamSlot trace;
  // Guards issuing on the memory stream and its `seq` (allocate on callers'
  // threads, free on the worker).
  std::mutex memory_mu;

 private:
  std::vector<StreamSlot*> work_;
  bool created_ = false;
  size_t staging_buffer_bytes_ = kStagingBufferBytes;
};

}  // namespace bbmm
