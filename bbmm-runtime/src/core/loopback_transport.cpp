#include "core/loopback_transport.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <deque>
#include <map>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace bbmm {
namespace {

struct Posted {
  HostArrayRef array;
  Box box;
  std::shared_ptr<TransportEvent> event;
  absl::Status failed_after;  // the first failed `after` event, reported by `event`
};

// Byte offset of element `index` (rank entries) of a dense row-major array.
size_t offset_of(const HostArrayRef& a, const int64_t* index) {
  size_t off = 0;
  for (size_t d = 0; d < a.extents.size(); ++d) {
    off = off * static_cast<size_t>(a.extents[d]) + static_cast<size_t>(index[d]);
  }
  return off * a.elem_size;
}

// Copies box `from` of `src` into box `to` of `dst` (same extents), row by row
// with `copy` (memcpy when empty).
void copy_box(const HostArrayRef& src, const Box& from, const HostArrayRef& dst, const Box& to,
              const LoopbackCopy& copy) {
  const int rank = from.rank();
  const size_t row = static_cast<size_t>(from.extent(rank - 1)) * src.elem_size;
  int64_t rel[Box::kMaxRank] = {};  // position in the box, outer dimensions
  int64_t si[Box::kMaxRank], di[Box::kMaxRank];
  while (true) {
    for (int d = 0; d < rank; ++d) {
      si[d] = from.lo(d) + rel[d];
      di[d] = to.lo(d) + rel[d];
    }
    char* to_row = static_cast<char*>(dst.base) + offset_of(dst, di);
    const char* from_row = static_cast<const char*>(src.base) + offset_of(src, si);
    if (copy) {
      copy(to_row, from_row, row);
    } else {
      std::memcpy(to_row, from_row, row);
    }
    int d = rank - 2;
    for (; d >= 0; --d) {
      if (++rel[d] < from.extent(d)) break;
      rel[d] = 0;
    }
    if (d < 0) return;
  }
}

class Hub {
 public:
  Hub(int ranks, LoopbackCopy copy) : ranks_(ranks), copy_(std::move(copy)), values_(ranks) {}

  // Posts a send (`send`) or a receive of rank `from` to rank `to`: delivered
  // with the earliest unmatched opposite operation, else queued for one.
  void post(bool send, Posted p, int from, int to, int tag) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::tuple<int, int, int> key{from, to, tag};
    auto& waiting = (send ? recvs_ : sends_)[key];
    if (waiting.empty()) {
      (send ? sends_ : recvs_)[key].push_back(std::move(p));
      return;
    }
    Posted other = std::move(waiting.front());
    waiting.pop_front();
    deliver(send ? p : other, send ? other : p, from, tag);
  }

  std::vector<int64_t> all_gather(int me, int64_t value) {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t generation = generation_;
    values_[me] = value;
    if (++arrived_ == ranks_) {
      result_ = values_;
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != generation; });
    }
    return result_;
  }

 private:
  // Completes send `s` (from rank `from`) and receive `r` with the copy, or
  // both with the mismatch.
  void deliver(const Posted& s, const Posted& r, int from, int tag) const {
    bool same = s.array.elem_size == r.array.elem_size && s.box.rank() == r.box.rank();
    for (int d = 0; same && d < s.box.rank(); ++d) same = s.box.extent(d) == r.box.extent(d);
    if (!same) {
      // One status per event: each is read by its own rank's thread.
      auto err = [&] { return absl::InvalidArgumentError(absl::StrCat(
          "receive of array '", r.array.name, "' box ", r.box.to_string(), " (", r.array.elem_size,
          "-byte elements) from rank ", from, ", tag ", tag, ": the rank sent array '",
          s.array.name, "' box ", s.box.to_string(), " (", s.array.elem_size,
          "-byte elements), of other extents")); };
      s.event->complete(err());
      r.event->complete(err());
      return;
    }
    copy_box(s.array, s.box, r.array, r.box, copy_);
    s.event->complete(s.failed_after);
    r.event->complete(r.failed_after);
  }

  const int ranks_;
  const LoopbackCopy copy_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::tuple<int, int, int>, std::deque<Posted>> sends_, recvs_;  // (from, to, tag)
  std::vector<int64_t> values_, result_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
};

class LoopbackTransport final : public Transport {
 public:
  LoopbackTransport(std::shared_ptr<Hub> hub, int rank, int size,
                    std::vector<BackendKind> device_memory)
      : hub_(std::move(hub)), rank_(rank), size_(size), device_memory_(std::move(device_memory)) {
    thread_ = std::thread([this] { run(); });
  }

  ~LoopbackTransport() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool sends_from_device_memory(BackendKind kind) const override {
    return std::find(device_memory_.begin(), device_memory_.end(), kind) != device_memory_.end();
  }

  absl::StatusOr<Event> send(const HostArrayRef& array, const Box& box, int to, int tag,
                             std::span<const Event> after) override {
    return post(true, array, box, to, tag, after);
  }

  absl::StatusOr<Event> receive(const HostArrayRef& array, const Box& box, int from, int tag,
                                std::span<const Event> after) override {
    return post(false, array, box, from, tag, after);
  }

  absl::StatusOr<std::vector<int64_t>> all_gather(int64_t value) override {
    return hub_->all_gather(rank_, value);
  }

 private:
  struct Queued {
    bool send;
    Posted op;
    int peer, tag;
    std::vector<Event> after;
  };

  absl::StatusOr<Event> post(bool send, const HostArrayRef& array, const Box& box, int peer,
                             int tag, std::span<const Event> after) {
    if (absl::Status s = check_transfer(array, box, send ? "send" : "receive", peer, tag, rank_,
                                        size_, INT_MAX);
        !s.ok()) {
      return s;
    }
    auto ev = std::make_shared<TransportEvent>();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(Queued{send, Posted{array, box, ev, absl::OkStatus()}, peer, tag,
                              std::vector<Event>(after.begin(), after.end())});
    }
    cv_.notify_all();
    return Event(ev);
  }

  // Posts the queued operations in order, each once its `after` events are done.
  void run() {
    while (true) {
      Queued q;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        q = std::move(queue_.front());
        queue_.pop_front();
      }
      for (const Event& e : q.after) {
        absl::Status s = e.wait();
        if (!s.ok() && q.op.failed_after.ok()) q.op.failed_after = absl::Status(s.code(), s.message());
      }
      hub_->post(q.send, std::move(q.op), q.send ? rank_ : q.peer, q.send ? q.peer : rank_,
                 q.tag);
    }
  }

  std::shared_ptr<Hub> hub_;
  const int rank_, size_;
  const std::vector<BackendKind> device_memory_;  // sends_from_device_memory
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Queued> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

std::vector<std::unique_ptr<Transport>> make_loopback_transports(
    int ranks, std::vector<BackendKind> device_memory, LoopbackCopy copy) {
  std::vector<std::unique_ptr<Transport>> out;
  if (ranks < 1) return out;
  auto hub = std::make_shared<Hub>(ranks, std::move(copy));
  for (int r = 0; r < ranks; ++r) {
    out.push_back(std::make_unique<LoopbackTransport>(hub, r, ranks, device_memory));
  }
  return out;
}

}  // namespace bbmm
