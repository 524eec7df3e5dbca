// The host backend: N simulated devices in host memory, each with a capacity
// limit and one worker thread executing its queue in issue order. It is the
// default when no GPU is present, so the whole runtime (eviction included) runs
// and is tested on any machine.
//
// Thread-safety: every method may be called from several host threads at
// once. Operations run on the device's worker thread; a launched kernel may
// issue further operations but must not synchronize() its own device (it would
// wait for itself).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/backend.h"

namespace bbmm {

struct HostBackendOptions {
  // Number of simulated devices (>= 1).
  int devices = 4;
  // Per-device capacity; 0 = unlimited.
  size_t capacity_bytes = 0;
  // What pitch_alignment() reports (a power of two); the backend itself
  // accepts any pitch.
  size_t pitch_alignment = 1;
  // What can_access_peer() reports for two different devices. When false,
  // device-to-device copies between different devices are staged through a
  // host buffer, as a backend without peer access would.
  bool peer_access = true;
  // Fill every new allocation with 0xA5, so that reading device memory nobody
  // wrote shows up as garbage in tests. Costs a memset of each allocation on the
  // calling thread (inside acquire): off for timing runs.
  bool poison = true;
  // Worker queues per device (1..8). With 1, every operation of a device runs
  // in issue order. With more, as on a GPU with copy streams, kernels and
  // frees run on queue 0, host->device copies on queue 1, device->host on
  // queue 2 and copies between devices on queue 3 (modulo the count), so that
  // operations are ordered only by the events they wait for: tests run with
  // 4 to catch a missing event.
  int queues = 1;
};

class HostBackend : public Backend {
 public:
  // Starts one worker thread per device. `options` must be valid (see
  // make_host_backend, which checks them).
  explicit HostBackend(const HostBackendOptions& options);
  // Runs every queued operation to completion, joins the workers and frees
  // whatever is still allocated.
  ~HostBackend() override;

  HostBackend(const HostBackend&) = delete;
  HostBackend& operator=(const HostBackend&) = delete;

  BackendKind kind() const override { return BackendKind::kHost; }
  std::string name() const override { return "host"; }
  int device_count() const override { return static_cast<int>(devices_.size()); }

  // capacity - bytes in use; when unlimited, the machine's physical memory
  // minus bytes in use. 0 for an invalid `device`.
  size_t free_memory(int device) const override;
  size_t pitch_alignment() const override { return options_.pitch_alignment; }
  // True for `dst == src`; otherwise options.peer_access. False for an invalid
  // device.
  bool can_access_peer(int dst, int src) const override;

  // Allocates `bytes` (0 allowed: a unique non-null base) of 64-byte aligned
  // host memory for `device`. Errors: kInvalidArgument for a bad device,
  // kResourceExhausted (naming the device, `bytes`, bytes in use and the
  // capacity) when it would exceed the capacity or the host is out of memory.
  absl::StatusOr<DeviceBuffer> allocate(int device, size_t bytes) override;

  // Returns `buffer`'s bytes to `device`'s accounting at once (a following
  // allocate() may use them); the memory itself is released in queue order on
  // `device` once `after` has completed, even if one of those events failed.
  // Errors: kInvalidArgument when `buffer.base` is not a live allocation of
  // `device` (e.g. freed twice).
  absl::Status free(int device, const DeviceBuffer& buffer, std::span<const Event> after) override;

  // Rectangular 3-D copy of `shape` from `src` to `dst` after `wait`, each side
  // with its own pitches. Runs on the device's queue for host<->device and on
  // `dst.device`'s queue for device<->device. Errors at the call
  // (kInvalidArgument, nothing is enqueued): bad device, null base, a base that
  // is not a live allocation of its device, a rectangle outside its
  // allocation, pitches too small for the shape (row_pitch < width_bytes when
  // height > 1; planes overlapping when depth > 1), host-to-host. The event
  // fails when an event in `wait` failed (the copy then does not run).
  // Overlapping source and destination give unspecified bytes, never UB.
  absl::StatusOr<Event> copy(const Endpoint& dst, const Endpoint& src, const CopyShape& shape,
                             std::span<const Event> wait) override;

  // Runs `fn` on `device`'s worker thread with LaunchContext{device, nullptr}
  // after `wait`. An exception thrown by `fn` becomes a kInternal error of the
  // returned event; a failed event in `wait` fails it without running `fn`.
  // Errors at the call: kInvalidArgument for a bad device or an empty `fn`.
  absl::StatusOr<Event> launch(int device, std::function<void(const LaunchContext&)> fn,
                               std::span<const Event> wait) override;

  // An event that completes after everything issued to `device` so far. It
  // fails with the first error of an operation on `device` since the last
  // synchronize(device), so that work waiting on it does not run on the
  // results of a failed operation.
  absl::StatusOr<Event> record(int device) override;

  // Blocks until everything issued to `device` before the call has completed;
  // returns (and clears) the first error of an operation on `device` since the
  // last synchronize(device). kInvalidArgument for a bad device.
  absl::Status synchronize(int device) override;

 private:
  struct Op;
  struct Queue;
  struct Device;

  absl::Status check_device(int device, const char* what) const;
  // Queues `op` on queue `queue` (modulo the count) of `device`; returns its
  // completion event.
  Event enqueue(int device, int queue, Op op);
  void worker_loop(Device& dev, Queue& queue);

  HostBackendOptions options_;
  std::vector<std::unique_ptr<Device>> devices_;
};

// Creates a host backend. Errors: kInvalidArgument when `options.devices` is
// not in 1..1024, `options.queues` not in 1..8 or `options.pitch_alignment`
// is not a power of two.
absl::StatusOr<std::unique_ptr<Backend>> make_host_backend(const HostBackendOptions& options);

}  // namespace bbmm
