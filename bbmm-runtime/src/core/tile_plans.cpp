#include "core/tile_plans.h"

#include <algorithm>

namespace bbmm::detail {

namespace {
inline uint64_t mix64(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

bool same_requirements(std::span<const TileState::Requirement> a,
                       std::span<const TileState::Requirement> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].array != b[i].array || a[i].access != b[i].access || !(a[i].box == b[i].box)) {
      return false;
    }
  }
  return true;
}
}  // namespace

uint64_t TilePlans::mix(uint64_t hash, const TileState::Requirement& r) {
  hash = mix64(hash, reinterpret_cast<uintptr_t>(r.array));
  hash = mix64(hash, static_cast<uint64_t>(r.access));
  for (int d = 0; d < r.box.rank(); ++d) {
    hash = mix64(hash, static_cast<uint64_t>(r.box.lo(d)));
    hash = mix64(hash, static_cast<uint64_t>(r.box.hi(d)));
  }
  return hash;
}

const TilePlans::Plan* TilePlans::find(const TileState& tile) {
  if (tile.device < 0 || static_cast<size_t>(tile.device) >= slots_.size()) return nullptr;
  Plan* found = nullptr;
  for (Plan& p : slots_[static_cast<size_t>(tile.device)]) {
    if (p.valid && p.hash == tile.requirements_hash) {
      found = &p;
      break;
    }
  }
  if (found == nullptr) return nullptr;
  Plan& p = *found;
  if (!same_requirements(p.requirements, tile.requirements)) return nullptr;
  for (size_t k = 0; k < p.nparts; ++k) {
    if (p.parts[k].array->instances[static_cast<size_t>(tile.device)].generation() !=
        p.generations[k]) {
      return nullptr;
    }
  }
  p.last_use = ++clock_;
  return &p;
}

void TilePlans::remember(const TileState& tile, std::span<const Coherency::Target> targets) {
  if (tile.device < 0 || static_cast<size_t>(tile.device) >= slots_.size()) return;
  const size_t dev = static_cast<size_t>(tile.device);
  if (tile.nparts == 0) return;
  // From the second occurrence only (the first, a miss as a rule, counts too).
  Seen& seen = seen_[dev];
  if (std::find(seen.hashes.begin(), seen.hashes.end(), tile.requirements_hash) ==
      seen.hashes.end()) {
    seen.hashes[seen.next] = tile.requirements_hash;
    seen.next = (seen.next + 1) % kSeen;
    return;
  }
  for (const TileState::ArrayPart& part : tile.live_parts()) {
    if (!part.hits_only) return;
  }
  // The slot of a plan with the same hash (gone stale), else an empty one, else the
  // least recently used.
  Plan* slot = nullptr;
  for (Plan& p : slots_[dev]) {
    if (p.valid && p.hash == tile.requirements_hash) {
      slot = &p;
      break;
    }
    if (slot == nullptr || (slot->valid && (!p.valid || p.last_use < slot->last_use))) {
      slot = &p;
    }
  }
  Plan& p = *slot;
  p.last_use = ++clock_;
  p.valid = true;
  p.hash = tile.requirements_hash;
  p.requirements.assign(tile.requirements.begin(), tile.requirements.end());
  if (p.parts.size() < tile.nparts) p.parts.resize(tile.nparts);
  p.nparts = tile.nparts;
  p.generations.clear();
  p.only_transient.clear();
  for (size_t k = 0; k < tile.nparts; ++k) {
    const TileState::ArrayPart& part = tile.parts[k];
    p.parts[k] = part;
    p.generations.push_back(part.array->instances[dev].generation());
    for (const auto& piece : part.pieces) p.only_transient.push_back(part.only_transient(piece.second));
  }
  p.targets.assign(targets.begin(), targets.end());
  p.uses.assign(tile.uses.begin(), tile.uses.end());
}

void TilePlans::forget(const Array* array) {
  for (auto& device : slots_) {
    for (Plan& p : device) {
      for (size_t k = 0; k < p.nparts && p.valid; ++k) {
        if (p.parts[k].array == array) p.valid = false;
      }
    }
  }
}

}  // namespace bbmm::detail
