// Placement: where on its device each box a tile asked for lives. For each
// array of the tile, in order of preference: a box inside an instance is a
// hit; instances overlapping the rest are grown to their hull with it when
// none is in use and the hull wastes little; else the rest is served as
// pieces of the overlapping instances plus fresh instances. Under memory
// pressure, exact boxes only, and unused instances overlapping the tile are
// boxed out rather than held whole. Also reservations: an instance allocated
// ahead of the tiles at its final extent.
//
// Thread-safety: none; the runtime core serialises access.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "bbmm/bbmm.h"
#include "bbmm/box.h"
#include "core/array.h"
#include "core/box_pairs.h"
#include "core/copy_planner.h"
#include "core/instance_manager.h"
#include "core/tile_state.h"

namespace bbmm::detail {

class Placement {
 public:
  // `growth_threshold`: grow to a hull when its waste is at most this share.
  // `one_instance_per_tile`: a tile's fresh boxes of an array take one hull instance
  // whenever it is small beside the device (kOneInstanceShare), whatever it wastes
  // (CUDA: a kernel over several pieces of one array looks its elements up and loses the
  // compiler's alias analysis; PolyBench's correlation ran 3 times slower on one H100,
  // 1.123 s against 0.387 s, 2026-11-27, when a tile's row and column bands of corr took
  // two instances).
  Placement(InstanceManager& manager, CopyPlanner& planner, std::vector<bbmm_stats>& stats,
            double growth_threshold, bool one_instance_per_tile = false)
      : manager_(manager),
        planner_(planner),
        stats_(stats),
        threshold_(growth_threshold),
        one_instance_per_tile_(one_instance_per_tile) {}

  // With one_instance_per_tile: the largest share of a device's memory such a hull may
  // take.
  static constexpr size_t kOneInstanceShare = 64;
  // Instances grow to a hull that takes more than this share of the device's memory
  // only when it is at most half as large again as what it absorbs, and never with
  // headroom.
  static constexpr size_t kGrowthShare = 8;

  // Places `part`'s boxes (part.all) on `tile`'s device, filling part.pieces
  // and holding the instances used (tile.held). `pressure`: the device is too
  // full for hulls and partly overlapped instances held whole.
  absl::Status place(TileState& tile, TileState::ArrayPart& part, bool pressure);
  // Boxes out the unused instances of the tile's device overlapping its boxes
  // (acquire's last resort before reporting out-of-memory).
  absl::Status evict_unused_overlapping(TileState& tile);
  // Allocates on `device` an instance of `a` covering `box` (see
  // Runtime::reserve): absorbs the unused instances it overlaps (their data
  // moves into it), fails when one is held by a tile.
  absl::Status reserve(int device, Array& a, const Box& box);

  // Holds `inst` for `tile` (once).
  void hold(TileState& tile, Instance* inst);
  // Drops the tile's hold on held[first..].
  void unhold_since(TileState& tile, size_t first);
  // Gives `tile` box `box` of `inst` as a piece of `part` (noting it as used:
  // Instance::used).
  static void add_piece(TileState::ArrayPart& part, Instance* inst, const Box& box) {
    inst->note_used(box);
    part.pieces.push_back({inst, box});
  }

 private:
  // Allocates the boxes of `fresh` (disjoint from every instance), as one
  // hull instance when that wastes little, else one instance per box.
  absl::Status allocate_fresh(TileState& tile, TileState::ArrayPart& part, BoxSet fresh,
                              bool pressure);
  // Replaces the unused instances `cands` of `a` on `device` by one instance
  // of `hull` holding their data; the new instance, or the error.
  absl::StatusOr<Instance*> merge_into_hull(int device, Array& a, const Box& hull,
                                            const std::vector<Instance*>& cands,
                                            const TileState* tile);

  InstanceManager& manager_;
  CopyPlanner& planner_;
  std::vector<bbmm_stats>& stats_;
  double threshold_;
  bool one_instance_per_tile_;
  std::vector<Instance*> cands_;       // scratch of the pieces
  std::vector<Instance*> grow_cands_;  // scratch of growing: the instances it would merge
  // Scratch of place(): the part's boxes, its kept boxes, and whether each of
  // the former holds only transient reads.
  std::vector<Box> all_boxes_, kept_boxes_;
  std::vector<char> only_transient_;
  BoxPairScratch pair_scratch_;
};

}  // namespace bbmm::detail
