#include "core/tile_plans.h"

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

const TilePlans::Plan* TilePlans::find(const TileState& tile) const {
  if (tile.device < 0 || static_cast<size_t>(tile.device) >= slots_.size()) return nullptr;
  const Plan& p = slots_[static_cast<size_t>(tile.device)][slot_of(tile.requirements_hash)];
  if (p.device != tile.device || p.hash != tile.requirements_hash ||
      !same_requirements(p.requirements, tile.requirements)) {
    return nullptr;
  }
  for (size_t k = 0; k < p.nparts; ++k) {
    if (p.parts[k].array->instances[static_cast<size_t>(tile.device)].generation() !=
        p.generations[k]) {
      return nullptr;
    }
  }
  return &p;
}

void TilePlans::remember(const TileState& tile, std::span<const Coherency::Target> targets) {
  if (tile.device < 0 || static_cast<size_t>(tile.device) >= slots_.size()) return;
  const size_t dev = static_cast<size_t>(tile.device);
  for (const TileState::ArrayPart& part : tile.live_parts()) {
    if (!part.hits_only) return;
  }
  // From the second occurrence only.
  uint64_t& seen = seen_[dev][static_cast<size_t>(tile.requirements_hash % kSeen)];
  if (seen != tile.requirements_hash) {
    seen = tile.requirements_hash;
    return;
  }
  Plan& p = slots_[dev][slot_of(tile.requirements_hash)];
  p.device = tile.device;
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
      for (size_t k = 0; k < p.nparts && p.device >= 0; ++k) {
        if (p.parts[k].array == array) p.device = -1;
      }
    }
  }
}

}  // namespace bbmm::detail
