#include "core/runtime_core.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace bbmm::detail {
namespace {

std::string describe(const Array& a, const Box& box) {
  return absl::StrCat("array '", a.name, "' box ", box.to_string());
}

// Released states kept aside before reuse, so that a stale handle keeps
// finding a released state: more in checking mode.
constexpr size_t kQuarantine = 8;
constexpr size_t kCheckQuarantine = 256;

}  // namespace

RuntimeCore::RuntimeCore(std::unique_ptr<Backend> backend, const RuntimeOptions& options,
                         std::unique_ptr<Tracer> tracer, const std::vector<size_t>& capacity)
    : backend_(std::make_unique<InstrumentedBackend>(std::move(backend))),
      capacity_(capacity),
      options_(options),
      tracer_(std::move(tracer)),
      policy_(make_eviction_policy(options.eviction_policy)),
      stats_(capacity.size()),
      tiles_(this, options.check ? kCheckQuarantine : kQuarantine),
      plans_(static_cast<int>(capacity.size())) {
  if (tracer_ != nullptr) backend_->set_tracer(tracer_.get());
  planner_ = std::make_unique<CopyPlanner>(*backend_, tracer_.get());
  planner_->set_merge(options.merge_copies);
  coherency_ = std::make_unique<Coherency>(*backend_, *planner_, stats_);
  manager_ = std::make_unique<InstanceManager>(*backend_, *planner_, *coherency_, *policy_,
                                               tracer_.get(), stats_, capacity);
  placement_ = std::make_unique<Placement>(*manager_, *planner_, stats_, options.growth_threshold,
                                           backend_->kind() == BackendKind::kCuda);
}

absl::StatusOr<std::unique_ptr<RuntimeCore>> RuntimeCore::create(
    std::unique_ptr<Backend> backend, const RuntimeOptions& options) {
  if (backend == nullptr) return absl::InvalidArgumentError("runtime: no backend");
  int n = backend->device_count();
  if (options.devices > 0) {
    if (options.devices > n) {
      return absl::InvalidArgumentError(absl::StrCat("runtime: ", options.devices,
                                                     " devices requested but backend '",
                                                     backend->name(), "' has ", n));
    }
    n = options.devices;
  }
  if (n <= 0) {
    return absl::UnavailableError(
        absl::StrCat("runtime: backend '", backend->name(), "' has no device"));
  }
  if (n > kMaxDevices) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime: at most ", kMaxDevices, " devices are supported, got ", n));
  }
  if (options.write_back < BBMM_WRITE_BACK_LAZY || options.write_back > BBMM_WRITE_BACK_AUTO) {
    return absl::InvalidArgumentError(absl::StrCat("runtime: write_back ",
                                                   static_cast<int>(options.write_back),
                                                   " is not a bbmm_write_back"));
  }
  if (!(options.growth_threshold >= 0.0 && options.growth_threshold <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "runtime: growth_threshold ", options.growth_threshold, " is outside [0, 1]"));
  }
  std::unique_ptr<Tracer> tracer;
  if (!options.trace_file.empty()) {
    // Find out now, not at the end of the run, that the trace cannot be
    // written (opening for append creates the file but keeps what is there
    // until the trace replaces it).
    std::FILE* f = std::fopen(options.trace_file.c_str(), "a");
    if (f == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("runtime: the trace file '", options.trace_file,
                       "' (BBMM_TRACE or options.trace_file) cannot be written: ",
                       std::strerror(errno)));
    }
    std::fclose(f);
    tracer = std::make_unique<Tracer>(options.trace_file);
  }
  std::vector<size_t> capacity(static_cast<size_t>(n));
  for (int d = 0; d < n; ++d) {
    capacity[d] = backend->free_memory(d);
    if (options.device_memory > 0) capacity[d] = std::min<size_t>(capacity[d], options.device_memory);
  }
  return std::unique_ptr<RuntimeCore>(
      new RuntimeCore(std::move(backend), options, std::move(tracer), capacity));
}

RuntimeCore::~RuntimeCore() { (void)shutdown(); }

absl::Status RuntimeCore::shutdown() {
  if (shut_down_) return absl::OkStatus();
  absl::Status status = synchronize();
  std::lock_guard<std::mutex> lock(mu_);
  // Tiles still open end here; their handles become stale.
  tiles_.for_each([&](TileState& t) {
    if (t.phase == TileState::Phase::kFree) return;
    if (options_.check) drop_open_writes(t);
    unhold_all(t);
    retire(t);
  });
  std::vector<std::string> still_registered;
  for (auto& a : arrays_) {
    still_registered.push_back(absl::StrCat("'", a->name, "'"));
    for (auto& insts : a->instances) {
      while (!insts.empty()) {
        absl::Status s = manager_->free(insts.back());
        if (status.ok()) status = s;
      }
    }
  }
  for (int d = 0; d < device_count(); ++d) {
    absl::Status s = backend_->synchronize(d);
    if (status.ok()) status = s;
  }
  for (auto& a : arrays_) {
    absl::Status s = backend_->unregister_host(a->host);
    if (status.ok()) status = s;
  }
  arrays_.clear();
  if (tracer_ != nullptr) {
    backend_->flush_trace();
    backend_->set_tracer(nullptr);
    absl::Status s = tracer_->close();
    if (status.ok()) status = s;
  }
  shut_down_ = true;
  if (call_profile_on()) {
    std::fprintf(stderr,
                 "bbmm: call profile (BBMM_CALL_PROFILE; every thread since the process "
                 "started; scopes nest):\n%s",
                 call_profile_report().c_str());
  }
  if (status.ok() && !still_registered.empty()) {
    status = absl::FailedPreconditionError(absl::StrCat(
        "runtime destroyed with ", still_registered.size(), " array(s) still registered (",
        absl::StrJoin(still_registered, ", "),
        "): their host copies were NOT made valid; unregister each array (which synchronises "
        "it to the host) before destroying the runtime, and keep its host memory alive until "
        "then"));
  }
  return status;
}

// ---------------------------------------------------------------- arrays

absl::StatusOr<Array*> RuntimeCore::register_array(std::string name, void* host,
                                                   size_t elem_size,
                                                   std::span<const int64_t> extents,
                                                   std::span<const int64_t> strides,
                                                   bool read_only) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string what = absl::StrCat("register array '", name, "'");
  if (host == nullptr) return absl::InvalidArgumentError(what + ": host pointer is null");
  if (elem_size == 0) return absl::InvalidArgumentError(what + ": element size is 0");
  absl::StatusOr<Box> whole = Box::from_extents(extents);
  if (!whole.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", whole.status().message()));
  }
  const int r = whole->rank();
  int64_t st[Box::kMaxRank];
  if (strides.empty()) {
    st[r - 1] = 1;
    for (int d = r - 2; d >= 0; --d) st[d] = st[d + 1] * extents[d + 1];
  } else {
    if (strides.size() != extents.size()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", strides.size(),
                                                     " strides for rank ", r));
    }
    if (strides[r - 1] != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": the last dimension must be contiguous (stride 1), got ",
                       strides[r - 1]));
    }
    for (int d = r - 2; d >= 0; --d) {
      if (strides[d] < strides[d + 1] * extents[d + 1]) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": stride ", strides[d], " of dimension ", d, " is smaller than ",
            strides[d + 1] * extents[d + 1], " (rows would overlap)"));
      }
    }
    std::copy(strides.begin(), strides.end(), st);
  }
  size_t span_bytes = elem_size;  // from the first to one past the last element
  for (int d = 0; d < r; ++d) span_bytes += (extents[d] - 1) * st[d] * elem_size;
  if (whole->empty()) span_bytes = 0;
  {
    // Pinning a multi-GB array takes time: it happens here, at registration,
    // outside the tile path, and the statistics report it.
    double seconds = 0;
    {
      ManagerTimer timer(&seconds);
      absl::Status pin = backend_->register_host(host, span_bytes);
      if (!pin.ok()) return pin;
    }
    host_pin_seconds_ += seconds;
    bytes_host_pinned_ += span_bytes;
  }
  arrays_.push_back(std::make_unique<Array>(std::move(name), next_array_id_++, host, elem_size,
                                            *whole, st, read_only, device_count()));
  if (global_tiles()) {
    // Every rank starts from the same host values.
    arrays_.back()->rank_directory.set(*whole, all_ranks());
  }
  return arrays_.back().get();
}

HolderMask RuntimeCore::all_ranks() const {
  const int ranks = rank_count();
  return ranks >= 64 ? ~HolderMask{0} : (HolderMask{1} << ranks) - 1;
}

bool RuntimeCore::registered(const Array* array) const {
  return std::any_of(arrays_.begin(), arrays_.end(),
                     [array](const auto& p) { return p.get() == array; });
}

absl::Status RuntimeCore::check_not_held(const Array& array, const char* op) const {
  for (const auto& insts : array.instances) {
    for (const Instance* inst : insts) {
      if (inst->usage > 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            op, " array '", array.name, "': instance ", inst->box.to_string(), " on device ",
            inst->device, " is held by an unreleased tile"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RuntimeCore::unregister_array(Array* array) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!registered(array)) {
      return absl::InvalidArgumentError(
          "unregister: unknown array (null, already unregistered, or of another runtime)");
    }
  }
  if (global_tiles()) {
    // Over several ranks: rank 0's host copy gets what other ranks hold.
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status s = gather(*array); !s.ok()) return s;
  }
  absl::Status s = sync_to_host(array);
  if (!s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(arrays_.begin(), arrays_.end(),
                         [array](const auto& p) { return p.get() == array; });
  if (it == arrays_.end()) return absl::InvalidArgumentError("unregister: unknown array");
  if (absl::Status held = check_not_held(*array, "unregister"); !held.ok()) return held;
  plans_.forget(array);
  for (auto& insts : array->instances) {
    while (!insts.empty()) {
      absl::Status fs = manager_->free(insts.back());
      if (!fs.ok()) return fs;
    }
  }
  // Copies reading the host array (read-ins) may still be in flight; they are
  // finished before its memory is unpinned.
  std::vector<Event> pending;
  array->host_hazards.all(pending);
  for (const Event& e : pending) (void)e.wait();
  absl::Status unpin;
  {
    ManagerTimer timer(&host_unpin_seconds_);
    unpin = backend_->unregister_host(array->host);
  }
  arrays_.erase(it);
  return unpin;
}

absl::Status RuntimeCore::reserve(int device, Array* array, const Box& box) {
  std::lock_guard<std::mutex> lock(mu_);
  if (device < 0 || device >= device_count()) {
    return absl::InvalidArgumentError(absl::StrCat("reserve: device ", device,
                                                   " is outside 0..", device_count() - 1));
  }
  ManagerTimer timer(&stats_[device].manager_seconds, tracer_.get(), "reserve");
  ManagerTimer setup(&stats_[device].reserve_seconds);
  if (array == nullptr) return absl::InvalidArgumentError("reserve: null array");
  if (box.rank() != array->rank() || (!box.empty() && !is_subset(box, array->whole))) {
    return absl::InvalidArgumentError(absl::StrCat("reserve ", describe(*array, box),
                                                   ": box rank or bounds do not match the "
                                                   "array's extent ",
                                                   array->whole.to_string()));
  }
  return placement_->reserve(device, *array, box);
}

// ---------------------------------------------------------------- tiles

absl::StatusOr<TileState*> RuntimeCore::begin_tile(int device) {
  if ((device < 0 || device >= device_count()) && device != kHostDevice) {
    return absl::InvalidArgumentError(
        absl::StrCat("begin tile: device ", device, " is outside 0..", device_count() - 1,
                     " (and is not BBMM_DEVICE_HOST, ", kHostDevice, ")"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_down_) return absl::FailedPreconditionError("begin tile: the runtime was shut down");
  TileState* t = tiles_.take();
  t->open(device);
  return t;
}

absl::Status RuntimeCore::check_handle(const TileState* tile, uint32_t generation,
                                       const char* what) const {
  if (tile == nullptr) return absl::InvalidArgumentError(absl::StrCat(what, ": null tile"));
  if (tile->generation.load(std::memory_order_relaxed) != generation) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": stale tile handle (the tile was released; begin a new one)"));
  }
  return absl::OkStatus();
}

absl::Status RuntimeCore::require(TileState& tile, Array* array, const Box& box,
                                  Access access) {
  if (array == nullptr) return absl::InvalidArgumentError("require: null array");
  if (tile.phase != TileState::Phase::kOpen) {
    return absl::FailedPreconditionError(absl::StrCat(
        "require ", describe(*array, box), ": the tile was already acquired or released"));
  }
  if (box.rank() != array->rank()) {
    return absl::InvalidArgumentError(absl::StrCat("require ", describe(*array, box),
                                                   ": box has rank ", box.rank(),
                                                   " but the array has rank ", array->rank()));
  }
  if (!box.empty() && !is_subset(box, array->whole)) {
    return absl::InvalidArgumentError(absl::StrCat("require ", describe(*array, box),
                                                   ": box is outside the array's extent ",
                                                   array->whole.to_string()));
  }
  if (array->read_only && access != Access::kRead && access != Access::kReadTransient) {
    return absl::InvalidArgumentError(absl::StrCat(
        "require ", describe(*array, box), ": the array is registered read-only"));
  }
  if (access != Access::kRead && access != Access::kWrite && access != Access::kReadWrite &&
      access != Access::kReadTransient) {
    return absl::InvalidArgumentError(absl::StrCat("require ", describe(*array, box),
                                                   ": unknown access mode ",
                                                   static_cast<int>(access)));
  }
  if (!box.empty()) {
    tile.requirements.push_back({array, box, access});
    if (options_.tile_plans) {
      tile.requirements_hash = TilePlans::mix(tile.requirements_hash, tile.requirements.back());
    }
  }
  return absl::OkStatus();
}

namespace {
// "device 2", or "the host" for host tiles.
std::string device_name(int device) {
  return device == kHostDevice ? std::string("the host") : absl::StrCat("device ", device);
}
}  // namespace

absl::Status RuntimeCore::check_conflicts(const TileState& tile) const {
  for (const TileState::ArrayPart& part : tile.live_parts()) {
    for (size_t i = 0; i < part.write.size(); ++i) {
      const Box w = part.write[i];
      for (const Array::Write& e : part.array->epoch_writes) {
        if (e.device != tile.device && overlaps(e.box, w)) {
          return absl::AbortedError(absl::StrCat(
              "write conflict on array '", part.array->name, "': ", device_name(tile.device),
              " writes ", w.to_string(), " but ", device_name(e.device), " wrote ",
              e.box.to_string(), " since the last synchronisation point"));
        }
      }
      for (const Array::Write& e : part.array->open_writes) {
        if (e.device != tile.device && overlaps(e.box, w)) {
          return absl::AbortedError(absl::StrCat(
              "write conflict on array '", part.array->name, "': ", device_name(tile.device),
              " writes ", w.to_string(), " but an open tile of ", device_name(e.device),
              " writes ", e.box.to_string()));
        }
      }
    }
  }
  return absl::OkStatus();
}

void RuntimeCore::note_open_writes(TileState& tile) {
  for (const TileState::ArrayPart& part : tile.live_parts()) {
    for (size_t i = 0; i < part.write.size(); ++i) {
      part.array->open_writes.push_back({tile.device, part.write[i], &tile});
    }
  }
}

void RuntimeCore::drop_open_writes(const TileState& tile) {
  for (const TileState::ArrayPart& part : tile.live_parts()) {
    auto& w = part.array->open_writes;
    w.erase(std::remove_if(w.begin(), w.end(), [&](const Array::Write& e) { return e.tile == &tile; }),
            w.end());
  }
}

void RuntimeCore::clear_pieces(TileState& tile) {
  for (TileState::ArrayPart& p : tile.live_parts()) {
    p.pieces.clear();
    p.hits_only = false;
  }
}

absl::Status RuntimeCore::acquire_parts(TileState& tile, bool pressure) {
  {
    SlowScope slow("acquire: placing the boxes (instances: hits, growth, allocation, box-out)");
    for (TileState::ArrayPart& part : tile.live_parts()) {
      absl::Status s = placement_->place(tile, part, pressure);
      if (!s.ok()) return s;
    }
  }
  SlowScope slow("acquire: reading in (planning and queueing the copies)");
  // Read in what the tile reads and the device does not hold valid yet: one
  // batch per source device.
  targets_.clear();
  for (TileState::ArrayPart& part : tile.live_parts()) {
    piece_boxes(part);
    boxes_of(part.read, set_boxes_);
    for_each_overlapping_pair(piece_boxes_, set_boxes_, pair_scratch_, [&](size_t k, size_t i) {
      targets_.push_back({part.pieces[k].first, *intersection(piece_boxes_[k], set_boxes_[i])});
    });
  }
  return coherency_->read_in(targets_);
}

void RuntimeCore::group_requirements(TileState& tile) {
  // Group the requirements by array (in order of first appearance) and make
  // each array's boxes disjoint.
  tile.nparts = 0;
  for (const TileState::Requirement& req : tile.requirements) {
    TileState::ArrayPart& part = tile.part_of(req.array, req.box.rank());
    const bool reads_only = req.access == Access::kRead || req.access == Access::kReadTransient;
    (void)(req.access == Access::kReadTransient ? part.transient_boxes : part.all).add(req.box);
    if (req.access != Access::kWrite) (void)part.read.add(req.box);
    if (!reads_only) (void)part.write.add(req.box);
  }
  for (TileState::ArrayPart& part : tile.live_parts()) {
    part.all.coalesce();
    if (!part.transient_boxes.empty()) {
      // Transient boxes join after coalescing: merged with an adjacent block (lu's or
      // floyd's row next to a device's rows), they would grow its instance.
      part.kept = part.all;
      for (size_t i = 0; i < part.transient_boxes.size(); ++i) {
        (void)part.all.add(part.transient_boxes[i]);
      }
    }
    part.read.coalesce();
    part.write.coalesce();
  }
}

absl::Status RuntimeCore::acquire(TileState& tile) {
  if (tile.device == kHostDevice) return acquire_host(tile);
  std::lock_guard<std::mutex> lock(mu_);
  ManagerTimer timer(&stats_[tile.device].manager_seconds, tracer_.get(), "acquire");
  if (tile.phase != TileState::Phase::kOpen) {
    return absl::FailedPreconditionError("acquire: the tile was already acquired or released");
  }
  // Over several ranks: what the tile reads moves to its rank first (runtime_ranks.cpp);
  // a shadow tile stops there.
  if (global_tiles()) {
    const int owner = tile.shadow_rank >= 0 ? tile.shadow_rank : rank();
    if (absl::Status s = exchange_for_tile(tile, owner); !s.ok()) return s;
    if (tile.shadow_rank >= 0) {
      tile.nparts = 0;
      tile.phase = TileState::Phase::kAcquired;
      return absl::OkStatus();
    }
  }
  // A recurring tile whose instances are still there: as planned.
  if (options_.tile_plans && !global_tiles()) {
    if (const TilePlans::Plan* plan = plans_.find(tile); plan != nullptr) {
      if (tile.parts.size() < plan->nparts) tile.parts.resize(plan->nparts);
      for (size_t k = 0; k < plan->nparts; ++k) tile.parts[k].assign_planned(plan->parts[k]);
      tile.nparts = plan->nparts;
      if (options_.check) {
        if (absl::Status s = check_conflicts(tile); !s.ok()) return s;
      }
      if (acquire_planned(tile, *plan)) return absl::OkStatus();
    }
  }
  group_requirements(tile);
  if (options_.check) {
    absl::Status s = check_conflicts(tile);
    if (!s.ok()) return s;
  }
  absl::Status s = acquire_parts(tile, /*pressure=*/false);
  if (absl::IsResourceExhausted(s)) {
    // Retry the whole tile boxing out partly overlapped unused instances
    // rather than holding them whole.
    unhold_all(tile);
    clear_pieces(tile);
    s = acquire_parts(tile, /*pressure=*/true);
  }
  if (absl::IsResourceExhausted(s)) {
    // Fix (fuzz): hits and pieces hold whole instances, which may be much
    // larger than what the tile asks of them (a contained hit in a big
    // instance), so a tile that fits the device could still fail. Last
    // resort: box out every unused instance overlapping the tile's boxes and
    // place the tile afresh, so that it gets exactly its boxes.
    unhold_all(tile);
    clear_pieces(tile);
    s = placement_->evict_unused_overlapping(tile);
    if (s.ok()) s = acquire_parts(tile, /*pressure=*/true);
  }
  if (!s.ok()) {
    unhold_all(tile);
    clear_pieces(tile);
    return s;
  }
  build_views(tile);
  find_uses(tile);
  if (options_.tile_plans && !global_tiles()) plans_.remember(tile, targets_);
  tile.phase = TileState::Phase::kAcquired;
  if (options_.check) note_open_writes(tile);
  return absl::OkStatus();
}

bool RuntimeCore::acquire_planned(TileState& tile, const TilePlans::Plan& plan) {
  // What placement does for a hit, box by box (Placement::place).
  uint64_t exact = 0, contained = 0;
  size_t j = 0;
  for (const TileState::ArrayPart& part : tile.live_parts()) {
    for (const auto& [inst, box] : part.pieces) {
      (inst->box == box ? exact : contained)++;
      if (!plan.only_transient[j++]) manager_->unmark_transient(inst);
      placement_->hold(tile, inst);
      inst->note_used(box);
    }
  }
  if (!coherency_->read_in(plan.targets).ok()) {
    // The full path reports it (or recovers, under memory pressure).
    unhold_all(tile);
    tile.nparts = 0;
    return false;
  }
  bbmm_stats& st = stats_[tile.device];
  st.hits_exact += exact;
  st.hits_contained += contained;
  st.planned_tiles++;
  for (const TileState::ArrayPart& part : tile.live_parts()) {
    if (part.view.size() > 1) st.multi_piece_views++;
  }
  tile.uses.assign(plan.uses.begin(), plan.uses.end());
  tile.phase = TileState::Phase::kAcquired;
  if (options_.check) note_open_writes(tile);
  return true;
}

void RuntimeCore::find_uses(TileState& tile) {
  // What the kernel reads, then what it writes, of each instance it uses: found
  // once (a sweep per box set), used before and after the launch.
  tile.uses.clear();
  for (const TileState::ArrayPart& part : tile.live_parts()) {
    piece_boxes(part);
    for (const bool write : {false, true}) {
      boxes_of(write ? part.write : part.read, set_boxes_);
      for_each_overlapping_pair(piece_boxes_, set_boxes_, pair_scratch_, [&](size_t k, size_t i) {
        tile.uses.push_back(
            {part.pieces[k].first, *intersection(piece_boxes_[k], set_boxes_[i]), write});
      });
    }
  }
}

void RuntimeCore::build_views(TileState& tile) {
  for (TileState::ArrayPart& part : tile.live_parts()) {
    const Array& a = *part.array;
    const int r = a.rank();
    // Pieces of one instance become one piece (their hull, inside it).
    part.view.clear();
    for (size_t k = 0; k < part.pieces.size(); ++k) {
      const Instance* inst = part.pieces[k].first;
      bool seen = false;
      for (size_t j = 0; j < k && !seen; ++j) seen = part.pieces[j].first == inst;
      if (seen) continue;
      Box box = part.pieces[k].second;
      for (size_t j = k + 1; j < part.pieces.size(); ++j) {
        if (part.pieces[j].first == inst) box = *convex_union(box, part.pieces[j].second);
      }
      bbmm_piece p = {};
      int64_t off = 0;
      for (int d = 0; d < r; ++d) {
        p.lo[d] = box.lo(d);
        p.hi[d] = box.hi(d);
        p.stride[d] = inst->strides[d];
        off += (box.lo(d) - inst->box.lo(d)) * inst->strides[d];
      }
      p.data = inst->buffer.base;
      p.offset = inst->buffer.offset + static_cast<uint64_t>(off) * a.elem_size;
      part.view.push_back(p);
    }
    if (part.view.size() > 1) stats_[tile.device].multi_piece_views++;
  }
}

absl::StatusOr<bbmm_view> RuntimeCore::view(const TileState& tile, Array* array) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tile.phase != TileState::Phase::kAcquired) {
    return absl::FailedPreconditionError("view: the tile is not acquired");
  }
  if (tile.shadow_rank >= 0) {  // another rank's tile: nothing here
    bbmm_view v{};
    v.rank = array == nullptr ? 0 : array->rank();
    v.elem_size = array == nullptr ? 0 : array->elem_size;
    return v;
  }
  for (const TileState::ArrayPart& part : tile.live_parts()) {
    if (part.array != array) continue;
    bbmm_view v;
    v.rank = array->rank();
    v.npieces = static_cast<int>(part.view.size());
    v.elem_size = array->elem_size;
    v.pieces = part.view.data();
    return v;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "view: the tile did not require array '", array == nullptr ? "(null)" : array->name, "'"));
}

void RuntimeCore::commit_writes(TileState& tile) {
  // Fix (fault injection): a tile whose only launch failed wrote nothing;
  // marking its WRITE boxes as written would make the device's uninitialised
  // memory the only valid copy (and write it back over the host data).
  if (tile.writes_committed || tile.launch_failed) return;
  tile.writes_committed = true;
  for (const TileState::ArrayPart& part : tile.live_parts()) {
    for (size_t i = 0; i < part.write.size(); ++i) {
      coherency_->commit_write(*part.array, tile.device, part.write[i]);
      if (options_.check) part.array->epoch_writes.push_back({tile.device, part.write[i], nullptr});
    }
  }
}

absl::Status RuntimeCore::launch(TileState& tile,
                                 std::function<void(const bbmm_launch_info&)> fn) {
  if (tile.device == kHostDevice) return launch_host(tile, std::move(fn));
  std::lock_guard<std::mutex> lock(mu_);
  ManagerTimer timer(&stats_[tile.device].manager_seconds, tracer_.get(), "launch");
  if (tile.phase != TileState::Phase::kAcquired) {
    return absl::FailedPreconditionError("launch: the tile is not acquired");
  }
  if (tile.shadow_rank >= 0) return absl::OkStatus();  // another rank runs it
  // The kernel waits for what is in flight on the boxes it reads (writes) and
  // writes (reads and writes) of the instances it uses (tile.uses, found at
  // acquire), no more.
  std::optional<SlowScope> slow(std::in_place, "launch: finding what the kernel waits for");
  waits_.clear();
  for (const TileState::Use& u : tile.uses) u.inst->hazards.before(u.box, u.write, waits_);
  std::optional<Tracer::Label> label;
  if (tracer_ != nullptr) {
    std::string args = "\"tile\":\"";
    for (size_t k = 0; k < tile.nparts; ++k) {
      const TileState::ArrayPart& part = tile.parts[k];
      absl::StrAppend(&args, k > 0 ? " " : "", json_escape(part.array->name), part.all.to_string());
    }
    label.emplace(args + "\"");
  }
  slow.emplace("launch: queueing the kernel (backend)");
  absl::StatusOr<Event> ev = backend_->launch(tile.device, std::move(fn), waits_);
  if (!ev.ok()) {
    tile.launch_failed = true;
    return ev.status();
  }
  tile.launch_failed = false;  // a later launch that succeeds commits as usual
  slow.emplace("launch: recording the kernel's hazards and writes");
  for (const TileState::Use& u : tile.uses) u.inst->hazards.after(u.box, u.write, *ev);
  tile.kernel_done = *ev;
  commit_writes(tile);
  return absl::OkStatus();
}

absl::Status RuntimeCore::flow_out(TileState& tile, Array* array, const Box& box) {
  std::lock_guard<std::mutex> lock(mu_);
  ManagerTimer timer(&tile_stats(tile.device).manager_seconds, tracer_.get(), "flow_out");
  if (tile.phase != TileState::Phase::kAcquired) {
    return absl::FailedPreconditionError("flow_out: the tile is not acquired");
  }
  if (tile.shadow_rank >= 0) return absl::OkStatus();  // another rank's tile
  if (array == nullptr || box.rank() != array->rank() ||
      (!box.empty() && !is_subset(box, array->whole))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "flow_out ", array == nullptr ? "(null array)" : describe(*array, box),
        ": box rank or bounds do not match the array"));
  }
  // Empty, or a host tile's: device tiles read from the host copy anyway.
  if (box.empty() || tile.device == kHostDevice) return absl::OkStatus();
  commit_writes(tile);
  // With global tiles over several ranks, readers on other ranks get the box
  // straight from this device when sends go from device memory
  // (runtime_ranks.cpp, send_locked); else through this rank's host copy: it
  // goes there now, behind this tile's kernel, so that the send a reader's tile
  // posts later waits for nothing this device runs meanwhile.
  return coherency_->flow_out(*array, tile.device, box,
                              global_tiles() && rank_count() > 1 && !sends_from_devices_);
}

void RuntimeCore::retire(TileState& tile) {
  tile.phase = TileState::Phase::kFree;
  tile.generation.fetch_add(1, std::memory_order_relaxed);
  tile.kernel_done = Event();
  tiles_.give_back(&tile);
}

absl::Status RuntimeCore::release(TileState& tile) {
  std::lock_guard<std::mutex> lock(mu_);
  ManagerTimer timer(&tile_stats(tile.device).manager_seconds, tracer_.get(), "release");
  if (tile.phase == TileState::Phase::kFree) {
    return absl::FailedPreconditionError("release: the tile was released");
  }
  if (tile.shadow_rank >= 0) {  // another rank's tile: only its books were kept
    retire(tile);
    return absl::OkStatus();
  }
  absl::Status status;
  if (tile.phase == TileState::Phase::kAcquired) {
    // A host tile's writes were made the host's at acquire (host_tiles.cpp).
    if (tile.device != kHostDevice) {
      commit_writes(tile);
      if (writes_back_eagerly(tile.device)) status = write_back_written(tile);
    }
    if (options_.check) drop_open_writes(tile);
  }
  unhold_all(tile);
  tile_stats(tile.device).tiles++;
  retire(tile);
  return status;
}

bool RuntimeCore::writes_back_eagerly(int device) const {
  switch (options_.write_back) {
    case BBMM_WRITE_BACK_EAGER: return true;
    case BBMM_WRITE_BACK_LAZY: return false;
    default: return manager_->device(device).boxed_out_sole_copies;
  }
}

absl::Status RuntimeCore::write_back_written(TileState& tile) {
  // Behind the tile's kernel (the copies wait for its writes), issued now: the
  // instances stay, valid on both sides, and boxing them out later copies
  // nothing.
  for (const TileState::ArrayPart& part : tile.live_parts()) {
    if (part.array->read_only) continue;
    for (size_t i = 0; i < part.write.size(); ++i) {
      absl::Status s = coherency_->write_back(*part.array, part.write[i]);
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------- synchronisation

absl::Status RuntimeCore::write_back(Array* array) {
  std::lock_guard<std::mutex> lock(mu_);
  if (array == nullptr) return absl::InvalidArgumentError("write_back: null array");
  if (array->read_only) return absl::OkStatus();
  return coherency_->write_back(*array, array->whole);
}

absl::Status RuntimeCore::sync_to_host(Array* array) {
  std::vector<Event> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (array == nullptr) return absl::InvalidArgumentError("sync_to_host: null array");
    // Over several ranks with global tiles: what other ranks hold comes first.
    if (global_tiles()) {
      if (absl::Status s = gather(*array); !s.ok()) return s;
    }
    if (!array->read_only) {
      absl::Status s = coherency_->write_back(*array, array->whole);
      if (!s.ok()) return s;
    }
    // The copies writing the host copy (write-backs, flow-outs to the host).
    array->host_hazards.before(array->whole, /*write=*/false, pending);
  }
  for (const Event& e : pending) {
    absl::Status s = e.wait();
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status RuntimeCore::discard(Array* array) {
  std::lock_guard<std::mutex> lock(mu_);
  if (array == nullptr) return absl::InvalidArgumentError("discard: null array");
  if (!registered(array)) {
    return absl::InvalidArgumentError(
        "discard: unknown array (already unregistered, or of another runtime)");
  }
  if (array->read_only) return absl::OkStatus();
  if (absl::Status held = check_not_held(*array, "discard"); !held.ok()) return held;
  // As if the host had written every element: the devices' copies are stale,
  // nothing is written back, the next read-in comes from the host (after the
  // write-backs still in flight: the host hazards order it).
  array->directory.set(array->whole, kHostBit);
  // Over several ranks every rank's host copy is the value: nothing to gather.
  if (global_tiles()) array->rank_directory.set(array->whole, all_ranks());
  return absl::OkStatus();
}

absl::Status RuntimeCore::synchronize() {
  absl::Status status;
  for (int d = 0; d < device_count(); ++d) {
    absl::Status s = backend_->synchronize(d);
    if (status.ok()) status = s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& a : arrays_) a->epoch_writes.clear();
  return status;
}

absl::Status RuntimeCore::phase_boundary() {
  std::lock_guard<std::mutex> lock(mu_);
  if (options_.check) {
    for (auto& a : arrays_) a->epoch_writes.clear();
  }
  return manager_->release_transient();
}

}  // namespace bbmm::detail
