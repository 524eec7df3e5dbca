#include "cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/block_pool.h"
#include "core/slow_calls.h"
#include "core/trace.h"
#include "cuda/cuda_copy.h"
#include "cuda/cuda_events.h"
#include "cuda/cuda_pool_grower.h"
#include "cuda/cuda_status.h"
#include "cuda/cuda_streams.h"
#include "cuda/cuda_topology.h"
#include "cuda/cuda_trace.h"
#include "cuda/cuda_worker.h"

namespace bbmm {
namespace {

// Completion events created per GPU at start, so that the hot path finds
// them in the pool.
constexpr size_t kEventsPerGpu = 1024;
// Timing events created when a tracer is set.
constexpr size_t kTimingEventsPerDevice = 1024;
// synchronize() flushes a device's trace records beyond this many, and renews
// its timing reference when older than this.
constexpr size_t kTraceFlushRecords = 4096;
constexpr int64_t kTraceReferenceMaxAgeUs = int64_t{10} * 1000 * 1000;
// The most of a capacity the program set that the pool takes at creation.
constexpr size_t kPrimeLimitMax = size_t{4} << 30;

// The event of one operation, from a pool of recycled blocks: made here on the
// application's thread, it is usually released on a worker
// (core/block_pool.h says why that matters).
std::shared_ptr<CudaOpEvent> make_op_event(const std::shared_ptr<GpuShared>& gpu) {
  return std::allocate_shared<CudaOpEvent>(detail::PoolAllocator<CudaOpEvent>(), gpu);
}

// Makes `gpu` the calling thread's current device for the scope and restores
// the previous one (the application may rely on its own choice).
class ScopedDevice {
 public:
  explicit ScopedDevice(int gpu) {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      (void)cudaGetLastError();
      previous_ = -1;
    }
    if (previous_ != gpu) error_ = cudaSetDevice(gpu);
  }
  ~ScopedDevice() {
    if (previous_ >= 0 && error_ == cudaSuccess) (void)cudaSetDevice(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  // The error of cudaSetDevice, if any.
  cudaError_t error() const { return error_; }

 private:
  int previous_ = -1;
  cudaError_t error_ = cudaSuccess;
};

// "host" or "device N" for `device`.
std::string where(int device) {
  return device == kHost ? std::string("host") : absl::StrCat("device ", device);
}

// "WxHxD" for `s`.
std::string shape_text(const CopyShape& s) {
  return absl::StrCat(s.width_bytes, "x", s.height, "x", s.depth);
}

// A distinct id per backend object, so that stream keys (and so events) of
// two backends alive at once never compare equal.
std::atomic<uint32_t> next_backend_id{1};

class CudaBackend final : public Backend {
 public:
  // `staging_threads`: options.staging_threads resolved (make_cuda_backend).
  CudaBackend(const CudaBackendOptions& options, int staging_threads)
      : options_(options),
        id_(next_backend_id.fetch_add(1) & 0xFFFFFF),
        pinner_(HostPinOptions{options.pin_method, options.pin_chunk_bytes, options.pin_threads}),
        copier_(staging_threads, options.staging_streaming_stores) {}

  // Issues everything queued, waits for the devices, frees what is still
  // allocated and unpins the registered arrays.
  ~CudaBackend() override {
    for (auto& g : growers_) {
      if (g != nullptr) g->stop();
    }
    // Each worker drains its queue before it ends; a command of one device
    // may wait for an event of another, whose worker is still running (or
    // has issued it already).
    for (auto& dev : devices_) {
      if (dev->worker != nullptr) dev->worker->stop();
    }
    for (auto& dev : devices_) {
      ScopedDevice on(dev->gpu);
      {
        std::lock_guard<std::mutex> lock(dev->live_mu);
        for (auto& [base, bytes] : dev->live) {
          if (dev->streams.memory.stream != nullptr) {
            (void)cudaFreeAsync(base, dev->streams.memory.stream);
          }
        }
        dev->live.clear();
      }
      dev->streams.destroy();  // synchronises every stream first
      dev->worker.reset();
    }
    for (cudaMemPool_t pool : topology_.pool) {
      if (pool != nullptr) (void)cudaMemPoolTrimTo(pool, 0);
    }
    pinner_.unpin_all();
    (void)cudaGetLastError();
  }

  // Sets up `count` logical devices on `visible` GPUs: contexts, topology and
  // pools, event pools, streams, capacities, then starts the issue workers.
  // `start`: when creation began (the driver's initialisation, before).
  absl::Status init(int count, int visible, std::chrono::steady_clock::time_point start) {
    phase_start_ = start;
    phase_done("driver");
    if (absl::Status s = create_contexts(std::min(count, visible)); !s.ok()) return s;
    phase_done("contexts");
    absl::Status s = setup_topology(count, visible, options_.peer_access, &topology_);
    if (!s.ok()) return s;
    phase_done("pools and peers");
    for (int g = 0; g < topology_.gpu_count; ++g) {
      gpus_.push_back(std::make_shared<GpuShared>(g));
      BBMM_CUDA(cudaSetDevice(g));
      BBMM_CUDA(gpus_.back()->events.reserve(kEventsPerGpu));
    }
    phase_done("events");
    for (int g = 0; g < topology_.gpu_count; ++g) {
      BBMM_CUDA(cudaSetDevice(g));
      BBMM_CUDA(preload_copy_kernels());
    }
    phase_done("copy kernels");
    WorkerOptions wo;
    wo.copy_kernel = options_.copy_kernel;
    wo.peer_copy_kernel = options_.peer_copy_kernel;
    wo.batch_api = options_.batch_api;
    wo.batch_api_peer = options_.batch_api_peer;
    wo.host_copy_kernel_max_box = options_.host_copy_kernel_max_box;
    wo.wait_for_allocations = options_.wait_for_allocations;
    wo.spin_us = options_.worker_spin_us;
    for (int d = 0; d < count; ++d) {
      auto dev = std::make_unique<Device>();
      dev->index = d;
      dev->gpu = topology_.gpu_of[d];
      dev->shared = gpus_[dev->gpu];
      BBMM_CUDA(cudaSetDevice(dev->gpu));
      s = dev->streams.create(id_, d, dev->gpu, options_.copy_streams,
                              options_.staging_buffer_bytes);
      if (!s.ok()) return s;
      size_t free_bytes = 0, total_bytes = 0;
      BBMM_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
      // Leave room for kernels' own needs and the CUDA context.
      const size_t reserve = std::max<size_t>(total_bytes / 50, size_t{512} << 20);
      dev->capacity = free_bytes > reserve ? free_bytes - reserve : 0;
      // Logical devices sharing a GPU share its memory.
      dev->capacity /= (count + visible - 1 - dev->gpu) / visible;
      if (options_.capacity_bytes > 0) {
        dev->capacity = std::min(dev->capacity, options_.capacity_bytes);
      }
      dev->trace = std::make_unique<DeviceTrace>(d, dev->shared);
      dev->worker = std::make_unique<Worker>(d, dev->shared, dev->streams, *dev->trace,
                                             topology_, pinner_, copier_, wo,
                                             &batch_api_rejections_);
      devices_.push_back(std::move(dev));
    }
    phase_done("streams and workers");
    // Staging buffers up front where arrays may be staged: allocating them at
    // the first copies put 16 pinned allocations of 16 MiB in the first run
    // on 4 GPUs.
    if (options_.host_copies != BBMM_HOST_COPIES_PINNED) {
      for (auto& dev : devices_) {
        BBMM_CUDA(cudaSetDevice(dev->gpu));
        if (absl::Status st = dev->streams.allocate_staging(); !st.ok()) {
          return st;
        }
      }
      phase_done("staging buffers");
    }
    // Pool growers (cuda_pool_grower.h), primed before any work is queued.
    growers_.resize(topology_.gpu_count);
    if (options_.pool_headroom_bytes > 0) {
      for (int g = 0; g < topology_.gpu_count; ++g) {
        size_t limit = 0;
        for (const auto& dev : devices_) {
          if (dev->gpu == g) limit += dev->capacity;
        }
        // A capacity the program set (device_memory) is what it gives libbbmm of
        // the GPU: take it all at once, as a hand-written program allocates its
        // buffers up front, up to kPrimeLimitMax. Else out-of-core runs grow the
        // pool on the application thread while they fill the device (on one
        // H100 limited to 1 GiB, heat2d's first six allocations of 134 MB
        // blocked it 2.5-5.4 ms each, 2026-11-27).
        size_t headroom = options_.pool_headroom_bytes;
        if (options_.capacity_bytes > 0) {
          headroom = std::max(headroom, std::min(limit, kPrimeLimitMax));
        }
        growers_[g] = std::make_unique<PoolGrower>(g, topology_.pool[g], limit, headroom);
        try {
          if (absl::Status gs = growers_[g]->start(); !gs.ok()) return gs;
        } catch (const std::exception& e) {
          return absl::ResourceExhaustedError(absl::StrCat(
              "cuda backend: cannot start the pool grower of GPU ", g, ": ", e.what()));
        }
      }
    }
    phase_done("pool growers");
    BBMM_CUDA(cudaSetDevice(0));
    for (auto& dev : devices_) {
      try {
        dev->worker->start();
      } catch (const std::exception& e) {
        return absl::ResourceExhaustedError(
            absl::StrCat("cuda backend: cannot start the issue worker of device ", dev->index,
                         ": ", e.what()));
      }
    }
    phase_done("threads");
    return absl::OkStatus();
  }

  std::string creation_report() const override { return creation_; }

  BackendKind kind() const override { return BackendKind::kCuda; }
  std::string name() const override { return "cuda"; }
  int device_count() const override { return static_cast<int>(devices_.size()); }
  size_t pitch_alignment() const override { return options_.pitch_alignment; }

  size_t free_memory(int device) const override {
    if (device < 0 || device >= device_count()) return 0;
    const Device& dev = *devices_[device];
    const size_t used = dev.in_use.load(std::memory_order_acquire);
    return dev.capacity > used ? dev.capacity - used : 0;
  }

  bool can_access_peer(int dst, int src) const override {
    if (dst < 0 || src < 0 || dst >= device_count() || src >= device_count()) return false;
    return topology_.can_access_peer(dst, src);
  }

  absl::StatusOr<DeviceBuffer> allocate(int device, size_t bytes) override {
    if (absl::Status s = check_device(device, "allocate"); !s.ok()) return s;
    Device& dev = *devices_[device];
    // Reserve the bytes in the accounting first (lock-free), so that two
    // threads cannot both pass the capacity check.
    size_t used = dev.in_use.load(std::memory_order_acquire);
    do {
      if (bytes > dev.capacity || used > dev.capacity - bytes) {
        return absl::ResourceExhaustedError(
            absl::StrCat("cuda device ", device, ": ", bytes, " bytes requested, ", used,
                         " in use, capacity ", dev.capacity));
      }
    } while (!dev.in_use.compare_exchange_weak(used, used + bytes, std::memory_order_acq_rel));
    absl::StatusOr<DeviceBuffer> buf = allocate_reserved(dev, bytes);
    if (!buf.ok()) {
      dev.in_use.fetch_sub(bytes, std::memory_order_acq_rel);
    } else if (PoolGrower* g = growers_[dev.gpu].get(); g != nullptr) {
      g->add_in_use(static_cast<int64_t>(bytes));
    }
    return buf;
  }

  absl::Status free(int device, const DeviceBuffer& buffer, std::span<const Event> after) override {
    if (absl::Status s = check_device(device, "free"); !s.ok()) return s;
    Device& dev = *devices_[device];
    size_t bytes;
    {
      std::lock_guard<std::mutex> lock(dev.live_mu);
      auto it = dev.live.find(buffer.base);
      if (it == dev.live.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "cuda free: 0x", absl::Hex(reinterpret_cast<uintptr_t>(buffer.base)),
            " is not a live allocation of device ", device,
            " (freed twice, or allocated on another device?)"));
      }
      bytes = it->second;
      dev.live.erase(it);
    }
    // The bytes count as free now; the memory returns to the pool when the
    // worker's cudaFreeAsync runs in stream order after `after`.
    dev.in_use.fetch_sub(bytes, std::memory_order_acq_rel);
    if (PoolGrower* g = growers_[dev.gpu].get(); g != nullptr) g->add_in_use(-static_cast<int64_t>(bytes));
    Command c;
    c.kind = CommandKind::kFree;
    Worker::Keep keep;
    keep.waits.assign(after.begin(), after.end());
    c.payload = buffer.base;
    if (Tracer* t = tracer_; t != nullptr) {
      c.tracer = t;
      c.trace_args() = absl::StrCat("\"bytes\":", bytes);
    }
    const uint64_t ticket = dev.worker->enqueue(std::move(c), std::move(keep));
    uint64_t seen = dev.free_ticket.load(std::memory_order_relaxed);
    while (seen < ticket &&
           !dev.free_ticket.compare_exchange_weak(seen, ticket, std::memory_order_acq_rel)) {
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Event> copy(const Endpoint& dst, const Endpoint& src, const CopyShape& shape,
                             std::span<const Event> wait) override {
    if (absl::Status s = check_endpoints(dst, src, "cuda copy"); !s.ok()) return s;
    if (absl::Status s = check_copy(dst, src, shape, "cuda copy", -1); !s.ok()) return s;
    const CopyDir dir = copy_direction(dst, src);
    Device& dev = *devices_[issuer(dir, dst.device, src.device)];
    std::optional<detail::SlowScope> scope(std::in_place,
                                           "cuda copy: making the event and the command");
    auto event = make_op_event(dev.shared);
    Command c;
    c.kind = CommandKind::kCopy;
    c.dir = dir;
    Worker::Keep keep{event, {}};
    keep.waits.assign(wait.begin(), wait.end());
    c.payload = CopyOp{dst, src, shape};
    if (Tracer* t = tracer_; t != nullptr) {
      c.tracer = t;
      c.trace_args() = copy_trace_args(dst, src, dir, shape.width_bytes * shape.height * shape.depth);
      absl::StrAppend(&c.trace_args(), ",\"shape\":\"", shape_text(shape), "\"");
      append_label(c.trace_args());
    }
    scope.emplace("cuda copy: enqueueing the command");
    dev.worker->enqueue(std::move(c), std::move(keep));
    return Event(std::move(event));
  }

  absl::StatusOr<Event> copy_batch(std::span<const CopyOp> ops,
                                   std::span<const Event> wait) override {
    // An empty batch has nothing of its own to complete.
    if (ops.empty()) return Event();
    const int dst_dev = ops[0].dst.device, src_dev = ops[0].src.device;
    size_t bytes = 0;
    for (size_t k = 0; k < ops.size(); ++k) {
      const CopyOp& op = ops[k];
      if (op.dst.device != dst_dev || op.src.device != src_dev) {
        return absl::InvalidArgumentError(absl::StrCat(
            "cuda copy_batch: op ", k, " copies ", where(op.src.device), " -> ",
            where(op.dst.device), " but op 0 copies ", where(src_dev), " -> ", where(dst_dev),
            " (a batch has one source and one destination device)"));
      }
      if (k == 0) {
        if (absl::Status s = check_endpoints(op.dst, op.src, "cuda copy_batch"); !s.ok()) return s;
      }
      if (absl::Status s = check_copy(op.dst, op.src, op.shape, "cuda copy_batch",
                                      static_cast<long>(k));
          !s.ok()) {
        return s;
      }
      bytes += op.shape.width_bytes * op.shape.height * op.shape.depth;
    }
    const CopyDir dir = copy_direction(ops[0].dst, ops[0].src);
    Device& dev = *devices_[issuer(dir, dst_dev, src_dev)];
    std::optional<detail::SlowScope> scope(std::in_place,
                                           "cuda copy_batch: making the event and the command");
    auto event = make_op_event(dev.shared);
    Command c;
    c.kind = CommandKind::kBatch;
    c.dir = dir;
    Worker::Keep keep{event, {}};
    keep.waits.assign(wait.begin(), wait.end());
    if (Tracer* t = tracer_; t != nullptr) {
      c.tracer = t;
      c.trace_args() = copy_trace_args(ops[0].dst, ops[0].src, dir, bytes);
      absl::StrAppend(&c.trace_args(), ",\"ops\":", ops.size());
      append_label(c.trace_args());
    }
    scope.emplace("cuda copy_batch: enqueueing the command");
    dev.worker->enqueue_batch(std::move(c), std::move(keep), ops);
    return Event(std::move(event));
  }

  absl::StatusOr<Event> launch(int device, std::function<void(const LaunchContext&)> fn,
                               std::span<const Event> wait) override {
    if (absl::Status s = check_device(device, "launch"); !s.ok()) return s;
    if (!fn) return absl::InvalidArgumentError("cuda launch: empty function");
    Device& dev = *devices_[device];
    std::optional<detail::SlowScope> scope(std::in_place,
                                           "cuda launch: making the event and the command");
    auto event = make_op_event(dev.shared);
    Command c;
    c.kind = CommandKind::kLaunch;
    Worker::Keep keep{event, {}};
    keep.waits.assign(wait.begin(), wait.end());
    c.fn = std::move(fn);
    if (Tracer* t = tracer_; t != nullptr) {
      c.tracer = t;
      c.trace_args() = Tracer::current_label();
    }
    scope.emplace("cuda launch: enqueueing the command");
    dev.worker->enqueue(std::move(c), std::move(keep));
    return Event(std::move(event));
  }

  absl::StatusOr<Event> record(int device) override {
    if (absl::Status s = check_device(device, "record"); !s.ok()) return s;
    Device& dev = *devices_[device];
    auto event = make_op_event(dev.shared);
    Command c;
    c.kind = CommandKind::kRecord;
    dev.worker->enqueue(std::move(c), Worker::Keep{event, {}});
    return Event(std::move(event));
  }

  absl::Status synchronize(int device) override {
    if (absl::Status s = check_device(device, "synchronize"); !s.ok()) return s;
    if (Worker::on_any_worker_thread()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cuda synchronize(", device, ") called from a launch function: the issue worker "
          "running it would wait for itself or for a worker waiting for it"));
    }
    Device& dev = *devices_[device];
    // Everything enqueued before the call is issued, then complete.
    dev.worker->wait_issued(dev.worker->last_ticket());
    dev.worker->release_issued();
    absl::Status streams = dev.streams.synchronize_all();
    absl::Status first = dev.worker->take_first_error();
    if (Tracer* t = tracer_; t != nullptr) {
      if (dev.trace->pending() > kTraceFlushRecords) dev.trace->flush(false);
      if (dev.trace->reference_age_us(t) > kTraceReferenceMaxAgeUs) {
        ScopedDevice on(dev.gpu);
        (void)dev.trace->take_reference(t, dev.streams.trace.stream);
      }
    }
    return first.ok() ? streams : first;
  }

  absl::Status register_host(void* host, size_t bytes) override {
    absl::Status s = pin_if_needed(host, bytes);
    // Whether copies of the array go through the staging buffers, decided
    // here once (a CUDA query for memory the program pinned itself) rather
    // than on every acquire: cudaPointerGetAttributes is a driver call, and
    // the acquire path makes none.
    const uintptr_t at = reinterpret_cast<uintptr_t>(host);
    const bool staged = !pinner_.covers(at, at + 1);
    std::lock_guard<std::mutex> lock(host_mu_);
    host_staged_[host] = staged;
    return s;
  }

  // Pins the array when the host copies mode asks for it (auto: once the
  // registered arrays exceed the devices' capacity, all of them).
  absl::Status pin_if_needed(void* host, size_t bytes) {
    switch (options_.host_copies) {
      case BBMM_HOST_COPIES_STAGED:
        return absl::OkStatus();
      case BBMM_HOST_COPIES_PINNED:
        return pinner_.pin(host, bytes);
      case BBMM_HOST_COPIES_AUTO:
        break;
    }
    // Auto: staged while the arrays registered now fit in the devices'
    // capacity together; once they do not, every one of them is pinned.
    std::vector<std::pair<void*, size_t>> to_pin;
    {
      std::lock_guard<std::mutex> lock(host_mu_);
      auto_hosts_[host] = AutoHost{bytes, false};
      size_t total = 0, capacity = 0;
      for (const auto& [h, a] : auto_hosts_) total += a.bytes;
      for (const auto& dev : devices_) capacity += dev->capacity;
      if (total <= capacity) return absl::OkStatus();
      for (auto& [h, a] : auto_hosts_) {
        if (!a.pinned) to_pin.emplace_back(h, a.bytes);
        a.pinned = true;
      }
    }
    for (const auto& [h, b] : to_pin) {
      if (absl::Status s = pinner_.pin(h, b); !s.ok()) return s;
      std::lock_guard<std::mutex> lock(host_mu_);
      if (auto it = host_staged_.find(h); it != host_staged_.end()) it->second = false;
    }
    return absl::OkStatus();
  }

  bool host_copies_staged(const void* host) const override {
    {
      std::lock_guard<std::mutex> lock(host_mu_);
      if (auto it = host_staged_.find(host); it != host_staged_.end()) return it->second;
    }
    // Memory the runtime never registered: ask.
    const uintptr_t at = reinterpret_cast<uintptr_t>(host);
    return !pinner_.covers(at, at + 1);
  }

  absl::Status unregister_host(void* host) override {
    {
      std::lock_guard<std::mutex> lock(host_mu_);
      auto_hosts_.erase(host);
      host_staged_.erase(host);
    }
    return pinner_.unpin(host);
  }

  void set_tracer(Tracer* tracer) override {
    if (tracer == tracer_) return;
    // Records of the old tracer: the complete ones are delivered, the others
    // dropped (the old tracer may be gone when they complete).
    for (auto& dev : devices_) dev->trace->flush(/*drop_incomplete=*/true);
    tracer_ = tracer;
    for (auto& dev : devices_) {
      if (tracer == nullptr) {
        dev->trace->clear_reference();
        continue;
      }
      ScopedDevice on(dev->gpu);
      absl::Status s = dev->shared->timing.reserve(kTimingEventsPerDevice) == cudaSuccess
                           ? dev->trace->take_reference(tracer, dev->streams.trace.stream)
                           : absl::UnknownError("cannot create timing events");
      if (!s.ok()) {
        // Without a reference the worker records no timings for this device.
        (void)cudaGetLastError();
        dev->trace->clear_reference();
        std::fprintf(stderr, "bbmm: cuda device %d: no device timings in the trace: %s\n",
                     dev->index, std::string(s.message()).c_str());
      }
    }
  }

  void flush_trace() override {
    for (auto& dev : devices_) dev->trace->flush(false);
  }

 private:
  struct Device {
    int index = 0;
    int gpu = 0;
    std::shared_ptr<GpuShared> shared;
    DeviceStreams streams;
    std::unique_ptr<DeviceTrace> trace;
    std::unique_ptr<Worker> worker;
    size_t capacity = 0;
    std::atomic<size_t> in_use{0};
    // The worker's ticket of the latest free: allocate() lets the worker issue
    // it first (allocate_reserved).
    std::atomic<uint64_t> free_ticket{0};
    // Live allocations and their requested sizes (free() checks and
    // accounts with them).
    std::mutex live_mu;
    std::unordered_map<void*, size_t> live;
  };

  // The device whose worker issues a copy from `src` to `dst` in direction
  // `dir`: the device side of a host copy; between devices the destination,
  // or the source with peer_push.
  int issuer(CopyDir dir, int dst, int src) const {
    if (dir == CopyDir::kD2H) return src;
    if (dir == CopyDir::kPeer && options_.peer_push) return src;
    return dst;
  }

  // kInvalidArgument naming `what` unless `device` exists.
  absl::Status check_device(int device, const char* what) const {
    if (device < 0 || device >= device_count()) {
      return absl::InvalidArgumentError(absl::StrCat("cuda ", what, ": device ", device,
                                                     " is outside 0..", device_count() - 1));
    }
    return absl::OkStatus();
  }

  // check_device for the device sides of `dst` and `src`.
  absl::Status check_endpoints(const Endpoint& dst, const Endpoint& src, const char* what) const {
    if (dst.device != kHost) {
      if (absl::Status s = check_device(dst.device, what); !s.ok()) return s;
    }
    if (src.device != kHost) {
      if (absl::Status s = check_device(src.device, what); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // The args of a copy's trace slice (without the label).
  std::string copy_trace_args(const Endpoint& dst, const Endpoint& src, CopyDir dir,
                              size_t bytes) const {
    std::string args = absl::StrCat("\"bytes\":", bytes, ",\"src\":\"", where(src.device),
                                    "\",\"dst\":\"", where(dst.device), "\"");
    if (dir == CopyDir::kPeer && !topology_.can_access_peer(dst.device, src.device)) {
      absl::StrAppend(&args, ",\"staged\":true");
    }
    return args;
  }

  // Appends the calling thread's trace label to `args`.
  static void append_label(std::string& args) {
    const std::string& label = Tracer::current_label();
    if (!label.empty()) absl::StrAppend(&args, ",", label);
  }

  // Whether the free memory of GPU `gpu`'s pool (reserved, not in use in
  // stream order) covers an allocation of `bytes` twice over (a margin for
  // fragmentation): it then needs neither to grow the pool nor the memory of
  // frees not issued yet.
  bool pool_covers(int gpu, size_t bytes) const {
    uint64_t reserved = 0, used = 0;
    if (cudaMemPoolGetAttribute(topology_.pool[gpu], cudaMemPoolAttrReservedMemCurrent,
                                &reserved) != cudaSuccess ||
        cudaMemPoolGetAttribute(topology_.pool[gpu], cudaMemPoolAttrUsedMemCurrent, &used) !=
            cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return reserved > used && (reserved - used) / 2 >= bytes;
  }

  // cudaMallocAsync of `bytes` (already counted in dev.in_use) on `dev`'s
  // memory stream, and its ready event.
  absl::StatusOr<DeviceBuffer> allocate_reserved(Device& dev, size_t bytes) {
    const auto t_start = std::chrono::steady_clock::now();
    ScopedDevice on(dev.gpu);
    BBMM_CUDA(on.error());
    // Frees still in the worker's queue hold pool memory that our accounting
    // already counts as free. When the pool's free memory does not cover this
    // allocation, let the worker issue them first, so that this allocation,
    // later in the same memory stream, can reuse their memory in stream order.
    // Else the pool grows, and growing waits until the pending frees have run,
    // i.e. until the write-backs of evicted instances end: under memory
    // pressure that blocked the application thread for up to 12 ms per
    // allocation (the out-of-core heat2d, 2 x H100, 2026-11-27,
    // docs/performance.md). Only then: issuing may itself wait for the device
    // (a stream's queue full of staged copy rounds), and an allocation the
    // pool covers anyway waited up to 54 ms for it (fdtd2d's one-element read
    // of `fict` per step, 2 x H200, 2026-11-28, BBMM_SLOW_CALL_US).
    const auto t0 = std::chrono::steady_clock::now();
    if (const uint64_t t = dev.free_ticket.load(std::memory_order_acquire);
        t > 0 && !Worker::on_any_worker_thread() && !pool_covers(dev.gpu, bytes)) {
      dev.worker->wait_issued(t);
    }
    const auto t1 = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(dev.streams.memory_mu);
    StreamSlot& m = dev.streams.memory;
    void* p = nullptr;
    const auto t2 = std::chrono::steady_clock::now();
    cudaError_t e = cudaMallocAsync(&p, std::max<size_t>(bytes, 1), m.stream);
    const auto t3 = std::chrono::steady_clock::now();
    if (e == cudaErrorMemoryAllocation && !Worker::on_any_worker_thread()) {
      // Not sticky: clear it. Frees still in the worker's queue hold pool
      // memory our accounting already counts as free: let the worker issue
      // them (frees freed earlier in the memory stream are reusable by a later
      // allocation there), then try once more.
      (void)cudaGetLastError();
      lock.unlock();
      dev.worker->wait_issued(dev.worker->last_ticket());
      lock.lock();
      e = cudaMallocAsync(&p, std::max<size_t>(bytes, 1), m.stream);
    }
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return absl::ResourceExhaustedError(absl::StrCat(
          "cuda device ", dev.index, ": the memory pool cannot supply ", bytes, " bytes"));
    }
    BBMM_CUDA(e);
    auto ready = make_op_event(dev.shared);
    if (Worker::on_any_worker_thread()) {
      // On an issue worker (a launch function allocating): record the ready
      // event here, since this worker cannot issue a command while it runs.
      cudaEvent_t ev = nullptr;
      e = dev.shared->events.get(&ev);
      if (e == cudaSuccess) {
        e = cudaEventRecord(ev, m.stream);
        if (e != cudaSuccess) dev.shared->events.put(ev);
      }
      if (e != cudaSuccess) {
        (void)cudaFreeAsync(p, m.stream);
        (void)cudaGetLastError();
        return cuda_status("cudaEventRecord (allocation ready event)", e, __FILE__, __LINE__);
      }
      ready->mark_issued(ev, m.key, ++m.seq);
      dev.worker->note_allocation(ready);
      lock.unlock();
    } else {
      // The ready event is recorded on the memory stream by the issue worker
      // (a kReady command), after this allocation in stream order: getting a
      // CUDA event (creating one when the pool is empty) and recording it are
      // driver calls that waited 28-35 ms on the calling thread while the
      // device's queues were full (fdtd2d on one H200, 2026-11-28,
      // BBMM_SLOW_CALL_US). Whoever waits for the buffer waits for the
      // command's issue first, as for any operation's event.
      lock.unlock();
      Command c;
      c.kind = CommandKind::kReady;
      c.ready = ready;
      dev.worker->enqueue(std::move(c), Worker::Keep{ready, {}});
    }
    if (const auto t4 = std::chrono::steady_clock::now();
        detail::slow_call(std::chrono::duration<double>(t4 - t_start).count())) {
      const auto us = [](auto a, auto b) {
        return std::chrono::duration<double, std::micro>(b - a).count();
      };
      detail::report_slow_call(
          absl::StrFormat("cuda device %d: allocating %u bytes (making the GPU current %.0f us, "
                          "waiting for the issue worker %.0f us, for the memory stream's lock "
                          "%.0f us, cudaMallocAsync %.0f us, its ready event %.0f us)",
                          dev.index, bytes, us(t_start, t0), us(t0, t1), us(t1, t2), us(t2, t3),
                          us(t3, t4))
              .c_str(),
          std::chrono::duration<double>(t4 - t_start).count());
    }
    {
      std::lock_guard<std::mutex> live(dev.live_mu);
      dev.live[p] = bytes;
    }
    return DeviceBuffer{p, 0, bytes, Event(std::move(ready))};
  }

  CudaBackendOptions options_;
  const uint32_t id_;
  // Before devices_: their workers use them.
  HostPinner pinner_;
  StagingCopier copier_;
  // BBMM_HOST_COPIES_AUTO: the arrays registered now, and whether pinned.
  struct AutoHost {
    size_t bytes;
    bool pinned;
  };
  mutable std::mutex host_mu_;
  std::map<void*, AutoHost> auto_hosts_;
  // Per registered array (by its host pointer): whether its copies are staged
  // (host_copies_staged), set when it is registered or pinned.
  std::map<const void*, bool> host_staged_;
  // Adds "name S s" to creation_: the seconds since the previous phase ended.
  void phase_done(const char* name) {
    const auto now = std::chrono::steady_clock::now();
    absl::StrAppendFormat(&creation_, "%s%s %.3f s", creation_.empty() ? "" : ", ", name,
                          std::chrono::duration<double>(now - phase_start_).count());
    phase_start_ = now;
  }

  CudaTopology topology_;
  // Creation, phase by phase (creation_report).
  std::string creation_;
  std::chrono::steady_clock::time_point phase_start_;
  std::vector<std::shared_ptr<GpuShared>> gpus_;
  // cudaMemcpy3DBatchAsync calls rejected in a row (cuda_copy.h).
  std::atomic<int> batch_api_rejections_{0};
  std::vector<std::unique_ptr<Device>> devices_;
  // growers_[g]: GPU g's pool grower (null when pool_headroom_bytes is 0).
  std::vector<std::unique_ptr<PoolGrower>> growers_;
};

}  // namespace

// CUDA loads a kernel's module lazily by default (CUDA_MODULE_LOADING=LAZY since
// CUDA 12.2): the first launch of each kernel on each device then waits until the
// device is idle. On an issue worker that is a stall of everything queued behind it
// (measured on 2 x H200, 2026-11-26, BBMM_CUDA_SLOW_ISSUE_US: the first kernel launch
// and the first copy-kernel peer copy of each device each held their worker 10-33 ms,
// until the device's first read-in had finished, and the other device's read-in waited
// behind them). Unless the program chose, libbbmm asks for eager loading before CUDA
// starts (no effect once the process has made its first CUDA call).
void cuda_prepare_environment() {
  (void)setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
}

absl::Status cuda_warm_up(int devices) {
  std::string why;
  const int visible = cuda_device_count(&why);
  if (visible == 0) return absl::UnavailableError(why);
  return create_contexts(devices > 0 ? std::min(devices, visible) : visible);
}

int cuda_device_count(std::string* why) {
  cuda_prepare_environment();
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (why != nullptr) *why = absl::StrCat("no CUDA device: ", cudaGetErrorString(e));
    return 0;
  }
  if (n == 0 && why != nullptr) *why = "no CUDA device is visible";
  return n;
}

absl::Status check_staging_buffer_bytes(size_t bytes) {
  if (bytes >= kMinStagingBufferBytes && bytes <= kMaxStagingBufferBytes &&
      bytes % kStagingAlign == 0) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("use 64 KiB .. 1 GiB, a multiple of ", kStagingAlign, " bytes"));
}

absl::StatusOr<std::unique_ptr<Backend>> make_cuda_backend(const CudaBackendOptions& options) {
  if (options.copy_streams < 1 || options.copy_streams > 8) {
    return absl::InvalidArgumentError(absl::StrCat("cuda backend: copy_streams is ",
                                                   options.copy_streams, "; use 1..8"));
  }
  if (options.worker_spin_us < 0 || options.worker_spin_us > 100000) {
    return absl::InvalidArgumentError(absl::StrCat("cuda backend: worker_spin_us is ",
                                                   options.worker_spin_us, "; use 0..100000"));
  }
  if (options.pin_threads < 1 || options.pin_threads > 64) {
    return absl::InvalidArgumentError(absl::StrCat("cuda backend: pin_threads is ",
                                                   options.pin_threads, "; use 1..64"));
  }
  if (options.staging_threads < 0 || options.staging_threads > 64) {
    return absl::InvalidArgumentError(absl::StrCat("cuda backend: staging_threads is ",
                                                   options.staging_threads,
                                                   "; use 1..64, or 0 for the default"));
  }
  if (absl::Status s = check_staging_buffer_bytes(options.staging_buffer_bytes); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuda backend: staging_buffer_bytes is ", options.staging_buffer_bytes,
                     "; ", s.message()));
  }
  if (options.pin_chunk_bytes < (size_t{1} << 20)) {
    return absl::InvalidArgumentError(absl::StrCat("cuda backend: pin_chunk_bytes is ",
                                                   options.pin_chunk_bytes, "; use >= 1 MiB"));
  }
  std::string why;
  const auto start = std::chrono::steady_clock::now();
  const int visible = cuda_device_count(&why);
  if (visible == 0) return absl::UnavailableError(why);
  int n = visible;
  if (options.devices > 0) {
    if (options.devices > visible && !options.oversubscribe) {
      return absl::InvalidArgumentError(absl::StrCat(options.devices,
                                                     " CUDA devices requested but ", visible,
                                                     " are visible"));
    }
    n = options.devices;
  }
  int staging_threads = options.staging_threads;
  if (staging_threads == 0) {
    // The host threads' copies of the staged bytes bound what all GPUs move
    // together: on 4 x H100 (64 cores), threads copying through pinned
    // buffers alone reached 43 GB/s with 8 threads, 56 with 16, 65-68 with 32;
    // staged copies to 2 GPUs 40/39 GB/s (H2D/D2H) with 8 threads, 48/63 with
    // 16, 51/81 with 32; to 1 GPU 16 and 32 threads were no better than 8
    // within the noise (34-48) (gpu_bench staged, fifteenth session,
    // 2026-11-27). So 16 for 1 GPU, 32 for more.
    const int hardware = static_cast<int>(std::thread::hardware_concurrency());
    staging_threads = std::min(n, visible) > 1 ? 32 : 16;
    if (hardware > 0) staging_threads = std::min(staging_threads, std::max(1, hardware / 2));
    staging_threads = std::min(staging_threads, 64);
  }
  auto backend = std::make_unique<CudaBackend>(options, staging_threads);
  absl::Status s = backend->init(n, visible, start);
  if (!s.ok()) return s;
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace bbmm
