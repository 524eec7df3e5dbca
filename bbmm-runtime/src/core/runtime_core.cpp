#include "core/runtime_core.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace bbmm::detail {
namespace {

std::string describe(const Array& a, const Box& box) {
  return absl::StrCat("array '", a.name, "' box ", box.to_string());
}

void append_events(std::vector<Event>& to, const std::vector<Event>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

RuntimeCore::RuntimeCore(std::unique_ptr<Backend> backend, const RuntimeOptions& options)
    : backend_(std::move(backend)), options_(options) {}

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
  if (!(options.growth_threshold >= 0.0 && options.growth_threshold <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "runtime: growth_threshold ", options.growth_threshold, " is outside [0, 1]"));
  }
  std::unique_ptr<RuntimeCore> core(new RuntimeCore(std::move(backend), options));
  core->devices_.resize(n);
  for (int d = 0; d < n; ++d) {
    size_t cap = core->backend_->free_memory(d);
    if (options.device_memory > 0) cap = std::min<size_t>(cap, options.device_memory);
    core->devices_[d].capacity = cap;
  }
  if (!options.trace_file.empty()) {
    core->tracer_ = std::make_unique<Tracer>(options.trace_file);
    core->backend_->set_tracer(core->tracer_.get());
  }
  core->policy_ = make_eviction_policy(options.eviction_policy);
  return core;
}

RuntimeCore::~RuntimeCore() { (void)shutdown(); }

absl::Status RuntimeCore::shutdown() {
  if (shut_down_) return absl::OkStatus();
  absl::Status status = synchronize();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& a : arrays_) {
    for (auto& insts : a->instances) {
      while (!insts.empty()) {
        absl::Status s = free_instance(insts.back());
        if (status.ok()) status = s;
      }
    }
  }
  for (int d = 0; d < device_count(); ++d) {
    absl::Status s = backend_->synchronize(d);
    if (status.ok()) status = s;
  }
  arrays_.clear();
  if (tracer_ != nullptr) {
    backend_->set_tracer(nullptr);
    absl::Status s = tracer_->close();
    if (status.ok()) status = s;
  }
  shut_down_ = true;
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
  absl::Status pin = backend_->register_host(host, span_bytes);
  if (!pin.ok()) return pin;
  arrays_.push_back(std::make_unique<Array>(std::move(name), next_array_id_++, host, elem_size,
                                            *whole, st, read_only, device_count()));
  return arrays_.back().get();
}

absl::Status RuntimeCore::unregister_array(Array* array) {
  absl::Status s = sync_to_host(array);
  if (!s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(arrays_.begin(), arrays_.end(),
                         [array](const auto& p) { return p.get() == array; });
  if (it == arrays_.end()) return absl::InvalidArgumentError("unregister: unknown array");
  for (auto& insts : array->instances) {
    for (Instance* inst : insts) {
      if (inst->usage > 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "unregister array '", array->name, "': instance ", inst->box.to_string(),
            " on device ", inst->device, " is held by an unreleased tile"));
      }
    }
  }
  for (auto& insts : array->instances) {
    while (!insts.empty()) {
      absl::Status fs = free_instance(insts.back());
      if (!fs.ok()) return fs;
    }
  }
  absl::Status unpin = backend_->unregister_host(array->host);
  arrays_.erase(it);
  return unpin;
}

// ---------------------------------------------------------------- layouts & copies

RuntimeCore::Layout RuntimeCore::host_layout(const Array& a) const {
  static const int64_t kZeros[Box::kMaxRank] = {};
  return Layout{kHost, a.host, 0, kZeros, a.host_strides};
}

RuntimeCore::Layout RuntimeCore::instance_layout(const Instance& inst) const {
  return Layout{inst.device, inst.buffer.base, inst.buffer.offset, inst.box.lo_data(),
                inst.strides};
}

size_t RuntimeCore::footprint(const Array& a, const Box& box, int64_t* strides) const {
  const int r = box.rank();
  const size_t elem = a.elem_size;
  const size_t align = std::lcm(std::max<size_t>(1, backend_->pitch_alignment()), elem);
  const size_t row = static_cast<size_t>(box.extent(r - 1)) * elem;
  const size_t pitch = (row + align - 1) / align * align;
  strides[r - 1] = 1;
  if (r >= 2) strides[r - 2] = static_cast<int64_t>(pitch / elem);
  for (int d = r - 3; d >= 0; --d) strides[d] = strides[d + 1] * box.extent(d + 1);
  if (r == 1) return pitch;
  return static_cast<size_t>(strides[0] * box.extent(0)) * elem;
}

absl::StatusOr<Event> RuntimeCore::copy_box(const Array& a, const Layout& dst, const Layout& src,
                                            const Box& box, std::span<const Event> wait) {
  const int r = box.rank();
  const size_t elem = a.elem_size;
  auto offset_of = [&](const Layout& l, const int64_t* idx) {
    int64_t off = 0;
    for (int d = 0; d < r; ++d) off += (idx[d] - l.origin[d]) * l.strides[d];
    return l.offset + static_cast<size_t>(off) * elem;
  };
  CopyShape shape;
  shape.width_bytes = static_cast<size_t>(box.extent(r - 1)) * elem;
  Endpoint de{dst.device, dst.base, 0, shape.width_bytes, shape.width_bytes};
  Endpoint se{src.device, src.base, 0, shape.width_bytes, shape.width_bytes};
  if (r >= 2) {
    shape.height = static_cast<size_t>(box.extent(r - 2));
    de.row_pitch = static_cast<size_t>(dst.strides[r - 2]) * elem;
    se.row_pitch = static_cast<size_t>(src.strides[r - 2]) * elem;
    de.slice_pitch = de.row_pitch * shape.height;
    se.slice_pitch = se.row_pitch * shape.height;
  }
  if (r >= 3) {
    shape.depth = static_cast<size_t>(box.extent(r - 3));
    de.slice_pitch = static_cast<size_t>(dst.strides[r - 3]) * elem;
    se.slice_pitch = static_cast<size_t>(src.strides[r - 3]) * elem;
  }
  // Planes that are just consecutive rows on both sides (the box spans its
  // arrays' whole middle dimension): one taller 2-D copy is cheaper than a
  // 3-D one.
  if (shape.depth > 1 && de.slice_pitch == de.row_pitch * shape.height &&
      se.slice_pitch == se.row_pitch * shape.height) {
    shape.height *= shape.depth;
    shape.depth = 1;
    de.slice_pitch = de.row_pitch * shape.height;
    se.slice_pitch = se.row_pitch * shape.height;
  }
  // The trace names the array and box of every copy.
  std::optional<Tracer::Label> label;
  if (tracer_ != nullptr) {
    label.emplace(absl::StrCat("\"array\":\"", json_escape(a.name), "\",\"box\":\"",
                               box.to_string(), "\""));
  }
  // Dimensions before the last three: one 3-D copy per index combination.
  int64_t idx[Box::kMaxRank];
  std::copy_n(box.lo_data(), r, idx);
  const int outer = std::max(0, r - 3);
  Event last;
  while (true) {
    de.offset = offset_of(dst, idx);
    se.offset = offset_of(src, idx);
    absl::StatusOr<Event> ev = backend_->copy(de, se, shape, wait);
    if (!ev.ok()) return ev.status();
    last = *ev;
    int d = outer - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < box.hi(d)) break;
      idx[d] = box.lo(d);
    }
    if (d < 0) break;
  }
  return last;
}

void RuntimeCore::prune(std::vector<Event>& events) {
  if (events.size() < 16) return;
  events.erase(std::remove_if(events.begin(), events.end(), [](const Event& e) { return e.done(); }),
               events.end());
}

absl::Status RuntimeCore::copy_host_to_instance(Instance& dst, const Box& box) {
  Array& a = *dst.array;
  std::vector<Event> wait = {dst.write_done};
  append_events(wait, dst.reads);
  append_events(wait, a.host_writes);
  absl::StatusOr<Event> ev = copy_box(a, instance_layout(dst), host_layout(a), box, wait);
  if (!ev.ok()) return ev.status();
  dst.write_done = *ev;
  dst.reads.clear();
  a.host_reads.push_back(*ev);
  prune(a.host_reads);
  bbmm_stats& st = devices_[dst.device].stats;
  st.bytes_h2d += box.volume() * a.elem_size;
  st.copies++;
  return absl::OkStatus();
}

absl::Status RuntimeCore::copy_instance_to_host(Instance& src, const Box& box) {
  Array& a = *src.array;
  std::vector<Event> wait = {src.write_done};
  append_events(wait, a.host_reads);
  append_events(wait, a.host_writes);
  absl::StatusOr<Event> ev = copy_box(a, host_layout(a), instance_layout(src), box, wait);
  if (!ev.ok()) return ev.status();
  src.reads.push_back(*ev);
  prune(src.reads);
  a.host_writes.push_back(*ev);
  prune(a.host_writes);
  bbmm_stats& st = devices_[src.device].stats;
  st.bytes_d2h += box.volume() * a.elem_size;
  st.copies++;
  return absl::OkStatus();
}

absl::Status RuntimeCore::copy_instance_to_instance(Instance& dst, Instance& src,
                                                    const Box& box) {
  Array& a = *dst.array;
  std::vector<Event> wait = {src.write_done, dst.write_done};
  append_events(wait, dst.reads);
  absl::StatusOr<Event> ev = copy_box(a, instance_layout(dst), instance_layout(src), box, wait);
  if (!ev.ok()) return ev.status();
  dst.write_done = *ev;
  dst.reads.clear();
  src.reads.push_back(*ev);
  prune(src.reads);
  bbmm_stats& st = devices_[dst.device].stats;
  (dst.device == src.device ? st.bytes_d2d : st.bytes_peer) += box.volume() * a.elem_size;
  st.copies++;
  return absl::OkStatus();
}

absl::Status RuntimeCore::write_back(Array& a, const Box& box) {
  for (const Directory::Region& g : a.directory.query(box)) {
    if (g.valid & kHostBit) continue;
    int from = -1;
    for (int e = 0; e < device_count() && from < 0; ++e) {
      if (g.valid & device_bit(e)) from = e;
    }
    if (from < 0) {
      return absl::InternalError(absl::StrCat("coherency: ", describe(a, g.box),
                                              " has no valid copy"));
    }
    for (Instance* src : overlapping(a, from, g.box)) {
      const Box part = *intersection(g.box, src->box);
      absl::Status s = copy_instance_to_host(*src, part);
      if (!s.ok()) return s;
      devices_[from].stats.writebacks++;
      devices_[from].stats.bytes_written_back += part.volume() * a.elem_size;
    }
    a.directory.add(g.box, kHostBit);
  }
  return absl::OkStatus();
}

absl::Status RuntimeCore::read_in(Instance& dst, const Box& box) {
  Array& a = *dst.array;
  const int d = dst.device;
  const HolderMask mine = device_bit(d);
  for (const Directory::Region& g : a.directory.query(box)) {
    if (g.valid & mine) continue;
    int peer = -1;
    for (int e = 0; e < device_count() && peer < 0; ++e) {
      if (e != d && (g.valid & device_bit(e)) && backend_->can_access_peer(d, e)) peer = e;
    }
    if (peer >= 0) {
      for (Instance* src : overlapping(a, peer, g.box)) {
        absl::Status s = copy_instance_to_instance(dst, *src, *intersection(g.box, src->box));
        if (!s.ok()) return s;
      }
    } else {
      if (!(g.valid & kHostBit)) {
        // Only devices this one cannot reach hold it: stage through the host.
        absl::Status s = write_back(a, g.box);
        if (!s.ok()) return s;
      }
      absl::Status s = copy_host_to_instance(dst, g.box);
      if (!s.ok()) return s;
    }
    a.directory.add(g.box, mine);
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------- instances

std::vector<Instance*> RuntimeCore::overlapping(const Array& a, int device,
                                                const Box& box) const {
  std::vector<Instance*> out;
  for (Instance* inst : a.instances[device]) {
    if (overlaps(inst->box, box)) out.push_back(inst);
  }
  return out;
}

absl::Status RuntimeCore::make_room(int device, size_t bytes, const TileState& tile,
                                    const Array& a, const Box& box) {
  Device& dev = devices_[device];
  while (dev.allocated + bytes > dev.capacity) {
    Instance* victim = dev.unused.empty() ? nullptr : policy_->choose(dev.unused);
    if (victim == nullptr) {
      size_t tile_bytes = 0;
      for (Instance* inst : tile.held) tile_bytes += inst->bytes;
      return absl::ResourceExhaustedError(absl::StrCat(
          "device ", device, ": cannot fit ", describe(a, box), " (", bytes,
          " bytes): capacity ", dev.capacity, " bytes, ", dev.allocated,
          " bytes held by ", dev.in_use.size(),
          " instances in use (this tile already holds ", tile.held.size(), " instances, ",
          tile_bytes, " bytes); nothing left to evict"));
    }
    absl::Status s = evict(victim);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<Instance*> RuntimeCore::allocate_instance(int device, Array* a, const Box& box,
                                                         const TileState& tile) {
  auto inst = std::make_unique<Instance>();
  inst->array = a;
  inst->device = device;
  inst->box = box;
  inst->bytes = footprint(*a, box, inst->strides);
  absl::Status s = make_room(device, inst->bytes, tile, *a, box);
  if (!s.ok()) return s;
  Device& dev = devices_[device];
  while (true) {
    absl::StatusOr<DeviceBuffer> buf = backend_->allocate(device, inst->bytes);
    if (buf.ok()) {
      inst->buffer = *buf;
      break;
    }
    // The backend may be fuller than our accounting (fragmentation, other
    // users of the GPU): box out more and retry.
    if (!absl::IsResourceExhausted(buf.status()) || dev.unused.empty()) {
      return absl::Status(buf.status().code(),
                          absl::StrCat("device ", device, ": allocating ", inst->bytes,
                                       " bytes for ", describe(*a, box),
                                       " failed: ", buf.status().message()));
    }
    s = evict(policy_->choose(dev.unused));
    if (!s.ok()) return s;
  }
  dev.allocated += inst->bytes;
  dev.stats.bytes_allocated = dev.allocated;
  dev.stats.peak_bytes_allocated = std::max<uint64_t>(dev.stats.peak_bytes_allocated,
                                                      dev.allocated);
  dev.stats.instances++;
  inst->last_use = ++clock_;
  Instance* raw = inst.release();
  dev.unused.push_back(raw);
  raw->list_pos = std::prev(dev.unused.end());
  a->instances[device].push_back(raw);
  return raw;
}

absl::Status RuntimeCore::evict(Instance* inst) {
  Array& a = *inst->array;
  const HolderMask mine = device_bit(inst->device);
  Device& dev = devices_[inst->device];
  if (!a.read_only) {
    for (const Directory::Region& g : a.directory.query(inst->box)) {
      if ((g.valid & ~mine) != 0) continue;  // another copy stays valid
      absl::Status s = copy_instance_to_host(*inst, g.box);
      if (!s.ok()) return s;
      a.directory.add(g.box, kHostBit);
      dev.stats.writebacks++;
      dev.stats.bytes_written_back += g.box.volume() * a.elem_size;
    }
  }
  a.directory.remove(inst->box, mine);
  dev.stats.evictions++;
  dev.stats.bytes_evicted += inst->bytes;
  trace_slice(inst->device, "evict", a, inst->box, inst->bytes);
  return free_instance(inst);
}

absl::Status RuntimeCore::free_instance(Instance* inst) {
  Device& dev = devices_[inst->device];
  std::vector<Event> after = {inst->write_done};
  append_events(after, inst->reads);
  absl::Status s = backend_->free(inst->device, inst->buffer, after);
  (inst->usage > 0 ? dev.in_use : dev.unused).erase(inst->list_pos);
  auto& list = inst->array->instances[inst->device];
  list.erase(std::find(list.begin(), list.end(), inst));
  dev.allocated -= inst->bytes;
  dev.stats.bytes_allocated = dev.allocated;
  dev.stats.instances--;
  delete inst;
  return s;
}

void RuntimeCore::hold(TileState& tile, Instance* inst) {
  if (std::find(tile.held.begin(), tile.held.end(), inst) != tile.held.end()) return;
  Device& dev = devices_[inst->device];
  if (inst->usage++ == 0) {
    dev.unused.erase(inst->list_pos);
    dev.in_use.push_back(inst);
    inst->list_pos = std::prev(dev.in_use.end());
  }
  inst->last_use = ++clock_;
  tile.held.push_back(inst);
}

void RuntimeCore::unhold_all(TileState& tile) { unhold_since(tile, 0); }

void RuntimeCore::unhold_since(TileState& tile, size_t first) {
  for (size_t k = first; k < tile.held.size(); ++k) {
    Instance* inst = tile.held[k];
    Device& dev = devices_[inst->device];
    inst->last_use = ++clock_;
    if (--inst->usage == 0) {
      dev.in_use.erase(inst->list_pos);
      dev.unused.push_back(inst);
      inst->list_pos = std::prev(dev.unused.end());
    }
  }
  tile.held.resize(first);
}

// ---------------------------------------------------------------- tiles

absl::StatusOr<std::unique_ptr<TileState>> RuntimeCore::begin_tile(int device) {
  if (device < 0 || device >= device_count()) {
    return absl::InvalidArgumentError(absl::StrCat("begin tile: device ", device,
                                                   " is outside 0..", device_count() - 1));
  }
  return std::make_unique<TileState>(this, device);
}

absl::Status RuntimeCore::require(TileState& tile, Array* array, const Box& box,
                                  Access access) {
  if (array == nullptr) return absl::InvalidArgumentError("require: null array");
  if (tile.acquired || tile.released) {
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
  if (array->read_only && access != Access::kRead) {
    return absl::InvalidArgumentError(absl::StrCat(
        "require ", describe(*array, box), ": the array is registered read-only"));
  }
  if (access != Access::kRead && access != Access::kWrite && access != Access::kReadWrite) {
    return absl::InvalidArgumentError(absl::StrCat("require ", describe(*array, box),
                                                   ": unknown access mode ",
                                                   static_cast<int>(access)));
  }
  if (!box.empty()) tile.requirements.push_back({array, box, access});
  return absl::OkStatus();
}

absl::Status RuntimeCore::check_conflicts(const TileState& tile) {
  for (const TileState::ArrayPart& part : tile.parts) {
    for (size_t i = 0; i < part.write.size(); ++i) {
      const Box w = part.write[i];
      for (const auto& [other, box] : part.array->epoch_writes) {
        if (other != tile.device && overlaps(box, w)) {
          return absl::AbortedError(absl::StrCat(
              "write conflict on array '", part.array->name, "': device ", tile.device,
              " writes ", w.to_string(), " but device ", other, " wrote ", box.to_string(),
              " since the last synchronisation point"));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RuntimeCore::acquire(TileState& tile) {
  std::lock_guard<std::mutex> lock(mu_);
  Device& dev = devices_[tile.device];
  ManagerTimer timer(&dev.stats.manager_seconds);
  if (tile.acquired || tile.released) {
    return absl::FailedPreconditionError("acquire: the tile was already acquired or released");
  }
  // Group the requirements by array (in order of first appearance) and make
  // each array's boxes disjoint.
  tile.parts.clear();
  for (const TileState::Requirement& req : tile.requirements) {
    auto it = std::find_if(tile.parts.begin(), tile.parts.end(),
                           [&](const auto& p) { return p.array == req.array; });
    if (it == tile.parts.end()) {
      tile.parts.push_back({req.array, BoxSet(req.box.rank()), BoxSet(req.box.rank()),
                            BoxSet(req.box.rank()), {}, {}});
      it = std::prev(tile.parts.end());
    }
    (void)it->all.add(req.box);
    if (req.access != Access::kWrite) (void)it->read.add(req.box);
    if (req.access != Access::kRead) (void)it->write.add(req.box);
  }
  for (auto& part : tile.parts) {
    part.all.coalesce();
    part.read.coalesce();
    part.write.coalesce();
  }
  if (options_.check) {
    absl::Status s = check_conflicts(tile);
    if (!s.ok()) return s;
  }
  absl::Status s = acquire_parts(tile, /*pressure=*/false);
  if (absl::IsResourceExhausted(s)) {
    // Retry the whole tile boxing out partly overlapped unused instances
    // rather than holding them whole.
    unhold_all(tile);
    for (auto& p : tile.parts) p.pieces.clear();
    s = acquire_parts(tile, /*pressure=*/true);
  }
  if (absl::IsResourceExhausted(s)) {
    // Fix (fuzz): hits and pieces hold whole instances, which may be much
    // larger than what the tile asks of them (a contained hit in a big
    // instance), so a tile that fits the device could still fail. Last
    // resort: box out every unused instance overlapping the tile's boxes and
    // place the tile afresh, so that it gets exactly its boxes.
    unhold_all(tile);
    for (auto& p : tile.parts) p.pieces.clear();
    s = evict_unused_overlapping(tile);
    if (s.ok()) s = acquire_parts(tile, /*pressure=*/true);
  }
  if (!s.ok()) {
    unhold_all(tile);
    for (auto& p : tile.parts) p.pieces.clear();
    return s;
  }
  build_views(tile);
  tile.acquired = true;
  return absl::OkStatus();
}

absl::Status RuntimeCore::evict_unused_overlapping(TileState& tile) {
  for (auto& part : tile.parts) {
    for (size_t i = 0; i < part.all.size(); ++i) {
      for (Instance* inst : overlapping(*part.array, tile.device, part.all[i])) {
        if (inst->usage > 0) continue;
        absl::Status s = evict(inst);
        if (!s.ok()) return s;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RuntimeCore::acquire_parts(TileState& tile, bool pressure) {
  for (auto& part : tile.parts) {
    absl::Status s = acquire_array(tile, part, pressure);
    // Read in what the tile reads and the device does not hold valid yet.
    for (size_t k = 0; s.ok() && k < part.pieces.size(); ++k) {
      auto& [inst, box] = part.pieces[k];
      for (size_t i = 0; s.ok() && i < part.read.size(); ++i) {
        if (overlaps(box, part.read[i])) s = read_in(*inst, *intersection(box, part.read[i]));
      }
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status RuntimeCore::acquire_array(TileState& tile, TileState::ArrayPart& part,
                                         bool pressure) {
  Array* a = part.array;
  const int d = tile.device;
  Device& dev = devices_[d];
  const double threshold = options_.growth_threshold;

  // 1. Boxes already inside one instance on the device are hits.
  BoxSet rest(a->rank());
  for (size_t i = 0; i < part.all.size(); ++i) {
    const Box r = part.all[i];
    Instance* home = nullptr;
    for (Instance* inst : a->instances[d]) {
      if (is_subset(r, inst->box)) {
        home = inst;
        break;
      }
    }
    if (home == nullptr) {
      rest.append_unchecked(r);
      continue;
    }
    (home->box == r ? dev.stats.hits_exact : dev.stats.hits_contained)++;
    hold(tile, home);
    part.pieces.push_back({home, r});
  }

  // Allocates the boxes of `fresh` (disjoint from every instance), as one
  // hull instance when that wastes little, else one instance per box.
  auto allocate_fresh = [&](BoxSet fresh) -> absl::Status {
    if (fresh.empty()) return absl::OkStatus();
    fresh.coalesce();
    const Box hull = fresh.hull();
    std::vector<Box> homes;
    // Fix (fuzz): under memory pressure allocate exactly the boxes; a hull's
    // waste can be what keeps the tile's other arrays from fitting.
    bool use_hull = !pressure && fresh.size() > 1 && overlapping(*a, d, hull).empty() &&
                    static_cast<double>(hull.volume() - fresh.volume()) <=
                        threshold * static_cast<double>(hull.volume());
    if (use_hull) {
      homes.push_back(hull);
    } else {
      homes = fresh.boxes();
    }
    for (size_t k = 0; k < homes.size(); ++k) {
      const Box h = homes[k];
      absl::StatusOr<Instance*> inst = allocate_instance(d, a, h, tile);
      if (use_hull && absl::IsResourceExhausted(inst.status())) {
        // Fix (fuzz): the hull's waste may be exactly what does not fit;
        // the boxes themselves may still fit, so fall back to them.
        use_hull = false;
        homes = fresh.boxes();
        k = static_cast<size_t>(-1);
        continue;
      }
      if (!inst.ok()) return inst.status();
      dev.stats.misses++;
      hold(tile, *inst);
      for (size_t i = 0; i < fresh.size(); ++i) {
        if (is_subset(fresh[i], h)) part.pieces.push_back({*inst, fresh[i]});
      }
    }
    return absl::OkStatus();
  };

  if (rest.empty()) return absl::OkStatus();
  // 2. Instances that overlap the rest partly.
  std::vector<Instance*> cands;
  for (size_t i = 0; i < rest.size(); ++i) {
    for (Instance* inst : overlapping(*a, d, rest[i])) {
      if (std::find(cands.begin(), cands.end(), inst) == cands.end()) cands.push_back(inst);
    }
  }
  if (cands.empty()) return allocate_fresh(rest);

  // 3. Grow: replace the overlapped instances by their hull with the rest,
  // when none is in use and the hull wastes little.
  const size_t held_mark = tile.held.size(), piece_mark = part.pieces.size();
  BoxSet covered = rest;
  Box hull = rest.hull();
  bool can_grow = true;
  for (Instance* c : cands) {
    can_grow = can_grow && c->usage == 0;
    (void)covered.add(c->box);
    hull = *convex_union(hull, c->box);
  }
  if (can_grow) {
    for (Instance* other : overlapping(*a, d, hull)) {
      if (std::find(cands.begin(), cands.end(), other) == cands.end()) can_grow = false;
    }
  }
  if (can_grow && !pressure && static_cast<double>(hull.volume() - covered.volume()) <=
                      threshold * static_cast<double>(hull.volume())) {
    for (Instance* c : cands) hold(tile, c);  // so that make_room spares them
    absl::StatusOr<Instance*> grown = allocate_instance(d, a, hull, tile);
    if (grown.ok()) {
      hold(tile, *grown);
      for (Instance* c : cands) {
        absl::Status s = copy_instance_to_instance(**grown, *c, c->box);
        if (!s.ok()) return s;
      }
      unhold_since(tile, held_mark);
      hold(tile, *grown);
      for (Instance* c : cands) {
        // The data moved within the device: its validity bits stay.
        absl::Status s = free_instance(c);
        if (!s.ok()) return s;
      }
      dev.stats.hits_grown++;
      for (size_t i = 0; i < rest.size(); ++i) part.pieces.push_back({*grown, rest[i]});
      return absl::OkStatus();
    }
    if (!absl::IsResourceExhausted(grown.status())) return grown.status();
    unhold_since(tile, held_mark);  // not enough room for the hull
  }

  // 4. Pieces: serve what the overlapped instances hold from them and
  // allocate the remainder. Under memory pressure (`replace`), unused
  // overlapped instances are boxed out instead of held whole for a sliver.
  auto serve_with_pieces = [&](bool replace) -> absl::Status {
    BoxSet fresh(a->rank());
    for (size_t i = 0; i < rest.size(); ++i) {
      BoxSet remainder(a->rank());
      remainder.append_unchecked(rest[i]);
      for (Instance* c : overlapping(*a, d, rest[i])) {
        if (replace && c->usage == 0) {
          absl::Status s = evict(c);
          if (!s.ok()) return s;
          continue;
        }
        hold(tile, c);
        part.pieces.push_back({c, *intersection(rest[i], c->box)});
        dev.stats.pieces++;
        (void)remainder.remove(c->box);
      }
      for (size_t k = 0; k < remainder.size(); ++k) fresh.append_unchecked(remainder[k]);
    }
    return allocate_fresh(fresh);
  };
  absl::Status s = serve_with_pieces(pressure);
  if (pressure || !absl::IsResourceExhausted(s)) return s;
  unhold_since(tile, held_mark);
  part.pieces.resize(piece_mark);
  return serve_with_pieces(true);
}

void RuntimeCore::build_views(TileState& tile) {
  for (auto& part : tile.parts) {
    const Array& a = *part.array;
    const int r = a.rank();
    // Pieces of one instance become one piece (their hull, inside it).
    std::vector<std::pair<Instance*, Box>> merged;
    for (const auto& [inst, box] : part.pieces) {
      auto it = std::find_if(merged.begin(), merged.end(),
                             [inst](const auto& m) { return m.first == inst; });
      if (it == merged.end()) {
        merged.push_back({inst, box});
      } else {
        it->second = *convex_union(it->second, box);
      }
    }
    part.view.clear();
    for (const auto& [inst, box] : merged) {
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
  }
}

absl::StatusOr<bbmm_view> RuntimeCore::view(const TileState& tile, Array* array) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!tile.acquired) return absl::FailedPreconditionError("view: the tile is not acquired");
  for (const auto& part : tile.parts) {
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
  const HolderMask mine = device_bit(tile.device);
  for (auto& part : tile.parts) {
    for (size_t i = 0; i < part.write.size(); ++i) {
      part.array->directory.set(part.write[i], mine);
      if (options_.check) part.array->epoch_writes.push_back({tile.device, part.write[i]});
    }
  }
}

absl::Status RuntimeCore::launch(TileState& tile,
                                 std::function<void(const bbmm_launch_info&)> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  Device& dev = devices_[tile.device];
  ManagerTimer timer(&dev.stats.manager_seconds);
  if (!tile.acquired || tile.released) {
    return absl::FailedPreconditionError("launch: the tile is not acquired");
  }
  std::vector<Event> wait;
  for (Instance* inst : tile.held) {
    wait.push_back(inst->write_done);
    append_events(wait, inst->reads);
  }
  std::optional<Tracer::Label> label;
  if (tracer_ != nullptr) {
    std::string args = "\"tile\":\"";
    for (const auto& part : tile.parts) {
      absl::StrAppend(&args, args.size() > 9 ? " " : "", json_escape(part.array->name),
                      part.all.to_string());
    }
    label.emplace(args + "\"");
  }
  absl::StatusOr<Event> ev = backend_->launch(
      tile.device,
      [fn = std::move(fn)](const LaunchContext& ctx) {
        bbmm_launch_info info{ctx.device, ctx.queue};
        fn(info);
      },
      wait);
  if (!ev.ok()) {
    tile.launch_failed = true;
    return ev.status();
  }
  tile.launch_failed = false;  // a later launch that succeeds commits as usual
  for (Instance* inst : tile.held) {
    bool written = false;
    for (const auto& part : tile.parts) {
      if (part.array != inst->array) continue;
      for (size_t i = 0; i < part.write.size() && !written; ++i) {
        written = overlaps(part.write[i], inst->box);
      }
    }
    if (written) {
      inst->write_done = *ev;
      inst->reads.clear();
    } else {
      inst->reads.push_back(*ev);
      prune(inst->reads);
    }
  }
  tile.kernel_done = *ev;
  dev.stats.kernels++;
  commit_writes(tile);
  return absl::OkStatus();
}

absl::Status RuntimeCore::flow_out(TileState& tile, Array* array, const Box& box) {
  std::lock_guard<std::mutex> lock(mu_);
  const int d = tile.device;
  Device& dev = devices_[d];
  ManagerTimer timer(&dev.stats.manager_seconds);
  if (!tile.acquired || tile.released) {
    return absl::FailedPreconditionError("flow_out: the tile is not acquired");
  }
  if (array == nullptr || box.rank() != array->rank() ||
      (!box.empty() && !is_subset(box, array->whole))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "flow_out ", array == nullptr ? "(null array)" : describe(*array, box),
        ": box rank or bounds do not match the array"));
  }
  if (box.empty()) return absl::OkStatus();
  commit_writes(tile);
  Array& a = *array;
  const HolderMask mine = device_bit(d);
  BoxSet to_host(box.rank());
  to_host.append_unchecked(box);
  for (int e = 0; e < device_count(); ++e) {
    if (e == d) continue;
    for (Instance* dst : overlapping(a, e, box)) {
      (void)to_host.remove(dst->box);
      const Box part = *intersection(box, dst->box);
      for (const Directory::Region& g : a.directory.query(part)) {
        if (!(g.valid & mine) || (g.valid & device_bit(e))) continue;
        for (Instance* src : overlapping(a, d, g.box)) {
          const Box piece = *intersection(g.box, src->box);
          absl::Status s;
          if (backend_->can_access_peer(e, d)) {
            s = copy_instance_to_instance(*dst, *src, piece);
          } else {
            // The devices cannot reach each other: through the host, which
            // then holds a valid copy too.
            s = copy_instance_to_host(*src, piece);
            if (s.ok()) {
              a.directory.add(piece, kHostBit);
              s = copy_host_to_instance(*dst, piece);
            }
          }
          if (!s.ok()) return s;
          a.directory.add(piece, device_bit(e));
        }
      }
    }
  }
  for (size_t i = 0; i < to_host.size(); ++i) {
    for (const Directory::Region& g : a.directory.query(to_host[i])) {
      if (!(g.valid & mine) || (g.valid & kHostBit)) continue;
      for (Instance* src : overlapping(a, d, g.box)) {
        const Box piece = *intersection(g.box, src->box);
        absl::Status s = copy_instance_to_host(*src, piece);
        if (!s.ok()) return s;
        a.directory.add(piece, kHostBit);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RuntimeCore::release(TileState& tile) {
  std::lock_guard<std::mutex> lock(mu_);
  Device& dev = devices_[tile.device];
  ManagerTimer timer(&dev.stats.manager_seconds);
  if (tile.released) return absl::FailedPreconditionError("release: the tile was released");
  if (tile.acquired) commit_writes(tile);
  unhold_all(tile);
  tile.released = true;
  dev.stats.tiles++;
  return absl::OkStatus();
}

// ---------------------------------------------------------------- synchronisation

absl::Status RuntimeCore::sync_to_host(Array* array) {
  std::vector<Event> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (array == nullptr) return absl::InvalidArgumentError("sync_to_host: null array");
    if (!array->read_only) {
      absl::Status s = write_back(*array, array->whole);
      if (!s.ok()) return s;
    }
    pending = array->host_writes;
  }
  for (const Event& e : pending) {
    absl::Status s = e.wait();
    if (!s.ok()) return s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  prune(array->host_writes);
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

void RuntimeCore::trace_slice(int device, const char* name, const Array& a, const Box& box,
                              size_t bytes) {
  if (tracer_ == nullptr) return;
  tracer_->slice(device, name, tracer_->now_us(), 0,
                 absl::StrCat("\"array\":\"", json_escape(a.name), "\",\"box\":\"",
                              box.to_string(), "\",\"bytes\":", bytes));
}

}  // namespace bbmm::detail
