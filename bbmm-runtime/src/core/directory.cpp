#include "core/directory.h"

#include "bbmm/box_set.h"

namespace bbmm::detail {

Directory::Directory(const Box& whole) {
  if (!whole.empty()) regions_.push_back({whole, kHostBit});
}

std::vector<Directory::Region> Directory::query(const Box& box) const {
  std::vector<Region> out;
  for (const Region& r : regions_) {
    if (!overlaps(r.box, box)) continue;
    out.push_back({*intersection(r.box, box), r.valid});
  }
  return out;
}

template <typename F>
void Directory::update(const Box& box, F f) {
  if (box.empty()) return;
  bool changed = false;
  const size_t n = regions_.size();
  for (size_t i = 0; i < n; ++i) {
    if (!overlaps(regions_[i].box, box)) continue;
    const HolderMask old = regions_[i].valid;
    const HolderMask now = f(old);
    if (now == old) continue;
    changed = true;
    const Box region = regions_[i].box;
    const Box inside = *intersection(region, box);
    if (inside == region) {
      regions_[i].valid = now;
      continue;
    }
    // Split: the part inside `box` takes the new holders, the rest keeps the
    // old ones.
    regions_[i] = {inside, now};
    BoxSet rest = *subtract(region, box);
    for (size_t k = 0; k < rest.size(); ++k) regions_.push_back({rest[k], old});
  }
  if (changed) merge();
}

void Directory::merge() {
  // Repeatedly merge two regions with equal holders whose union is a box.
  bool merged = true;
  while (merged) {
    merged = false;
    for (size_t i = 0; i < regions_.size() && !merged; ++i) {
      for (size_t j = i + 1; j < regions_.size(); ++j) {
        if (regions_[i].valid != regions_[j].valid) continue;
        const Box h = *convex_union(regions_[i].box, regions_[j].box);
        if (h.volume() != regions_[i].box.volume() + regions_[j].box.volume()) continue;
        regions_[i].box = h;
        regions_[j] = regions_.back();
        regions_.pop_back();
        merged = true;
        break;
      }
    }
  }
}

void Directory::set(const Box& box, HolderMask valid) {
  update(box, [valid](HolderMask) { return valid; });
}

void Directory::add(const Box& box, HolderMask bits) {
  update(box, [bits](HolderMask m) { return m | bits; });
}

void Directory::remove(const Box& box, HolderMask bits) {
  update(box, [bits](HolderMask m) { return m & ~bits; });
}

}  // namespace bbmm::detail
