// One box of one array resident on one device.
//
// Thread-safety: none; owned and mutated by the runtime core under its lock.
#pragma once

#include <cstdint>
#include <list>
#include <vector>

#include "bbmm/box.h"
#include "core/backend.h"

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
  uint64_t last_use = 0;  // manager clock at the last acquire/release
  // Hazards: the last operation writing the instance, and operations reading
  // it since then (copies out, kernels).
  Event write_done;
  std::vector<Event> reads;

  // Position in the device's in-use or unused list.
  std::list<Instance*>::iterator list_pos;
};

}  // namespace bbmm::detail
