#include "core/transport.h"

#include "absl/strings/str_cat.h"

namespace bbmm {
namespace {

absl::Status check_box_of(const HostArrayRef& array, const Box& box, const char* op) {
  if (array.base == nullptr || array.elem_size == 0) {
    return absl::InvalidArgumentError(absl::StrCat(op, " of array '", array.name,
                                                   "': null host array or element size 0"));
  }
  const int rank = static_cast<int>(array.extents.size());
  if (rank < 1 || rank > Box::kMaxRank || box.rank() != rank) {
    return absl::InvalidArgumentError(absl::StrCat(op, " of array '", array.name, "' box ",
                                                   box.to_string(), ": the array has rank ",
                                                   rank, ", the box ", box.rank()));
  }
  for (int d = 0; d < rank; ++d) {
    if (array.extents[d] < 0 || box.lo(d) < 0 || box.hi(d) > array.extents[d]) {
      std::string extents;
      for (int e = 0; e < rank; ++e) absl::StrAppend(&extents, e ? " x " : "", array.extents[e]);
      return absl::InvalidArgumentError(absl::StrCat(op, " of array '", array.name, "' box ",
                                                     box.to_string(),
                                                     ": outside the array's extents ", extents));
    }
  }
  if (box.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, " of array '", array.name, "': empty box ", box.to_string()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status check_transfer(const HostArrayRef& array, const Box& box, const char* op, int peer,
                            int tag, int rank, int size, int max_tag) {
  if (absl::Status s = check_box_of(array, box, op); !s.ok()) return s;
  if (peer < 0 || peer >= size || peer == rank || tag < 0 || tag > max_tag) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, " of array '", array.name, "' box ", box.to_string(), ": rank ", peer, ", tag ", tag,
        " (this is rank ", rank, " of ", size, "; tags are 0..", max_tag, ")"));
  }
  return absl::OkStatus();
}

bool TransportEvent::query() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

absl::Status TransportEvent::wait() const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return done_; });
  return status_;
}

void TransportEvent::complete(absl::Status status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    done_ = true;
    // A status of its own (not a reference to `status`'s payload): the waiters
    // of this event may be other threads than those holding `status`.
    status_ = status.ok() ? absl::OkStatus() : absl::Status(status.code(), status.message());
  }
  cv_.notify_all();
}

}  // namespace bbmm
