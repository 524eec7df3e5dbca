// libbbmm C++ API: RAII handles over the same core as the C API (bbmm.h).
//
// Thread-safety: a Runtime may be used from several host threads at once
// (typically one per device); a Tile belongs to the thread that began it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bbmm/bbmm.h"
#include "bbmm/box.h"

namespace bbmm {

// begin_tile's device for a host tile (BBMM_DEVICE_HOST in bbmm.h).
inline constexpr int kHostDevice = BBMM_DEVICE_HOST;

enum class Access {
  kRead = BBMM_READ,
  kWrite = BBMM_WRITE,
  kReadWrite = BBMM_READ_WRITE,
  kReadTransient = BBMM_READ_TRANSIENT,  // read; freed at the next phase boundary (bbmm.h)
};

struct RuntimeOptions {
  bbmm_backend_kind backend = BBMM_BACKEND_AUTO;
  int devices = 0;                // 0: backend default (host: 4, GPUs: all)
  uint64_t device_memory = 0;     // per-device limit in bytes; 0: whole device
  std::string trace_file;         // Chrome/Perfetto JSON, "" for none
  bbmm_eviction_policy eviction_policy = BBMM_EVICT_LRU;
  double growth_threshold = 0.25; // grow to the hull when waste <= this share of it
  bool check = false;             // detect overlapping writes by two devices
  bool peer_access = true;   // false: device-to-device copies staged through the host
  bool host_poison = true;        // host backend: fill new device memory with 0xA5
  int cuda_devices_per_gpu = 1;   // CUDA: logical devices per GPU (> 1: tests, demos on one GPU)
  bool cuda_copy_kernel = true;   // CUDA: strided device-to-device/peer boxes by a kernel
  int cuda_copy_streams = 2;      // CUDA: copy streams per direction and device, 1..8
  bool cuda_peer_copy_kernel = false;  // CUDA: strided boxes between GPUs by the kernel too
  bool cuda_peer_push = true;  // CUDA: copies between devices issued by the source's worker
  // CUDA: host arrays pinned, or their copies staged (bbmm_host_copies in bbmm.h).
  bbmm_host_copies cuda_host_copies = BBMM_HOST_COPIES_AUTO;
  // CUDA: host threads that copy staged host bytes, 1..64; 0: the default.
  int cuda_staging_threads = 0;
  // When results go back to the host copy (bbmm_write_back in bbmm.h).
  bbmm_write_back write_back = BBMM_WRITE_BACK_LAZY;
  // Boxes of one copy batch that continue one another merged into one copy.
  bool merge_copies = true;
  // A recurring tile (an earlier tile's requirements on the same device, every box a
  // hit in instances still there) reuses that tile's placement (core/tile_plans.h).
  bool tile_plans = true;

  // Defaults overridden by BBMM_BACKEND, BBMM_DEVICES, BBMM_DEVICE_MEMORY,
  // BBMM_TRACE, BBMM_CHECK, BBMM_HOST_POISON, BBMM_PEER_ACCESS,
  // BBMM_CUDA_DEVICES_PER_GPU, BBMM_CUDA_COPY_KERNEL, BBMM_CUDA_PEER_COPY_KERNEL,
  // BBMM_CUDA_PEER_PUSH, BBMM_CUDA_HOST_COPIES (auto, pinned, staged),
  // BBMM_CUDA_COPY_STREAMS, BBMM_MERGE_COPIES, BBMM_TILE_PLANS and
  // BBMM_WRITE_BACK (auto, eager, lazy). Fails
  // naming a malformed variable.
  static absl::StatusOr<RuntimeOptions> from_env();
};

// Parses a byte count such as "4096", "64KiB", "64MiB", "2GiB", "1.5GB".
absl::StatusOr<uint64_t> parse_bytes(std::string_view text);

class Array;  // A registered host array (opaque; owned by the Runtime).
class Backend;

namespace detail {
class RuntimeCore;
class TileState;
}  // namespace detail

// A tile between Runtime::begin_tile and release(): a movable handle (no
// heap allocation; the runtime recycles the state behind it). Calls on a
// handle whose tile was released (release() twice, require() after release)
// fail with kFailedPrecondition ("stale tile handle") rather than crash, as
// long as the Runtime lives.
class Tile {
 public:
  Tile(Tile&& other) noexcept;
  Tile& operator=(Tile&& other) noexcept;
  ~Tile();  // Releases the tile if it was not released.
  Tile(const Tile&) = delete;
  Tile& operator=(const Tile&) = delete;

  int device() const;
  // Declares that the tile accesses `box` of `array` (rank and bounds checked
  // against the array).
  absl::Status require(Array* array, const Box& box, Access access);
  // Places every required box on the device. kResourceExhausted when the
  // tile cannot fit even after evicting all unused instances (no data lost).
  absl::Status acquire();
  // The pieces covering what the tile required of `array`.
  absl::StatusOr<bbmm_view> view(Array* array) const;
  // Runs `fn` in the device's queue after the tile's read-ins (host backend:
  // on the device's worker thread, so `fn` must own what it captures).
  absl::Status launch(std::function<void(const bbmm_launch_info&)> fn);
  // Pushes `box` (written by the tile) to the other devices holding it and to
  // the host where no device does.
  absl::Status flow_out(Array* array, const Box& box);
  // Ends the tile; its instances become reusable. The handle is stale
  // afterwards.
  absl::Status release();

 private:
  friend class Runtime;
  Tile(detail::TileState* state, uint32_t generation) : state_(state), generation_(generation) {}
  detail::TileState* state_ = nullptr;
  uint32_t generation_ = 0;
};

class Runtime {
 public:
  static absl::StatusOr<std::unique_ptr<Runtime>> create(const RuntimeOptions& options);
  // Calls shutdown() and, if it fails, prints its message on stderr.
  ~Runtime();

  // Waits for outstanding work, writes the trace and frees every instance.
  // Arrays still registered are not synchronised to the host; they make it
  // return kFailedPrecondition naming them (after doing all of the above),
  // because unregister_array is how their host copy becomes valid. Later
  // calls return OK.
  absl::Status shutdown();

  int device_count() const;
  // The bytes `device` may hold: its memory, or RuntimeOptions::device_memory when
  // smaller (0 for a device that does not exist).
  size_t device_memory(int device) const;
  std::string backend_name() const;

  // Registers a host array of `extents` elements of `elem_size` bytes with
  // element `strides` (empty: dense row-major).
  absl::StatusOr<Array*> register_array(std::string name, void* host, size_t elem_size,
                                        std::span<const int64_t> extents,
                                        std::span<const int64_t> strides = {},
                                        bool read_only = false);
  // Synchronises `array` to the host and frees its instances and handle.
  absl::Status unregister_array(Array* array);

  // Allocates on `device` one instance of `array` covering `box`, reading
  // nothing in, so that later tiles of the device find their boxes inside it
  // (see bbmm_reserve in bbmm.h). kFailedPrecondition when an overlapping
  // instance is held by an open tile, kInvalidArgument for a bad box or
  // device, kResourceExhausted when it does not fit (nothing changed).
  absl::Status reserve(int device, Array* array, const Box& box);

  // Starts a tile on `device`, or with kHostDevice a host tile (run by the
  // calling thread on the host arrays; see BBMM_DEVICE_HOST in bbmm.h).
  absl::StatusOr<Tile> begin_tile(int device);
  // Starts copying to the host copy of `array` the elements only devices hold, and
  // returns without waiting (sync_to_host or unregister_array wait). Starting the
  // write-backs of several arrays before waiting for any overlaps their copies.
  absl::Status write_back(Array* array);
  // Makes the host copy of `array` valid everywhere and waits for it.
  absl::Status sync_to_host(Array* array);
  // Drops the values only devices hold, without writing them back: the host
  // copy as it is becomes the array's value (see bbmm_array_discard in
  // bbmm.h). kFailedPrecondition when an open tile holds the array.
  absl::Status discard(Array* array);
  // Waits for all devices; starts a new checking epoch.
  absl::Status synchronize();
  // Starts a new checking epoch without waiting: a phase boundary (see
  // bbmm_phase_boundary in bbmm.h).
  absl::Status phase_boundary();

  // Per-device counters (`device` == -1: total).
  bbmm_stats stats(int device = -1) const;
  std::string stats_table() const;
  std::string stats_json() const;

  detail::RuntimeCore* core() { return core_.get(); }

  // For tests and other backends: a runtime over `backend` (not from env).
  static absl::StatusOr<std::unique_ptr<Runtime>> create_with_backend(
      std::unique_ptr<Backend> backend, const RuntimeOptions& options);

 private:
  explicit Runtime(std::unique_ptr<detail::RuntimeCore> core);
  std::unique_ptr<detail::RuntimeCore> core_;
};

}  // namespace bbmm
