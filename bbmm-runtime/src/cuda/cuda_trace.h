// Device-side timings of a logical device's operations for the Tracer.
//
// When a tracer is set, the issue worker brackets every operation with two
// timing events (pooled separately from the completion events, which have
// timing disabled) recorded on the operation's stream; flush() later turns
// each pair into Tracer::slice(device, name, start, duration, args). GPU times
// become host times through a reference: one timing event recorded on the
// device's idle trace stream and synchronised once, with the tracer's clock
// read just before and after (their midpoint is taken as the event's host
// time: the idle stream runs the event at once). Each record keeps the
// reference it was recorded against, so that the reference can be renewed
// (cudaEventElapsedTime's float milliseconds lose microseconds after a few
// hours) while older records are pending.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cuda/cuda_events.h"

namespace bbmm {

class Tracer;

// A GPU timestamp with its host time on a tracer's clock.
struct TimingRef {
  TimingRef(std::shared_ptr<GpuShared> g, cudaEvent_t e, int64_t us)
      : gpu(std::move(g)), event(e), host_us(us) {}
  ~TimingRef() { gpu->timing.put(event); }
  TimingRef(const TimingRef&) = delete;
  TimingRef& operator=(const TimingRef&) = delete;

  std::shared_ptr<GpuShared> gpu;
  cudaEvent_t event;
  int64_t host_us;
};

// One traced operation whose timing events are recorded.
struct TraceRecord {
  Tracer* tracer = nullptr;
  const char* name = "";  // "kernel", "copy H2D", ...
  std::string args;       // body of the slice's JSON args object
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
  std::shared_ptr<const TimingRef> ref;
};

class DeviceTrace {
 public:
  DeviceTrace(int device, std::shared_ptr<GpuShared> gpu) : device_(device), gpu_(std::move(gpu)) {}
  // Returns the timing events of records never flushed to their pool.
  ~DeviceTrace();
  DeviceTrace(const DeviceTrace&) = delete;
  DeviceTrace& operator=(const DeviceTrace&) = delete;

  // Takes a new reference for `tracer` on the idle stream `stream` (records
  // a timing event, synchronises it, reads tracer->now_us() around that) and
  // makes it current. The calling thread's current device must be the GPU.
  absl::Status take_reference(Tracer* tracer, cudaStream_t stream);
  // The current reference (null before take_reference and after clear()).
  std::shared_ptr<const TimingRef> reference() const;
  // Host microseconds since the current reference was taken (0 without one).
  int64_t reference_age_us(Tracer* tracer) const;

  // Records a timing event on `stream` into `*ev` (from the GPU's timing
  // pool; the calling thread's current device must be the GPU).
  cudaError_t stamp(cudaStream_t stream, cudaEvent_t* ev);
  // Adds `r` to the records awaiting flush().
  void add(TraceRecord r);
  size_t pending() const;

  // Turns every record whose end event has completed into a slice of its
  // tracer; keeps the others, or with `drop_incomplete` drops them (when the
  // tracer changes: the old one may be gone by the time they complete).
  void flush(bool drop_incomplete);
  // Drops the reference (tracing off).
  void clear_reference();

 private:
  void release(TraceRecord& r);

  const int device_;
  std::shared_ptr<GpuShared> gpu_;
  mutable std::mutex mu_;
  std::vector<TraceRecord> pending_;
  std::shared_ptr<const TimingRef> ref_;
};

}  // namespace bbmm
