// The operations in flight on one memory object (an instance, or a host
// array), per box: a new operation waits only for those touching the same
// elements (a write waits for earlier reads and writes of its box, a read for
// earlier writes). One instance often holds several tiles (a device's
// allocation hull, or instances grown to the hull); per-box hazards let one
// tile's kernel run while another tile's flow-out copy of other rows of the
// same instance is still in flight.
//
// Thread-safety: none; the runtime core serialises access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "bbmm/box.h"
#include "core/backend.h"

namespace bbmm::detail {

class Hazards {
 public:
  // Appends to `out` the events an operation accessing `box` must wait for:
  // the writes overlapping it, and when `write`, the reads overlapping it too.
  void before(const Box& box, bool write, std::vector<Event>& out) const;
  // Records that the operation completing with `done` reads (or, when
  // `write`, writes) `box`. A write makes the entries inside its box
  // redundant (it waited for them, and whatever touches them later overlaps
  // it), so they are dropped.
  void after(const Box& box, bool write, const Event& done);
  // Appends every event in flight (the object is about to be freed).
  void all(std::vector<Event>& out) const;
  // Whether a write overlapping `box` is still in flight.
  bool writes_in_flight(const Box& box) const;
  size_t size() const { return entries_.size(); }
  // Past this many entries in flight (at a prune), they are merged: one per
  // in-order queue and mode, the hull of their boxes, the latest event.
  static constexpr size_t kMaxInFlight = 48;
  // Pruned at least every this many operations recorded, so that completed
  // entries leave a list that stays short too (a stencil's recurring tiles:
  // their reads stand for one another, and without this the instance's first
  // read-in stayed, waited for by every write of its box).
  static constexpr uint32_t kPruneEvery = 64;

 private:
  struct Entry {
    Box box;
    Event done;
    bool write;
    // done's queue and place in it, read once (the scans compare them for
    // every entry; asking the event costs two virtual calls and a cache miss).
    const void* queue;
    uint64_t sequence;
  };
  // Drops the entries whose operation has completed; past kMaxInFlight entries
  // still in flight, merges them (merge()).
  void prune();
  // One entry per (queue, read/write): the hull of the boxes, the latest event.
  void merge();

  std::vector<Entry> entries_;
  size_t prune_at_ = 32;  // prune when this many entries are kept
  uint32_t since_prune_ = 0;  // operations recorded since the last prune
  // prune()'s scratch: the entries of known queues in (queue, sequence) order,
  // and for each queue with a completed entry the highest sequence known complete.
  std::vector<const Entry*> scratch_;
  std::vector<std::pair<const void*, uint64_t>> done_upto_;
};

// Appends `e` to `out` unless an event with the same state, or one that
// implies it, is already there (or `e` is a default, complete event); an
// event there that `e` implies is replaced by `e`.
void add_event(std::vector<Event>& out, const Event& e);

}  // namespace bbmm::detail
