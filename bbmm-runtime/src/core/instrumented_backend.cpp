#include "core/instrumented_backend.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "core/trace.h"

namespace bbmm::detail {
namespace {

const char* direction(int dst, int src) {
  if (src == kHost) return "H2D";
  if (dst == kHost) return "D2H";
  return dst == src ? "D2D" : "peer";
}

// Records the time between its construction and destruction as a slice
// "issue <what>" of the host track, when there is a tracer.
class IssueSlice {
 public:
  IssueSlice(Tracer* tracer, const char* what, const char* detail = nullptr)
      : tracer_(tracer), what_(what), detail_(detail) {
    if (tracer_ != nullptr) start_ = tracer_->now_us();
  }
  ~IssueSlice() {
    if (tracer_ == nullptr) return;
    std::string name = absl::StrCat("issue ", what_);
    if (detail_ != nullptr) absl::StrAppend(&name, " ", detail_);
    tracer_->slice(kHost, name, start_, tracer_->now_us() - start_, Tracer::current_label());
  }

 private:
  Tracer* tracer_;
  const char* what_;
  const char* detail_;
  int64_t start_ = 0;
};

}  // namespace

InstrumentedBackend::InstrumentedBackend(std::unique_ptr<Backend> upstream)
    : up_(std::move(upstream)), counters_(static_cast<size_t>(up_->device_count())) {}

void InstrumentedBackend::set_tracer(Tracer* tracer) {
  tracer_ = tracer;
  up_->set_tracer(tracer);
}

void InstrumentedBackend::count(const Endpoint& dst, const Endpoint& src, const CopyShape& shape) {
  const uint64_t bytes = static_cast<uint64_t>(shape.width_bytes) * shape.height * shape.depth;
  const int device = dst.device == kHost ? src.device : dst.device;
  if (device < 0 || device >= static_cast<int>(counters_.size())) return;
  TransferCounters& c = counters_[device];
  if (src.device == kHost) {
    c.bytes_h2d += bytes;
  } else if (dst.device == kHost) {
    c.bytes_d2h += bytes;
  } else if (dst.device == src.device) {
    c.bytes_d2d += bytes;
  } else {
    c.bytes_peer += bytes;
  }
  ++c.boxes;
}

absl::StatusOr<DeviceBuffer> InstrumentedBackend::allocate(int device, size_t bytes) {
  IssueSlice slice(tracer_, "allocate");
  return up_->allocate(device, bytes);
}

absl::Status InstrumentedBackend::free(int device, const DeviceBuffer& buffer,
                                       std::span<const Event> after) {
  IssueSlice slice(tracer_, "free");
  return up_->free(device, buffer, after);
}

absl::StatusOr<Event> InstrumentedBackend::copy(const Endpoint& dst, const Endpoint& src,
                                                const CopyShape& shape,
                                                std::span<const Event> wait) {
  IssueSlice slice(tracer_, "copy", direction(dst.device, src.device));
  absl::StatusOr<Event> ev = up_->copy(dst, src, shape, wait);
  if (ev.ok()) {
    count(dst, src, shape);
    const int device = dst.device == kHost ? src.device : dst.device;
    if (device >= 0 && device < static_cast<int>(counters_.size())) ++counters_[device].copies;
  }
  return ev;
}

absl::StatusOr<Event> InstrumentedBackend::copy_batch(std::span<const CopyOp> ops,
                                                      std::span<const Event> wait) {
  if (ops.empty()) return Event();
  IssueSlice slice(tracer_, "copy batch", direction(ops[0].dst.device, ops[0].src.device));
  absl::StatusOr<Event> ev = up_->copy_batch(ops, wait);
  if (ev.ok()) {
    for (const CopyOp& op : ops) count(op.dst, op.src, op.shape);
    const int device = ops[0].dst.device == kHost ? ops[0].src.device : ops[0].dst.device;
    if (device >= 0 && device < static_cast<int>(counters_.size())) ++counters_[device].copies;
  }
  return ev;
}

absl::StatusOr<Event> InstrumentedBackend::launch(int device,
                                                  std::function<void(const LaunchContext&)> fn,
                                                  std::span<const Event> wait) {
  IssueSlice slice(tracer_, "launch");
  absl::StatusOr<Event> ev = up_->launch(device, std::move(fn), wait);
  if (ev.ok() && device >= 0 && device < static_cast<int>(counters_.size())) {
    ++counters_[device].kernels;
  }
  return ev;
}

absl::Status InstrumentedBackend::register_host(void* host, size_t bytes) {
  IssueSlice slice(tracer_, "register host");
  return up_->register_host(host, bytes);
}

absl::Status InstrumentedBackend::unregister_host(void* host) {
  IssueSlice slice(tracer_, "unregister host");
  return up_->unregister_host(host);
}

absl::StatusOr<Event> InstrumentedBackend::record(int device) { return up_->record(device); }

absl::Status InstrumentedBackend::synchronize(int device) {
  IssueSlice slice(tracer_, "synchronize");
  return up_->synchronize(device);
}

}  // namespace bbmm::detail
