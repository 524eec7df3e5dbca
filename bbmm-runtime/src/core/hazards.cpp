#include "core/hazards.h"

#include <algorithm>

namespace bbmm::detail {

void add_event(std::vector<Event>& out, const Event& e) {
  const EventState* s = e.state();
  if (s == nullptr) return;
  for (Event& o : out) {
    if (o.state() == s || o.state()->implies(*s)) return;
    if (s->implies(*o.state())) {
      o = e;  // later on the same queue: waiting for it is enough
      return;
    }
  }
  out.push_back(e);
}

void Hazards::before(const Box& box, bool write, std::vector<Event>& out) const {
  for (const Entry& en : entries_) {
    if ((write || en.write) && overlaps(en.box, box)) add_event(out, en.done);
  }
}

void Hazards::after(const Box& box, bool write, const Event& done) {
  if (done.state() == nullptr || box.empty()) return;
  if (write) {
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                  [&](const Entry& en) { return is_subset(en.box, box); }),
                   entries_.end());
  } else {
    // A read whose completion implies an earlier read of a box inside its own
    // (one in-order queue: a stencil's kernels re-reading their halo every
    // step) stands for it: a writer of those elements waits for this one.
    const EventState& now = *done.state();
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                  [&](const Entry& en) {
                                    return !en.write && now.implies(*en.done.state()) &&
                                           is_subset(en.box, box);
                                  }),
                   entries_.end());
  }
  entries_.push_back(Entry{box, done, write});
  if (entries_.size() >= prune_at_) prune();
}

void Hazards::all(std::vector<Event>& out) const {
  for (const Entry& en : entries_) add_event(out, en.done);
}

void Hazards::prune() {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [](const Entry& en) { return en.done.done(); }),
                 entries_.end());
  // Entries still in flight stay; look again only once as many more came, so
  // that a long-lived object does not query its events on every operation.
  prune_at_ = std::max<size_t>(32, 2 * entries_.size());
}

}  // namespace bbmm::detail
