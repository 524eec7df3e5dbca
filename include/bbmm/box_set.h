// Sets of integer points represented as lists of pairwise-disjoint boxes.
//
// A `BoxSet` has one rank for all its boxes. Invariant: every stored box is
// nonempty and no two stored boxes share a point; so `volume()` is the number
// of points of the set. A default-constructed set has rank 0 ("no rank yet")
// and takes the rank of the first box added to it.
//
// Sets of up to 16 boxes of rank <= 3 live in inline storage (no heap
// allocation).
//
// Thread-safety: a value type; concurrent reads of one object are safe, any
// write needs exclusive access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bbmm/box.h"

namespace bbmm {

class BoxSet {
 public:
  BoxSet() = default;
  // An empty set of rank `rank` (0 = no rank yet; otherwise 1..8, unchecked).
  explicit BoxSet(int rank) : rank_(rank) {}

  // Algorithm 2 of the design: refines `boxes` (any overlaps allowed, empty
  // boxes ignored) into pairwise-disjoint boxes covering exactly their union.
  // Each box keeps the part not covered by the boxes before it, so the result
  // depends on the order. Fails with kInvalidArgument when the ranks differ
  // or a box has rank 0. An empty list gives a set of rank 0.
  static absl::StatusOr<BoxSet> disjoint(std::span<const Box> boxes);
  static absl::StatusOr<BoxSet> disjoint(std::initializer_list<Box> boxes) {
    return disjoint(std::span<const Box>(boxes.begin(), boxes.size()));
  }

  int rank() const { return rank_; }
  // Number of boxes (not points).
  size_t size() const { return rank_ == 0 ? 0 : coords_.size() / (2 * rank_); }
  // True when the set holds no point.
  bool empty() const { return coords_.empty(); }
  // The i-th box, 0 <= i < size().
  Box operator[](size_t i) const {
    return Box::make_unchecked(rank_, &coords_[i * 2 * rank_], &coords_[i * 2 * rank_ + rank_]);
  }
  std::vector<Box> boxes() const;
  // Number of points. Saturates at INT64_MAX.
  int64_t volume() const;
  bool contains(std::span<const int64_t> point) const;
  // Smallest box holding the whole set; an empty box of the set's rank (or the
  // rank-0 box) when the set is empty.
  Box hull() const;

  // Adds the points of `b` not yet in the set (as up to several boxes).
  // Fails with kInvalidArgument on a rank mismatch.
  absl::Status add(const Box& b);
  // Removes the points of `b` from the set. Fails on a rank mismatch.
  absl::Status remove(const Box& b);
  // Appends `b` as is. Requires: `b` nonempty, of the set's rank (or the set
  // has rank 0), disjoint from every box already in the set.
  void append_unchecked(const Box& b);
  void clear() { coords_.clear(); }
  // Empties the set and gives it rank `rank` (1..8, unchecked), keeping its
  // storage (no allocation when it is reused for sets of the same size).
  void reset(int rank) {
    coords_.clear();
    rank_ = rank;
  }

  // Merges pairs of boxes whose union is a box (equal bounds in all
  // dimensions but one, touching in that one) until no pair merges, merging
  // along the last dimension first. Never increases the number of boxes; the
  // point set is unchanged.
  void coalesce();

  // "{[0,2)x[0,3), [2,4)x[1,3)}".
  std::string to_string() const;
  friend std::ostream& operator<<(std::ostream& os, const BoxSet& s) { return os << s.to_string(); }

 private:
  int rank_ = 0;
  // Box i is lo = coords_[2*rank*i .. +rank), hi = the next `rank` values.
  absl::InlinedVector<int64_t, 16 * 2 * 3> coords_;
};

// Set algebra; each fails with kInvalidArgument when both operands have a
// rank (nonzero) and the ranks differ. The result has the rank of whichever
// operand has one.
absl::StatusOr<BoxSet> set_union(const BoxSet& a, const BoxSet& b);
absl::StatusOr<BoxSet> set_intersection(const BoxSet& a, const BoxSet& b);
absl::StatusOr<BoxSet> set_difference(const BoxSet& a, const BoxSet& b);
// True when `a` and `b` hold the same points (whatever their boxes).
absl::StatusOr<bool> same_points(const BoxSet& a, const BoxSet& b);

}  // namespace bbmm
