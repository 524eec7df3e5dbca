// A registered host array (the object behind the public `bbmm::Array*`).
//
// Thread-safety: none; owned and mutated by the runtime core under its lock.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bbmm/box.h"
#include "core/backend.h"
#include "core/directory.h"
#include "core/hazards.h"
#include "core/instance.h"
#include "core/instance_list.h"

namespace bbmm {

namespace detail {
class TileState;
}

class Array {
 public:
  Array(std::string name, int id, void* host, size_t elem_size, const Box& whole,
        const int64_t* strides, bool read_only, int devices)
      : name(std::move(name)),
        id(id),
        host(host),
        elem_size(elem_size),
        whole(whole),
        read_only(read_only),
        directory(whole),
        rank_directory(whole),
        instances(devices) {
    for (int d = 0; d < whole.rank(); ++d) host_strides[d] = strides[d];
  }

  const std::string name;
  const int id;
  void* const host;
  const size_t elem_size;
  const Box whole;  // [0, extents)
  int64_t host_strides[Box::kMaxRank] = {};
  const bool read_only;

  detail::Directory directory;
  // Over several ranks (RuntimeCore::set_transport): which ranks hold the
  // current values of each region (bit r: rank r), kept identical on every
  // rank (runtime_ranks.cpp).
  detail::Directory rank_directory;
  // Instances of this array on each device; on one device they are disjoint.
  std::vector<detail::InstanceList> instances;
  // Copies in flight reading (H2D) or writing (D2H) the host copy, per box.
  detail::Hazards host_hazards;

  // Checking mode. Boxes written by each device since the last
  // synchronisation point, and boxes the acquired, unreleased tiles will
  // write (so that two open tiles of different devices writing the same
  // elements conflict at the second acquire, not only after a release).
  struct Write {
    int device;
    Box box;
    const detail::TileState* tile;  // the open tile (open_writes only)
  };
  std::vector<Write> epoch_writes;
  std::vector<Write> open_writes;

  int rank() const { return whole.rank(); }

  // Calls `f(Instance*)` for each instance on `device` overlapping `box`;
  // `f` must not add or remove instances of that device.
  template <typename F>
  void for_each_overlapping(int device, const Box& box, F f) const {
    instances[device].for_each_overlapping(box, f);
  }
};

}  // namespace bbmm
