#include "core/instance_list.h"

#include <algorithm>
#include <atomic>

#include "core/box_hull.h"

namespace bbmm::detail {

namespace {
// A fresh generation for some list of the process.
uint64_t next_generation() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}
}  // namespace

void InstanceList::push_back(Instance* inst) {
  if (items_.size() % kBlock == 0) hulls_.emplace_back();
  items_.push_back(inst);
  spans_.push_back(span_of(inst->box));
  widen_hull(hulls_.back(), inst->box);
  generation_ = next_generation();
}

void InstanceList::erase(Instance* inst) {
  const size_t i = static_cast<size_t>(std::find(items_.begin(), items_.end(), inst) - items_.begin());
  items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(i));
  spans_.erase(spans_.begin() + static_cast<std::ptrdiff_t>(i));
  hulls_.resize((items_.size() + kBlock - 1) / kBlock);
  rebuild_hulls(i / kBlock);
  generation_ = next_generation();
}

void InstanceList::rebuild_hulls(size_t first_block) {
  for (size_t b = first_block; b < hulls_.size(); ++b) {
    Box h;
    const size_t end = std::min(items_.size(), (b + 1) * kBlock);
    for (size_t i = b * kBlock; i < end; ++i) widen_hull(h, items_[i]->box);
    hulls_[b] = h;
  }
}

Instance* InstanceList::find_containing(const Box& box) const {
  if (box.empty()) {
    // Every instance of its rank holds an empty box: the first one.
    for (Instance* inst : items_) {
      if (is_subset(box, inst->box)) return inst;
    }
    return nullptr;
  }
  const int64_t lo = box.lo(0), hi = box.hi(0);
  for (size_t b = 0; b < hulls_.size(); ++b) {
    if (!is_subset(box, hulls_[b])) continue;
    const size_t end = std::min(items_.size(), (b + 1) * kBlock);
    for (size_t i = b * kBlock; i < end; ++i) {
      if (spans_[i].lo <= lo && hi <= spans_[i].hi && is_subset(box, items_[i]->box)) {
        return items_[i];
      }
    }
  }
  return nullptr;
}

}  // namespace bbmm::detail
