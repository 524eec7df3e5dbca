// The runtime core: arrays, per-device managers (in-use and unused lists,
// allocation, box-out), coherency, tiles. Both public APIs (runtime.h, bbmm.h)
// are thin layers over it.
//
// Thread-safety: every public method takes the core's mutex, so several host
// threads may drive different devices at once; device work itself runs
// asynchronously in the backend.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bbmm/bbmm.h"
#include "bbmm/box.h"
#include "bbmm/box_set.h"
#include "bbmm/runtime.h"
#include "core/array.h"
#include "core/backend.h"
#include "core/eviction_policy.h"
#include "core/instance.h"
#include "core/trace.h"

namespace bbmm::detail {

class RuntimeCore;

// One tile between begin and release.
class TileState {
 public:
  struct Requirement {
    Array* array;
    Box box;
    Access access;
  };
  struct ArrayPart {
    Array* array;
    BoxSet read;   // points the tile reads (need valid data on the device)
    BoxSet write;  // points the tile writes
    BoxSet all;    // everything it asked for
    std::vector<std::pair<Instance*, Box>> pieces;  // instance, box served by it
    std::vector<bbmm_piece> view;
  };

  TileState(RuntimeCore* core, int device) : core(core), device(device) {}

  RuntimeCore* const core;
  const int device;
  std::vector<Requirement> requirements;
  std::vector<ArrayPart> parts;  // after acquire, one per array
  std::vector<Instance*> held;   // instances whose usage this tile raised
  bool acquired = false;
  bool writes_committed = false;
  bool launch_failed = false;  // the last launch failed: its writes never happened
  bool released = false;
  Event kernel_done;
};

class RuntimeCore {
 public:
  static absl::StatusOr<std::unique_ptr<RuntimeCore>> create(std::unique_ptr<Backend> backend,
                                                             const RuntimeOptions& options);
  ~RuntimeCore();

  int device_count() const { return static_cast<int>(devices_.size()); }
  Backend& backend() { return *backend_; }

  absl::StatusOr<Array*> register_array(std::string name, void* host, size_t elem_size,
                                        std::span<const int64_t> extents,
                                        std::span<const int64_t> strides, bool read_only);
  absl::Status unregister_array(Array* array);

  absl::StatusOr<std::unique_ptr<TileState>> begin_tile(int device);
  absl::Status require(TileState& tile, Array* array, const Box& box, Access access);
  absl::Status acquire(TileState& tile);
  absl::StatusOr<bbmm_view> view(const TileState& tile, Array* array);
  absl::Status launch(TileState& tile, std::function<void(const bbmm_launch_info&)> fn);
  absl::Status flow_out(TileState& tile, Array* array, const Box& box);
  absl::Status release(TileState& tile);

  absl::Status sync_to_host(Array* array);
  absl::Status synchronize();
  // Synchronises, frees every instance and writes the trace.
  absl::Status shutdown();

  bbmm_stats stats(int device) const;
  std::string stats_table() const;
  std::string stats_json() const;

 private:
  struct Device {
    size_t capacity = 0;   // bytes the manager may hand out
    size_t allocated = 0;  // exact bytes of live instances
    std::list<Instance*> in_use, unused;
    bbmm_stats stats = {};
  };
  // Where an array region is stored: the host array or an instance.
  struct Layout {
    int device = kHost;
    void* base = nullptr;
    size_t offset = 0;  // bytes from base to the element at `origin`
    const int64_t* origin = nullptr;
    const int64_t* strides = nullptr;  // in elements
  };

  RuntimeCore(std::unique_ptr<Backend> backend, const RuntimeOptions& options);

  Layout host_layout(const Array& a) const;
  Layout instance_layout(const Instance& inst) const;
  // Copies `box` of `a` from `src` to `dst` (rank > 3 as several 3-D copies).
  absl::StatusOr<Event> copy_box(const Array& a, const Layout& dst, const Layout& src,
                                 const Box& box, std::span<const Event> wait);
  // The hazard-tracked copies between host, instances and peers.
  absl::Status copy_host_to_instance(Instance& dst, const Box& box);
  absl::Status copy_instance_to_host(Instance& src, const Box& box);
  absl::Status copy_instance_to_instance(Instance& dst, Instance& src, const Box& box);
  // Makes `box` (inside `dst`) valid on dst's device, from a peer or the host.
  absl::Status read_in(Instance& dst, const Box& box);
  // Makes the host copy of `box` valid (write-back from a device holding it).
  absl::Status write_back(Array& a, const Box& box);

  absl::StatusOr<Instance*> allocate_instance(int device, Array* a, const Box& box,
                                              const TileState& tile);
  // Writes back data only this device holds, then frees the instance.
  absl::Status evict(Instance* inst);
  absl::Status free_instance(Instance* inst);
  // Evicts unused instances of `device` (policy order) until `bytes` fit.
  absl::Status make_room(int device, size_t bytes, const TileState& tile, const Array& a,
                         const Box& box);
  absl::Status acquire_parts(TileState& tile, bool pressure);
  // Evicts the unused instances of the tile's device that overlap its boxes
  // (acquire's last resort before reporting out-of-memory).
  absl::Status evict_unused_overlapping(TileState& tile);
  // Places one array's boxes. `pressure`: the device is too full to hold
  // partly overlapped instances whole, so unused ones are boxed out.
  absl::Status acquire_array(TileState& tile, TileState::ArrayPart& part, bool pressure);
  void hold(TileState& tile, Instance* inst);
  void commit_writes(TileState& tile);
  void build_views(TileState& tile);
  absl::Status check_conflicts(const TileState& tile);
  void unhold_all(TileState& tile);
  // Drops the tile's hold on held[first..].
  void unhold_since(TileState& tile, size_t first);

  std::vector<Instance*> overlapping(const Array& a, int device, const Box& box) const;
  size_t footprint(const Array& a, const Box& box, int64_t* strides) const;
  void prune(std::vector<Event>& events);
  void trace_slice(int device, const char* name, const Array& a, const Box& box, size_t bytes);

  std::unique_ptr<Backend> backend_;
  RuntimeOptions options_;
  std::unique_ptr<Tracer> tracer_;
  std::unique_ptr<EvictionPolicy> policy_;
  mutable std::mutex mu_;
  std::vector<Device> devices_;
  std::vector<std::unique_ptr<Array>> arrays_;
  int next_array_id_ = 0;
  uint64_t clock_ = 0;
  bool shut_down_ = false;
};

// Measures time spent inside the manager for one device's statistics.
class ManagerTimer {
 public:
  explicit ManagerTimer(double* sink) : sink_(sink), start_(std::chrono::steady_clock::now()) {}
  ~ManagerTimer() {
    if (sink_ != nullptr) {
      *sink_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }
  }

 private:
  double* sink_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace bbmm::detail
