// A backend adaptor for tests: every device operation of the wrapped backend
// waits behind a gate that the test opens (GatedBackend::open_gate), so that
// what the runtime issued is still in flight, deterministically, while the
// test looks at what it decided; it counts the calls that block the watched
// thread (Event::wait on the events it hands out, synchronize).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.h"

namespace bbmm::testing {

// Completes when open() is called; wait() blocks the calling thread until
// then (only device workers call it).
class Gate final : public EventState {
 public:
  bool query() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return open_;
  }
  absl::Status wait() const override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
    return absl::OkStatus();
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool open_ = false;
};

// An event handed to the runtime: forwards to the backend's, counting the
// calls that block on it from `watched` (the driver thread).
class WatchedEvent final : public EventState {
 public:
  WatchedEvent(Event inner, std::atomic<int>* blocking, const std::atomic<std::thread::id>* watched)
      : inner_(std::move(inner)), blocking_(blocking), watched_(watched) {}
  bool query() const override { return inner_.done(); }
  absl::Status wait() const override {
    if (std::this_thread::get_id() == watched_->load()) ++*blocking_;
    return inner_.wait();
  }

 private:
  Event inner_;
  std::atomic<int>* blocking_;
  const std::atomic<std::thread::id>* watched_;
};

class GatedBackend : public Backend {
 public:
  explicit GatedBackend(std::unique_ptr<Backend> up)
      : up_(std::move(up)), gate_(std::make_shared<Gate>()) {}

  void open_gate() { gate_->open(); }
  void watch(std::thread::id id) { watched_ = id; }
  int blocking_calls() const { return blocking_.load(); }
  int device_ops() const { return device_ops_.load(); }

  BackendKind kind() const override { return up_->kind(); }
  std::string name() const override { return "gated(" + up_->name() + ")"; }
  int device_count() const override { return up_->device_count(); }
  size_t free_memory(int d) const override { return up_->free_memory(d); }
  size_t pitch_alignment() const override { return up_->pitch_alignment(); }
  bool can_access_peer(int dst, int src) const override { return up_->can_access_peer(dst, src); }
  // What host_copies_staged answers (set_host_copies_staged; default false).
  void set_host_copies_staged(bool staged) { staged_ = staged; }
  bool host_copies_staged(const void*) const override { return staged_; }
  absl::StatusOr<DeviceBuffer> allocate(int d, size_t bytes) override {
    absl::StatusOr<DeviceBuffer> b = up_->allocate(d, bytes);
    if (b.ok()) b->ready = watched(b->ready);
    return b;
  }
  absl::Status free(int d, const DeviceBuffer& buf, std::span<const Event> after) override {
    ++device_ops_;
    return up_->free(d, buf, gated(after));
  }
  absl::StatusOr<Event> copy(const Endpoint& dst, const Endpoint& src, const CopyShape& shape,
                             std::span<const Event> wait) override {
    ++device_ops_;
    return wrap(up_->copy(dst, src, shape, gated(wait)));
  }
  absl::StatusOr<Event> copy_batch(std::span<const CopyOp> ops, std::span<const Event> wait) override {
    ++device_ops_;
    return wrap(up_->copy_batch(ops, gated(wait)));
  }
  absl::StatusOr<Event> launch(int d, std::function<void(const LaunchContext&)> fn,
                               std::span<const Event> wait) override {
    ++device_ops_;
    return wrap(up_->launch(d, std::move(fn), gated(wait)));
  }
  absl::StatusOr<Event> record(int d) override { return wrap(up_->record(d)); }
  absl::Status synchronize(int d) override {
    if (std::this_thread::get_id() == watched_.load()) ++blocking_;
    return up_->synchronize(d);
  }

 private:
  // `wait` plus the gate.
  std::vector<Event> gated(std::span<const Event> wait) const {
    std::vector<Event> w(wait.begin(), wait.end());
    w.push_back(Event(gate_));
    return w;
  }
  Event watched(const Event& e) {
    if (e.state() == nullptr) return e;
    return Event(std::make_shared<WatchedEvent>(e, &blocking_, &watched_));
  }
  absl::StatusOr<Event> wrap(absl::StatusOr<Event> e) {
    if (!e.ok()) return e;
    return watched(*e);
  }

  std::unique_ptr<Backend> up_;
  std::shared_ptr<Gate> gate_;
  std::atomic<int> blocking_{0};
  std::atomic<int> device_ops_{0};
  std::atomic<std::thread::id> watched_{};
  bool staged_ = false;
};

}  // namespace bbmm::testing
