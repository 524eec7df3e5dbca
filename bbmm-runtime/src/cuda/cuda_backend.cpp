#include "cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/trace.h"
#include "cuda/copy_kernel.h"

namespace bbmm {
namespace {

absl::Status cuda_status(const char* call, cudaError_t e, const char* file, int line) {
  const std::string msg = absl::StrCat(call, " failed at ", file, ":", line, ": ",
                                       cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
  if (e == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(msg);
  if (e == cudaErrorInvalidValue) return absl::InvalidArgumentError(msg);
  return absl::UnknownError(msg);
}

#define BBMM_CUDA(call)                                                     \
  do {                                                                      \
    const cudaError_t bbmm_e_ = (call);                                     \
    if (bbmm_e_ != cudaSuccess) {                                           \
      return cuda_status(#call, bbmm_e_, __FILE__, __LINE__);               \
    }                                                                       \
  } while (0)

// Recycles cudaEvent_t objects: creating one per operation costs about as
// much as enqueueing a small copy. One pool per GPU (an event can only be
// recorded on streams of the GPU it was created on). Shared by the backend
// and its events, so events may outlive the backend.
class EventPool {
 public:
  ~EventPool() {
    for (cudaEvent_t e : free_) cudaEventDestroy(e);
  }
  cudaError_t get(cudaEvent_t* out) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        *out = free_.back();
        free_.pop_back();
        return cudaSuccess;
      }
    }
    return cudaEventCreateWithFlags(out, cudaEventDisableTiming);
  }
  void put(cudaEvent_t e) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(e);
  }

 private:
  std::mutex mu_;
  std::vector<cudaEvent_t> free_;
};

class CudaEvent : public EventState {
 public:
  CudaEvent(cudaEvent_t ev, std::shared_ptr<EventPool> pool) : ev_(ev), pool_(std::move(pool)) {}
  ~CudaEvent() override { pool_->put(ev_); }
  bool query() const override { return cudaEventQuery(ev_) != cudaErrorNotReady; }
  absl::Status wait() const override {
    BBMM_CUDA(cudaEventSynchronize(ev_));
    return absl::OkStatus();
  }
  cudaEvent_t get() const { return ev_; }

 private:
  cudaEvent_t ev_;
  std::shared_ptr<EventPool> pool_;
};

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(const CudaBackendOptions& options) : options_(options) {}

  ~CudaBackend() override {
    for (size_t d = 0; d < devices_.size(); ++d) {
      cudaSetDevice(devices_[d].phys);
      cudaStreamSynchronize(devices_[d].stream);
      cudaStreamDestroy(devices_[d].stream);
      cudaMemPoolTrimTo(devices_[d].pool, 0);
    }
    for (void* p : registered_) cudaHostUnregister(p);
  }

  absl::Status init(int count, int visible) {
    devices_.resize(count);
    for (int d = 0; d < count; ++d) {
      Device& dev = devices_[d];
      dev.phys = d % visible;
      BBMM_CUDA(cudaSetDevice(dev.phys));
      BBMM_CUDA(cudaStreamCreateWithFlags(&dev.stream, cudaStreamNonBlocking));
      BBMM_CUDA(cudaDeviceGetDefaultMemPool(&dev.pool, dev.phys));
      // Keep freed memory in the pool: allocation on the tile path is then a
      // pool hit, never a trip to the driver.
      uint64_t threshold = std::numeric_limits<uint64_t>::max();
      BBMM_CUDA(cudaMemPoolSetAttribute(dev.pool, cudaMemPoolAttrReleaseThreshold, &threshold));
      size_t free_bytes = 0, total_bytes = 0;
      BBMM_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
      // Leave room for kernels' own needs and the CUDA context.
      const size_t reserve = std::max<size_t>(total_bytes / 50, size_t{512} << 20);
      dev.capacity = free_bytes > reserve ? free_bytes - reserve : 0;
      // Logical devices sharing a GPU share its memory.
      dev.capacity /= (count + visible - 1 - dev.phys) / visible;
      if (options_.capacity_bytes > 0) dev.capacity = std::min(dev.capacity, options_.capacity_bytes);
    }
    const int phys_count = std::min(count, visible);
    phys_count_ = phys_count;
    for (int g = 0; g < phys_count; ++g) events_.push_back(std::make_shared<EventPool>());
    peer_.assign(static_cast<size_t>(phys_count) * phys_count, false);
    for (int a = 0; a < phys_count; ++a) {
      std::vector<cudaMemAccessDesc> access;
      for (int b = 0; b < phys_count; ++b) {
        if (a == b) continue;
        int can = 0;
        BBMM_CUDA(cudaDeviceCanAccessPeer(&can, a, b));
        if (!can || !options_.peer_access) continue;
        BBMM_CUDA(cudaSetDevice(a));
        const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) {
          cudaGetLastError();
        } else if (e != cudaSuccess) {
          return cuda_status("cudaDeviceEnablePeerAccess", e, __FILE__, __LINE__);
        }
        peer_[a * phys_count + b] = true;
      }
      // Pool memory of device a readable and writable by the devices that can
      // reach it (peer access does not cover stream-ordered pools).
      for (int b = 0; b < phys_count; ++b) {
        if (b == a) continue;
        int can = 0;
        BBMM_CUDA(cudaDeviceCanAccessPeer(&can, b, a));
        if (!can) continue;
        cudaMemAccessDesc desc = {};
        desc.location.type = cudaMemLocationTypeDevice;
        desc.location.id = b;
        desc.flags = cudaMemAccessFlagsProtReadWrite;
        access.push_back(desc);
      }
      if (!access.empty()) {
        BBMM_CUDA(cudaMemPoolSetAccess(devices_[a].pool, access.data(), access.size()));
      }
    }
    return absl::OkStatus();
  }

  BackendKind kind() const override { return BackendKind::kCuda; }
  std::string name() const override { return "cuda"; }
  int device_count() const override { return static_cast<int>(devices_.size()); }
  size_t pitch_alignment() const override { return options_.pitch_alignment; }

  size_t free_memory(int device) const override {
    if (device < 0 || device >= device_count()) return 0;
    const Device& dev = devices_[device];
    const size_t used = dev.in_use.load();
    return dev.capacity > used ? dev.capacity - used : 0;
  }

  bool can_access_peer(int dst, int src) const override {
    if (dst < 0 || src < 0 || dst >= device_count() || src >= device_count()) return false;
    const int a = devices_[dst].phys, b = devices_[src].phys;
    return a == b || peer_[a * phys_count_ + b];
  }

  absl::StatusOr<DeviceBuffer> allocate(int device, size_t bytes) override {
    absl::Status s = check_device(device, "allocate");
    if (!s.ok()) return s;
    Device& dev = devices_[device];
    if (dev.in_use.load() + bytes > dev.capacity) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "cuda device ", device, ": ", bytes, " bytes requested, ", dev.in_use.load(),
          " in use, capacity ", dev.capacity));
    }
    BBMM_CUDA(cudaSetDevice(devices_[device].phys));
    void* p = nullptr;
    const cudaError_t e = cudaMallocAsync(&p, std::max<size_t>(bytes, 1), dev.stream);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky: clear it
      return absl::ResourceExhaustedError(absl::StrCat("cuda device ", device,
                                                       ": the pool cannot supply ", bytes,
                                                       " bytes"));
    }
    if (e != cudaSuccess) return cuda_status("cudaMallocAsync", e, __FILE__, __LINE__);
    dev.in_use += bytes;
    return DeviceBuffer{p, 0, bytes};
  }

  absl::Status free(int device, const DeviceBuffer& buffer, std::span<const Event> after) override {
    absl::Status s = check_device(device, "free");
    if (!s.ok()) return s;
    Device& dev = devices_[device];
    BBMM_CUDA(cudaSetDevice(devices_[device].phys));
    s = wait_on(dev.stream, after);
    if (!s.ok()) return s;
    BBMM_CUDA(cudaFreeAsync(buffer.base, dev.stream));
    dev.in_use -= buffer.bytes;
    return absl::OkStatus();
  }

  absl::StatusOr<Event> copy(const Endpoint& dst, const Endpoint& src, const CopyShape& shape,
                             std::span<const Event> wait) override {
    if (dst.device == kHost && src.device == kHost) {
      return absl::InvalidArgumentError("cuda copy: host-to-host copies are not device work");
    }
    const int queue_dev = dst.device != kHost ? dst.device : src.device;
    absl::Status s = check_device(queue_dev, "copy");
    if (!s.ok()) return s;
    if (dst.device != kHost && (s = check_device(dst.device, "copy")).ok() == false) return s;
    if (src.device != kHost && (s = check_device(src.device, "copy")).ok() == false) return s;
    if (shape.height > 1 && (dst.row_pitch < shape.width_bytes || src.row_pitch < shape.width_bytes)) {
      return absl::InvalidArgumentError("cuda copy: a row pitch is smaller than the row width");
    }
    Device& dev = devices_[queue_dev];
    BBMM_CUDA(cudaSetDevice(devices_[queue_dev].phys));
    s = wait_on(dev.stream, wait);
    if (!s.ok()) return s;
    char* d = static_cast<char*>(dst.base) + dst.offset;
    const char* p = static_cast<const char*>(src.base) + src.offset;
    const bool cross = dst.device != kHost && src.device != kHost && dst.device != src.device;
    const cudaMemcpyKind kind = src.device == kHost   ? cudaMemcpyHostToDevice
                                : dst.device == kHost ? cudaMemcpyDeviceToHost
                                                      : cudaMemcpyDeviceToDevice;
    const size_t depth = std::max<size_t>(shape.depth, 1), height = std::max<size_t>(shape.height, 1);
    const bool dense = (height == 1 || (dst.row_pitch == shape.width_bytes &&
                                        src.row_pitch == shape.width_bytes)) &&
                       (depth == 1 || (dst.slice_pitch == shape.width_bytes * height &&
                                       src.slice_pitch == shape.width_bytes * height));
    const size_t total = shape.width_bytes * height * depth;
    if (total == 0) {
      // nothing to move
    } else if (dense) {
      if (cross) {
        BBMM_CUDA(cudaMemcpyPeerAsync(d, devices_[dst.device].phys, p, devices_[src.device].phys, total, dev.stream));
      } else {
        BBMM_CUDA(cudaMemcpyAsync(d, p, total, kind, dev.stream));
      }
    } else if (dst.device != kHost && src.device != kHost && options_.copy_kernel &&
               (!cross || (can_access_peer(dst.device, src.device) &&
                           (shape.width_bytes < 256 || total < (size_t{64} << 20))))) {
      // Measured on H200 (docs/performance.md): the kernel beats the copy
      // engine for every strided device-local box (up to 4x), and for peer
      // boxes with rows under 256 B or under 64 MiB; the engine wins large
      // peer boxes (390 vs 370 GB/s).
      BBMM_CUDA(launch_copy_kernel(d, dst.row_pitch, dst.slice_pitch, p, src.row_pitch,
                                   src.slice_pitch, shape.width_bytes, height, depth, dev.stream));
    } else if (!cross && depth == 1) {
      BBMM_CUDA(cudaMemcpy2DAsync(d, dst.row_pitch, p, src.row_pitch, shape.width_bytes, height,
                                  kind, dev.stream));
    } else if (dst.slice_pitch % std::max<size_t>(dst.row_pitch, 1) == 0 &&
               src.slice_pitch % std::max<size_t>(src.row_pitch, 1) == 0) {
      const size_t dst_rows = depth > 1 ? dst.slice_pitch / dst.row_pitch : height;
      const size_t src_rows = depth > 1 ? src.slice_pitch / src.row_pitch : height;
      const cudaExtent extent = make_cudaExtent(shape.width_bytes, height, depth);
      if (cross) {
        cudaMemcpy3DPeerParms parms = {};
        parms.dstPtr = make_cudaPitchedPtr(d, dst.row_pitch, shape.width_bytes, dst_rows);
        parms.srcPtr = make_cudaPitchedPtr(const_cast<char*>(p), src.row_pitch,
                                           shape.width_bytes, src_rows);
        parms.dstDevice = devices_[dst.device].phys;
        parms.srcDevice = devices_[src.device].phys;
        parms.extent = extent;
        BBMM_CUDA(cudaMemcpy3DPeerAsync(&parms, dev.stream));
      } else {
        cudaMemcpy3DParms parms = {};
        parms.dstPtr = make_cudaPitchedPtr(d, dst.row_pitch, shape.width_bytes, dst_rows);
        parms.srcPtr = make_cudaPitchedPtr(const_cast<char*>(p), src.row_pitch,
                                           shape.width_bytes, src_rows);
        parms.extent = extent;
        parms.kind = kind;
        BBMM_CUDA(cudaMemcpy3DAsync(&parms, dev.stream));
      }
    } else {
      // Plane pitches that are not whole rows: one 2-D copy per plane.
      for (size_t z = 0; z < depth; ++z) {
        if (cross) {
          for (size_t y = 0; y < height; ++y) {
            BBMM_CUDA(cudaMemcpyPeerAsync(d + z * dst.slice_pitch + y * dst.row_pitch,
                                          devices_[dst.device].phys,
                                          p + z * src.slice_pitch + y * src.row_pitch,
                                          devices_[src.device].phys, shape.width_bytes,
                                          dev.stream));
          }
        } else {
          BBMM_CUDA(cudaMemcpy2DAsync(d + z * dst.slice_pitch, dst.row_pitch,
                                      p + z * src.slice_pitch, src.row_pitch,
                                      shape.width_bytes, height, kind, dev.stream));
        }
      }
    }
    return record_on(queue_dev);
  }

  absl::StatusOr<Event> launch(int device, std::function<void(const LaunchContext&)> fn,
                               std::span<const Event> wait) override {
    absl::Status s = check_device(device, "launch");
    if (!s.ok()) return s;
    if (!fn) return absl::InvalidArgumentError("cuda launch: empty function");
    Device& dev = devices_[device];
    BBMM_CUDA(cudaSetDevice(devices_[device].phys));
    s = wait_on(dev.stream, wait);
    if (!s.ok()) return s;
    try {
      fn(LaunchContext{device, dev.stream});
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat("cuda launch on device ", device,
                                              ": the launch function threw: ", e.what()));
    } catch (...) {
      return absl::InternalError(absl::StrCat("cuda launch on device ", device,
                                              ": the launch function threw"));
    }
    BBMM_CUDA(cudaSetDevice(devices_[device].phys));
    BBMM_CUDA(cudaPeekAtLastError());
    return record_on(device);
  }

  absl::StatusOr<Event> record(int device) override {
    absl::Status s = check_device(device, "record");
    if (!s.ok()) return s;
    BBMM_CUDA(cudaSetDevice(devices_[device].phys));
    return record_on(device);
  }

  absl::Status synchronize(int device) override {
    absl::Status s = check_device(device, "synchronize");
    if (!s.ok()) return s;
    BBMM_CUDA(cudaSetDevice(devices_[device].phys));
    BBMM_CUDA(cudaStreamSynchronize(devices_[device].stream));
    return absl::OkStatus();
  }

  absl::Status register_host(void* host, size_t bytes) override {
    if (!options_.register_host || host == nullptr || bytes == 0) return absl::OkStatus();
    std::lock_guard<std::mutex> lock(mu_);
    if (registered_.count(host)) return absl::OkStatus();
    const cudaError_t e = cudaHostRegister(host, bytes, cudaHostRegisterPortable);
    if (e == cudaErrorHostMemoryAlreadyRegistered) {
      cudaGetLastError();
      return absl::OkStatus();
    }
    if (e != cudaSuccess) {
      // Pinning is an optimisation: copies from pageable memory still work.
      cudaGetLastError();
      std::fprintf(stderr, "bbmm: cudaHostRegister of %zu bytes failed (%s); copies of this "
                   "array use pageable memory\n", bytes, cudaGetErrorString(e));
      return absl::OkStatus();
    }
    registered_.insert(host);
    return absl::OkStatus();
  }

  absl::Status unregister_host(void* host) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (registered_.erase(host) == 0) return absl::OkStatus();
    BBMM_CUDA(cudaHostUnregister(host));
    return absl::OkStatus();
  }

 private:
  struct Device {
    int phys = 0;  // the GPU
    cudaStream_t stream = nullptr;
    cudaMemPool_t pool = nullptr;
    size_t capacity = 0;
    std::atomic<size_t> in_use{0};
    Device() = default;
    Device(Device&& o) noexcept
        : phys(o.phys), stream(o.stream), pool(o.pool), capacity(o.capacity),
          in_use(o.in_use.load()) {}
  };

  absl::Status check_device(int device, const char* what) const {
    if (device < 0 || device >= device_count()) {
      return absl::InvalidArgumentError(absl::StrCat("cuda ", what, ": device ", device,
                                                     " is outside 0..", device_count() - 1));
    }
    return absl::OkStatus();
  }

  // Makes `stream` wait for `events` (other backends' events cannot occur:
  // one runtime has one backend).
  absl::Status wait_on(cudaStream_t stream, std::span<const Event> events) {
    for (const Event& e : events) {
      const auto* ce = dynamic_cast<const CudaEvent*>(e.state());
      if (ce == nullptr || ce->query()) continue;
      BBMM_CUDA(cudaStreamWaitEvent(stream, ce->get(), 0));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Event> record_on(int device) {
    // The caller made devices_[device].phys current: new events belong to it.
    const std::shared_ptr<EventPool>& pool = events_[devices_[device].phys];
    cudaEvent_t ev;
    BBMM_CUDA(pool->get(&ev));
    const cudaError_t e = cudaEventRecord(ev, devices_[device].stream);
    if (e != cudaSuccess) {
      pool->put(ev);
      return cuda_status("cudaEventRecord", e, __FILE__, __LINE__);
    }
    return Event(std::make_shared<CudaEvent>(ev, pool));
  }

  CudaBackendOptions options_;
  std::vector<std::shared_ptr<EventPool>> events_;  // per GPU
  std::vector<Device> devices_;
  int phys_count_ = 0;      // GPUs in use
  std::vector<bool> peer_;  // peer_[dst_gpu * phys_count_ + src_gpu]
  std::mutex mu_;
  std::unordered_set<void*> registered_;
};

}  // namespace

int cuda_device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (why != nullptr) *why = absl::StrCat("no CUDA device: ", cudaGetErrorString(e));
    return 0;
  }
  if (n == 0 && why != nullptr) *why = "no CUDA device is visible";
  return n;
}

absl::StatusOr<std::unique_ptr<Backend>> make_cuda_backend(const CudaBackendOptions& options) {
  std::string why;
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
  auto backend = std::make_unique<CudaBackend>(options);
  absl::Status s = backend->init(n, visible);
  if (!s.ok()) return s;
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace bbmm
