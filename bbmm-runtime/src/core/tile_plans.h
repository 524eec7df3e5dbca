// Plans of recurring tiles. A stencil's tiles ask for the same boxes of the
// same arrays on the same device step after step; while the instances of
// those arrays on that device stay the same (InstanceList::generation), placing
// such a tile gives the same pieces, views, read-in targets and kernel uses
// every time. acquire then takes them from here instead of grouping the
// requirements, searching the instance lists and sweeping the boxes again
// (about a fifth of the calling thread's instructions per tile, issue 10); it
// still holds the instances, counts the hits and reads in what is not valid.
//
// Only tiles whose every box was a hit are remembered (their placement depends
// on the instance lists alone: growing and pieces also depend on which
// instances other tiles hold), and only from their second occurrence (the
// first, usually a miss, is noted), so that programs whose tiles never recur
// (LU's shrinking boxes) pay a hash lookup, not a copy. kSlots plans per
// device, looked up by the requirements' hash among all of them (a
// direct-mapped table keyed by a hash of array addresses made two recurring
// tiles of one run evict each other's plan in some runs and not in others),
// the least recently used replaced.
//
// Thread-safety: none; the runtime core serialises access.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/array.h"
#include "core/coherency.h"
#include "core/tile_state.h"

namespace bbmm::detail {

class TilePlans {
 public:
  static constexpr size_t kSlots = 16;
  // Hashes of the last tiles seen, per device.
  static constexpr size_t kSeen = 32;

  struct Plan {
    bool valid = false;  // false: the slot is empty
    uint64_t hash = 0;
    std::vector<TileState::Requirement> requirements;
    std::vector<TileState::ArrayPart> parts;  // parts[0, nparts)
    size_t nparts = 0;
    // Per part: its array's instance list generation on the device.
    std::vector<uint64_t> generations;
    // Per piece, parts in order: the piece's box holds only transient reads.
    std::vector<char> only_transient;
    std::vector<Coherency::Target> targets;  // what acquire makes valid
    std::vector<TileState::Use> uses;
    uint64_t last_use = 0;  // the lookup that last found it (LRU)
  };

  explicit TilePlans(int devices) : slots_(static_cast<size_t>(devices)), seen_(slots_.size()) {}

  // Mixes one requirement into `hash` (TileState::requirements_hash).
  static uint64_t mix(uint64_t hash, const TileState::Requirement& r);

  // The plan of a tile with `tile`'s device and requirements whose instance
  // lists are unchanged, or null.
  const Plan* find(const TileState& tile);
  // Remembers `tile`'s placement (acquired, every part hits_only) with its
  // read-in `targets`, if its requirements were seen before.
  void remember(const TileState& tile, std::span<const Coherency::Target> targets);
  // Forgets every plan using `array` (unregistered).
  void forget(const Array* array);

 private:
  struct Seen {
    std::array<uint64_t, kSeen> hashes{};
    size_t next = 0;  // the entry replaced next (a ring)
  };

  std::vector<std::array<Plan, kSlots>> slots_;  // per device
  std::vector<Seen> seen_;                       // per device
  uint64_t clock_ = 0;                           // lookups so far
};

}  // namespace bbmm::detail
