// Property tests of the box algebra with isl as the oracle.
//
// Every case draws random boxes (ranks 1..4, coordinates in [0, 6) so that
// overlaps and shared faces are frequent, about one box in eight empty) and
// random lists of 1..10 boxes, runs one operation and checks the result with
// isl: the point set (isl_set_is_equal), pairwise disjointness of the result
// boxes (isl_basic_set_is_disjoint), nonempty stored boxes, the documented
// bounds on the number of boxes, and point counts (isl_set_foreach_point).
//
// Case i of property P is drawn from its own generator seeded by (seed, P, i),
// so a failure is replayed alone, whatever the case count:
//   BBMM_PROPERTY_SEED=<seed> BBMM_PROPERTY_ONLY_CASE=<i> box_isl_property_test
//       --gtest_filter=BoxIslProperty.<P>
// BBMM_PROPERTY_CASES=<n> runs n cases in total instead of the default
// (kDefaultTotalCases), shared out in proportion to the default budgets.
#include <gtest/gtest.h>
#include <isl/set.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "bbmm/box.h"
#include "bbmm/box_set.h"
#include "isl_box_oracle.h"

namespace bbmm::test {
namespace {

using Rng = std::mt19937_64;

constexpr uint64_t kDefaultSeed = 20261122;
// Coordinates are drawn from [0, kCoordEnd); points for `contains` from a
// range one wider on each side, so that points outside every box occur too.
constexpr int64_t kCoordEnd = 6;
constexpr int kMaxTestRank = 4;
constexpr int kMaxListSize = 10;

// Default number of cases per property, sized so that the whole binary runs in
// about 40 s: a Box case costs isl 30-130 us, a BoxSet case 0.3-1.1 ms (set
// equality of unions of boxes dominates), counting points about 4 us a point.
struct Budget {
  std::string_view name;
  int64_t cases;
};
constexpr Budget kBudgets[] = {
    {"Intersection", 24000},
    {"Subtract", 24000},
    {"ConvexUnion", 12000},
    {"SimpleUnion", 16000},
    {"SubsetAndOverlap", 16000},
    {"EqualityAndEmptiness", 24000},
    {"ContainsPoint", 20000},
    {"BoxVolume", 12000},
    {"Disjoint", 10000},
    {"Add", 6000},
    {"Remove", 6000},
    {"Coalesce", 6000},
    {"SetUnion", 4000},
    {"SetIntersection", 5000},
    {"SetDifference", 4000},
    {"SamePoints", 5000},
    {"BoxSetVolume", 3000},
    {"BoxSetHull", 5000},
    {"BoxSetContainsPoint", 8000},
    {"HighRanks", 1500},
};

constexpr int64_t default_total() {
  int64_t total = 0;
  for (const Budget& b : kBudgets) total += b.cases;
  return total;
}
constexpr int64_t kDefaultTotalCases = default_total();
static_assert(kDefaultTotalCases >= 200000, "the default run must check >= 200,000 cases");

// Reads an unsigned decimal environment variable; nullopt when unset. A
// malformed value fails the test rather than silently running the default.
std::optional<uint64_t> env_u64(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 0);
  if (errno != 0 || *end != '\0') {
    ADD_FAILURE() << name << "='" << text << "' is not a number";
    return std::nullopt;
  }
  return v;
}

int64_t default_cases(std::string_view property) {
  for (const Budget& b : kBudgets) {
    if (b.name == property) return b.cases;
  }
  ADD_FAILURE() << "property " << property << " has no budget in kBudgets";
  return 0;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

// ---------------------------------------------------------------------------
// Formatting and arithmetic of the test's own, so that messages and checks do
// not depend on the code under test.

std::string fmt(const Box& b) {
  if (b.rank() == 0) return "[] (rank 0)";
  std::ostringstream os;
  for (int d = 0; d < b.rank(); ++d) {
    os << (d > 0 ? "x" : "") << "[" << b.lo(d) << "," << b.hi(d) << ")";
  }
  return os.str();
}

std::string fmt(std::span<const Box> boxes) {
  std::string s = "{";
  for (size_t i = 0; i < boxes.size(); ++i) s += (i > 0 ? ", " : "") + fmt(boxes[i]);
  return s + "}";
}

std::vector<Box> boxes_of(const BoxSet& s) {
  std::vector<Box> v;
  for (size_t i = 0; i < s.size(); ++i) v.push_back(s[i]);
  return v;
}

std::string fmt(const BoxSet& s) {
  return fmt(boxes_of(s)) + " (rank " + std::to_string(s.rank()) + ")";
}

bool has_no_point(const Box& b) {
  if (b.rank() == 0) return true;
  for (int d = 0; d < b.rank(); ++d) {
    if (b.hi(d) <= b.lo(d)) return true;
  }
  return false;
}

int64_t points_of(const Box& b) {
  if (has_no_point(b)) return 0;
  int64_t n = 1;
  for (int d = 0; d < b.rank(); ++d) n *= b.hi(d) - b.lo(d);
  return n;
}

bool same_bounds(const Box& a, const Box& b) {
  if (a.rank() != b.rank()) return false;
  for (int d = 0; d < a.rank(); ++d) {
    if (a.lo(d) != b.lo(d) || a.hi(d) != b.hi(d)) return false;
  }
  return true;
}

// The bounding box of two nonempty boxes, for the coalesce check.
int64_t hull_points(const Box& a, const Box& b) {
  int64_t n = 1;
  for (int d = 0; d < a.rank(); ++d) {
    n *= std::max(a.hi(d), b.hi(d)) - std::min(a.lo(d), b.lo(d));
  }
  return n;
}

// ---------------------------------------------------------------------------
// Random inputs.

int64_t uniform(Rng& rng, int64_t lo, int64_t hi_inclusive) {
  return std::uniform_int_distribution<int64_t>(lo, hi_inclusive)(rng);
}

int random_rank(Rng& rng) { return static_cast<int>(uniform(rng, 1, kMaxTestRank)); }

// About one box in eight is empty (lo == hi in one dimension, at any
// position); the others have lo < hi in [0, coord_end].
Box random_box(Rng& rng, int rank, int64_t coord_end = kCoordEnd) {
  const int empty_dim = uniform(rng, 0, 7) == 0 ? static_cast<int>(uniform(rng, 0, rank - 1)) : -1;
  int64_t lo[Box::kMaxRank], hi[Box::kMaxRank];
  for (int d = 0; d < rank; ++d) {
    if (d == empty_dim) {
      lo[d] = hi[d] = uniform(rng, 0, coord_end);
    } else {
      lo[d] = uniform(rng, 0, coord_end - 1);
      hi[d] = uniform(rng, lo[d] + 1, coord_end);
    }
  }
  return *Box::create(std::span<const int64_t>(lo, rank), std::span<const int64_t>(hi, rank));
}

std::vector<Box> random_list(Rng& rng, int rank) {
  std::vector<Box> boxes(static_cast<size_t>(uniform(rng, 1, kMaxListSize)));
  for (Box& b : boxes) b = random_box(rng, rank);
  return boxes;
}

std::vector<int64_t> random_point(Rng& rng, int rank) {
  std::vector<int64_t> p(rank);
  for (int64_t& x : p) x = uniform(rng, -1, kCoordEnd);
  return p;
}

// A set of rank `rank` built several ways, so that operands are not only
// fresh outputs of `disjoint`: sometimes rank 0 ("no rank yet") or empty,
// sometimes coalesced or with a box removed.
BoxSet random_set(Rng& rng, int rank) {
  const int64_t kind = uniform(rng, 0, 15);
  if (kind == 0) return BoxSet();
  if (kind == 1) return BoxSet(rank);
  BoxSet s = *BoxSet::disjoint(random_list(rng, rank));
  if (kind <= 5) s.coalesce();
  if (kind >= 12) s.remove(random_box(rng, rank)).IgnoreError();
  return s;
}

// ---------------------------------------------------------------------------
// Inputs of the properties. Each says how to print itself for a failure.

struct BoxPair {
  Box a, b;
  std::string describe() const { return "a = " + fmt(a) + ", b = " + fmt(b); }
};

struct BoxAndPoint {
  Box a;
  std::vector<int64_t> p;
  std::string describe() const {
    std::string s = "a = " + fmt(a) + ", point = (";
    for (size_t d = 0; d < p.size(); ++d) s += (d > 0 ? "," : "") + std::to_string(p[d]);
    return s + ")";
  }
};

struct BoxList {
  int rank = 0;
  std::vector<Box> boxes;
  std::string describe() const {
    return "rank " + std::to_string(rank) + ", boxes = " + fmt(boxes);
  }
};

struct SetAndBox {
  BoxSet s;
  Box b;
  std::string describe() const { return "set = " + fmt(s) + ", box = " + fmt(b); }
};

struct SetPair {
  int rank = 0;  // of the oracle's sets when both operands have rank 0
  BoxSet a, b;
  std::string describe() const { return "a = " + fmt(a) + ", b = " + fmt(b); }
};

struct SetAndPoint {
  BoxSet s;
  std::vector<int64_t> p;
  std::string describe() const {
    std::string str = "set = " + fmt(s) + ", point = (";
    for (size_t d = 0; d < p.size(); ++d) str += (d > 0 ? "," : "") + std::to_string(p[d]);
    return str + ")";
  }
};

BoxPair random_pair(Rng& rng) {
  const int rank = random_rank(rng);
  return {random_box(rng, rank), random_box(rng, rank)};
}

// An empty box: lo == hi in one random dimension, anything in the others.
Box random_empty_box(Rng& rng, int rank) {
  int64_t lo[Box::kMaxRank], hi[Box::kMaxRank];
  for (int d = 0; d < rank; ++d) {
    lo[d] = uniform(rng, 0, kCoordEnd);
    hi[d] = uniform(rng, lo[d], kCoordEnd);
  }
  const int e = static_cast<int>(uniform(rng, 0, rank - 1));
  hi[e] = lo[e];
  return Box::make_unchecked(rank, lo, hi);
}

// Pairs for equality: equal boxes and near misses must be frequent, and
// empty boxes with different bounds, which are equal as sets.
BoxPair random_equality_pair(Rng& rng) {
  const int rank = random_rank(rng);
  const Box a = random_box(rng, rank);
  switch (uniform(rng, 0, 3)) {
    case 0:
      return {a, a};
    case 1: {  // one bound moved by one, when that keeps lo <= hi
      int64_t lo[Box::kMaxRank], hi[Box::kMaxRank];
      for (int d = 0; d < rank; ++d) {
        lo[d] = a.lo(d);
        hi[d] = a.hi(d);
      }
      const int d = static_cast<int>(uniform(rng, 0, rank - 1));
      int64_t& bound = uniform(rng, 0, 1) == 0 ? lo[d] : hi[d];
      bound += uniform(rng, 0, 1) == 0 ? -1 : 1;
      if (lo[d] > hi[d]) return {a, a};
      return {a, Box::make_unchecked(rank, lo, hi)};
    }
    case 2:  // two empty boxes with unrelated bounds, equal as sets
      return {random_empty_box(rng, rank), random_empty_box(rng, rank)};
    default:
      return {a, random_box(rng, rank)};
  }
}

BoxList random_box_list(Rng& rng) {
  const int rank = random_rank(rng);
  return {rank, random_list(rng, rank)};
}

SetAndBox random_set_and_box(Rng& rng) {
  const int rank = random_rank(rng);
  BoxSet s = random_set(rng, rank);
  return {std::move(s), random_box(rng, rank)};
}

SetPair random_set_pair(Rng& rng) {
  const int rank = random_rank(rng);
  BoxSet a = random_set(rng, rank);
  BoxSet b = random_set(rng, rank);
  return {rank, std::move(a), std::move(b)};
}

// Pairs for same_points: about half hold the same points in other boxes
// (another order of the same list, or coalesced).
SetPair random_same_points_pair(Rng& rng) {
  const int rank = random_rank(rng);
  std::vector<Box> list = random_list(rng, rank);
  BoxSet a = *BoxSet::disjoint(list);
  switch (uniform(rng, 0, 3)) {
    case 0: {
      std::reverse(list.begin(), list.end());
      return {rank, std::move(a), *BoxSet::disjoint(list)};
    }
    case 1: {
      BoxSet b = a;
      b.coalesce();
      return {rank, std::move(a), std::move(b)};
    }
    case 2: {  // usually one point short
      std::vector<Box> shorter = list;
      shorter.back() = random_box(rng, rank);
      return {rank, std::move(a), *BoxSet::disjoint(shorter)};
    }
    default:
      return {rank, std::move(a), random_set(rng, rank)};
  }
}

// ---------------------------------------------------------------------------
// Checks. Each returns "" when the result is right, else what is wrong; they
// take the result as an argument so that the harness tests below can feed
// them wrong results and see them fail.

// The boxes `got` must be of rank `rank`, nonempty, pairwise disjoint, at most
// `max_boxes` of them, and hold exactly the points of `want`.
std::string check_boxes(std::span<const Box> got, int rank, const IslSet& want,
                        const IslBoxOracle& isl, size_t max_boxes = SIZE_MAX) {
  if (got.size() > max_boxes) {
    return "result " + fmt(got) + " has " + std::to_string(got.size()) + " boxes, more than " +
           std::to_string(max_boxes);
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].rank() != rank) {
      return "result box " + std::to_string(i) + " " + fmt(got[i]) + " has rank " +
             std::to_string(got[i].rank()) + ", want " + std::to_string(rank);
    }
    if (has_no_point(got[i])) {
      return "result " + fmt(got) + " stores the empty box " + std::to_string(i);
    }
  }
  std::string why;
  if (!isl.pairwise_disjoint(got, &why)) return "result " + fmt(got) + ": " + why;
  const IslSet got_set = isl.union_of(got, rank);
  if (!IslBoxOracle::is_equal(got_set, want)) {
    return "result " + fmt(got) + " is " + IslBoxOracle::to_string(got_set) + "\n  want " +
           IslBoxOracle::to_string(want);
  }
  return "";
}

// A BoxSet result: `check_boxes` plus its rank and the bookkeeping that
// follows from disjointness (volume = sum of the box volumes).
std::string check_set(const BoxSet& got, int rank, const IslSet& want, const IslBoxOracle& isl,
                      size_t max_boxes = SIZE_MAX) {
  if (got.rank() != rank) {
    return "result " + fmt(got) + " has rank " + std::to_string(got.rank()) + ", want " +
           std::to_string(rank);
  }
  const std::vector<Box> boxes = boxes_of(got);
  std::string err = check_boxes(boxes, rank, want, isl, max_boxes);
  if (!err.empty()) return err;
  int64_t points = 0;
  for (const Box& b : boxes) points += points_of(b);
  if (got.volume() != points) {
    return "volume() of " + fmt(got) + " is " + std::to_string(got.volume()) + ", want " +
           std::to_string(points);
  }
  if (got.empty() != boxes.empty()) return "empty() of " + fmt(got) + " is wrong";
  return "";
}

template <typename T>
std::string status_error(const absl::StatusOr<T>& got) {
  return "unexpected error: " + got.status().ToString();
}

std::string check_intersection(const BoxPair& in, const absl::StatusOr<Box>& got,
                               const IslBoxOracle& isl) {
  if (!got.ok()) return status_error(got);
  if (got->rank() != in.a.rank()) return "result " + fmt(*got) + " has the wrong rank";
  const IslSet want = IslBoxOracle::intersect(isl.box(in.a), isl.box(in.b));
  if (!IslBoxOracle::is_equal(isl.box(*got), want)) {
    return "result " + fmt(*got) + ", want " + IslBoxOracle::to_string(want);
  }
  return "";
}

std::string check_subtract(const BoxPair& in, const absl::StatusOr<BoxSet>& got,
                           const IslBoxOracle& isl) {
  if (!got.ok()) return status_error(got);
  const int rank = in.a.rank();
  return check_set(*got, rank, IslBoxOracle::subtract(isl.box(in.a), isl.box(in.b)), isl, 2 * rank);
}

std::string check_convex_union(const BoxPair& in, const absl::StatusOr<Box>& got,
                               const IslBoxOracle& isl) {
  if (!got.ok()) return status_error(got);
  if (got->rank() != in.a.rank()) return "result " + fmt(*got) + " has the wrong rank";
  const IslSet want = isl.box_hull(IslBoxOracle::unite(isl.box(in.a), isl.box(in.b)));
  if (!IslBoxOracle::is_equal(isl.box(*got), want)) {
    return "result " + fmt(*got) + ", want " + IslBoxOracle::to_string(want);
  }
  return "";
}

std::string check_simple_union(const BoxPair& in, const absl::StatusOr<BoxSet>& got,
                               const IslBoxOracle& isl) {
  if (!got.ok()) return status_error(got);
  const int rank = in.a.rank();
  std::string err =
      check_set(*got, rank, IslBoxOracle::unite(isl.box(in.a), isl.box(in.b)), isl, 1 + 2 * rank);
  if (!err.empty()) return err;
  // Documented shape: `a` itself first, then the pieces of `b - a`.
  if (!has_no_point(in.a) && !same_bounds((*got)[0], in.a)) {
    return "result " + fmt(*got) + " does not start with a";
  }
  return "";
}

std::string check_subset_and_overlap(const BoxPair& in, bool got_subset, bool got_overlaps,
                                     const IslBoxOracle& isl) {
  const IslSet a = isl.box(in.a), b = isl.box(in.b);
  const bool want_subset = IslBoxOracle::is_subset(a, b);
  if (got_subset != want_subset) {
    return "is_subset(a, b) is " + std::to_string(got_subset) + ", isl says " +
           std::to_string(want_subset);
  }
  const bool want_overlaps = !IslBoxOracle::is_empty(IslBoxOracle::intersect(a, b));
  if (got_overlaps != want_overlaps) {
    return "overlaps(a, b) is " + std::to_string(got_overlaps) + ", isl says " +
           std::to_string(want_overlaps);
  }
  return "";
}

std::string check_equality_and_emptiness(const BoxPair& in, bool got_equal, bool got_equal_ba,
                                         bool got_a_empty, const IslBoxOracle& isl) {
  const IslSet a = isl.box(in.a), b = isl.box(in.b);
  const bool want_equal = IslBoxOracle::is_equal(a, b);
  if (got_equal != want_equal || got_equal_ba != want_equal) {
    return "a == b is " + std::to_string(got_equal) + ", b == a is " +
           std::to_string(got_equal_ba) + ", isl says " + std::to_string(want_equal);
  }
  if (got_a_empty != IslBoxOracle::is_empty(a)) {
    return "a.empty() is " + std::to_string(got_a_empty) + ", isl disagrees";
  }
  return "";
}

std::string check_contains(const IslSet& set, std::span<const int64_t> p, bool got,
                           const IslBoxOracle& isl) {
  const bool want = IslBoxOracle::is_subset(isl.point(p), set);
  if (got != want) {
    return "contains(point) is " + std::to_string(got) + ", isl says " + std::to_string(want);
  }
  return "";
}

std::string check_volume(const IslSet& set, int64_t got) {
  const int64_t want = IslBoxOracle::count_points(set);
  if (got != want) {
    return "volume() is " + std::to_string(got) + ", isl counts " + std::to_string(want);
  }
  return "";
}

std::string check_disjoint(const BoxList& in, const absl::StatusOr<BoxSet>& got,
                           const IslBoxOracle& isl) {
  if (!got.ok()) return status_error(got);
  std::string err = check_set(*got, in.rank, isl.union_of(in.boxes, in.rank), isl);
  if (!err.empty()) return err;
  // Each box keeps the part not covered by the boxes before it, so the first
  // nonempty box is kept whole.
  for (const Box& b : in.boxes) {
    if (has_no_point(b)) continue;
    for (size_t i = 0; i < got->size(); ++i) {
      if (same_bounds((*got)[i], b)) return "";
    }
    return "result " + fmt(*got) + " does not keep the first nonempty box " + fmt(b) + " whole";
  }
  return "";
}

// `set.add(b)` adds only points not yet in the set, so the boxes already
// there stay as they were.
std::string check_add(const SetAndBox& in, const absl::Status& status, const BoxSet& got,
                      const IslBoxOracle& isl) {
  if (!status.ok()) return "unexpected error: " + status.ToString();
  const int rank = in.b.rank();
  std::string err =
      check_set(got, rank, IslBoxOracle::unite(isl.set(in.s, rank), isl.box(in.b)), isl);
  if (!err.empty()) return err;
  for (size_t i = 0; i < in.s.size(); ++i) {
    bool kept = false;
    for (size_t j = 0; j < got.size() && !kept; ++j) kept = same_bounds(in.s[i], got[j]);
    if (!kept) return "add() changed the box " + fmt(in.s[i]) + " already in the set";
  }
  return "";
}

std::string check_remove(const SetAndBox& in, const absl::Status& status, const BoxSet& got,
                         const IslBoxOracle& isl) {
  if (!status.ok()) return "unexpected error: " + status.ToString();
  // A set without rank stays without rank: there was nothing to remove from.
  const int rank = in.s.rank();
  if (rank == 0) {
    return got.rank() == 0 && got.size() == 0 ? "" : "remove() from a rank-0 set gave " + fmt(got);
  }
  return check_set(got, rank, IslBoxOracle::subtract(isl.set(in.s, rank), isl.box(in.b)), isl);
}

std::string check_coalesce(const BoxSet& before, const BoxSet& got, const IslBoxOracle& isl) {
  const int rank = before.rank();
  std::string err = check_set(got, rank, isl.set(before, rank), isl, before.size());
  if (!err.empty()) return err;
  // Coalescing stops only when no two boxes can merge: two disjoint boxes
  // merge when their union is a box, i.e. fills their bounding box.
  for (size_t i = 0; i < got.size(); ++i) {
    for (size_t j = i + 1; j < got.size(); ++j) {
      if (points_of(got[i]) + points_of(got[j]) == hull_points(got[i], got[j])) {
        return "result " + fmt(got) + " still has boxes " + std::to_string(i) + " and " +
               std::to_string(j) + " whose union is a box";
      }
    }
  }
  return "";
}

// Set operations take the rank of whichever operand has one.
int result_rank(const SetPair& in) { return in.a.rank() != 0 ? in.a.rank() : in.b.rank(); }

std::string check_set_op(const SetPair& in, const absl::StatusOr<BoxSet>& got, const IslSet& want,
                         const IslBoxOracle& isl) {
  if (!got.ok()) return status_error(got);
  if (result_rank(in) == 0) {
    return got->rank() == 0 && got->size() == 0 ? "" : "result " + fmt(*got) + ", want {} (rank 0)";
  }
  return check_set(*got, result_rank(in), want, isl);
}

// ---------------------------------------------------------------------------
// The runner.

template <typename Inputs>
using Generator = Inputs (*)(Rng&);
template <typename Inputs>
using Check = std::string (*)(const Inputs&, const IslBoxOracle&);

template <typename Inputs>
void run_property(std::string_view name, Generator<Inputs> generate, Check<Inputs> check) {
  const uint64_t seed = env_u64("BBMM_PROPERTY_SEED").value_or(kDefaultSeed);
  int64_t cases = default_cases(name);
  if (std::optional<uint64_t> total = env_u64("BBMM_PROPERTY_CASES")) {
    // Round up, so that any positive total runs every property.
    cases = static_cast<int64_t>(
        (static_cast<unsigned __int128>(cases) * *total + kDefaultTotalCases - 1) /
        kDefaultTotalCases);
  }
  int64_t first = 0;
  if (std::optional<uint64_t> only = env_u64("BBMM_PROPERTY_ONLY_CASE")) {
    first = static_cast<int64_t>(*only);
    cases = first + 1;
  }
  ASSERT_GT(cases, first) << "no case to run for " << name;

  const IslBoxOracle isl;
  const uint64_t stream = splitmix64(seed ^ fnv1a(name));
  for (int64_t i = first; i < cases; ++i) {
    Rng rng(splitmix64(stream + static_cast<uint64_t>(i)));
    const Inputs in = generate(rng);
    const std::string err = check(in, isl);
    if (!err.empty()) {
      ADD_FAILURE() << "property " << name << " fails at case " << i << " of seed " << seed
                    << "\n  inputs: " << in.describe() << "\n  " << err
                    << "\n  replay: BBMM_PROPERTY_SEED=" << seed << " BBMM_PROPERTY_ONLY_CASE=" << i
                    << " box_isl_property_test --gtest_filter=BoxIslProperty." << name;
      return;  // one clear report, not thousands
    }
  }
  std::printf("[ property ] %.*s: %lld cases passed (seed %llu)\n", static_cast<int>(name.size()),
              name.data(), static_cast<long long>(cases - first),
              static_cast<unsigned long long>(seed));
  ::testing::Test::RecordProperty("cases", std::to_string(cases - first));
}

// ---------------------------------------------------------------------------
// Box properties.

TEST(BoxIslProperty, Intersection) {
  run_property<BoxPair>("Intersection", random_pair,
                        [](const BoxPair& in, const IslBoxOracle& isl) {
                          return check_intersection(in, intersection(in.a, in.b), isl);
                        });
}

TEST(BoxIslProperty, Subtract) {
  run_property<BoxPair>("Subtract", random_pair, [](const BoxPair& in, const IslBoxOracle& isl) {
    return check_subtract(in, subtract(in.a, in.b), isl);
  });
}

TEST(BoxIslProperty, ConvexUnion) {
  run_property<BoxPair>("ConvexUnion", random_pair, [](const BoxPair& in, const IslBoxOracle& isl) {
    return check_convex_union(in, convex_union(in.a, in.b), isl);
  });
}

TEST(BoxIslProperty, SimpleUnion) {
  run_property<BoxPair>("SimpleUnion", random_pair, [](const BoxPair& in, const IslBoxOracle& isl) {
    return check_simple_union(in, simple_union(in.a, in.b), isl);
  });
}

TEST(BoxIslProperty, SubsetAndOverlap) {
  run_property<BoxPair>(
      "SubsetAndOverlap", random_pair, [](const BoxPair& in, const IslBoxOracle& isl) {
        return check_subset_and_overlap(in, is_subset(in.a, in.b), overlaps(in.a, in.b), isl);
      });
}

TEST(BoxIslProperty, EqualityAndEmptiness) {
  run_property<BoxPair>(
      "EqualityAndEmptiness", random_equality_pair, [](const BoxPair& in, const IslBoxOracle& isl) {
        return check_equality_and_emptiness(in, in.a == in.b, in.b == in.a, in.a.empty(), isl);
      });
}

TEST(BoxIslProperty, ContainsPoint) {
  run_property<BoxAndPoint>(
      "ContainsPoint",
      [](Rng& rng) {
        const int rank = random_rank(rng);
        Box a = random_box(rng, rank);
        return BoxAndPoint{a, random_point(rng, rank)};
      },
      [](const BoxAndPoint& in, const IslBoxOracle& isl) {
        return check_contains(isl.box(in.a), in.p, in.a.contains(in.p), isl);
      });
}

TEST(BoxIslProperty, BoxVolume) {
  run_property<BoxPair>("BoxVolume", random_pair, [](const BoxPair& in, const IslBoxOracle& isl) {
    return check_volume(isl.box(in.a), in.a.volume());
  });
}

// ---------------------------------------------------------------------------
// BoxSet properties.

TEST(BoxIslProperty, Disjoint) {
  run_property<BoxList>("Disjoint", random_box_list,
                        [](const BoxList& in, const IslBoxOracle& isl) {
                          return check_disjoint(in, BoxSet::disjoint(in.boxes), isl);
                        });
}

TEST(BoxIslProperty, Add) {
  run_property<SetAndBox>("Add", random_set_and_box,
                          [](const SetAndBox& in, const IslBoxOracle& isl) {
                            BoxSet got = in.s;
                            const absl::Status status = got.add(in.b);
                            return check_add(in, status, got, isl);
                          });
}

TEST(BoxIslProperty, Remove) {
  run_property<SetAndBox>("Remove", random_set_and_box,
                          [](const SetAndBox& in, const IslBoxOracle& isl) {
                            BoxSet got = in.s;
                            const absl::Status status = got.remove(in.b);
                            return check_remove(in, status, got, isl);
                          });
}

TEST(BoxIslProperty, Coalesce) {
  run_property<BoxList>("Coalesce", random_box_list,
                        [](const BoxList& in, const IslBoxOracle& isl) {
                          const BoxSet before = *BoxSet::disjoint(in.boxes);
                          BoxSet got = before;
                          got.coalesce();
                          return check_coalesce(before, got, isl);
                        });
}

TEST(BoxIslProperty, SetUnion) {
  run_property<SetPair>(
      "SetUnion", random_set_pair, [](const SetPair& in, const IslBoxOracle& isl) {
        const IslSet want = IslBoxOracle::unite(isl.set(in.a, in.rank), isl.set(in.b, in.rank));
        return check_set_op(in, set_union(in.a, in.b), want, isl);
      });
}

TEST(BoxIslProperty, SetIntersection) {
  run_property<SetPair>(
      "SetIntersection", random_set_pair, [](const SetPair& in, const IslBoxOracle& isl) {
        const IslSet want = IslBoxOracle::intersect(isl.set(in.a, in.rank), isl.set(in.b, in.rank));
        return check_set_op(in, set_intersection(in.a, in.b), want, isl);
      });
}

TEST(BoxIslProperty, SetDifference) {
  run_property<SetPair>(
      "SetDifference", random_set_pair, [](const SetPair& in, const IslBoxOracle& isl) {
        const IslSet want = IslBoxOracle::subtract(isl.set(in.a, in.rank), isl.set(in.b, in.rank));
        return check_set_op(in, set_difference(in.a, in.b), want, isl);
      });
}

TEST(BoxIslProperty, SamePoints) {
  run_property<SetPair>(
      "SamePoints", random_same_points_pair,
      [](const SetPair& in, const IslBoxOracle& isl) -> std::string {
        const absl::StatusOr<bool> got = same_points(in.a, in.b);
        if (!got.ok()) return status_error(got);
        const bool want = IslBoxOracle::is_equal(isl.set(in.a, in.rank), isl.set(in.b, in.rank));
        if (*got != want) {
          return "same_points is " + std::to_string(*got) + ", isl says " + std::to_string(want);
        }
        return "";
      });
}

TEST(BoxIslProperty, BoxSetVolume) {
  run_property<BoxList>(
      "BoxSetVolume", random_box_list, [](const BoxList& in, const IslBoxOracle& isl) {
        return check_volume(isl.union_of(in.boxes, in.rank), BoxSet::disjoint(in.boxes)->volume());
      });
}

TEST(BoxIslProperty, BoxSetHull) {
  run_property<SetAndBox>("BoxSetHull", random_set_and_box,
                          [](const SetAndBox& in, const IslBoxOracle& isl) -> std::string {
                            const Box got = in.s.hull();
                            if (got.rank() != in.s.rank())
                              return "hull() " + fmt(got) + " has the wrong rank";
                            if (in.s.rank() == 0)
                              return has_no_point(got) ? "" : "hull() of a rank-0 set has points";
                            const IslSet want = isl.box_hull(isl.set(in.s, in.s.rank()));
                            if (!IslBoxOracle::is_equal(isl.box(got), want)) {
                              return "hull() is " + fmt(got) + ", want " +
                                     IslBoxOracle::to_string(want);
                            }
                            return "";
                          });
}

TEST(BoxIslProperty, BoxSetContainsPoint) {
  run_property<SetAndPoint>(
      "BoxSetContainsPoint",
      [](Rng& rng) {
        const int rank = random_rank(rng);
        BoxSet s = random_set(rng, rank);
        return SetAndPoint{std::move(s), random_point(rng, rank)};
      },
      [](const SetAndPoint& in, const IslBoxOracle& isl) {
        const int rank = static_cast<int>(in.p.size());
        return check_contains(isl.set(in.s, rank), in.p, in.s.contains(in.p), isl);
      });
}

// Ranks 5..8 take the generic (not rank-specialised) code of box_set.cpp.
// Coordinates in [0, 3) and lists of 1..6 boxes keep isl's work small at
// these ranks (a case still costs about 2 ms).
struct HighRankCase {
  BoxList list;
  Box cut;
  std::string describe() const { return list.describe() + ", removed box = " + fmt(cut); }
};

TEST(BoxIslProperty, HighRanks) {
  run_property<HighRankCase>(
      "HighRanks",
      [](Rng& rng) {
        const int rank = static_cast<int>(uniform(rng, 5, 8));
        HighRankCase c;
        c.list.rank = rank;
        c.list.boxes.resize(static_cast<size_t>(uniform(rng, 1, 6)));
        for (Box& b : c.list.boxes) b = random_box(rng, rank, 3);
        c.cut = random_box(rng, rank, 3);
        return c;
      },
      [](const HighRankCase& in, const IslBoxOracle& isl) -> std::string {
        const absl::StatusOr<BoxSet> got = BoxSet::disjoint(in.list.boxes);
        std::string err = check_disjoint(in.list, got, isl);
        if (!err.empty()) return "disjoint: " + err;
        BoxSet removed = *got;
        const absl::Status status = removed.remove(in.cut);
        err = check_remove(SetAndBox{*got, in.cut}, status, removed, isl);
        if (!err.empty()) return "remove: " + err;
        BoxSet coalesced = removed;
        coalesced.coalesce();
        err = check_coalesce(removed, coalesced, isl);
        return err.empty() ? "" : "coalesce: " + err;
      });
}

// ---------------------------------------------------------------------------
// The oracle and the checks themselves: fed known sets and wrong results,
// they must give the known answers and reject the wrong results. Without
// these, a broken oracle would make every property above pass.

Box B(std::initializer_list<int64_t> lo, std::initializer_list<int64_t> hi) {
  return *Box::create(lo, hi);
}

TEST(IslBoxOracle, TranslatesBoxesExactly) {
  const IslBoxOracle isl;
  const IslSet box = isl.box(B({0, 2}, {4, 5}));
  const IslSet want(isl_set_read_from_str(isl.ctx(), "{ [a, b] : 0 <= a <= 3 and 2 <= b <= 4 }"));
  EXPECT_TRUE(IslBoxOracle::is_equal(box, want)) << IslBoxOracle::to_string(box);
  EXPECT_EQ(IslBoxOracle::count_points(box), 12);
  EXPECT_TRUE(IslBoxOracle::is_empty(isl.box(B({3, 1}, {3, 9}))));
  EXPECT_EQ(IslBoxOracle::count_points(isl.box(B({-5}, {5}))), 10);
}

TEST(IslBoxOracle, CountsOverlappingPointsOnce) {
  const IslBoxOracle isl;
  const std::vector<Box> boxes = {B({0, 0}, {3, 3}), B({1, 1}, {4, 4})};
  EXPECT_EQ(IslBoxOracle::count_points(isl.union_of(boxes, 2)), 9 + 9 - 4);
}

TEST(IslBoxOracle, DisjointnessSeparatesTouchingFromOverlapping) {
  const IslBoxOracle isl;
  std::string why;
  const std::vector<Box> touching = {B({0, 0}, {2, 2}), B({2, 0}, {4, 2}), B({0, 2}, {4, 3})};
  EXPECT_TRUE(isl.pairwise_disjoint(touching, &why)) << why;
  const std::vector<Box> overlapping = {B({0, 0}, {2, 2}), B({2, 0}, {4, 2}), B({1, 1}, {2, 3})};
  EXPECT_FALSE(isl.pairwise_disjoint(overlapping, &why));
  EXPECT_NE(why.find("boxes 0 "), std::string::npos) << why;
}

TEST(IslBoxOracle, BoxHullOfAnLShape) {
  const IslBoxOracle isl;
  const std::vector<Box> l_shape = {B({0, 0}, {1, 3}), B({1, 0}, {3, 1})};
  EXPECT_TRUE(
      IslBoxOracle::is_equal(isl.box_hull(isl.union_of(l_shape, 2)), isl.box(B({0, 0}, {3, 3}))));
  EXPECT_TRUE(IslBoxOracle::is_empty(isl.box_hull(isl.empty(3))));
}

TEST(IslBoxOracle, PointMembership) {
  const IslBoxOracle isl;
  const int64_t inside[] = {1, 2}, outside[] = {1, 3};
  EXPECT_TRUE(IslBoxOracle::is_subset(isl.point(inside), isl.box(B({0, 0}, {2, 3}))));
  EXPECT_FALSE(IslBoxOracle::is_subset(isl.point(outside), isl.box(B({0, 0}, {2, 3}))));
}

TEST(PropertyChecks, RejectWrongSubtractResults) {
  const IslBoxOracle isl;
  const BoxPair in{B({0, 0}, {3, 3}), B({1, 1}, {2, 2})};
  auto set_of = [](std::initializer_list<Box> boxes) {
    BoxSet s(2);
    for (const Box& b : boxes) s.append_unchecked(b);
    return s;
  };
  // The right answer passes...
  EXPECT_EQ(
      check_subtract(
          in, set_of({B({0, 0}, {1, 3}), B({2, 0}, {3, 3}), B({1, 0}, {2, 1}), B({1, 2}, {2, 3})}),
          isl),
      "");
  // ...a missing point, an overlap and too many pieces do not.
  EXPECT_NE(
      check_subtract(in, set_of({B({0, 0}, {1, 3}), B({2, 0}, {3, 3}), B({1, 0}, {2, 1})}), isl),
      "");
  EXPECT_NE(
      check_subtract(
          in, set_of({B({0, 0}, {1, 3}), B({2, 0}, {3, 3}), B({0, 0}, {2, 1}), B({1, 2}, {2, 3})}),
          isl),
      "");
  EXPECT_NE(check_subtract(in,
                           set_of({B({0, 0}, {1, 3}), B({2, 0}, {3, 1}), B({2, 1}, {3, 2}),
                                   B({2, 2}, {3, 3}), B({1, 0}, {2, 1}), B({1, 2}, {2, 3})}),
                           isl),
            "");
  EXPECT_NE(check_subtract(in, absl::InvalidArgumentError("boom"), isl), "");
}

TEST(PropertyChecks, RejectAStoredEmptyBox) {
  const IslBoxOracle isl;
  const std::vector<Box> boxes = {B({0, 0}, {2, 2}), B({5, 5}, {5, 9})};
  EXPECT_NE(check_boxes(boxes, 2, isl.box(B({0, 0}, {2, 2})), isl), "");
}

TEST(PropertyChecks, RejectAnUncoalescedPair) {
  const IslBoxOracle isl;
  BoxSet before(2);
  before.append_unchecked(B({0, 0}, {2, 2}));
  before.append_unchecked(B({2, 0}, {4, 2}));
  EXPECT_NE(check_coalesce(before, before, isl), "");
  BoxSet merged(2);
  merged.append_unchecked(B({0, 0}, {4, 2}));
  EXPECT_EQ(check_coalesce(before, merged, isl), "");
}

TEST(PropertyChecks, RejectAWrongVolumeAndHull) {
  const IslBoxOracle isl;
  EXPECT_NE(check_volume(isl.box(B({0, 0}, {2, 3})), 5), "");
  EXPECT_EQ(check_volume(isl.box(B({0, 0}, {2, 3})), 6), "");
  const BoxPair in{B({0, 0}, {1, 1}), B({2, 2}, {3, 3})};
  EXPECT_NE(check_convex_union(in, B({0, 0}, {3, 2}), isl), "");
  EXPECT_EQ(check_convex_union(in, B({0, 0}, {3, 3}), isl), "");
}

}  // namespace
}  // namespace bbmm::test
