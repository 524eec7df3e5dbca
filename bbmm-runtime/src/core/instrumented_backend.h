// A Backend adaptor between the runtime core and the real backend (RMM's
// adaptor style): it forwards every call unchanged, counts what the calls move
// (copies, boxes and bytes per direction, kernels) for the statistics, and,
// when a trace is written, records each call's time on the calling thread as
// a slice of the host track ("issue copy H2D", ...), so the trace shows where
// the application's thread spends its time next to what the devices do.
//
// Thread-safety: as the upstream backend; the counters are updated under the
// runtime core's lock (its only caller).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"

namespace bbmm::detail {

// What the copies and kernels issued to one device moved. A host->device copy
// counts for its destination, device->host for its source, a copy between
// devices for its destination.
struct TransferCounters {
  uint64_t bytes_h2d = 0, bytes_d2h = 0, bytes_d2d = 0, bytes_peer = 0;
  uint64_t copies = 0;  // copy and copy_batch calls
  uint64_t boxes = 0;   // rectangles they moved
  uint64_t kernels = 0;
};

class InstrumentedBackend : public Backend {
 public:
  explicit InstrumentedBackend(std::unique_ptr<Backend> upstream);

  Backend& upstream() { return *up_; }
  const TransferCounters& counters(int device) const { return counters_[device]; }

  BackendKind kind() const override { return up_->kind(); }
  std::string name() const override { return up_->name(); }
  int device_count() const override { return up_->device_count(); }
  size_t free_memory(int device) const override { return up_->free_memory(device); }
  size_t pitch_alignment() const override { return up_->pitch_alignment(); }
  bool can_access_peer(int dst, int src) const override { return up_->can_access_peer(dst, src); }

  absl::StatusOr<DeviceBuffer> allocate(int device, size_t bytes) override;
  absl::Status free(int device, const DeviceBuffer& buffer, std::span<const Event> after) override;
  absl::StatusOr<Event> copy(const Endpoint& dst, const Endpoint& src, const CopyShape& shape,
                             std::span<const Event> wait) override;
  absl::StatusOr<Event> copy_batch(std::span<const CopyOp> ops,
                                   std::span<const Event> wait) override;
  absl::StatusOr<Event> launch(int device, std::function<void(const LaunchContext&)> fn,
                               std::span<const Event> wait) override;
  absl::Status register_host(void* host, size_t bytes) override;
  absl::Status unregister_host(void* host) override;
  bool host_copies_staged(const void* host) const override {
    return up_->host_copies_staged(host);
  }
  absl::StatusOr<Event> record(int device) override;
  absl::Status synchronize(int device) override;
  void set_tracer(Tracer* tracer) override;
  void flush_trace() override { up_->flush_trace(); }
  std::string creation_report() const override { return up_->creation_report(); }

 private:
  // Counts one successful copy of `shape` from `src` to `dst`.
  void count(const Endpoint& dst, const Endpoint& src, const CopyShape& shape);

  std::unique_ptr<Backend> up_;
  std::vector<TransferCounters> counters_;
};

}  // namespace bbmm::detail
