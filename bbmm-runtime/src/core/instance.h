// One box of one array resident on one device.
//
// Thread-safety: none; owned and mutated by the runtime core under its lock.
#pragma once

#include <cstdint>
#include <list>

#include "bbmm/box.h"
#include "core/backend.h"
#include "core/box_hull.h"
#include "core/hazards.h"

namespace bbmm {
class Array;
}

namespace bbmm::detail {

struct Instance {
  Array* array = nullptr;
  int device = 0;
  Box box;
  DeviceBuffer buffer;
  // Element strides per dimension (stride[rank-1] == 1; rows padded to the
  // backend's pitch alignment).
  int64_t strides[Box::kMaxRank] = {};
  size_t bytes = 0;  // exact footprint, pitch padding included

  int usage = 0;          // tiles holding it; 0 = on the unused list
  bool transient = false;  // allocated for BBMM_READ_TRANSIENT boxes only: freed at the
                           // next phase boundary (InstanceManager::release_transient)
  uint64_t last_use = 0;  // manager clock at the last acquire/release
  // How many times this instance's data grew into a larger instance (a hull
  // of it and more): from the second growth on, the hull gets headroom
  // (Placement::place), so that a box growing with a serial loop is copied
  // O(log) times, not once per iteration.
  int growths = 0;
  // The hull of the boxes tiles were given from this instance, and of a
  // reservation's box: where this device's tiles read and write. Flow-outs
  // push only there; the rest (a grown instance's headroom, a hull's parts no
  // tile asked for) is read in when a tile first asks for it, not kept
  // current by copies nobody reads. Rank 0 (empty) until the first use.
  Box used;
  bool all_used = false;  // used == box (the hit path then checks nothing)
  void note_used(const Box& b) {
    if (all_used || is_subset(b, used)) return;
    widen_hull(used, b);
    all_used = is_subset(box, used);
  }
  // Operations in flight on its boxes (copies in and out, kernels); the
  // allocation's ready event counts as a write of the whole box.
  Hazards hazards;

  // Position in the device's in-use or unused list (moved between them with
  // splice, which allocates nothing).
  std::list<Instance*>::iterator list_pos;
};

}  // namespace bbmm::detail
