// One tile between begin and release, and the pool that recycles them.
//
// A TileState is never freed while its runtime lives: release returns it to
// the pool with a new generation, so a stale handle (a second release, a
// require after release) finds a generation that is not its own and gets an
// error instead of touching freed memory. Recycled states keep the capacity of
// their vectors, so a tile on the hit path allocates nothing.
//
// Thread-safety: none; the runtime core serialises access (the generation is
// atomic because handles read it before taking the core's lock).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "bbmm/box.h"
#include "bbmm/box_set.h"
#include "bbmm/runtime.h"
#include "bbmm/view.h"
#include "core/backend.h"
#include "core/instance.h"

namespace bbmm {
class Array;
}

namespace bbmm::detail {

class RuntimeCore;

// 64-byte aligned, so that the C API can keep the low 6 bits of a handle for
// the generation.
class alignas(64) TileState {
 public:
  struct Requirement {
    Array* array;
    Box box;
    Access access;
  };
  struct ArrayPart {
    Array* array = nullptr;
    BoxSet read;   // points the tile reads (need valid data on the device)
    BoxSet write;  // points the tile writes
    BoxSet all;    // everything it asked for
    BoxSet transient_boxes;  // of its BBMM_READ_TRANSIENT requirements
    BoxSet kept;   // of the others, when there are transient ones

    // True when `box` holds only transient reads of the tile: an instance
    // allocated for it goes at the next phase boundary.
    bool only_transient(const Box& box) const {
      if (transient_boxes.empty()) return false;
      for (size_t i = 0; i < kept.size(); ++i) {
        if (overlaps(kept[i], box)) return false;
      }
      return true;
    }
    std::vector<std::pair<Instance*, Box>> pieces;  // instance, box served by it
    std::vector<bbmm_piece> view;
    // Placement served every box of `all` from an instance that held it (a hit).
    bool hits_only = false;

    // Takes what a planned tile needs of its plan's part `p` after acquire:
    // the writes (committed, checked, written back), the boxes (the trace's
    // label), the pieces and the view. The read, kept and transient sets only
    // served placement, which a plan skips: they are left empty (of p's rank).
    void assign_planned(const ArrayPart& p) {
      array = p.array;
      write = p.write;
      all = p.all;
      read.reset(p.read.rank());
      kept.reset(p.kept.rank());
      transient_boxes.reset(p.transient_boxes.rank());
      pieces.assign(p.pieces.begin(), p.pieces.end());
      view.assign(p.view.begin(), p.view.end());
      hits_only = p.hits_only;
    }
    // Empties the part for `array` of rank `rank`, keeping capacity.
    void reset(Array* a, int rank) {
      array = a;
      read.reset(rank);
      write.reset(rank);
      all.reset(rank);
      kept.reset(rank);
      transient_boxes.reset(rank);
      pieces.clear();
      view.clear();
      hits_only = false;
    }
  };
  // What the kernel reads (write = false) or writes of one instance it uses.
  struct Use {
    Instance* inst;
    Box box;
    bool write;
  };
  enum class Phase { kFree, kOpen, kAcquired };

  explicit TileState(RuntimeCore* core) : core(core) {}

  // Makes the state an open tile on `device` (from the pool); a shadow of a
  // tile of rank `shadow` (>= 0) when another rank runs it.
  void open(int dev, int shadow = -1) {
    device = dev;
    shadow_rank = shadow;
    phase = Phase::kOpen;
    requirements.clear();
    requirements_hash = 0;
    nparts = 0;
    uses.clear();
    held.clear();
    writes_committed = false;
    launch_failed = false;
    kernel_done = Event();
  }
  // The live parts.
  std::span<ArrayPart> live_parts() { return {parts.data(), nparts}; }
  std::span<const ArrayPart> live_parts() const { return {parts.data(), nparts}; }
  // The part of `a`, or a new one.
  ArrayPart& part_of(Array* a, int rank) {
    for (size_t i = 0; i < nparts; ++i) {
      if (parts[i].array == a) return parts[i];
    }
    if (nparts == parts.size()) parts.emplace_back();
    parts[nparts].reset(a, rank);
    return parts[nparts++];
  }

  RuntimeCore* const core;
  int device = 0;
  // >= 0: the tile runs on that rank; this one only keeps the ranks' books
  // (runtime_ranks.cpp): no instances, no kernel.
  int shadow_rank = -1;
  // Bumped at release: handles carry the generation they were given.
  std::atomic<uint32_t> generation{0};
  Phase phase = Phase::kFree;
  std::vector<Requirement> requirements;
  // A hash of `requirements` (TilePlans's key), updated as they come.
  uint64_t requirements_hash = 0;
  std::vector<ArrayPart> parts;  // parts[0, nparts) are live; the rest keep capacity
  size_t nparts = 0;
  std::vector<Instance*> held;  // instances whose usage this tile raised
  // Found at acquire: what the kernel reads, then writes, of each instance of
  // its pieces (the launch waits for what is in flight there, and records itself).
  std::vector<Use> uses;
  bool writes_committed = false;
  bool launch_failed = false;  // the last launch failed: its writes never happened
  Event kernel_done;
};

// Recycles TileStates first in, first out, reusing one only when more than
// `quarantine` are free, so that a stale handle keeps finding a released
// state (and an error) for a while.
class TilePool {
 public:
  TilePool(RuntimeCore* core, size_t quarantine) : core_(core), quarantine_(quarantine) {}

  TileState* take() {
    if (free_count_ > quarantine_) {
      TileState* t = ring_[head_];
      head_ = (head_ + 1) % ring_.size();
      --free_count_;
      return t;
    }
    all_.push_back(std::make_unique<TileState>(core_));
    // The ring must hold every state at once when all are free.
    if (ring_.size() < all_.size()) grow();
    return all_.back().get();
  }
  void give_back(TileState* t) {
    ring_[(head_ + free_count_) % ring_.size()] = t;
    ++free_count_;
  }
  size_t size() const { return all_.size(); }
  // Calls `f(TileState&)` for every state, free or not.
  template <typename F>
  void for_each(F f) {
    for (auto& t : all_) f(*t);
  }

 private:
  void grow() {
    std::vector<TileState*> ring(std::max<size_t>(16, 2 * ring_.size()));
    for (size_t k = 0; k < free_count_; ++k) ring[k] = ring_[(head_ + k) % ring_.size()];
    ring_.swap(ring);
    head_ = 0;
  }

  RuntimeCore* core_;
  size_t quarantine_;
  std::vector<std::unique_ptr<TileState>> all_;
  std::vector<TileState*> ring_;  // circular queue of free states
  size_t head_ = 0, free_count_ = 0;
};

}  // namespace bbmm::detail
