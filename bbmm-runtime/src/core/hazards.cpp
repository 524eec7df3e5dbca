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

bool Hazards::writes_in_flight(const Box& box) const {
  for (const Entry& en : entries_) {
    if (en.write && overlaps(en.box, box) && !en.done.done()) return true;
  }
  return false;
}

void Hazards::all(std::vector<Event>& out) const {
  for (const Entry& en : entries_) add_event(out, en.done);
}

void Hazards::prune() {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [](const Entry& en) { return en.done.done(); }),
                 entries_.end());
  if (entries_.size() > kMaxInFlight) merge();
  // Entries still in flight stay; look again only once as many more came, so
  // that a long-lived object does not query its events on every operation.
  prune_at_ = std::max<size_t>(32, 2 * entries_.size());
}

void Hazards::merge() {
  // Entries of one queue complete in order: the latest stands for all of them.
  // Replacing the entries of each (queue, write) by one entry with the hull of
  // their boxes and the latest event keeps every wait (an operation that
  // overlapped one of the boxes overlaps the hull, and the latest event
  // completes after each), at the price of waits that were not needed (the
  // hull's extra elements, later operations of the queue). Keeps the lists
  // short when the calling thread runs far ahead of the devices (LU: a
  // shrinking box per step, never a superset of an earlier one).
  std::vector<Entry> merged;
  for (const Entry& en : entries_) {
    const EventState* s = en.done.state();
    auto same = std::find_if(merged.begin(), merged.end(), [&](const Entry& m) {
      const EventState* t = m.done.state();
      return m.write == en.write && t->queue() != nullptr && t->queue() == s->queue();
    });
    if (same == merged.end()) {
      merged.push_back(en);
      continue;
    }
    absl::StatusOr<Box> h = convex_union(same->box, en.box);
    if (!h.ok()) {  // (same rank: does not happen) keep it apart
      merged.push_back(en);
      continue;
    }
    same->box = *std::move(h);
    if (s->implies(*same->done.state())) same->done = en.done;
  }
  entries_ = std::move(merged);
}

}  // namespace bbmm::detail
