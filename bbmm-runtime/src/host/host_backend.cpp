#include "host/host_backend.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/copy_rect.h"
#include "core/trace.h"

namespace bbmm {
namespace {

constexpr size_t kAlignment = 64;
constexpr int kMaxDevices = 1024;
// Fresh allocations are filled with this byte so that reading memory nobody
// wrote shows up as garbage rather than as plausible zeros.
constexpr unsigned char kPoison = 0xA5;

class HostEventState final : public EventState {
 public:
  HostEventState(const void* queue, uint64_t sequence) { set_queue(queue, sequence); }

  bool query() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }

  absl::Status wait() const override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    return status_;
  }

  void complete(absl::Status status) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      status_ = std::move(status);
      done_ = true;
    }
    cv_.notify_all();
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool done_ = false;
  absl::Status status_;
};

std::string where(int device) {
  return device == kHost ? std::string("host") : absl::StrCat("device ", device);
}

size_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return std::numeric_limits<size_t>::max() / 2;
  return static_cast<size_t>(pages) * static_cast<size_t>(page_size);
}

// Copies `shape` between two rectangles given by their first byte and their
// pitches. memmove rather than memcpy: a same-buffer copy may overlap, and
// that must give unspecified bytes, not undefined behaviour.
void copy_rect(char* dst, size_t dst_row_pitch, size_t dst_slice_pitch, const char* src,
               size_t src_row_pitch, size_t src_slice_pitch, const CopyShape& shape) {
  const size_t w = shape.width_bytes;
  if (w == 0 || shape.height == 0 || shape.depth == 0) return;
  const bool rows_contiguous = shape.height == 1 || (dst_row_pitch == w && src_row_pitch == w);
  const size_t plane = w * shape.height;
  if (rows_contiguous &&
      (shape.depth == 1 || (dst_slice_pitch == plane && src_slice_pitch == plane))) {
    std::memmove(dst, src, plane * shape.depth);
    return;
  }
  for (size_t z = 0; z < shape.depth; ++z) {
    char* d = dst + z * dst_slice_pitch;
    const char* s = src + z * src_slice_pitch;
    if (rows_contiguous) {
      std::memmove(d, s, plane);
      continue;
    }
    for (size_t y = 0; y < shape.height; ++y) {
      std::memmove(d + y * dst_row_pitch, s + y * src_row_pitch, w);
    }
  }
}

// Bytes from the first to one past the last byte the rectangle touches, or an
// error when the pitches cannot hold the shape or the arithmetic overflows.
}  // namespace

struct HostBackend::Op {
  std::vector<Event> waits;
  std::function<absl::Status()> body;
  // For error messages and the trace ("copy H2D", "kernel", ...).
  std::string name;
  // Frees must run even after a failed event: nobody uses the memory again.
  bool run_despite_failed_wait = false;
  // Null when the op is not traced. Captured at enqueue time so that
  // set_tracer() on the issuing thread happens-before its use on the worker.
  Tracer* tracer = nullptr;
  std::string trace_args;
  std::shared_ptr<HostEventState> event;
};

// One in-order queue of a device with its worker thread; its state is
// guarded by the device's mutex.
struct HostBackend::Queue {
  std::condition_variable work_cv;  // worker: the queue is nonempty or stop
  std::deque<Op> ops;
  uint64_t issued = 0;
  uint64_t completed = 0;
  std::thread worker;
};

struct HostBackend::Device {
  struct Allocation {
    size_t bytes;  // as requested, for the accounting
    size_t allocated_bytes;
  };

  int index = 0;
  size_t capacity = 0;  // 0 = unlimited

  // Guards everything below, including the queues' state (not the workers'
  // running ops).
  mutable std::mutex mu;
  std::condition_variable done_cv;  // synchronize: some `completed` went up
  std::vector<std::unique_ptr<Queue>> queues;
  bool stop = false;
  absl::Status first_error;  // since the last synchronize
  size_t in_use = 0;
  std::unordered_map<const void*, Allocation> allocations;
};

HostBackend::HostBackend(const HostBackendOptions& options) : options_(options) {
  devices_.reserve(options.devices);
  for (int d = 0; d < options.devices; ++d) {
    auto dev = std::make_unique<Device>();
    dev->index = d;
    dev->capacity = options.capacity_bytes;
    for (int q = 0; q < options.queues; ++q) dev->queues.push_back(std::make_unique<Queue>());
    devices_.push_back(std::move(dev));
  }
  // Workers start once every Device exists: an op on one device may wait for
  // events of any other.
  for (auto& dev : devices_) {
    Device* p = dev.get();
    for (auto& q : p->queues) {
      Queue* qp = q.get();
      qp->worker = std::thread([this, p, qp] { worker_loop(*p, *qp); });
    }
  }
}

HostBackend::~HostBackend() {
  for (auto& dev : devices_) {
    {
      std::lock_guard<std::mutex> lock(dev->mu);
      dev->stop = true;
    }
    for (auto& q : dev->queues) q->work_cv.notify_all();
  }
  // Each worker drains its queue before exiting; ops may wait for events of
  // other devices, which keep running until they drain too.
  for (auto& dev : devices_) {
    for (auto& q : dev->queues) q->worker.join();
  }
  for (auto& dev : devices_) {
    for (auto& [base, alloc] : dev->allocations) {
      std::free(const_cast<void*>(base));
    }
  }
}

absl::Status HostBackend::check_device(int device, const char* what) const {
  if (device < 0 || device >= device_count()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": device ", device,
                                                   " does not exist (the host backend has ",
                                                   device_count(), " devices)"));
  }
  return absl::OkStatus();
}

size_t HostBackend::free_memory(int device) const {
  if (!check_device(device, "free_memory").ok()) return 0;
  const Device& dev = *devices_[device];
  std::lock_guard<std::mutex> lock(dev.mu);
  if (dev.capacity != 0) return dev.capacity - std::min(dev.in_use, dev.capacity);
  static const size_t physical = physical_memory_bytes();
  return physical - std::min(dev.in_use, physical);
}

bool HostBackend::can_access_peer(int dst, int src) const {
  if (!check_device(dst, "").ok() || !check_device(src, "").ok()) return false;
  return dst == src || options_.peer_access;
}

absl::StatusOr<DeviceBuffer> HostBackend::allocate(int device, size_t bytes) {
  if (absl::Status s = check_device(device, "allocate"); !s.ok()) return s;
  Device& dev = *devices_[device];
  std::lock_guard<std::mutex> lock(dev.mu);
  if (dev.capacity != 0 && (bytes > dev.capacity || dev.in_use > dev.capacity - bytes)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("host device ", device, ": cannot allocate ", bytes, " bytes: ", dev.in_use,
                     " of ", dev.capacity, " bytes in use (", dev.capacity - dev.in_use, " free)"));
  }
  // A zero-byte request still gets its own address, so that every live buffer
  // has a distinct base; aligned_alloc wants a multiple of the alignment.
  if (bytes > std::numeric_limits<size_t>::max() - kAlignment) {
    return absl::ResourceExhaustedError(
        absl::StrCat("host device ", device, ": cannot allocate ", bytes, " bytes"));
  }
  const size_t allocated = std::max<size_t>((bytes + kAlignment - 1) / kAlignment, 1) * kAlignment;
  void* p = std::aligned_alloc(kAlignment, allocated);
  if (p == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("host device ", device, ": cannot allocate ",
                                                     bytes, " bytes: host memory exhausted (",
                                                     dev.in_use, " bytes in use on this device)"));
  }
  if (options_.poison) std::memset(p, kPoison, allocated);
  dev.allocations.emplace(p, Device::Allocation{bytes, allocated});
  dev.in_use += bytes;
  return DeviceBuffer{p, 0, bytes, Event()};
}

absl::Status HostBackend::free(int device, const DeviceBuffer& buffer,
                               std::span<const Event> after) {
  if (absl::Status s = check_device(device, "free"); !s.ok()) return s;
  Device& dev = *devices_[device];
  size_t bytes;
  {
    std::lock_guard<std::mutex> lock(dev.mu);
    auto it = dev.allocations.find(buffer.base);
    if (it == dev.allocations.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "free: ", pointer_string(buffer.base), " is not a live allocation of host device ",
          device, " (freed twice, or allocated on another device?)"));
    }
    bytes = it->second.bytes;
    // The accounting is released now, the memory only when the op runs: the
    // core frees instances nobody uses again and may allocate their bytes
    // immediately; the real memory lingering a little longer is harmless.
    dev.in_use -= bytes;
    dev.allocations.erase(it);
  }
  Op op;
  op.waits.assign(after.begin(), after.end());
  op.name = "free";
  op.run_despite_failed_wait = true;
  op.tracer = tracer_;
  op.trace_args = absl::StrCat("\"bytes\":", bytes);
  void* base = buffer.base;
  op.body = [base] {
    std::free(base);
    return absl::OkStatus();
  };
  enqueue(device, 0, std::move(op));
  return absl::OkStatus();
}

absl::StatusOr<Event> HostBackend::copy(const Endpoint& dst, const Endpoint& src,
                                        const CopyShape& shape, std::span<const Event> wait) {
  if (dst.device == kHost && src.device == kHost) {
    return absl::InvalidArgumentError("copy: host-to-host copies are not a backend operation");
  }
  const bool empty = shape.width_bytes == 0 || shape.height == 0 || shape.depth == 0;
  char* dst_ptr = nullptr;
  const char* src_ptr = nullptr;
  // By index, not by address: `dst` and `src` may be the same object.
  for (int i = 0; i < 2; ++i) {
    const Endpoint* ep = i == 0 ? &dst : &src;
    const char* side = i == 0 ? "destination" : "source";
    if (ep->device != kHost) {
      if (absl::Status s = check_device(ep->device, "copy"); !s.ok()) return s;
    }
    if (ep->base == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("copy: ", side, " base on ", where(ep->device), " is null"));
    }
    size_t span = 0;
    if (!empty) {
      absl::StatusOr<size_t> r = copy_rect_span(*ep, shape, "copy", side);
      if (!r.ok()) return r.status();
      span = *r;
    }
    if (ep->device != kHost) {
      const Device& dev = *devices_[ep->device];
      std::lock_guard<std::mutex> lock(dev.mu);
      auto it = dev.allocations.find(ep->base);
      if (it == dev.allocations.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("copy: ", side, " base ", pointer_string(ep->base),
                         " is not a live allocation of device ", ep->device));
      }
      if (span > it->second.bytes) {
        return absl::InvalidArgumentError(
            absl::StrCat("copy: ", side, " rectangle ", shape_string(shape), " at offset ",
                         ep->offset, " (row pitch ", ep->row_pitch, ", slice pitch ",
                         ep->slice_pitch, ") ends at byte ", span, ", past the end of its ",
                         it->second.bytes, "-byte allocation on device ", ep->device));
      }
    }
    // An empty copy touches nothing; its offset may point anywhere.
    char* p = empty ? nullptr : static_cast<char*>(ep->base) + ep->offset;
    if (i == 0) {
      dst_ptr = p;
    } else {
      src_ptr = p;
    }
  }

  Op op;
  int queue_device;
  int queue;  // see HostBackendOptions::queues
  bool staged = false;
  if (src.device == kHost) {
    queue_device = dst.device;
    queue = 1;
    op.name = "copy H2D";
  } else if (dst.device == kHost) {
    queue_device = src.device;
    queue = 2;
    op.name = "copy D2H";
  } else {
    queue_device = dst.device;
    queue = 3;
    if (src.device == dst.device) {
      op.name = "copy D2D";
    } else {
      op.name = "copy peer";
      staged = !can_access_peer(dst.device, src.device);
    }
  }
  op.waits.assign(wait.begin(), wait.end());
  op.tracer = tracer_;
  if (op.tracer != nullptr) {
    op.trace_args =
        absl::StrCat("\"bytes\":", empty ? 0 : shape.width_bytes * shape.height * shape.depth,
                     ",\"shape\":\"", shape_string(shape), "\",\"src\":\"", where(src.device),
                     "\",\"dst\":\"", where(dst.device), "\"", staged ? ",\"staged\":true" : "");
    if (!Tracer::current_label().empty()) absl::StrAppend(&op.trace_args, ",", Tracer::current_label());
  }
  op.body = [dst_ptr, src_ptr, d = dst, s = src, shape, staged] {
    if (!staged) {
      copy_rect(dst_ptr, d.row_pitch, d.slice_pitch, src_ptr, s.row_pitch, s.slice_pitch, shape);
      return absl::OkStatus();
    }
    // What a backend without peer access does: pack into a host buffer, then
    // unpack from it.
    const size_t row = shape.width_bytes;
    const size_t plane = row * shape.height;
    std::vector<char> bounce(plane * shape.depth);
    copy_rect(bounce.data(), row, plane, src_ptr, s.row_pitch, s.slice_pitch, shape);
    copy_rect(dst_ptr, d.row_pitch, d.slice_pitch, bounce.data(), row, plane, shape);
    return absl::OkStatus();
  };
  return enqueue(queue_device, queue, std::move(op));
}

absl::StatusOr<Event> HostBackend::launch(int device, std::function<void(const LaunchContext&)> fn,
                                          std::span<const Event> wait) {
  if (absl::Status s = check_device(device, "launch"); !s.ok()) return s;
  if (!fn) return absl::InvalidArgumentError("launch: empty kernel function");
  Op op;
  op.waits.assign(wait.begin(), wait.end());
  op.name = "kernel";
  op.tracer = tracer_;
  if (op.tracer != nullptr) op.trace_args = Tracer::current_label();
  op.body = [fn = std::move(fn), device] {
    fn(LaunchContext{device, nullptr});
    return absl::OkStatus();
  };
  return enqueue(device, 0, std::move(op));
}

absl::StatusOr<Event> HostBackend::record(int device) {
  if (absl::Status s = check_device(device, "record"); !s.ok()) return s;
  Device* dev = devices_[device].get();
  // A marker on every other queue, and on queue 0 an op after all of them.
  std::vector<Event> markers;
  for (int q = 1; q < static_cast<int>(dev->queues.size()); ++q) {
    Op marker;
    marker.name = "record";
    marker.body = [] { return absl::OkStatus(); };
    markers.push_back(enqueue(device, q, std::move(marker)));
  }
  Op op;
  op.name = "record";
  op.waits = std::move(markers);
  // Runs after every earlier op of the device has finished and updated
  // first_error.
  op.body = [dev] {
    std::lock_guard<std::mutex> lock(dev->mu);
    return dev->first_error;
  };
  return enqueue(device, 0, std::move(op));
}

absl::Status HostBackend::synchronize(int device) {
  if (absl::Status s = check_device(device, "synchronize"); !s.ok()) return s;
  Device& dev = *devices_[device];
  std::unique_lock<std::mutex> lock(dev.mu);
  // Wait for what was issued before the call only, so that other threads
  // issuing more work cannot starve us.
  std::vector<uint64_t> target;
  for (auto& q : dev.queues) target.push_back(q->issued);
  dev.done_cv.wait(lock, [&] {
    for (size_t k = 0; k < dev.queues.size(); ++k) {
      if (dev.queues[k]->completed < target[k]) return false;
    }
    return true;
  });
  return std::exchange(dev.first_error, absl::OkStatus());
}

Event HostBackend::enqueue(int device, int queue, Op op) {
  Device& dev = *devices_[device];
  Queue& q = *dev.queues[static_cast<size_t>(queue) % dev.queues.size()];
  std::shared_ptr<HostEventState> state;
  {
    std::lock_guard<std::mutex> lock(dev.mu);
    // The queue runs its ops in this order: the event knows its place.
    state = std::make_shared<HostEventState>(&q, q.issued);
    op.event = state;
    q.ops.push_back(std::move(op));
    ++q.issued;
  }
  q.work_cv.notify_one();
  return Event(std::move(state));
}

void HostBackend::worker_loop(Device& dev, Queue& queue) {
  for (;;) {
    Op op;
    {
      std::unique_lock<std::mutex> lock(dev.mu);
      queue.work_cv.wait(lock, [&] { return dev.stop || !queue.ops.empty(); });
      if (queue.ops.empty()) return;  // stopping and drained
      op = std::move(queue.ops.front());
      queue.ops.pop_front();
    }
    // Wait for every event even after one failed: the op's completion must
    // still come after all of them (a free must not release memory in use).
    absl::Status wait_status;
    for (const Event& e : op.waits) {
      absl::Status s = e.wait();
      if (!s.ok() && wait_status.ok()) wait_status = std::move(s);
    }
    absl::Status status;
    if (!wait_status.ok() && !op.run_despite_failed_wait) {
      status = absl::Status(
          wait_status.code(),
          absl::StrCat(op.name, " on host device ", dev.index,
                       " did not run: an event it waited for failed: ", wait_status.message()));
    } else {
      const int64_t start = op.tracer != nullptr ? op.tracer->now_us() : 0;
      // No exception may cross the worker thread: a throwing kernel (or a
      // failed bounce-buffer allocation) becomes the op's status.
      try {
        status = op.body();
      } catch (const std::exception& e) {
        status = absl::InternalError(absl::StrCat(op.name, " on host device ", dev.index,
                                                  " threw an exception: ", e.what()));
      } catch (...) {
        status = absl::InternalError(absl::StrCat(op.name, " on host device ", dev.index,
                                                  " threw a non-standard exception"));
      }
      if (op.tracer != nullptr) {
        op.tracer->slice(dev.index, op.name, start, op.tracer->now_us() - start, op.trace_args);
      }
    }
    // Whatever the kernel captured is destroyed before anyone learns it ran.
    std::shared_ptr<HostEventState> event = std::move(op.event);
    op = Op();
    event->complete(status);
    {
      std::lock_guard<std::mutex> lock(dev.mu);
      if (!status.ok() && dev.first_error.ok()) dev.first_error = status;
      ++queue.completed;
    }
    dev.done_cv.notify_all();
  }
}

absl::StatusOr<std::unique_ptr<Backend>> make_host_backend(const HostBackendOptions& options) {
  if (options.devices < 1 || options.devices > kMaxDevices) {
    return absl::InvalidArgumentError(absl::StrCat("host backend: ", options.devices,
                                                   " devices requested; use 1..", kMaxDevices));
  }
  if (options.queues < 1 || options.queues > 8) {
    return absl::InvalidArgumentError(absl::StrCat("host backend: ", options.queues,
                                                   " queues per device requested; use 1..8"));
  }
  const size_t a = options.pitch_alignment;
  if (a == 0 || (a & (a - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("host backend: pitch alignment ", a, " is not a power of two"));
  }
  return std::unique_ptr<Backend>(std::make_unique<HostBackend>(options));
}

}  // namespace bbmm
