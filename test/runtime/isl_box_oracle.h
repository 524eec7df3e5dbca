// isl as the oracle of the box algebra: translates `Box`es, lists of boxes and
// `BoxSet`s into isl sets and answers set questions (equality, emptiness,
// point counts, disjointness, hulls) with isl's exact integer-set operations.
//
// Nothing here calls the code under test except the accessors `rank()`,
// `lo(d)`, `hi(d)`, `size()` and `operator[]`: the oracle must stay
// independent of the operations it checks.
//
// Thread-safety: an `IslBoxOracle` owns one isl_ctx and must be used from one
// thread at a time; `IslSet`s belong to the oracle that made them and must be
// destroyed before it.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "bbmm/box.h"
#include "bbmm/box_set.h"

struct isl_ctx;
struct isl_set;
struct isl_basic_set;

namespace bbmm::test {

// Owns one reference to an isl_set (freed on destruction). Move-only.
class IslSet {
 public:
  IslSet() = default;
  // Takes ownership of `set` (__isl_take).
  explicit IslSet(isl_set* set) : set_(set) {}
  IslSet(IslSet&& other) noexcept : set_(other.release()) {}
  IslSet& operator=(IslSet&& other) noexcept;
  IslSet(const IslSet&) = delete;
  IslSet& operator=(const IslSet&) = delete;
  ~IslSet();

  // The set, still owned by this object (__isl_keep).
  isl_set* get() const { return set_; }
  // A new reference for an isl function that takes its argument (__isl_give).
  isl_set* copy() const;
  // Gives up ownership (__isl_give).
  isl_set* release() {
    isl_set* s = set_;
    set_ = nullptr;
    return s;
  }

 private:
  isl_set* set_ = nullptr;
};

class IslBoxOracle {
 public:
  // Allocates the isl_ctx; isl errors abort the test binary (an oracle that
  // fails quietly would let every check pass).
  IslBoxOracle();
  ~IslBoxOracle();
  IslBoxOracle(const IslBoxOracle&) = delete;
  IslBoxOracle& operator=(const IslBoxOracle&) = delete;

  isl_ctx* ctx() const { return ctx_; }

  // The empty set of `rank` dimensions.
  IslSet empty(int rank) const;
  // The integer points of `box` (rank >= 1): { x : lo[d] <= x[d] <= hi[d] - 1 }.
  IslSet box(const Box& box) const;
  // The union of `boxes` (each of rank `rank`; `rank` is needed for an empty
  // list).
  IslSet union_of(std::span<const Box> boxes, int rank) const;
  // The points of `set`; `rank` is used when `set` has no rank yet (rank 0).
  IslSet set(const BoxSet& set, int rank) const;
  // The one-point set { point }.
  IslSet point(std::span<const int64_t> point) const;

  static IslSet unite(const IslSet& a, const IslSet& b);
  static IslSet intersect(const IslSet& a, const IslSet& b);
  static IslSet subtract(const IslSet& a, const IslSet& b);
  // The smallest box holding `s`, computed from isl's exact per-dimension
  // minimum and maximum; empty when `s` is empty. `s` must be bounded.
  IslSet box_hull(const IslSet& s) const;

  static bool is_equal(const IslSet& a, const IslSet& b);
  static bool is_empty(const IslSet& s);
  static bool is_subset(const IslSet& a, const IslSet& b);
  // The number of integer points of the bounded set `s`, enumerated with
  // isl_set_foreach_point (each point once, however many boxes cover it).
  static int64_t count_points(const IslSet& s);

  // True when no two boxes of `boxes` share a point, decided by isl for every
  // pair; on false, `*why` names the first overlapping pair.
  bool pairwise_disjoint(std::span<const Box> boxes, std::string* why) const;

  // isl's text form, e.g. "{ [i0, i1] : 0 <= i0 <= 3 and 2 <= i1 <= 4 }".
  static std::string to_string(const IslSet& s);

 private:
  // A new basic set of the box's points (__isl_give).
  isl_basic_set* basic_box(const Box& box) const;

  isl_ctx* ctx_;
};

}  // namespace bbmm::test
