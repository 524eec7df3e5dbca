#include "core/instance_manager.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/tile_state.h"

namespace bbmm::detail {

InstanceManager::InstanceManager(Backend& backend, CopyPlanner& planner, Coherency& coherency,
                                 EvictionPolicy& policy, Tracer* tracer,
                                 std::vector<bbmm_stats>& stats,
                                 const std::vector<size_t>& capacity)
    : backend_(backend),
      planner_(planner),
      coherency_(coherency),
      policy_(policy),
      tracer_(tracer),
      stats_(stats),
      devices_(capacity.size()) {
  for (size_t d = 0; d < capacity.size(); ++d) devices_[d].capacity = capacity[d];
}

size_t InstanceManager::footprint(const Array& a, const Box& box, int64_t* strides) const {
  const int r = box.rank();
  const size_t elem = a.elem_size;
  const size_t align = std::lcm(std::max<size_t>(1, backend_.pitch_alignment()), elem);
  const size_t row = static_cast<size_t>(box.extent(r - 1)) * elem;
  const size_t pitch = (row + align - 1) / align * align;
  strides[r - 1] = 1;
  if (r >= 2) strides[r - 2] = static_cast<int64_t>(pitch / elem);
  for (int d = r - 3; d >= 0; --d) strides[d] = strides[d + 1] * box.extent(d + 1);
  if (r == 1) return pitch;
  return static_cast<size_t>(strides[0] * box.extent(0)) * elem;
}

absl::Status InstanceManager::make_room(int device, size_t bytes, const TileState* tile,
                                        const Array& a, const Box& box) {
  Device& dev = devices_[device];
  while (dev.allocated + bytes > dev.capacity) {
    Instance* victim = dev.unused.empty() ? nullptr : policy_.choose(dev.unused);
    if (victim == nullptr) {
      size_t tile_bytes = 0, tile_instances = 0;
      if (tile != nullptr) {
        tile_instances = tile->held.size();
        for (const Instance* inst : tile->held) tile_bytes += inst->bytes;
      }
      return absl::ResourceExhaustedError(absl::StrCat(
          "device ", device, ": cannot fit array '", a.name, "' box ", box.to_string(), " (",
          bytes, " bytes): capacity ", dev.capacity, " bytes, ", dev.allocated,
          " bytes held by ", dev.in_use.size(), " instances in use (this tile already holds ",
          tile_instances, " instances, ", tile_bytes, " bytes); nothing left to evict"));
    }
    absl::Status s = evict(victim);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<Instance*> InstanceManager::allocate(int device, Array* a, const Box& box,
                                                    const TileState* tile) {
  auto inst = std::make_unique<Instance>();
  inst->array = a;
  inst->device = device;
  inst->box = box;
  inst->bytes = footprint(*a, box, inst->strides);
  absl::Status s = make_room(device, inst->bytes, tile, *a, box);
  if (!s.ok()) return s;
  Device& dev = devices_[device];
  while (true) {
    absl::StatusOr<DeviceBuffer> buf = backend_.allocate(device, inst->bytes);
    if (buf.ok()) {
      inst->buffer = *std::move(buf);
      break;
    }
    // The backend may be fuller than our accounting (fragmentation, other
    // users of the GPU): box out more and retry.
    if (!absl::IsResourceExhausted(buf.status()) || dev.unused.empty()) {
      return absl::Status(buf.status().code(),
                          absl::StrCat("device ", device, ": allocating ", inst->bytes,
                                       " bytes for array '", a->name, "' box ", box.to_string(),
                                       " failed: ", buf.status().message()));
    }
    s = evict(policy_.choose(dev.unused));
    if (!s.ok()) return s;
  }
  // Everything that uses the memory waits for it to be ready.
  inst->hazards.after(box, /*write=*/true, inst->buffer.ready);
  dev.allocated += inst->bytes;
  bbmm_stats& st = stats_[device];
  st.bytes_allocated = dev.allocated;
  st.peak_bytes_allocated = std::max<uint64_t>(st.peak_bytes_allocated, dev.allocated);
  st.instances++;
  inst->last_use = ++clock_;
  Instance* raw = inst.release();
  dev.unused.push_back(raw);
  raw->list_pos = std::prev(dev.unused.end());
  a->instances[device].push_back(raw);
  return raw;
}

absl::Status InstanceManager::drop(Instance* inst) {
  absl::Status s = coherency_.save_sole_copies(*inst);
  if (!s.ok()) return s;
  inst->array->directory.remove(inst->box, device_bit(inst->device));
  return free(inst);
}

absl::Status InstanceManager::evict(Instance* inst) {
  Array& a = *inst->array;
  bbmm_stats& st = stats_[inst->device];
  st.evictions++;
  st.bytes_evicted += inst->bytes;
  if (tracer_ != nullptr) {
    tracer_->slice(inst->device, "evict", tracer_->now_us(), 0,
                   absl::StrCat("\"array\":\"", json_escape(a.name), "\",\"box\":\"",
                                inst->box.to_string(), "\",\"bytes\":", inst->bytes));
  }
  const int device = inst->device;
  const uint64_t writebacks = st.writebacks;
  absl::Status s = drop(inst);
  if (stats_[device].writebacks != writebacks) devices_[device].boxed_out_sole_copies = true;
  return s;
}

void InstanceManager::mark_transient(Instance* inst) {
  if (inst->transient) return;
  inst->transient = true;
  transient_.push_back(inst);
}

void InstanceManager::unmark_transient(Instance* inst) {
  if (!inst->transient) return;
  inst->transient = false;
  transient_.erase(std::find(transient_.begin(), transient_.end(), inst));
}

absl::Status InstanceManager::release_transient() {
  absl::Status status;
  for (size_t k = 0; k < transient_.size();) {
    Instance* inst = transient_[k];
    if (inst->usage > 0) {
      ++k;
      continue;
    }
    // Only read: another copy is valid (drop writes back nothing then). On success
    // free() takes it off transient_.
    absl::Status s = drop(inst);
    if (!s.ok()) {
      ++k;
      if (status.ok()) status = s;
    }
  }
  return status;
}

absl::Status InstanceManager::free(Instance* inst) {
  // The planned copies' events must be among the hazards the free waits for.
  if (!planner_.empty()) {
    absl::Status s = planner_.flush();
    if (!s.ok()) return s;
  }
  Device& dev = devices_[inst->device];
  scratch_.clear();
  inst->hazards.all(scratch_);
  absl::Status s = backend_.free(inst->device, inst->buffer, scratch_);
  (inst->usage > 0 ? dev.in_use : dev.unused).erase(inst->list_pos);
  inst->array->instances[inst->device].erase(inst);
  if (inst->transient) {
    transient_.erase(std::find(transient_.begin(), transient_.end(), inst));
  }
  dev.allocated -= inst->bytes;
  bbmm_stats& st = stats_[inst->device];
  st.bytes_allocated = dev.allocated;
  st.instances--;
  delete inst;
  return s;
}

void InstanceManager::pin(Instance* inst) {
  Device& dev = devices_[inst->device];
  if (inst->usage++ == 0) dev.in_use.splice(dev.in_use.end(), dev.unused, inst->list_pos);
  inst->last_use = ++clock_;
}

void InstanceManager::unpin(Instance* inst) {
  Device& dev = devices_[inst->device];
  inst->last_use = ++clock_;
  if (--inst->usage == 0) dev.unused.splice(dev.unused.end(), dev.in_use, inst->list_pos);
}

}  // namespace bbmm::detail
