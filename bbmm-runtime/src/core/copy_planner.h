// Plans and issues the copies of array boxes between the host copy and
// instances: turns each box into rectangles (3-D at most, with each side's
// pitches), gathers independent copies into one batch per (source device,
// destination device) pair, and orders each batch after the hazards of what it
// reads and writes (core/hazards.h), recording its completion there.
//
// Copies are pending between add() and flush(). add() flushes first when the
// new copy depends on a pending one (reads what one writes, or writes what one
// reads or writes), so a batch never holds dependent copies.
//
// Thread-safety: none; the runtime core serialises access.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "bbmm/box.h"
#include "core/array.h"
#include "core/backend.h"
#include "core/instance.h"
#include "core/trace.h"

namespace bbmm::detail {

// Where elements of an array are copied from or to: the host copy of `array`
// (inst == nullptr), or one of its instances.
struct Place {
  Array* array = nullptr;
  Instance* inst = nullptr;

  static Place host(Array& a) { return Place{&a, nullptr}; }
  static Place of(Instance& i) { return Place{i.array, &i}; }
  int device() const { return inst == nullptr ? kHost : inst->device; }
  Hazards& hazards() const { return inst == nullptr ? array->host_hazards : inst->hazards; }
  bool operator==(const Place& o) const { return array == o.array && inst == o.inst; }
};

class CopyPlanner {
 public:
  // Issues through `backend`; labels trace slices when `tracer` is not null.
  CopyPlanner(Backend& backend, Tracer* tracer) : backend_(backend), tracer_(tracer) {}
  // Whether the rectangles of a batch that continue one another are merged
  // into one copy (copy_merge.h; RuntimeOptions::merge_copies, default on).
  void set_merge(bool merge) { merge_ = merge; }

  // Adds the copy of `box` (array coordinates, inside both places) from `src`
  // to `dst`. Errors: those of flush() when the copy depends on a pending one.
  absl::Status add(const Place& dst, const Place& src, const Box& box);
  // Issues every pending copy. On error, the batches issued before the failed
  // one stay issued (their hazards recorded) and the rest are dropped.
  absl::Status flush();
  bool empty() const { return pending_.empty(); }

 private:
  struct Pending {
    Place dst, src;
    Box box;
  };
  // Appends the rectangles of `p` to ops_.
  void append_rects(const Pending& p);
  absl::Status issue_group(int src_device, int dst_device);

  Backend& backend_;
  Tracer* tracer_;
  bool merge_ = true;
  std::vector<Pending> pending_;
  std::vector<char> issued_;     // per pending copy, during flush()
  std::vector<CopyOp> ops_;      // scratch
  std::vector<Event> waits_;     // scratch
};

}  // namespace bbmm::detail
