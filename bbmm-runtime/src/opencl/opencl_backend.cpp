#include "opencl/opencl_backend.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/copy_rect.h"

namespace bbmm {
namespace {

constexpr int kMaxDevices = 1024;
// Logical devices on a platform whose only device is a CPU (PoCL): enough for
// flow-out, peer copies and box-out between devices to run in CI.
constexpr int kDefaultCpuLogicalDevices = 4;

absl::Status cl_error(const char* call, cl_int e, const char* file, int line) {
  const std::string msg =
      absl::StrCat(call, " failed at ", file, ":", line, ": ", opencl_error_name(e), " (", e, ")");
  switch (e) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
    case CL_OUT_OF_HOST_MEMORY:
      return absl::ResourceExhaustedError(msg);
    case CL_INVALID_VALUE:
    case CL_INVALID_MEM_OBJECT:
    case CL_INVALID_BUFFER_SIZE:
    case CL_MEM_COPY_OVERLAP:
      return absl::InvalidArgumentError(msg);
    default:
      return absl::InternalError(msg);
  }
}

#define BBMM_CL(call)                                             \
  do {                                                            \
    const cl_int bbmm_e_ = (call);                                \
    if (bbmm_e_ != CL_SUCCESS) {                                  \
      return cl_error(#call, bbmm_e_, __FILE__, __LINE__);        \
    }                                                             \
  } while (0)

// Negative execution statuses are error codes; PoCL reports -1 for a command
// that failed or whose wait list held a failed event.
std::string execution_status_string(cl_int st) {
  if (st == -1) return "execution status -1";
  return absl::StrCat("execution status ", st, " (", opencl_error_name(st), ")");
}

// One operation's completion: an enqueued command's event, or (ev_ null) an
// operation that failed without being enqueued because an event it waited
// for had already failed. `what_` ("copy H2D on OpenCL device 2") names it in
// errors.
class ClEventState final : public EventState {
 public:
  // Takes over the reference to `ev`.
  ClEventState(cl_event ev, std::string what) : ev_(ev), what_(std::move(what)) {}
  explicit ClEventState(absl::Status failure) : failure_(std::move(failure)) {}
  ~ClEventState() override {
    if (ev_ != nullptr) clReleaseEvent(ev_);
  }
  ClEventState(const ClEventState&) = delete;
  ClEventState& operator=(const ClEventState&) = delete;

  // CL_COMPLETE or negative (failed) is done.
  bool query() const override { return status() <= CL_COMPLETE; }

  absl::Status wait() const override {
    if (ev_ == nullptr) return failure_;
    const cl_int e = clWaitForEvents(1, &ev_);
    cl_int st = CL_QUEUED;
    BBMM_CL(clGetEventInfo(ev_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr));
    if (st < 0) {
      return absl::InternalError(absl::StrCat(what_, " failed: ", execution_status_string(st),
                                              "; the command failed, or an event it waited "
                                              "for did"));
    }
    if (e != CL_SUCCESS && e != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) {
      return cl_error("clWaitForEvents", e, __FILE__, __LINE__);
    }
    return absl::OkStatus();
  }

  // Negative when failed, CL_COMPLETE when done, positive while pending. A
  // failed query counts as a failure, so that nobody spins on it; wait()
  // reports the error.
  cl_int status() const {
    if (ev_ == nullptr) return CL_INVALID_EVENT;
    cl_int st = CL_QUEUED;
    if (clGetEventInfo(ev_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr) !=
        CL_SUCCESS) {
      return CL_INVALID_EVENT;
    }
    return st;
  }

  // Null for an operation that was never enqueued.
  cl_event get() const { return ev_; }

 private:
  cl_event ev_ = nullptr;
  std::string what_;
  absl::Status failure_;
};

// The cl_events among `events`. An event of no OpenCL command (a transfer
// between ranks, core/transport.h) is waited for here, on the calling thread:
// OpenCL cannot wait for it (default events are complete: no wait). Returns
// the error of an event that has already failed instead: PoCL 3.1 never
// completes a command enqueued after an event in its wait list failed, so such
// a command must not be enqueued. With `skip_failed`, failed events are left
// out instead.
absl::Status wait_list(std::span<const Event> events, std::vector<cl_event>* list,
                       bool skip_failed = false) {
  list->clear();
  list->reserve(events.size());
  for (const Event& e : events) {
    const auto* s = dynamic_cast<const ClEventState*>(e.state());
    if (s == nullptr) {
      absl::Status st = e.wait();
      if (!st.ok() && !skip_failed) return st;
      continue;
    }
    if (s->status() < 0) {
      if (skip_failed) continue;
      absl::Status st = s->wait();
      if (!st.ok()) return st;
    }
    list->push_back(s->get());
  }
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<T> device_info(cl_device_id device, cl_device_info what, const char* name) {
  T value{};
  const cl_int e = clGetDeviceInfo(device, what, sizeof value, &value, nullptr);
  if (e != CL_SUCCESS) return cl_error(name, e, __FILE__, __LINE__);
  return value;
}

std::string platform_name(cl_platform_id p) {
  size_t n = 0;
  if (clGetPlatformInfo(p, CL_PLATFORM_NAME, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "?";
  std::string s(n, '\0');
  if (clGetPlatformInfo(p, CL_PLATFORM_NAME, n, s.data(), nullptr) != CL_SUCCESS) return "?";
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::vector<cl_device_id> platform_devices(cl_platform_id p, cl_device_type type) {
  cl_uint n = 0;
  if (clGetDeviceIDs(p, type, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::vector<cl_device_id> ids(n);
  if (clGetDeviceIDs(p, type, n, ids.data(), nullptr) != CL_SUCCESS) return {};
  return ids;
}

struct PlatformChoice {
  cl_platform_id platform = nullptr;
  std::string name;
  std::vector<cl_device_id> devices;
};

// $BBMM_OPENCL_PLATFORM (a substring of the name) if set; else the first
// platform with a GPU; else the first with any device.
absl::StatusOr<PlatformChoice> choose_platform() {
  cl_uint n = 0;
  cl_int e = clGetPlatformIDs(0, nullptr, &n);
  if (e != CL_SUCCESS || n == 0) {
    return absl::UnavailableError(absl::StrCat(
        "no OpenCL platform (clGetPlatformIDs: ", opencl_error_name(e),
        "); install an ICD, e.g. Debian pocl-opencl-icd for the CPU"));
  }
  std::vector<cl_platform_id> ids(n);
  e = clGetPlatformIDs(n, ids.data(), nullptr);
  if (e != CL_SUCCESS) return cl_error("clGetPlatformIDs", e, __FILE__, __LINE__);
  const char* wanted = std::getenv("BBMM_OPENCL_PLATFORM");
  if (wanted != nullptr && *wanted != '\0') {
    std::string names;
    for (cl_platform_id p : ids) {
      const std::string name = platform_name(p);
      if (name.find(wanted) == std::string::npos) {
        absl::StrAppend(&names, names.empty() ? "" : ", ", "'", name, "'");
        continue;
      }
      PlatformChoice c{p, name, platform_devices(p, CL_DEVICE_TYPE_ALL)};
      if (c.devices.empty()) {
        return absl::UnavailableError(
            absl::StrCat("OpenCL platform '", name, "' (BBMM_OPENCL_PLATFORM) has no device"));
      }
      return c;
    }
    return absl::UnavailableError(absl::StrCat("no OpenCL platform name contains '", wanted,
                                               "' (BBMM_OPENCL_PLATFORM); platforms: ", names));
  }
  for (cl_platform_id p : ids) {
    if (!platform_devices(p, CL_DEVICE_TYPE_GPU).empty()) {
      return PlatformChoice{p, platform_name(p), platform_devices(p, CL_DEVICE_TYPE_ALL)};
    }
  }
  for (cl_platform_id p : ids) {
    std::vector<cl_device_id> devices = platform_devices(p, CL_DEVICE_TYPE_ALL);
    if (!devices.empty()) return PlatformChoice{p, platform_name(p), std::move(devices)};
  }
  return absl::UnavailableError(
      absl::StrCat(n, " OpenCL platform(s) found, but none has a device"));
}

// Bytes from the first to one past the last byte the rectangle touches, or an
// error when the pitches cannot hold the shape or the arithmetic overflows.
std::string where(int device) {
  return device == kHost ? std::string("host") : absl::StrCat("OpenCL device ", device);
}

// Pitches as the CL rect calls want them: a row pitch of at least the width
// (irrelevant for one row), and for one plane a slice pitch of a whole plane.
struct ClPitches {
  size_t row;
  size_t slice;
};
ClPitches cl_pitches(const Endpoint& ep, const CopyShape& shape) {
  ClPitches p;
  p.row = shape.height > 1 ? ep.row_pitch : shape.width_bytes;
  p.slice = shape.depth > 1 ? ep.slice_pitch : p.row * shape.height;
  return p;
}

class OpenCLBackend final : public Backend {
 public:
  explicit OpenCLBackend(const OpenCLBackendOptions& options) : options_(options) {}

  ~OpenCLBackend() override {
    for (auto& dev : devices_) {
      if (dev->queue != nullptr) clFinish(dev->queue);
    }
    drain_releases(/*wait_all=*/true);
    for (auto& dev : devices_) {
      for (auto& [mem, bytes] : dev->allocations) clReleaseMemObject(mem);
      dev->allocations.clear();
      dev->issued.clear();
    }
    if (context_ != nullptr) opencl_release_kernel_cache(context_);
    for (auto& dev : devices_) {
      if (dev->queue != nullptr) clReleaseCommandQueue(dev->queue);
    }
    if (context_ != nullptr) clReleaseContext(context_);
  }

  OpenCLBackend(const OpenCLBackend&) = delete;
  OpenCLBackend& operator=(const OpenCLBackend&) = delete;

  absl::Status init(const PlatformChoice& platform, int count) {
    const std::vector<cl_device_id>& cl_devices = platform.devices;
    cl_int e = CL_SUCCESS;
    const cl_context_properties props[] = {
        CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform.platform), 0};
    context_ = clCreateContext(props, static_cast<cl_uint>(cl_devices.size()), cl_devices.data(),
                               nullptr, nullptr, &e);
    if (e != CL_SUCCESS) return cl_error("clCreateContext", e, __FILE__, __LINE__);
    const size_t m = cl_devices.size();
    for (int d = 0; d < count; ++d) {
      auto dev = std::make_unique<Device>();
      dev->index = d;
      dev->cl_device = cl_devices[d % m];
      // In-order (no CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE): the backend's
      // queue-order guarantee.
      dev->queue = clCreateCommandQueueWithProperties(context_, dev->cl_device, nullptr, &e);
      if (e != CL_SUCCESS) {
        return cl_error("clCreateCommandQueueWithProperties", e, __FILE__, __LINE__);
      }
      absl::StatusOr<cl_ulong> global =
          device_info<cl_ulong>(dev->cl_device, CL_DEVICE_GLOBAL_MEM_SIZE,
                                "clGetDeviceInfo(CL_DEVICE_GLOBAL_MEM_SIZE)");
      if (!global.ok()) return global.status();
      absl::StatusOr<cl_ulong> max_alloc =
          device_info<cl_ulong>(dev->cl_device, CL_DEVICE_MAX_MEM_ALLOC_SIZE,
                                "clGetDeviceInfo(CL_DEVICE_MAX_MEM_ALLOC_SIZE)");
      if (!max_alloc.ok()) return max_alloc.status();
      dev->max_alloc = *max_alloc;
      // Logical devices sharing this OpenCL device share its memory.
      const size_t sharing = count / m + (static_cast<size_t>(d % m) < count % m ? 1 : 0);
      size_t cap = static_cast<size_t>(*global) / std::max<size_t>(sharing, 1);
      cap -= cap / 16;  // the margin: the driver's and kernels' own needs
      dev->capacity = options_.capacity_bytes > 0 ? options_.capacity_bytes : cap;
      devices_.push_back(std::move(dev));
    }
    return absl::OkStatus();
  }

  BackendKind kind() const override { return BackendKind::kOpenCL; }
  std::string name() const override { return "opencl"; }
  int device_count() const override { return static_cast<int>(devices_.size()); }
  size_t pitch_alignment() const override { return options_.pitch_alignment; }

  size_t free_memory(int device) const override {
    if (!check_device(device, "free_memory").ok()) return 0;
    const Device& dev = *devices_[device];
    std::lock_guard<std::mutex> lock(dev.mu);
    return dev.capacity - std::min(dev.in_use, dev.capacity);
  }

  // One context: every queue can read every buffer.
  bool can_access_peer(int dst, int src) const override {
    return check_device(dst, "").ok() && check_device(src, "").ok();
  }

  absl::StatusOr<DeviceBuffer> allocate(int device, size_t bytes) override {
    if (absl::Status s = check_device(device, "allocate"); !s.ok()) return s;
    Device& dev = *devices_[device];
    drain_releases(/*wait_all=*/false);
    {
      std::lock_guard<std::mutex> lock(dev.mu);
      if (bytes > dev.capacity || dev.in_use > dev.capacity - bytes) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "OpenCL device ", device, ": cannot allocate ", bytes, " bytes: ", dev.in_use, " of ",
            dev.capacity, " bytes in use (", dev.capacity - std::min(dev.in_use, dev.capacity),
            " free)"));
      }
      if (bytes > dev.max_alloc) {
        return absl::ResourceExhaustedError(
            absl::StrCat("OpenCL device ", device, ": cannot allocate ", bytes,
                         " bytes: larger than CL_DEVICE_MAX_MEM_ALLOC_SIZE (", dev.max_alloc,
                         ")"));
      }
      dev.in_use += bytes;  // reserved; undone below on failure
    }
    // Zero bytes is not a valid CL buffer size; a 1-byte buffer still gives
    // the allocation a distinct base.
    const size_t size = std::max<size_t>(bytes, 1);
    cl_int e = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(context_, CL_MEM_READ_WRITE, size, nullptr, &e);
    if (e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES ||
        e == CL_OUT_OF_HOST_MEMORY) {
      // Buffers freed but not yet released may be holding the memory: wait
      // for them (off the hot path: the device is full) and try once more.
      drain_releases(/*wait_all=*/true);
      mem = clCreateBuffer(context_, CL_MEM_READ_WRITE, size, nullptr, &e);
    }
    if (e != CL_SUCCESS) {
      std::lock_guard<std::mutex> lock(dev.mu);
      dev.in_use -= bytes;
      absl::Status s = cl_error("clCreateBuffer", e, __FILE__, __LINE__);
      if (absl::IsResourceExhausted(s)) {
        return absl::ResourceExhaustedError(absl::StrCat("OpenCL device ", device,
                                                         ": cannot allocate ", bytes,
                                                         " bytes: ", s.message()));
      }
      return s;
    }
    std::lock_guard<std::mutex> lock(dev.mu);
    dev.allocations.emplace(mem, bytes);
    return DeviceBuffer{static_cast<void*>(mem), 0, bytes, Event()};
  }

  absl::Status free(int device, const DeviceBuffer& buffer, std::span<const Event> after) override {
    if (absl::Status s = check_device(device, "free"); !s.ok()) return s;
    Device& dev = *devices_[device];
    cl_mem mem = static_cast<cl_mem>(buffer.base);
    {
      std::lock_guard<std::mutex> lock(dev.mu);
      auto it = dev.allocations.find(mem);
      if (it == dev.allocations.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "free: ", pointer_string(buffer.base), " is not a live allocation of OpenCL device ",
            device, " (freed twice, or allocated on another device?)"));
      }
      // The accounting is released now (the core may reuse the bytes at
      // once); the buffer itself once `after` has completed.
      dev.in_use -= it->second;
      dev.allocations.erase(it);
    }
    // A failed `after` event means its operation no longer uses the buffer.
    std::vector<cl_event> list;
    (void)wait_list(after, &list, /*skip_failed=*/true);
    cl_event marker = nullptr;
    const cl_int e = clEnqueueMarkerWithWaitList(dev.queue, static_cast<cl_uint>(list.size()),
                                                 list.empty() ? nullptr : list.data(), &marker);
    if (e != CL_SUCCESS) {
      // No marker to order the release after: release now. OpenCL itself
      // defers deleting a released buffer until the enqueued commands using
      // it have finished, which covers every command `after` can name.
      clReleaseMemObject(mem);
      return cl_error("clEnqueueMarkerWithWaitList", e, __FILE__, __LINE__);
    }
    {
      std::lock_guard<std::mutex> lock(release_mu_);
      pending_release_.push_back({marker, mem});
    }
    drain_releases(/*wait_all=*/false);
    return absl::OkStatus();
  }

  absl::StatusOr<Event> copy(const Endpoint& dst, const Endpoint& src, const CopyShape& shape,
                             std::span<const Event> wait) override {
    if (dst.device == kHost && src.device == kHost) {
      return absl::InvalidArgumentError(
          "opencl copy: host-to-host copies are not a backend operation");
    }
    const bool empty = shape.width_bytes == 0 || shape.height == 0 || shape.depth == 0;
    for (int i = 0; i < 2; ++i) {
      const Endpoint* ep = i == 0 ? &dst : &src;
      const char* side = i == 0 ? "destination" : "source";
      if (ep->device != kHost) {
        if (absl::Status s = check_device(ep->device, "copy"); !s.ok()) return s;
      }
      if (ep->base == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("opencl copy: ", side, " base on ", where(ep->device), " is null"));
      }
      size_t span = 0;
      if (!empty) {
        absl::StatusOr<size_t> r = copy_rect_span(*ep, shape, "opencl copy", side);
        if (!r.ok()) return r.status();
        span = *r;
      }
      if (ep->device != kHost) {
        const Device& dev = *devices_[ep->device];
        std::lock_guard<std::mutex> lock(dev.mu);
        auto it = dev.allocations.find(static_cast<cl_mem>(ep->base));
        if (it == dev.allocations.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("opencl copy: ", side, " base ", pointer_string(ep->base),
                           " is not a live allocation of OpenCL device ", ep->device));
        }
        if (span > it->second) {
          return absl::InvalidArgumentError(absl::StrCat(
              "opencl copy: ", side, " rectangle ", shape_string(shape), " at offset ",
              ep->offset, " (row pitch ", ep->row_pitch, ", slice pitch ", ep->slice_pitch,
              ") ends at byte ", span, ", past the end of its ", it->second,
              "-byte allocation on OpenCL device ", ep->device));
        }
      }
    }

    int queue_device;
    const char* op;
    if (src.device == kHost) {
      queue_device = dst.device;
      op = "copy H2D";
    } else if (dst.device == kHost) {
      queue_device = src.device;
      op = "copy D2H";
    } else {
      queue_device = dst.device;
      op = src.device == dst.device ? "copy D2D" : "copy peer";
    }
    Device& dev = *devices_[queue_device];
    const std::string what = absl::StrCat(op, " on OpenCL device ", queue_device);
    std::vector<cl_event> list;
    if (absl::Status s = wait_list(wait, &list); !s.ok()) return did_not_run(dev, what, s);
    if (empty) return marker_event(dev, list, what);

    const ClPitches dp = cl_pitches(dst, shape);
    const ClPitches sp = cl_pitches(src, shape);
    const size_t w = shape.width_bytes;
    const bool dense =
        (shape.height == 1 || (dp.row == w && sp.row == w)) &&
        (shape.depth == 1 || (dp.slice == w * shape.height && sp.slice == w * shape.height));
    // The rect calls may insist on slice pitches that are whole rows: other
    // shapes go as one 2-D copy per plane (in queue order).
    const bool per_plane = shape.depth > 1 && (dp.slice % dp.row != 0 || sp.slice % sp.row != 0);
    const size_t planes = per_plane ? shape.depth : 1;
    const size_t depth = per_plane ? 1 : shape.depth;
    const size_t dst_plane_pitch = per_plane ? dp.row * shape.height : dp.slice;
    const size_t src_plane_pitch = per_plane ? sp.row * shape.height : sp.slice;
    cl_event ev = nullptr;
    for (size_t z = 0; z < planes; ++z) {
      // The first command waits for `wait`; later planes follow it in queue
      // order. The last command's event is the copy's.
      const cl_uint n = z == 0 ? static_cast<cl_uint>(list.size()) : 0;
      const cl_event* events = n == 0 ? nullptr : list.data();
      if (ev != nullptr) {
        // An earlier plane: kept (in `issued`) until it completes, see launch.
        track(dev, ev, what);
        ev = nullptr;
      }
      const size_t doff = dst.offset + z * dst.slice_pitch;
      const size_t soff = src.offset + z * src.slice_pitch;
      const size_t dorigin[3] = {doff, 0, 0};
      const size_t sorigin[3] = {soff, 0, 0};
      const size_t horigin[3] = {0, 0, 0};
      const size_t region[3] = {w, shape.height, depth};
      const size_t total = w * shape.height * depth;
      if (src.device == kHost) {
        cl_mem mem = static_cast<cl_mem>(dst.base);
        const char* host = static_cast<const char*>(src.base) + soff;
        if (dense) {
          BBMM_CL(clEnqueueWriteBuffer(dev.queue, mem, CL_FALSE, doff, total, host, n, events,
                                       &ev));
        } else {
          BBMM_CL(clEnqueueWriteBufferRect(dev.queue, mem, CL_FALSE, dorigin, horigin, region,
                                           dp.row, dst_plane_pitch, sp.row, src_plane_pitch,
                                           host, n, events, &ev));
        }
      } else if (dst.device == kHost) {
        cl_mem mem = static_cast<cl_mem>(src.base);
        char* host = static_cast<char*>(dst.base) + doff;
        if (dense) {
          BBMM_CL(clEnqueueReadBuffer(dev.queue, mem, CL_FALSE, soff, total, host, n, events,
                                      &ev));
        } else {
          BBMM_CL(clEnqueueReadBufferRect(dev.queue, mem, CL_FALSE, sorigin, horigin, region,
                                          sp.row, src_plane_pitch, dp.row, dst_plane_pitch,
                                          host, n, events, &ev));
        }
      } else {
        cl_mem dmem = static_cast<cl_mem>(dst.base);
        cl_mem smem = static_cast<cl_mem>(src.base);
        if (dense) {
          BBMM_CL(clEnqueueCopyBuffer(dev.queue, smem, dmem, soff, doff, total, n, events, &ev));
        } else {
          BBMM_CL(clEnqueueCopyBufferRect(dev.queue, smem, dmem, sorigin, dorigin, region, sp.row,
                                          src_plane_pitch, dp.row, dst_plane_pitch, n, events,
                                          &ev));
        }
      }
    }
    return track(dev, ev, what);
  }

  absl::StatusOr<Event> launch(int device, std::function<void(const LaunchContext&)> fn,
                               std::span<const Event> wait) override {
    if (absl::Status s = check_device(device, "launch"); !s.ok()) return s;
    if (!fn) return absl::InvalidArgumentError("opencl launch: empty kernel function");
    Device& dev = *devices_[device];
    std::vector<cl_event> list;
    if (absl::Status s = wait_list(wait, &list); !s.ok()) {
      return did_not_run(dev, absl::StrCat("kernel on OpenCL device ", device), s);
    }
    if (!list.empty()) {
      // A barrier (not just a marker): whatever `fn` enqueues comes after it.
      // Its event is requested and kept until it completes (in `issued`):
      // PoCL 3.1 aborts when it fails (because an event it waits for failed)
      // a command enqueued without an event or whose event was released.
      cl_event barrier = nullptr;
      BBMM_CL(clEnqueueBarrierWithWaitList(dev.queue, static_cast<cl_uint>(list.size()),
                                           list.data(), &barrier));
      track(dev, barrier, absl::StrCat("kernel wait on OpenCL device ", device));
    }
    // No exception may cross the API.
    try {
      fn(LaunchContext{device, static_cast<void*>(dev.queue)});
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat("opencl launch on OpenCL device ", device,
                                              ": the launch function threw: ", e.what()));
    } catch (...) {
      return absl::InternalError(absl::StrCat("opencl launch on OpenCL device ", device,
                                              ": the launch function threw a non-standard "
                                              "exception"));
    }
    return marker_event(dev, {}, absl::StrCat("kernel on OpenCL device ", device));
  }

  absl::StatusOr<Event> record(int device) override {
    if (absl::Status s = check_device(device, "record"); !s.ok()) return s;
    Device& dev = *devices_[device];
    // Like the host backend's record(), the event fails when an operation on
    // the device failed since the last synchronize: at once for a failure
    // already known; for a pending command that fails later, because the
    // in-order queue fails the marker after it (on platforms that propagate
    // failure, as PoCL does).
    std::shared_ptr<const ClEventState> failed;
    {
      std::lock_guard<std::mutex> lock(dev.mu);
      for (const auto& s : dev.issued) {
        if (s->status() < 0) {
          failed = s;
          break;
        }
      }
    }
    const std::string what = absl::StrCat("record on OpenCL device ", device);
    if (failed != nullptr) return did_not_run(dev, what, failed->wait());
    return marker_event(dev, {}, what);
  }

  absl::Status synchronize(int device) override {
    if (absl::Status s = check_device(device, "synchronize"); !s.ok()) return s;
    Device& dev = *devices_[device];
    std::vector<std::shared_ptr<const ClEventState>> issued;
    {
      std::lock_guard<std::mutex> lock(dev.mu);
      issued.swap(dev.issued);
      dev.prune_at = kPruneAt;
    }
    BBMM_CL(clFinish(dev.queue));
    drain_releases(/*wait_all=*/false);
    for (const auto& s : issued) {
      if (s->status() < 0) return s->wait();
    }
    return absl::OkStatus();
  }

 private:
  static constexpr size_t kPruneAt = 64;

  struct Device {
    int index = 0;
    cl_device_id cl_device = nullptr;
    cl_command_queue queue = nullptr;
    size_t capacity = 0;
    size_t max_alloc = 0;

    mutable std::mutex mu;
    size_t in_use = 0;
    std::unordered_map<cl_mem, size_t> allocations;  // buffer -> bytes requested
    // Commands issued since the last synchronize and not yet known to have
    // succeeded (for synchronize's and record's first error).
    std::vector<std::shared_ptr<const ClEventState>> issued;
    size_t prune_at = kPruneAt;
  };

  absl::Status check_device(int device, const char* what) const {
    if (device < 0 || device >= device_count()) {
      return absl::InvalidArgumentError(absl::StrCat("opencl ", what, ": device ", device,
                                                     " does not exist (the OpenCL backend has ",
                                                     device_count(), " devices)"));
    }
    return absl::OkStatus();
  }

  // Wraps `ev` (taking its reference) and remembers it for synchronize.
  Event track(Device& dev, cl_event ev, std::string what) {
    auto state = std::make_shared<const ClEventState>(ev, std::move(what));
    std::lock_guard<std::mutex> lock(dev.mu);
    dev.issued.push_back(state);
    if (dev.issued.size() >= dev.prune_at) {
      // Drop the commands that succeeded; keep the pending and failed ones.
      std::erase_if(dev.issued, [](const auto& s) { return s->status() == CL_COMPLETE; });
      dev.prune_at = std::max(kPruneAt, 2 * dev.issued.size());
    }
    return Event(std::move(state));
  }

  // The event of operation `what`, which was not enqueued because an event
  // it waited for had failed with `cause`.
  Event did_not_run(Device& dev, const std::string& what, const absl::Status& cause) {
    auto state = std::make_shared<const ClEventState>(absl::Status(
        cause.code(), absl::StrCat(what, " did not run: an event it waited for failed: ",
                                   cause.message())));
    std::lock_guard<std::mutex> lock(dev.mu);
    dev.issued.push_back(state);
    return Event(std::move(state));
  }

  absl::StatusOr<Event> marker_event(Device& dev, const std::vector<cl_event>& list,
                                     std::string what) {
    cl_event ev = nullptr;
    BBMM_CL(clEnqueueMarkerWithWaitList(dev.queue, static_cast<cl_uint>(list.size()),
                                        list.empty() ? nullptr : list.data(), &ev));
    return track(dev, ev, std::move(what));
  }

  // Releases the freed buffers whose markers have completed (all of them,
  // after waiting, when `wait_all`).
  void drain_releases(bool wait_all) {
    std::vector<std::pair<cl_event, cl_mem>> ready;
    {
      std::lock_guard<std::mutex> lock(release_mu_);
      if (pending_release_.empty()) return;
      if (wait_all) {
        ready.swap(pending_release_);
      } else {
        auto done = [](const std::pair<cl_event, cl_mem>& p) {
          cl_int st = CL_QUEUED;
          if (clGetEventInfo(p.first, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st,
                             nullptr) != CL_SUCCESS) {
            return true;
          }
          return st <= CL_COMPLETE;
        };
        auto mid = std::stable_partition(pending_release_.begin(), pending_release_.end(),
                                         [&](const auto& p) { return !done(p); });
        ready.assign(mid, pending_release_.end());
        pending_release_.erase(mid, pending_release_.end());
      }
    }
    for (auto& [marker, mem] : ready) {
      // A failed marker (an `after` event failed) still means nobody uses the
      // buffer any more.
      if (wait_all) clWaitForEvents(1, &marker);
      clReleaseMemObject(mem);
      clReleaseEvent(marker);
    }
  }

  OpenCLBackendOptions options_;
  cl_context context_ = nullptr;
  std::vector<std::unique_ptr<Device>> devices_;
  std::mutex release_mu_;
  std::vector<std::pair<cl_event, cl_mem>> pending_release_;  // (marker, buffer)
};

// --- Kernel cache ---------------------------------------------------------------

struct KernelCache {
  std::mutex mu;
  // (context, device, source) -> built program
  std::map<std::tuple<cl_context, cl_device_id, std::string>, cl_program> programs;
  // (context, device, source, name, thread) -> kernel
  std::map<std::tuple<cl_context, cl_device_id, std::string, std::string, std::thread::id>,
           cl_kernel>
      kernels;
};

// Never destroyed: releasing CL objects during static destruction could run
// after the ICD has been unloaded.
KernelCache& kernel_cache() {
  static KernelCache* cache = new KernelCache;
  return *cache;
}

absl::StatusOr<std::string> build_log(cl_program program, cl_device_id device) {
  size_t n = 0;
  BBMM_CL(clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n));
  std::string log(n, '\0');
  if (n > 0) {
    BBMM_CL(clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr));
  }
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

}  // namespace

absl::StatusOr<cl_kernel> opencl_build_kernel(cl_command_queue queue, const std::string& source,
                                              const std::string& name) {
  if (queue == nullptr) return absl::InvalidArgumentError("opencl_build_kernel: null queue");
  cl_context context = nullptr;
  cl_device_id device = nullptr;
  BBMM_CL(clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof context, &context, nullptr));
  BBMM_CL(clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof device, &device, nullptr));
  KernelCache& cache = kernel_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  const auto kkey = std::make_tuple(context, device, source, name, std::this_thread::get_id());
  if (auto it = cache.kernels.find(kkey); it != cache.kernels.end()) return it->second;

  const auto pkey = std::make_tuple(context, device, source);
  auto pit = cache.programs.find(pkey);
  if (pit == cache.programs.end()) {
    cl_int e = CL_SUCCESS;
    const char* text = source.c_str();
    const size_t length = source.size();
    cl_program program = clCreateProgramWithSource(context, 1, &text, &length, &e);
    if (e != CL_SUCCESS) return cl_error("clCreateProgramWithSource", e, __FILE__, __LINE__);
    e = clBuildProgram(program, 1, &device, "", nullptr, nullptr);
    if (e != CL_SUCCESS) {
      absl::StatusOr<std::string> log = build_log(program, device);
      clReleaseProgram(program);
      const std::string msg = absl::StrCat(
          "opencl_build_kernel: clBuildProgram failed for kernel '", name, "': ",
          opencl_error_name(e), " (", e, "); build log:\n",
          log.ok() ? *log : std::string(log.status().message()));
      if (e == CL_BUILD_PROGRAM_FAILURE || e == CL_INVALID_BUILD_OPTIONS) {
        return absl::InvalidArgumentError(msg);
      }
      return absl::InternalError(msg);
    }
    pit = cache.programs.emplace(pkey, program).first;
  }
  cl_int e = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(pit->second, name.c_str(), &e);
  if (e == CL_INVALID_KERNEL_NAME) {
    return absl::InvalidArgumentError(absl::StrCat("opencl_build_kernel: the program has no "
                                                   "kernel named '", name, "'"));
  }
  if (e != CL_SUCCESS) return cl_error("clCreateKernel", e, __FILE__, __LINE__);
  cache.kernels.emplace(kkey, kernel);
  return kernel;
}

void opencl_release_kernel_cache(cl_context context) {
  KernelCache& cache = kernel_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  for (auto it = cache.kernels.begin(); it != cache.kernels.end();) {
    if (std::get<0>(it->first) == context) {
      clReleaseKernel(it->second);
      it = cache.kernels.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = cache.programs.begin(); it != cache.programs.end();) {
    if (std::get<0>(it->first) == context) {
      clReleaseProgram(it->second);
      it = cache.programs.erase(it);
    } else {
      ++it;
    }
  }
}

const char* opencl_error_name(cl_int code) {
  switch (code) {
#define BBMM_CL_NAME(c) \
  case c:               \
    return #c;
    BBMM_CL_NAME(CL_SUCCESS)
    BBMM_CL_NAME(CL_DEVICE_NOT_FOUND)
    BBMM_CL_NAME(CL_DEVICE_NOT_AVAILABLE)
    BBMM_CL_NAME(CL_COMPILER_NOT_AVAILABLE)
    BBMM_CL_NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    BBMM_CL_NAME(CL_OUT_OF_RESOURCES)
    BBMM_CL_NAME(CL_OUT_OF_HOST_MEMORY)
    BBMM_CL_NAME(CL_PROFILING_INFO_NOT_AVAILABLE)
    BBMM_CL_NAME(CL_MEM_COPY_OVERLAP)
    BBMM_CL_NAME(CL_IMAGE_FORMAT_MISMATCH)
    BBMM_CL_NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    BBMM_CL_NAME(CL_BUILD_PROGRAM_FAILURE)
    BBMM_CL_NAME(CL_MAP_FAILURE)
    BBMM_CL_NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    BBMM_CL_NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    BBMM_CL_NAME(CL_COMPILE_PROGRAM_FAILURE)
    BBMM_CL_NAME(CL_LINKER_NOT_AVAILABLE)
    BBMM_CL_NAME(CL_LINK_PROGRAM_FAILURE)
    BBMM_CL_NAME(CL_DEVICE_PARTITION_FAILED)
    BBMM_CL_NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    BBMM_CL_NAME(CL_INVALID_VALUE)
    BBMM_CL_NAME(CL_INVALID_DEVICE_TYPE)
    BBMM_CL_NAME(CL_INVALID_PLATFORM)
    BBMM_CL_NAME(CL_INVALID_DEVICE)
    BBMM_CL_NAME(CL_INVALID_CONTEXT)
    BBMM_CL_NAME(CL_INVALID_QUEUE_PROPERTIES)
    BBMM_CL_NAME(CL_INVALID_COMMAND_QUEUE)
    BBMM_CL_NAME(CL_INVALID_HOST_PTR)
    BBMM_CL_NAME(CL_INVALID_MEM_OBJECT)
    BBMM_CL_NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    BBMM_CL_NAME(CL_INVALID_IMAGE_SIZE)
    BBMM_CL_NAME(CL_INVALID_SAMPLER)
    BBMM_CL_NAME(CL_INVALID_BINARY)
    BBMM_CL_NAME(CL_INVALID_BUILD_OPTIONS)
    BBMM_CL_NAME(CL_INVALID_PROGRAM)
    BBMM_CL_NAME(CL_INVALID_PROGRAM_EXECUTABLE)
    BBMM_CL_NAME(CL_INVALID_KERNEL_NAME)
    BBMM_CL_NAME(CL_INVALID_KERNEL_DEFINITION)
    BBMM_CL_NAME(CL_INVALID_KERNEL)
    BBMM_CL_NAME(CL_INVALID_ARG_INDEX)
    BBMM_CL_NAME(CL_INVALID_ARG_VALUE)
    BBMM_CL_NAME(CL_INVALID_ARG_SIZE)
    BBMM_CL_NAME(CL_INVALID_KERNEL_ARGS)
    BBMM_CL_NAME(CL_INVALID_WORK_DIMENSION)
    BBMM_CL_NAME(CL_INVALID_WORK_GROUP_SIZE)
    BBMM_CL_NAME(CL_INVALID_WORK_ITEM_SIZE)
    BBMM_CL_NAME(CL_INVALID_GLOBAL_OFFSET)
    BBMM_CL_NAME(CL_INVALID_EVENT_WAIT_LIST)
    BBMM_CL_NAME(CL_INVALID_EVENT)
    BBMM_CL_NAME(CL_INVALID_OPERATION)
    BBMM_CL_NAME(CL_INVALID_GL_OBJECT)
    BBMM_CL_NAME(CL_INVALID_BUFFER_SIZE)
    BBMM_CL_NAME(CL_INVALID_MIP_LEVEL)
    BBMM_CL_NAME(CL_INVALID_GLOBAL_WORK_SIZE)
    BBMM_CL_NAME(CL_INVALID_PROPERTY)
    BBMM_CL_NAME(CL_INVALID_IMAGE_DESCRIPTOR)
    BBMM_CL_NAME(CL_INVALID_COMPILER_OPTIONS)
    BBMM_CL_NAME(CL_INVALID_LINKER_OPTIONS)
    BBMM_CL_NAME(CL_INVALID_DEVICE_PARTITION_COUNT)
    BBMM_CL_NAME(CL_INVALID_PIPE_SIZE)
    BBMM_CL_NAME(CL_INVALID_DEVICE_QUEUE)
    BBMM_CL_NAME(CL_INVALID_SPEC_ID)
    BBMM_CL_NAME(CL_MAX_SIZE_RESTRICTION_EXCEEDED)
#undef BBMM_CL_NAME
    case -1001:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return "CL_ERROR(unknown)";
  }
}

int opencl_device_count(std::string* why) {
  absl::StatusOr<PlatformChoice> p = choose_platform();
  if (!p.ok()) {
    if (why != nullptr) *why = std::string(p.status().message());
    return 0;
  }
  return static_cast<int>(p->devices.size());
}

absl::StatusOr<std::unique_ptr<Backend>> make_opencl_backend(const OpenCLBackendOptions& options) {
  if (options.devices < 0 || options.devices > kMaxDevices) {
    return absl::InvalidArgumentError(absl::StrCat("opencl backend: ", options.devices,
                                                   " devices requested; use 0..", kMaxDevices));
  }
  const size_t a = options.pitch_alignment;
  if (a == 0 || (a & (a - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("opencl backend: pitch alignment ", a, " is not a power of two"));
  }
  absl::StatusOr<PlatformChoice> platform = choose_platform();
  if (!platform.ok()) return platform.status();
  int count = options.devices;
  if (count == 0) {
    count = static_cast<int>(platform->devices.size());
    if (count == 1) {
      absl::StatusOr<cl_device_type> type = device_info<cl_device_type>(
          platform->devices[0], CL_DEVICE_TYPE, "clGetDeviceInfo(CL_DEVICE_TYPE)");
      if (!type.ok()) return type.status();
      if (*type & CL_DEVICE_TYPE_CPU) count = kDefaultCpuLogicalDevices;
    }
  }
  auto backend = std::make_unique<OpenCLBackend>(options);
  if (absl::Status s = backend->init(*platform, count); !s.ok()) return s;
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace bbmm
