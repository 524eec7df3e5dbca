// RuntimeCore's exchanges with other ranks (a run over several hosts): a box
// of a registered array sent to or received from another rank through the
// transport (core/transport.h), staged through the host copy of the array.
#include "absl/strings/str_cat.h"
#include "core/runtime_core.h"

namespace bbmm::detail {

absl::Status RuntimeCore::set_transport(std::unique_ptr<Transport> transport) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!arrays_.empty() || transport_ != nullptr) {
    return absl::FailedPreconditionError(
        "set_transport: set it once, before the first array is registered");
  }
  transport_ = std::move(transport);
  return absl::OkStatus();
}

absl::StatusOr<HostArrayRef> RuntimeCore::host_ref(const Array& array, const Box& box,
                                                  const char* op) const {
  if (transport_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        op, " of array '", array.name, "': the runtime has no transport (one rank only)"));
  }
  if (box.rank() != array.whole.rank() || box.empty() || !is_subset(box, array.whole)) {
    return absl::InvalidArgumentError(absl::StrCat(op, " of array '", array.name, "' box ",
                                                   box.to_string(), ": empty or outside ",
                                                   array.whole.to_string()));
  }
  HostArrayRef ref;
  ref.name = array.name;
  ref.base = array.host;
  ref.elem_size = array.elem_size;
  const int r = array.whole.rank();
  int64_t dense = 1;
  for (int d = r - 1; d >= 0; --d) {
    if (array.host_strides[d] != dense) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, " of array '", array.name, "': the transport needs a dense row-major host array "
          "(dimension ", d, " has stride ", array.host_strides[d], ", dense is ", dense, ")"));
    }
    dense *= array.whole.extent(d);
  }
  for (int d = 0; d < r; ++d) ref.extents.push_back(array.whole.extent(d));
  return ref;
}

absl::Status RuntimeCore::send_box(Array* array, const Box& box, int to, int tag) {
  std::lock_guard<std::mutex> lock(mu_);
  if (array == nullptr) return absl::InvalidArgumentError("send_box: null array");
  ManagerTimer timer(&stats_[0].manager_seconds, tracer_.get(), "send box");
  absl::StatusOr<HostArrayRef> ref = host_ref(*array, box, "send");
  if (!ref.ok()) return ref.status();
  // The host copy of the box first: what only devices hold is written back.
  if (!array->read_only) {
    if (absl::Status s = coherency_->write_back(*array, box); !s.ok()) return s;
  }
  waits_.clear();
  array->host_hazards.before(box, /*write=*/false, waits_);
  absl::StatusOr<Event> sent = transport_->send(*ref, box, to, tag, waits_);
  if (!sent.ok()) return sent.status();
  array->host_hazards.after(box, /*write=*/false, *sent);
  bytes_sent_ranks_ += static_cast<uint64_t>(box.volume()) * array->elem_size;
  return absl::OkStatus();
}

absl::Status RuntimeCore::receive_box(Array* array, const Box& box, int from, int tag) {
  std::lock_guard<std::mutex> lock(mu_);
  if (array == nullptr) return absl::InvalidArgumentError("receive_box: null array");
  ManagerTimer timer(&stats_[0].manager_seconds, tracer_.get(), "receive box");
  absl::StatusOr<HostArrayRef> ref = host_ref(*array, box, "receive");
  if (!ref.ok()) return ref.status();
  if (array->read_only) {
    return absl::InvalidArgumentError(absl::StrCat("receive of array '", array->name, "' box ",
                                                   box.to_string(), ": the array is read-only"));
  }
  waits_.clear();
  array->host_hazards.before(box, /*write=*/true, waits_);
  absl::StatusOr<Event> got = transport_->receive(*ref, box, from, tag, waits_);
  if (!got.ok()) return got.status();
  array->host_hazards.after(box, /*write=*/true, *got);
  // The received values are the array's: only the host holds them.
  array->directory.set(box, kHostBit);
  bytes_received_ranks_ += static_cast<uint64_t>(box.volume()) * array->elem_size;
  return absl::OkStatus();
}

}  // namespace bbmm::detail
