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
#include "core/instance.h"

namespace bbmm {

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
  // Instances of this array on each device; on one device they are disjoint.
  std::vector<std::vector<detail::Instance*>> instances;
  // Hazards on the host copy: copies reading it (H2D) and writing it (D2H).
  std::vector<Event> host_reads, host_writes;
  // Checking mode: boxes written by each device since the last
  // synchronisation point.
  std::vector<std::pair<int, Box>> epoch_writes;

  int rank() const { return whole.rank(); }
};

}  // namespace bbmm
