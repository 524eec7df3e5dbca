// Coherency between the host and the devices: decides, from each array's
// directory (core/directory.h), which copies make a box valid where it is
// needed, plans them (core/copy_planner.h) and updates the directory once
// they are issued.
//
// - read_in: a tile's boxes become valid on its device, from a peer holding
//   them (peer access) or else from the host (written back there first when
//   only devices that cannot reach this one hold them).
// - flow_out: a box a tile wrote is pushed to every other device holding an
//   instance of it, so its readers there find it in place (and to the host for
//   readers that go through it).
// - write_back: the host copy of a box becomes valid.
// - save_sole_copies: before an instance is boxed out, what only it holds goes
//   to the host (nothing is ever lost).
//
// The directory only ever claims validity for copies that were issued: the
// updates of a batch are applied after the batch was issued; if issuing fails,
// they are dropped (the data stays valid where it was).
//
// Thread-safety: none; the runtime core serialises access.
#pragma once

#include <span>
#include <vector>

#include "absl/status/status.h"
#include "bbmm/bbmm.h"
#include "bbmm/box.h"
#include "core/array.h"
#include "core/backend.h"
#include "core/copy_planner.h"
#include "core/directory.h"

namespace bbmm::detail {

class Coherency {
 public:
  // `stats` holds one entry per device (write-back counters).
  Coherency(Backend& backend, CopyPlanner& planner, std::vector<bbmm_stats>& stats)
      : backend_(backend), planner_(planner), stats_(stats) {}

  int device_count() const { return static_cast<int>(stats_.size()); }

  struct Target {
    Instance* inst;
    Box box;  // inside inst->box
  };
  // Makes each target's box valid on its instance's device. Copies from one
  // source device to one destination go out as one batch.
  absl::Status read_in(std::span<const Target> targets);
  // Pushes `box` of `a`, valid on `device` (the tile there wrote it), to every
  // other device holding an instance overlapping it; when some device cannot
  // reach `device` by peer access, or with `to_host` (readers on other ranks,
  // whose transfers are staged through the host copy), also to the host where
  // no other device holds it: issued now, right behind the tile's kernel, not
  // behind whatever the device runs when a reader asks for it.
  absl::Status flow_out(Array& a, int device, const Box& box, bool to_host = false);
  // Makes the host copy of `box` of `a` valid.
  absl::Status write_back(Array& a, const Box& box);
  // Writes to the host what only `inst` holds (before it is boxed out).
  absl::Status save_sole_copies(Instance& inst);
  // `device` wrote `box` of `a`: its copy becomes the only valid one.
  void commit_write(Array& a, int device, const Box& box) {
    a.directory.set(box, device_bit(device));
  }

 private:
  struct Update {
    Array* array;
    Box box;
    HolderMask bits;  // added to the box's holders
  };
  // Issues the planned copies; on success applies every pending update.
  absl::Status flush_and_apply();
  // Whether a write into `box` of `device`'s instances of `a` is still in flight.
  bool being_written(Array& a, int device, const Box& box) const;

  Backend& backend_;
  CopyPlanner& planner_;
  std::vector<bbmm_stats>& stats_;
  std::vector<Update> updates_;
  std::vector<Directory::Region> regions_;  // scratch
};

}  // namespace bbmm::detail
