// The runtime core: arrays, reservations and the life of a tile (require,
// acquire, launch, flow-out, release) over the parts that do the work:
// placement (core/placement.h), the instance manager (core/instance_manager.h),
// coherency (core/coherency.h) and the copy planner (core/copy_planner.h), all
// talking to the device backend through an instrumenting adaptor
// (core/instrumented_backend.h) that counts transfers and traces issue times.
// Both public APIs (runtime.h, bbmm.h) are thin layers over it.
//
// No call on the tile path waits for device work: acquire issues read-ins,
// launch issues the kernel after them, flow-out issues peer copies after the
// kernel, release only does bookkeeping; events order it all.
//
// Thread-safety: every public method takes the core's mutex, so several host
// threads may drive different devices at once; device work itself runs
// asynchronously in the backend.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
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
#include "core/box_pairs.h"
#include "core/coherency.h"
#include "core/copy_planner.h"
#include "core/eviction_policy.h"
#include "core/instance.h"
#include "core/instance_manager.h"
#include "core/instrumented_backend.h"
#include "core/placement.h"
#include "core/slow_calls.h"
#include "core/tile_plans.h"
#include "core/tile_state.h"
#include "core/trace.h"
#include "core/transport.h"

namespace bbmm::detail {

class RuntimeCore {
 public:
  static absl::StatusOr<std::unique_ptr<RuntimeCore>> create(std::unique_ptr<Backend> backend,
                                                             const RuntimeOptions& options);
  ~RuntimeCore();

  int device_count() const { return static_cast<int>(stats_.size()); }
  // The bytes device `device` may hold (its memory, or the device_memory option).
  size_t device_memory(int device) const { return capacity_[static_cast<size_t>(device)]; }
  Backend& backend() { return *backend_; }
  const RuntimeOptions& options() const { return options_; }

  absl::StatusOr<Array*> register_array(std::string name, void* host, size_t elem_size,
                                        std::span<const int64_t> extents,
                                        std::span<const int64_t> strides, bool read_only);
  absl::Status unregister_array(Array* array);
  absl::Status reserve(int device, Array* array, const Box& box);

  // An open tile on `device` (recycled: see core/tile_state.h).
  absl::StatusOr<TileState*> begin_tile(int device);
  // OK when `tile` is the live tile of a handle given `generation`; else
  // kFailedPrecondition ("stale tile handle"). `what` names the call.
  absl::Status check_handle(const TileState* tile, uint32_t generation, const char* what) const;
  absl::Status require(TileState& tile, Array* array, const Box& box, Access access);
  absl::Status acquire(TileState& tile);
  absl::StatusOr<bbmm_view> view(const TileState& tile, Array* array);
  absl::Status launch(TileState& tile, std::function<void(const bbmm_launch_info&)> fn);
  absl::Status flow_out(TileState& tile, Array* array, const Box& box);
  // Ends the tile and recycles its state (the handle becomes stale).
  absl::Status release(TileState& tile);

  absl::Status write_back(Array* array);
  absl::Status sync_to_host(Array* array);
  absl::Status discard(Array* array);
  absl::Status synchronize();
  // A new checking epoch (the writes of closed tiles are forgotten), without waiting.
  absl::Status phase_boundary();
  // Synchronises, frees every instance, unpins the arrays still registered
  // and writes the trace. kFailedPrecondition naming the arrays still
  // registered (their host copy was not made valid). Idempotent.
  absl::Status shutdown();

  // Ranks of a run over several hosts (core/transport.h; runtime_ranks.cpp).
  // Without a transport the runtime is rank 0 of 1. Set it before the first
  // array is registered (collective: every rank sets its own); the transport
  // lives as long as the runtime. Two ways to use the ranks:
  //  - global tiles (`global_tiles`): every rank runs the same program over
  //    the devices of all ranks (global_device_count); a tile runs on its
  //    device's rank, the others keep its books (shadow tiles), the runtime
  //    moves what each tile reads to its rank, and unregister_array gathers
  //    rank 0's host copy. send_box and receive_box are refused.
  //    With `gather_all`, every rank's host copy gets the values, not only
  //    rank 0's; sync_to_host gathers as unregister_array does.
  //  - explicit: devices and tiles are this rank's; the program moves boxes
  //    with send_box and receive_box.
  //  A box sent to another rank goes from the device instance holding it, with
  //  no copy to the host first, when the transport sends from this backend's
  //  device memory (Transport::sends_from_device_memory: the host backend's
  //  devices, CUDA with a CUDA-aware MPI) and BBMM_RANK_SENDS is not "staged";
  //  else through the host copy of the array.
  absl::Status set_transport(std::unique_ptr<Transport> transport, bool global_tiles,
                             bool gather_all = false);
  bool global_tiles() const { return transport_ != nullptr && global_tiles_; }
  int rank() const { return transport_ ? transport_->rank() : 0; }
  int rank_count() const { return transport_ ? transport_->size() : 1; }
  // Sends box `box` of `array` as the program holds it now (what devices wrote
  // is written back first) to rank `to` with `tag`; receives into `box` what
  // rank `from` sends with `tag`: the received values become the array's
  // (device copies of the box go stale; no open tile may hold the box).
  // Neither waits: the send runs after the write-backs, the receive after what
  // still reads or writes the host box; later read-ins wait for the receive,
  // and unregister_array for both.
  absl::Status send_box(Array* array, const Box& box, int to, int tag);
  absl::Status receive_box(Array* array, const Box& box, int from, int tag);
  // The devices of all ranks, numbered rank by rank (the same program then
  // partitions its tiles over all of them): their count, the memory each may
  // use (the least over the ranks' devices, so that every rank computes the
  // same tile counts), and a tile on global device `device`: this rank's, or a
  // shadow of another rank's tile (its boxes update the rank directories, the
  // values it reads move to its rank; launch and flow-out do nothing). Without
  // a transport, the local devices.
  int global_device_count() const;
  size_t global_device_memory(int device) const;
  absl::StatusOr<TileState*> begin_global_tile(int device);
  // reserve() on a global device (nothing for another rank's).
  absl::Status reserve_global(int device, Array* array, const Box& box);

  bbmm_stats stats(int device) const;
  // The seconds Runtime::create took (reported as create_seconds), of which
  // `warm_up_wait` waiting for bbmm_warm_up's thread.
  void set_create_seconds(double seconds, double warm_up_wait = 0) {
    create_seconds_ = seconds;
    warm_up_wait_seconds_ = warm_up_wait;
  }
  // The creation by phase: the wait for bbmm_warm_up's thread, then the
  // backend's (Backend::creation_report).
  std::string creation_report() const;
  std::string stats_table() const;
  std::string stats_json() const;

 private:
  RuntimeCore(std::unique_ptr<Backend> backend, const RuntimeOptions& options,
              std::unique_ptr<Tracer> tracer, const std::vector<size_t>& capacity);

  // The counters a tile's calls add to: its device's, or the host tiles'.
  bbmm_stats& tile_stats(int device) {
    return device == kHostDevice ? host_stats_ : stats_[static_cast<size_t>(device)];
  }
  // Groups the tile's requirements by array into disjoint read, write and
  // required boxes (mu_ held).
  void group_requirements(TileState& tile);
  // Host tiles (BBMM_DEVICE_HOST; host_tiles.cpp): acquire makes the boxes
  // current in the host arrays and waits; launch runs the kernel function on
  // the calling thread.
  absl::Status acquire_host(TileState& tile);
  absl::Status launch_host(TileState& tile, std::function<void(const bbmm_launch_info&)> fn);
  absl::Status acquire_parts(TileState& tile, bool pressure);
  // Acquires `tile`, whose parts are `plan`'s, as `plan` says (TilePlans); false
  // when it could not (no instance held, no part: the full path takes over).
  bool acquire_planned(TileState& tile, const TilePlans::Plan& plan);
  // tile.uses from its pieces and box sets.
  void find_uses(TileState& tile);
  // Whether `device`'s results go back to the host when their tile is
  // released (RuntimeOptions::write_back).
  bool writes_back_eagerly(int device) const;
  // Issues the write-back of every box `tile` wrote (eager write-back).
  absl::Status write_back_written(TileState& tile);
  // The boxes of `part`'s pieces into piece_boxes_.
  void piece_boxes(const TileState::ArrayPart& part) {
    piece_boxes_.clear();
    for (const auto& piece : part.pieces) piece_boxes_.push_back(piece.second);
  }
  void commit_writes(TileState& tile);
  void build_views(TileState& tile);
  absl::Status check_conflicts(const TileState& tile) const;
  // Checking mode: the tile's writes as open (checked against other open tiles), and no more.
  void note_open_writes(TileState& tile);
  void drop_open_writes(const TileState& tile);
  void unhold_all(TileState& tile) { placement_->unhold_since(tile, 0); }
  void clear_pieces(TileState& tile);
  // Recycles `tile` (bumping its generation).
  void retire(TileState& tile);
  // Over several ranks (mu_ held): moves what `tile` (run by rank `owner`)
  // reads to `owner` from the lowest rank holding it, as every rank computes
  // alike from the rank directories, then records its writes.
  absl::Status exchange_for_tile(const TileState& tile, int owner);
  // Over several ranks (mu_ held): what rank 0 (every rank, with gather_all)
  // lacks of `array`, from the lowest rank holding it (unregister_array and
  // sync_to_host: the host copies are made valid there).
  absl::Status gather(Array& array);
  absl::Status send_locked(Array* array, const Box& box, int to, int tag);
  // The instance holding all of `box` current, when sends go from device
  // memory (sends_from_devices_) and the host copy of the box is not current;
  // else null (the send goes through the host copy).
  Instance* sole_device_source(const Array& array, const Box& box) const;
  // Sends `box` (inside inst.box) from `inst`'s memory, after what writes it there.
  absl::Status send_from_instance(Instance& inst, const Box& box, int to, int tag);
  absl::Status receive_locked(Array* array, const Box& box, int from, int tag);
  // The host array of `array` for the transport; kInvalidArgument (naming
  // `op`) unless it is dense row-major, or when there is no transport.
  absl::StatusOr<HostArrayRef> host_ref(const Array& array, const Box& box, const char* op) const;
  // Every rank's bit in a rank directory.
  HolderMask all_ranks() const;
  // (mu_ held) Whether `array` is one of this runtime's registered arrays.
  bool registered(const Array* array) const;
  // (mu_ held) kFailedPrecondition naming `op`, the array and the instance
  // when an unreleased tile holds an instance of `array`.
  absl::Status check_not_held(const Array& array, const char* op) const;

  std::unique_ptr<InstrumentedBackend> backend_;
  std::vector<size_t> capacity_;  // per device
  RuntimeOptions options_;
  std::unique_ptr<Tracer> tracer_;
  std::unique_ptr<EvictionPolicy> policy_;
  mutable std::mutex mu_;
  std::vector<bbmm_stats> stats_;  // per device
  bbmm_stats host_stats_ = {};     // host tiles: tiles, manager_seconds
  double host_tile_seconds_ = 0;   // host tiles' kernels
  std::unique_ptr<CopyPlanner> planner_;
  std::unique_ptr<Coherency> coherency_;
  std::unique_ptr<InstanceManager> manager_;
  std::unique_ptr<Placement> placement_;
  std::vector<std::unique_ptr<Array>> arrays_;
  TilePool tiles_;
  TilePlans plans_;  // of recurring tiles (tile_plans.h)
  std::vector<Coherency::Target> targets_;  // scratch
  std::vector<Event> waits_;                // scratch
  // Scratch: a part's pieces (or, for a host tile, its boxes), one of its box
  // sets, and which of a host tile's boxes it writes.
  std::vector<Box> piece_boxes_, set_boxes_;
  std::vector<char> written_;
  BoxPairScratch pair_scratch_;             // scratch
  std::vector<std::pair<Box, int>> rank_moves_;  // scratch: regions and their sending rank
  int next_array_id_ = 0;
  double host_pin_seconds_ = 0;
  double host_unpin_seconds_ = 0;
  double create_seconds_ = 0;
  double warm_up_wait_seconds_ = 0;
  uint64_t bytes_host_pinned_ = 0;
  bool shut_down_ = false;
  uint64_t bytes_sent_ranks_ = 0, bytes_received_ranks_ = 0;
  uint64_t bytes_sent_from_devices_ = 0;  // the part of bytes_sent_ranks_ sent from device memory
  // Sends to other ranks go from the device instance holding the box where the
  // transport reads that backend's memory (set_transport; BBMM_RANK_SENDS).
  bool sends_from_devices_ = false;
  // Per rank: its first global device and its count (set_transport).
  std::vector<int> rank_first_device_, rank_devices_;
  size_t global_memory_ = 0;  // the least device memory over all ranks
  bool global_tiles_ = false;
  bool gather_all_ = false;
  // Last: destroyed first, waiting for its operations while everything they
  // use still exists.
  std::unique_ptr<Transport> transport_;
};

// Adds the time between its construction and destruction to `*sink`; with a
// `tracer`, also records it as a slice `name` of the host track (the trace
// then shows the calling thread's time in each call: "acquire", "launch"...);
// reports it when it is slow (core/slow_calls.h).
class ManagerTimer {
 public:
  explicit ManagerTimer(double* sink, Tracer* tracer = nullptr, const char* name = nullptr)
      : sink_(sink), tracer_(tracer), name_(name), start_(std::chrono::steady_clock::now()) {
    if (tracer_ != nullptr) start_us_ = tracer_->now_us();
  }
  ~ManagerTimer() {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (sink_ != nullptr) *sink_ += seconds;
    if (name_ != nullptr && slow_call(seconds)) report_slow_call(name_, seconds);
    if (name_ != nullptr && call_profile_on()) call_profile_add(name_, seconds);
    if (tracer_ != nullptr) tracer_->slice(kHost, name_, start_us_, tracer_->now_us() - start_us_, "");
  }
  ManagerTimer(const ManagerTimer&) = delete;
  ManagerTimer& operator=(const ManagerTimer&) = delete;

 private:
  double* sink_;
  Tracer* tracer_;
  const char* name_;
  std::chrono::steady_clock::time_point start_;
  int64_t start_us_ = 0;
};

}  // namespace bbmm::detail
