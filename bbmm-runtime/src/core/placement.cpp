#include "core/placement.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace bbmm::detail {

void Placement::hold(TileState& tile, Instance* inst) {
  if (std::find(tile.held.begin(), tile.held.end(), inst) != tile.held.end()) return;
  manager_.pin(inst);
  tile.held.push_back(inst);
}

void Placement::unhold_since(TileState& tile, size_t first) {
  for (size_t k = first; k < tile.held.size(); ++k) manager_.unpin(tile.held[k]);
  tile.held.resize(first);
}

namespace {
// `hull` extended, in each dimension where it reaches beyond every instance of
// `cands`, by half its extent in that direction, within `whole`.
Box with_headroom(const Box& hull, const std::vector<Instance*>& cands, const Box& whole) {
  int64_t lo[Box::kMaxRank], hi[Box::kMaxRank];
  for (int d = 0; d < hull.rank(); ++d) {
    int64_t clo = hull.hi(d), chi = hull.lo(d);
    for (const Instance* c : cands) {
      clo = std::min(clo, c->box.lo(d));
      chi = std::max(chi, c->box.hi(d));
    }
    const int64_t extra = (hull.hi(d) - hull.lo(d)) / 2;
    lo[d] = hull.lo(d) < clo ? std::max(whole.lo(d), hull.lo(d) - extra) : hull.lo(d);
    hi[d] = hull.hi(d) > chi ? std::min(whole.hi(d), hull.hi(d) + extra) : hull.hi(d);
  }
  return Box::make_unchecked(hull.rank(), lo, hi);
}
}  // namespace

absl::StatusOr<Instance*> Placement::merge_into_hull(int device, Array& a, const Box& hull,
                                                     const std::vector<Instance*>& cands,
                                                     const TileState* tile) {
  for (Instance* c : cands) manager_.pin(c);  // so that making room spares them
  absl::StatusOr<Instance*> merged = manager_.allocate(device, &a, hull, tile);
  absl::Status s = merged.status();
  for (Instance* c : cands) {
    if (s.ok()) s = planner_.add(Place::of(**merged), Place::of(*c), c->box);
  }
  if (s.ok()) s = planner_.flush();
  for (Instance* c : cands) manager_.unpin(c);
  if (!s.ok()) return s;
  for (Instance* c : cands) {
    // What the tiles used of the instances it replaces, they use of it.
    (*merged)->note_used(c->used);
    // The data moved within the device: its validity bits stay.
    s = manager_.free(c);
    if (!s.ok()) return s;
  }
  return *merged;
}

absl::Status Placement::allocate_fresh(TileState& tile, TileState::ArrayPart& part, BoxSet fresh,
                                       bool pressure) {
  if (fresh.empty()) return absl::OkStatus();
  Array& a = *part.array;
  const int d = tile.device;
  fresh.coalesce();
  const Box hull = fresh.hull();
  bool hull_overlaps = false;
  a.for_each_overlapping(d, hull, [&](Instance*) { hull_overlaps = true; });
  // Fix (fuzz): under memory pressure allocate exactly the boxes; a hull's
  // waste can be what keeps the tile's other arrays from fitting.
  // A hull that wastes little, or (one_instance_per_tile_) one small beside the device.
  auto hull_pays = [&] {
    if (static_cast<double>(hull.volume() - fresh.volume()) <=
        threshold_ * static_cast<double>(hull.volume())) {
      return true;
    }
    int64_t strides[Box::kMaxRank];
    return one_instance_per_tile_ && manager_.footprint(a, hull, strides) <=
                                         manager_.device(d).capacity / kOneInstanceShare;
  };
  bool use_hull = !pressure && fresh.size() > 1 && !hull_overlaps && hull_pays();
  if (use_hull) {
    absl::StatusOr<Instance*> inst = manager_.allocate(d, &a, hull, &tile);
    if (inst.ok()) {
      stats_[d].misses++;
      if (part.only_transient((*inst)->box)) manager_.mark_transient(*inst);
      hold(tile, *inst);
      for (size_t i = 0; i < fresh.size(); ++i) add_piece(part, *inst, fresh[i]);
      return absl::OkStatus();
    }
    // Fix (fuzz): the hull's waste may be exactly what does not fit; the
    // boxes themselves may still fit, so fall back to them.
    if (!absl::IsResourceExhausted(inst.status())) return inst.status();
  }
  for (size_t i = 0; i < fresh.size(); ++i) {
    absl::StatusOr<Instance*> inst = manager_.allocate(d, &a, fresh[i], &tile);
    if (!inst.ok()) return inst.status();
    stats_[d].misses++;
    if (part.only_transient((*inst)->box)) manager_.mark_transient(*inst);
    hold(tile, *inst);
    add_piece(part, *inst, fresh[i]);
  }
  return absl::OkStatus();
}

absl::Status Placement::place(TileState& tile, TileState::ArrayPart& part, bool pressure) {
  Array& a = *part.array;
  const int d = tile.device;
  bbmm_stats& st = stats_[d];

  // 1. Boxes already inside one instance on the device are hits. The rest is
  // also split into the boxes that hold only transient reads and the others
  // (for growing, step 3).
  BoxSet rest(a.rank()), kept_rest(a.rank()), transient_rest(a.rank());
  // Which boxes hold only transient reads (part.only_transient, for all of
  // them at once: hundreds of row boxes would make it quadratic).
  boxes_of(part.all, all_boxes_);
  only_transient_.assign(all_boxes_.size(), !part.transient_boxes.empty());
  if (!part.transient_boxes.empty()) {
    boxes_of(part.kept, kept_boxes_);
    for_each_overlapping_pair(all_boxes_, kept_boxes_, pair_scratch_,
                              [&](size_t i, size_t) { only_transient_[i] = 0; });
  }
  for (size_t i = 0; i < all_boxes_.size(); ++i) {
    const Box& r = all_boxes_[i];
    Instance* home = a.instances[d].find_containing(r);
    if (home == nullptr) {
      rest.append_unchecked(r);
      (only_transient_[i] ? transient_rest : kept_rest).append_unchecked(r);
      continue;
    }
    (home->box == r ? st.hits_exact : st.hits_contained)++;
    if (!only_transient_[i]) manager_.unmark_transient(home);
    hold(tile, home);
    add_piece(part, home, r);
  }
  if (rest.empty()) {
    part.hits_only = true;
    return absl::OkStatus();
  }

  // 4 (below). Pieces: serve what the overlapped instances hold of `boxes`
  // from them and allocate the remainder. Under memory pressure (`replace`),
  // unused overlapped instances are boxed out instead of held whole for a
  // sliver.
  auto serve_with_pieces = [&](const BoxSet& boxes, bool replace) -> absl::Status {
    BoxSet fresh(a.rank());
    for (size_t i = 0; i < boxes.size(); ++i) {
      BoxSet remainder(a.rank());
      remainder.append_unchecked(boxes[i]);
      cands_.clear();
      a.for_each_overlapping(d, boxes[i], [&](Instance* c) { cands_.push_back(c); });
      for (Instance* c : cands_) {
        if (replace && c->usage == 0) {
          absl::Status s = manager_.evict(c);
          if (!s.ok()) return s;
          continue;
        }
        if (!part.only_transient(*intersection(boxes[i], c->box))) manager_.unmark_transient(c);
        hold(tile, c);
        add_piece(part, c, *intersection(boxes[i], c->box));
        st.pieces++;
        (void)remainder.remove(c->box);
      }
      for (size_t k = 0; k < remainder.size(); ++k) fresh.append_unchecked(remainder[k]);
    }
    return allocate_fresh(tile, part, fresh, pressure);
  };

  const size_t held_mark = tile.held.size(), piece_mark = part.pieces.size();

  // 2-3. Grow: replace the instances overlapping `boxes` (grow_cands_) by
  // their hull with them, when none is in use and the hull wastes little.
  // The grown instance, null when growing is not worth it, or the error.
  auto grow = [&](const BoxSet& boxes) -> absl::StatusOr<Instance*> {
    std::vector<Instance*>& cands = grow_cands_;
    cands.clear();
    for (size_t i = 0; i < boxes.size(); ++i) {
      a.for_each_overlapping(d, boxes[i], [&](Instance* inst) {
        if (std::find(cands.begin(), cands.end(), inst) == cands.end()) cands.push_back(inst);
      });
    }
    if (cands.empty() || pressure) return nullptr;
    BoxSet covered = boxes;
    Box hull = boxes.hull();
    for (Instance* c : cands) {
      if (c->usage > 0) return nullptr;
      (void)covered.add(c->box);
      hull = *convex_union(hull, c->box);
    }
    // Whether `box` overlaps no instance of the device but the candidates
    // (instances of a device stay disjoint).
    auto only_cands_in = [&](const Box& box) {
      bool only = true;
      a.for_each_overlapping(d, box, [&](Instance* other) {
        if (std::find(cands.begin(), cands.end(), other) == cands.end()) only = false;
      });
      return only;
    };
    if (!only_cands_in(hull) || static_cast<double>(hull.volume() - covered.volume()) >
                                    threshold_ * static_cast<double>(hull.volume())) {
      return nullptr;
    }
    // An instance that grew before is likely to grow again (a box following a
    // serial loop: ludcmp's [0, i+1) x [0, i) took 9.5 ms a tile at LARGE,
    // allocating and copying the whole hull at every i): grow it half as much
    // again where it grows, within the array, so that the copies add up to a
    // few times the final size. Without the room for it, the exact hull.
    // Growing allocates the hull while the instances it replaces still hold
    // their memory. A hull that fills more than 1/kGrowthShare of the device
    // and is over half as large again as the instances it absorbs (the box
    // adds a block rather than a few faces) crowds out what the next tiles
    // need: on one H100 limited to 1 GiB the compiled heat2d grew its source
    // array tile by tile into 604 MB instances, and every read-in then waited
    // for the write-back of the memory it reused (2026-11-27). Pieces then, when
    // what the instances lack is one box per box asked for (a few pieces per
    // view); a frame of faces around them still grows (pieces would split it).
    auto small = [&](const Box& box) {
      int64_t strides[Box::kMaxRank];
      return manager_.footprint(a, box, strides) <= manager_.device(d).capacity / kGrowthShare;
    };
    int64_t absorbed = 0;
    for (Instance* c : cands) absorbed += c->box.volume();
    if (!small(hull) && 2 * hull.volume() > 3 * absorbed) {
      BoxSet fresh = boxes;
      for (Instance* c : cands) (void)fresh.remove(c->box);
      fresh.coalesce();
      if (fresh.size() <= boxes.size()) return nullptr;
    }
    int growths = 0;
    for (Instance* c : cands) growths = std::max(growths, c->growths);
    const Box roomy = growths > 0 ? with_headroom(hull, cands, a.whole) : hull;
    const bool use_room = !(roomy == hull) && only_cands_in(roomy) && small(roomy);
    absl::StatusOr<Instance*> grown = merge_into_hull(d, a, use_room ? roomy : hull, cands, &tile);
    if (use_room && absl::IsResourceExhausted(grown.status())) {
      grown = merge_into_hull(d, a, hull, cands, &tile);
    }
    if (absl::IsResourceExhausted(grown.status())) return nullptr;  // pieces
    if (!grown.ok()) return grown.status();
    (*grown)->growths = growths + 1;
    hold(tile, *grown);
    st.hits_grown++;
    for (size_t i = 0; i < boxes.size(); ++i) add_piece(part, *grown, boxes[i]);
    return *grown;
  };
  // The whole rest; else, when transient boxes are what makes the hull too
  // wide (a row read once beside a device's block: ludcmp on two devices
  // kept each new row of the block as an instance of its own), the kept
  // boxes alone, the transient ones then served as pieces (of the grown
  // instance too).
  absl::StatusOr<Instance*> grown = grow(rest);
  if (!grown.ok()) return grown.status();
  if (*grown != nullptr) return absl::OkStatus();
  // No instance overlaps the rest: all of it is fresh.
  if (grow_cands_.empty()) return allocate_fresh(tile, part, rest, pressure);
  if (!kept_rest.empty() && !transient_rest.empty()) {
    grown = grow(kept_rest);
    if (!grown.ok()) return grown.status();
    if (*grown != nullptr) {
      absl::Status s = serve_with_pieces(transient_rest, pressure);
      if (!absl::IsResourceExhausted(s)) return s;
      // No room for the transient boxes beside the grown instance: box out
      // the unused instances they overlap (the grown one is held: it stays).
      return serve_with_pieces(transient_rest, true);
    }
  }

  // 4. Pieces for every box of the rest.
  absl::Status s = serve_with_pieces(rest, pressure);
  if (pressure || !absl::IsResourceExhausted(s)) return s;
  unhold_since(tile, held_mark);
  part.pieces.resize(piece_mark);
  return serve_with_pieces(rest, true);
}

absl::Status Placement::evict_unused_overlapping(TileState& tile) {
  for (TileState::ArrayPart& part : tile.live_parts()) {
    for (size_t i = 0; i < part.all.size(); ++i) {
      cands_.clear();
      part.array->for_each_overlapping(tile.device, part.all[i], [&](Instance* inst) {
        if (inst->usage == 0) cands_.push_back(inst);
      });
      for (Instance* inst : cands_) {
        absl::Status s = manager_.evict(inst);
        if (!s.ok()) return s;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Placement::reserve(int device, Array& a, const Box& box) {
  if (box.empty()) return absl::OkStatus();
  if (a.instances[device].find_containing(box) != nullptr) return absl::OkStatus();  // in place
  // The hull of the box and every instance it overlaps, until it overlaps no
  // other (instances of one device stay disjoint).
  std::vector<Instance*> cands;
  Box hull = box;
  for (bool grew = true; grew;) {
    grew = false;
    a.for_each_overlapping(device, hull, [&](Instance* inst) {
      if (std::find(cands.begin(), cands.end(), inst) != cands.end()) return;
      cands.push_back(inst);
      grew = true;
    });
    for (Instance* c : cands) hull = *convex_union(hull, c->box);
  }
  for (Instance* c : cands) {
    if (c->usage > 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "reserve array '", a.name, "' box ", box.to_string(), " on device ", device,
          ": it overlaps instance ", c->box.to_string(), ", held by an open tile"));
    }
  }
  absl::StatusOr<Instance*> inst = cands.empty() ? manager_.allocate(device, &a, hull, nullptr)
                                                 : merge_into_hull(device, a, hull, cands, nullptr);
  if (!inst.ok()) {
    return absl::Status(inst.status().code(),
                        absl::StrCat("reserve array '", a.name, "' box ", box.to_string(),
                                     " on device ", device, ": ", inst.status().message()));
  }
  (*inst)->note_used(box);  // the tiles that asked for it will use it
  stats_[device].reservations++;
  stats_[device].bytes_reserved += (*inst)->bytes;
  return absl::OkStatus();
}

}  // namespace bbmm::detail
