// The instances of every device: allocation within the device's capacity,
// the in-use list (held by open tiles) and the unused list (kept for reuse,
// first to be boxed out), box-out in eviction-policy order, and freeing.
//
// Thread-safety: none; the runtime core serialises access.
#pragma once

#include <cstddef>
#include <list>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bbmm/bbmm.h"
#include "bbmm/box.h"
#include "core/array.h"
#include "core/backend.h"
#include "core/coherency.h"
#include "core/copy_planner.h"
#include "core/eviction_policy.h"
#include "core/instance.h"
#include "core/trace.h"

namespace bbmm::detail {

class TileState;

class InstanceManager {
 public:
  struct Device {
    size_t capacity = 0;   // bytes the manager may hand out
    size_t allocated = 0;  // exact bytes of live instances
    // Some box-out had to write back data only it held: the device is out of
    // core (what it writes leaves it anyway), so results go back eagerly
    // under BBMM_WRITE_BACK_AUTO.
    bool boxed_out_sole_copies = false;
    std::list<Instance*> in_use, unused;
  };

  // `capacity[d]`: what device d may hold. `stats` holds one entry per device.
  InstanceManager(Backend& backend, CopyPlanner& planner, Coherency& coherency,
                  EvictionPolicy& policy, Tracer* tracer, std::vector<bbmm_stats>& stats,
                  const std::vector<size_t>& capacity);

  int device_count() const { return static_cast<int>(devices_.size()); }
  const Device& device(int d) const { return devices_[d]; }

  // Bytes an instance of `box` of `a` occupies (rows padded to the backend's
  // pitch alignment); fills its element `strides`.
  size_t footprint(const Array& a, const Box& box, int64_t* strides) const;

  // A new, unused instance of `box` of `a` on `device`, holding nothing valid
  // yet. Boxes out unused instances (policy order) until it fits; kResource-
  // Exhausted naming the array, box and sizes when nothing is left to evict
  // (`tile`, which may be null, is described in the message).
  absl::StatusOr<Instance*> allocate(int device, Array* a, const Box& box, const TileState* tile);
  // Boxes out the unused instance `inst`: what only it holds is written back
  // first, then it is freed.
  absl::Status evict(Instance* inst);
  // Frees `inst` once the operations in flight on it complete (issuing any
  // planned copy first). Its validity bits are the caller's business.
  absl::Status free(Instance* inst);

  // Raises `inst`'s usage (moving it to the in-use list) / lowers it.
  void pin(Instance* inst);
  void unpin(Instance* inst);
  // Touches `inst` for the eviction policy.
  void touch(Instance* inst) { inst->last_use = ++clock_; }
  // Remembers that `inst` was allocated for transient reads only / that a tile
  // needs it otherwise too (it stays).
  void mark_transient(Instance* inst);
  void unmark_transient(Instance* inst);
  // Frees the instances marked transient that no open tile holds (their data
  // is valid elsewhere: they were only read); the others wait for the next call.
  absl::Status release_transient();

 private:
  // Writes back what only `inst` holds, takes it out of the directory and frees it
  // (evict without the statistics of a box-out).
  absl::Status drop(Instance* inst);
  // Boxes out unused instances of `device` until `bytes` more fit.
  absl::Status make_room(int device, size_t bytes, const TileState* tile, const Array& a,
                         const Box& box);

  Backend& backend_;
  CopyPlanner& planner_;
  Coherency& coherency_;
  EvictionPolicy& policy_;
  Tracer* tracer_;
  std::vector<bbmm_stats>& stats_;
  std::vector<Device> devices_;
  uint64_t clock_ = 0;
  std::vector<Event> scratch_;
  std::vector<Instance*> transient_;  // marked transient, alive
};

}  // namespace bbmm::detail
