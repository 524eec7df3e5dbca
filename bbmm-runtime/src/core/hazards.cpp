#include "core/hazards.h"

#include <algorithm>
#include <functional>

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
  // Entries of one batch of copies share its event: adding it again would
  // change nothing (`out` then holds it, or a later event of its queue).
  const EventState* last = nullptr;
  for (const Entry& en : entries_) {
    if ((write || en.write) && en.done.state() != last && overlaps(en.box, box)) {
      add_event(out, en.done);
      last = en.done.state();
    }
  }
}

void Hazards::after(const Box& box, bool write, const Event& done) {
  if (done.state() == nullptr || box.empty()) return;
  const void* q = done.state()->queue();
  const uint64_t seq = done.state()->sequence();
  if (write) {
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                  [&](const Entry& en) { return is_subset(en.box, box); }),
                   entries_.end());
  } else if (q != nullptr) {
    // A read whose completion implies an earlier read of a box inside its own
    // (one in-order queue: a stencil's kernels re-reading their halo every
    // step) stands for it: a writer of those elements waits for this one.
    // (EventState::implies, on the cached queue and sequence.)
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                  [&](const Entry& en) {
                                    return !en.write && en.queue == q && seq >= en.sequence &&
                                           is_subset(en.box, box);
                                  }),
                   entries_.end());
  }
  entries_.emplace_back(box, done, write, q, seq);
  if (entries_.size() >= prune_at_ || ++since_prune_ >= kPruneEvery) prune();
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
  // Which entries completed: asking each event is a driver call per entry on a
  // GPU (cudaEventQuery), and the lists are longest when the calling thread
  // runs far ahead of the devices. Operations of one in-order queue complete
  // in order, so per queue the completed entries are those up to the latest
  // completed one, found by bisection over the queue's sequence numbers: a
  // handful of queries per queue. Entries of no known queue are asked alone.
  // The entries of known queues, by queue, then by sequence (std::less: a total
  // order on pointers, which < between objects is not).
  std::vector<const Entry*>& order = scratch_;
  order.clear();
  for (const Entry& en : entries_) {
    if (en.queue != nullptr) order.push_back(&en);
  }
  std::sort(order.begin(), order.end(), [](const Entry* x, const Entry* y) {
    if (x->queue != y->queue) return std::less<const void*>()(x->queue, y->queue);
    return x->sequence < y->sequence;
  });
  done_upto_.clear();
  for (size_t first = 0; first < order.size();) {
    const void* q = order[first]->queue;
    size_t last = first;
    while (last < order.size() && order[last]->queue == q) ++last;
    // Invariant: order[first, lo) complete, order[hi, last) not.
    size_t lo = first, hi = last;
    if (order[last - 1]->done.done()) {
      lo = last;
    } else {
      hi = last - 1;
      while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (order[mid]->done.done()) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
    }
    if (lo > first) done_upto_.emplace_back(q, order[lo - 1]->sequence);
    first = last;
  }
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const Entry& en) {
                                  if (en.queue == nullptr) return en.done.done();
                                  for (const auto& [q, upto] : done_upto_) {
                                    if (q == en.queue) return en.sequence <= upto;
                                  }
                                  return false;
                                }),
                 entries_.end());
  if (entries_.size() > kMaxInFlight) merge();
  // Entries still in flight stay; look again only once as many more came, so
  // that a long-lived object does not query its events on every operation.
  prune_at_ = std::max<size_t>(32, 2 * entries_.size());
  since_prune_ = 0;
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
    auto same = std::find_if(merged.begin(), merged.end(), [&](const Entry& m) {
      return m.write == en.write && m.queue != nullptr && m.queue == en.queue;
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
    if (en.sequence >= same->sequence) {  // en.done implies same->done (one queue)
      same->done = en.done;
      same->sequence = en.sequence;
    }
  }
  entries_ = std::move(merged);
}

}  // namespace bbmm::detail
