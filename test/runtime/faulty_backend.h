// A Backend decorator for fault injection: forwards everything to an
// upstream backend, but fails the k-th allocation, copy or launch (counted
// from 1 while armed) with an error status, without calling the upstream.
//
// Thread-safety: as the upstream; the counters are atomic.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/backend.h"

namespace bbmm::testing {

class FaultyBackend : public Backend {
 public:
  enum class Kind { kAllocate, kCopy, kLaunch };
  static constexpr const char* kMessage = "injected fault";

  explicit FaultyBackend(std::unique_ptr<Backend> upstream) : up_(std::move(upstream)) {}

  // Fails the `k`-th operation of `kind` from now on (k >= 1); k = 0 disarms.
  // `code` is the status code of the failure.
  void arm(Kind kind, int k, absl::StatusCode code = absl::StatusCode::kUnavailable) {
    kind_ = kind;
    code_ = code;
    count_ = 0;
    target_ = k;
  }
  void disarm() {
    target_ = 0;
    count_ = 0;
  }
  // Operations of the armed kind seen since arm(); faults injected so far.
  int count() const { return count_; }
  int injected() const { return injected_; }
  // Counts of every kind since construction.
  int allocations() const { return allocations_; }
  int copies() const { return copies_; }
  int launches() const { return launches_; }

  BackendKind kind() const override { return up_->kind(); }
  std::string name() const override { return "faulty(" + up_->name() + ")"; }
  int device_count() const override { return up_->device_count(); }
  size_t free_memory(int device) const override { return up_->free_memory(device); }
  size_t pitch_alignment() const override { return up_->pitch_alignment(); }
  bool can_access_peer(int dst, int src) const override { return up_->can_access_peer(dst, src); }

  absl::StatusOr<DeviceBuffer> allocate(int device, size_t bytes) override {
    ++allocations_;
    if (absl::Status f = maybe_fail(Kind::kAllocate, "allocate"); !f.ok()) return f;
    return up_->allocate(device, bytes);
  }
  absl::Status free(int device, const DeviceBuffer& buffer, std::span<const Event> after) override {
    return up_->free(device, buffer, after);
  }
  absl::StatusOr<Event> copy(const Endpoint& dst, const Endpoint& src, const CopyShape& shape,
                             std::span<const Event> wait) override {
    ++copies_;
    if (absl::Status f = maybe_fail(Kind::kCopy, "copy"); !f.ok()) return f;
    return up_->copy(dst, src, shape, wait);
  }
  absl::StatusOr<Event> launch(int device, std::function<void(const LaunchContext&)> fn,
                               std::span<const Event> wait) override {
    ++launches_;
    if (absl::Status f = maybe_fail(Kind::kLaunch, "launch"); !f.ok()) return f;
    return up_->launch(device, std::move(fn), wait);
  }
  absl::StatusOr<Event> record(int device) override { return up_->record(device); }
  absl::Status synchronize(int device) override { return up_->synchronize(device); }

 private:
  absl::Status maybe_fail(Kind kind, const char* what) {
    if (kind != kind_) return absl::OkStatus();
    if (++count_ != target_) return absl::OkStatus();  // also when disarmed (0)
    ++injected_;
    return absl::Status(code_, absl::StrCat(kMessage, ": ", what, " #", target_.load()));
  }

  std::unique_ptr<Backend> up_;
  std::atomic<Kind> kind_{Kind::kAllocate};
  std::atomic<absl::StatusCode> code_{absl::StatusCode::kUnavailable};
  std::atomic<int> target_{0}, count_{0}, injected_{0};
  std::atomic<int> allocations_{0}, copies_{0}, launches_{0};
};

}  // namespace bbmm::testing
