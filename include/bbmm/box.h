// Rectangular boxes of integer points: the unit of allocation, transfer and
// coherency in BBMM.
//
// A `Box` of rank r (1..8) is the half-open set [lo_0, hi_0) x ... x
// [lo_{r-1}, hi_{r-1}) of Z^r. A box with lo_d == hi_d in some dimension is
// empty; lo_d > hi_d is invalid and rejected by `Box::create`.
//
// Thread-safety: `Box` is an immutable-by-convention value type; distinct
// objects may be used from different threads freely, and a shared object may
// be read concurrently.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace bbmm {

class BoxSet;

class Box {
 public:
  static constexpr int kMaxRank = 8;

  // The default box has rank 0 and is only a placeholder to be assigned to;
  // every operation treats it as empty.
  constexpr Box() = default;

  // Makes the box [lo, hi). Fails with kInvalidArgument when the ranks of
  // `lo` and `hi` differ, the rank is not in 1..8, or lo[d] > hi[d].
  static absl::StatusOr<Box> create(std::span<const int64_t> lo, std::span<const int64_t> hi);
  static absl::StatusOr<Box> create(std::initializer_list<int64_t> lo,
                                    std::initializer_list<int64_t> hi) {
    return create(std::span<const int64_t>(lo.begin(), lo.size()),
                  std::span<const int64_t>(hi.begin(), hi.size()));
  }

  // Makes [0, extents[0]) x ... Fails like `create`.
  static absl::StatusOr<Box> from_extents(std::span<const int64_t> extents);

  // Makes [lo, hi) without validation. Requires 1 <= rank <= 8 and
  // lo[d] <= hi[d]; for callers (the runtime's inner loops, generated code)
  // that established this already. Inline: the runtime's tile path makes
  // boxes this way many times per tile.
  static Box make_unchecked(int rank, const int64_t* lo, const int64_t* hi) {
    Box b;
    b.rank_ = rank;
    for (int d = 0; d < rank; ++d) {
      b.lo_[d] = lo[d];
      b.hi_[d] = hi[d];
    }
    return b;
  }

  int rank() const { return rank_; }
  int64_t lo(int d) const { return lo_[d]; }
  int64_t hi(int d) const { return hi_[d]; }
  // hi(d) - lo(d); requires the difference to fit in int64_t (volume()
  // saturates instead).
  int64_t extent(int d) const { return hi_[d] - lo_[d]; }
  const int64_t* lo_data() const { return lo_; }
  const int64_t* hi_data() const { return hi_; }

  // True when the box holds no point. Inline (as overlaps, is_subset,
  // intersection and ==): the runtime's tile path calls them many times per tile.
  bool empty() const {
    if (rank_ == 0) return true;
    for (int d = 0; d < rank_; ++d) {
      if (hi_[d] <= lo_[d]) return true;
    }
    return false;
  }
  // Number of points; 0 when empty. Saturates at INT64_MAX on overflow.
  int64_t volume() const;
  // True when `point` (of the box's rank) lies in the box; false for a point
  // of another rank.
  bool contains(std::span<const int64_t> point) const;
  bool contains(std::initializer_list<int64_t> point) const {
    return contains(std::span<const int64_t>(point.begin(), point.size()));
  }

  // Set equality: all empty boxes of one rank are equal; boxes of different
  // ranks are never equal.
  friend bool operator==(const Box& a, const Box& b) {
    if (a.rank_ != b.rank_) return false;
    const bool ea = a.empty(), eb = b.empty();
    if (ea || eb) return ea && eb;
    for (int d = 0; d < a.rank_; ++d) {
      if (a.lo_[d] != b.lo_[d] || a.hi_[d] != b.hi_[d]) return false;
    }
    return true;
  }

  // "[0,4)x[2,5)"; an empty box prints its bounds too.
  std::string to_string() const;
  friend std::ostream& operator<<(std::ostream& os, const Box& b) { return os << b.to_string(); }

 private:
  int rank_ = 0;
  int64_t lo_[kMaxRank] = {};
  int64_t hi_[kMaxRank] = {};
};

// Binary operations. Each fails with kInvalidArgument naming both boxes when
// their ranks differ.

namespace detail {
// The kInvalidArgument status of binary operation `op` on boxes of different ranks.
absl::Status box_rank_mismatch(const char* op, const Box& a, const Box& b);
}  // namespace detail

// The points in both `a` and `b` (possibly empty).
inline absl::StatusOr<Box> intersection(const Box& a, const Box& b) {
  if (a.rank() != b.rank()) return detail::box_rank_mismatch("intersection", a, b);
  int64_t lo[Box::kMaxRank], hi[Box::kMaxRank];
  for (int d = 0; d < a.rank(); ++d) {
    lo[d] = std::max(a.lo(d), b.lo(d));
    hi[d] = std::max(lo[d], std::min(a.hi(d), b.hi(d)));
  }
  return Box::make_unchecked(a.rank(), lo, hi);
}
// The points of `a` not in `b`, as at most 2*rank pairwise-disjoint nonempty
// boxes (slabs peeled off dimension by dimension).
absl::StatusOr<BoxSet> subtract(const Box& a, const Box& b);
// The smallest box holding both (the hull); an empty operand is ignored.
absl::StatusOr<Box> convex_union(const Box& a, const Box& b);
// Both boxes as a list, the overlap counted once: {a} plus `b - a`.
absl::StatusOr<BoxSet> simple_union(const Box& a, const Box& b);

// True when every point of `a` is in `b` (an empty `a` is a subset of any box
// of its rank). False for different ranks.
inline bool is_subset(const Box& a, const Box& b) {
  if (a.rank() != b.rank() || a.rank() == 0) return false;
  if (a.empty()) return true;
  for (int d = 0; d < a.rank(); ++d) {
    if (a.lo(d) < b.lo(d) || a.hi(d) > b.hi(d)) return false;
  }
  return true;
}
// True when `a` and `b` share a point. False for different ranks.
inline bool overlaps(const Box& a, const Box& b) {
  if (a.rank() != b.rank() || a.rank() == 0) return false;
  for (int d = 0; d < a.rank(); ++d) {
    if (std::max(a.lo(d), b.lo(d)) >= std::min(a.hi(d), b.hi(d))) return false;
  }
  return true;
}

// The pieces of subtract(a, b), in its order, passed to `f(const Box&)` one at a time
// without building a set (the runtime's directory splits regions this way on
// every tile). Requires equal ranks; nothing when `a` is empty; `a` itself
// when the boxes do not overlap.
template <typename F>
void for_each_difference_piece(const Box& a, const Box& b, F&& f) {
  if (a.empty()) return;
  if (!overlaps(a, b)) {
    f(a);
    return;
  }
  // Peel off the slabs of `a` below and above `b` in each dimension in turn,
  // shrinking the remainder to the overlap in that dimension.
  const int r = a.rank();
  int64_t lo[Box::kMaxRank], hi[Box::kMaxRank];
  for (int d = 0; d < r; ++d) {
    lo[d] = a.lo(d);
    hi[d] = a.hi(d);
  }
  for (int d = 0; d < r; ++d) {
    if (lo[d] < b.lo(d)) {
      const int64_t saved = hi[d];
      hi[d] = b.lo(d);
      f(Box::make_unchecked(r, lo, hi));
      hi[d] = saved;
      lo[d] = b.lo(d);
    }
    if (hi[d] > b.hi(d)) {
      const int64_t saved = lo[d];
      lo[d] = b.hi(d);
      f(Box::make_unchecked(r, lo, hi));
      lo[d] = saved;
      hi[d] = b.hi(d);
    }
  }
}

}  // namespace bbmm
