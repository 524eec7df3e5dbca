// Table-driven tests of the box algebra: every operation of box.h and
// box_set.h on hand-picked inputs -- empty boxes, boxes that touch (share a
// face without sharing a point), nested and identical boxes, ranks 1 to 4 --
// and every error.
//
// Expectations are written out by hand. Where an operation may return the
// points in boxes of its own choosing, the result is compared point by point
// with a brute-force enumeration written here, never with another operation
// of the code under test. Each table row starts with why it exists.
#include "bbmm/box.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "bbmm/box_set.h"

namespace bbmm {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// ---------------------------------------------------------------------------
// Helpers of the test's own.

// Parses "[0,4)x[2,5)" (or "[]" for the rank-0 box) with Box::create, whose
// validation is pinned down separately below.
Box box(std::string_view text) {
  if (text == "[]") return Box();
  std::vector<int64_t> lo, hi;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    int64_t l = 0, h = 0;
    if (*p != '[') break;
    auto r1 = std::from_chars(p + 1, end, l);
    if (r1.ec != std::errc() || r1.ptr >= end || *r1.ptr != ',') break;
    auto r2 = std::from_chars(r1.ptr + 1, end, h);
    if (r2.ec != std::errc() || r2.ptr >= end || *r2.ptr != ')') break;
    lo.push_back(l);
    hi.push_back(h);
    p = r2.ptr + 1;
    if (p < end && *p == 'x') ++p;
  }
  absl::StatusOr<Box> b = Box::create(lo, hi);
  if (p != end || !b.ok()) {
    ADD_FAILURE() << "bad box literal '" << text << "'";
    return Box();
  }
  return *b;
}

// Parses "{[0,2)x[0,3), [2,4)x[1,3)}".
std::vector<Box> boxes(std::string_view text) {
  std::vector<Box> out;
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') {
    ADD_FAILURE() << "bad box list literal '" << text << "'";
    return out;
  }
  text = text.substr(1, text.size() - 2);
  while (!text.empty()) {
    const size_t comma = text.find(", ");
    out.push_back(box(text.substr(0, comma)));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 2);
  }
  return out;
}

std::vector<Box> boxes_of(const BoxSet& s) {
  std::vector<Box> v;
  for (size_t i = 0; i < s.size(); ++i) v.push_back(s[i]);
  return v;
}

// Written with the accessors only, so that a failure message does not depend
// on the to_string under test.
std::string show(const Box& b) {
  std::ostringstream os;
  os << "<rank " << b.rank();
  for (int d = 0; d < b.rank(); ++d) os << " [" << b.lo(d) << "," << b.hi(d) << ")";
  return os.str() + ">";
}

std::string show(const std::vector<Box>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i > 0 ? ", " : "") + show(v[i]);
  return s + "}";
}

std::string show_point(const std::vector<int64_t>& p) {
  std::string s = "(";
  for (size_t d = 0; d < p.size(); ++d) s += (d > 0 ? "," : "") + std::to_string(p[d]);
  return s + ")";
}

bool has_no_point(const Box& b) {
  if (b.rank() == 0) return true;
  for (int d = 0; d < b.rank(); ++d) {
    if (b.hi(d) <= b.lo(d)) return true;
  }
  return false;
}

bool same_bounds(const Box& a, const Box& b) {
  if (a.rank() != b.rank()) return false;
  for (int d = 0; d < a.rank(); ++d) {
    if (a.lo(d) != b.lo(d) || a.hi(d) != b.hi(d)) return false;
  }
  return true;
}

bool inside(const Box& b, const std::vector<int64_t>& p) {
  for (int d = 0; d < b.rank(); ++d) {
    if (p[d] < b.lo(d) || p[d] >= b.hi(d)) return false;
  }
  return b.rank() > 0;
}

// Every integer point of `bs` with the number of boxes holding it, by brute
// force (the tables use small coordinates).
std::map<std::vector<int64_t>, int> point_counts(const std::vector<Box>& bs) {
  std::map<std::vector<int64_t>, int> counts;
  for (const Box& b : bs) {
    if (has_no_point(b)) continue;
    std::vector<int64_t> p(b.rank());
    for (int d = 0; d < b.rank(); ++d) p[d] = b.lo(d);
    while (true) {
      ++counts[p];
      int d = b.rank() - 1;
      while (d >= 0 && ++p[d] == b.hi(d)) {
        p[d] = b.lo(d);
        --d;
      }
      if (d < 0) break;
    }
  }
  return counts;
}

// `got` must be nonempty boxes of rank `rank`, pairwise disjoint, holding
// exactly the points of `want` (any boxes, overlaps allowed).
void expect_disjoint_cover(const std::vector<Box>& got, const std::vector<Box>& want, int rank) {
  for (const Box& b : got) {
    EXPECT_EQ(b.rank(), rank) << show(b);
    EXPECT_FALSE(has_no_point(b)) << "an empty box is stored: " << show(got);
  }
  const auto got_points = point_counts(got);
  const auto want_points = point_counts(want);
  for (const auto& [p, n] : got_points) {
    EXPECT_EQ(n, 1) << "boxes overlap in " << show(got);
    if (n != 1) break;
  }
  std::map<std::vector<int64_t>, int> got_set, want_set;
  for (const auto& [p, n] : got_points) got_set[p] = 1;
  for (const auto& [p, n] : want_points) want_set[p] = 1;
  EXPECT_TRUE(got_set == want_set)
      << "got " << show(got) << " (" << got_set.size() << " points), want the points of "
      << show(want) << " (" << want_set.size() << " points)";
}

// `got` and `want` are the same box: same rank, and both empty or the same
// bounds (the bounds of an empty result are not specified).
void expect_box(const Box& got, const Box& want) {
  ASSERT_EQ(got.rank(), want.rank()) << show(got) << " vs " << show(want);
  if (has_no_point(want)) {
    EXPECT_TRUE(has_no_point(got)) << show(got) << " should be empty";
    return;
  }
  for (int d = 0; d < want.rank(); ++d) {
    EXPECT_EQ(got.lo(d), want.lo(d)) << show(got) << " vs " << show(want);
    EXPECT_EQ(got.hi(d), want.hi(d)) << show(got) << " vs " << show(want);
  }
}

void expect_boxes(const std::vector<Box>& got, const std::vector<Box>& want) {
  ASSERT_EQ(got.size(), want.size()) << "got " << show(got) << ", want " << show(want);
  for (size_t i = 0; i < got.size(); ++i) expect_box(got[i], want[i]);
}

template <typename T>
void expect_invalid(const absl::StatusOr<T>& got, std::string_view message) {
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
  EXPECT_NE(std::string(got.status().message()).find(message), std::string::npos)
      << "message '" << got.status().message() << "' lacks '" << message << "'";
}

void expect_invalid(const absl::Status& got, std::string_view message) {
  EXPECT_EQ(got.code(), absl::StatusCode::kInvalidArgument) << got;
  EXPECT_NE(std::string(got.message()).find(message), std::string::npos)
      << "message '" << got.message() << "' lacks '" << message << "'";
}

BoxSet set_of(int rank, const std::vector<Box>& disjoint_boxes) {
  BoxSet s(rank);
  for (const Box& b : disjoint_boxes) s.append_unchecked(b);
  return s;
}

// ---------------------------------------------------------------------------
// Box::create, from_extents, make_unchecked.

TEST(BoxCreate, KeepsTheBoundsItIsGiven) {
  struct Row {
    const char* why;
    std::vector<int64_t> lo, hi;
  };
  const Row rows[] = {
      {"rank 1", {0}, {4}},
      {"rank 2 with negative bounds", {-3, 2}, {-1, 5}},
      {"an empty box (lo == hi) is valid", {3, 0}, {3, 2}},
      {"rank 4", {0, 1, 2, 3}, {1, 2, 3, 4}},
      {"rank 8, the largest", {0, 0, 0, 0, 0, 0, 0, 0}, {1, 2, 3, 4, 5, 6, 7, 8}},
      {"extreme coordinates", {kMin, 0}, {kMax, 1}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    absl::StatusOr<Box> b = Box::create(row.lo, row.hi);
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_EQ(b->rank(), static_cast<int>(row.lo.size()));
    for (int d = 0; d < b->rank(); ++d) {
      EXPECT_EQ(b->lo(d), row.lo[d]);
      EXPECT_EQ(b->hi(d), row.hi[d]);
      EXPECT_EQ(b->lo_data()[d], row.lo[d]);
      EXPECT_EQ(b->hi_data()[d], row.hi[d]);
    }
  }
}

TEST(BoxCreate, RejectsInvalidBoundsWithAClearMessage) {
  struct Row {
    const char* why;
    std::vector<int64_t> lo, hi;
    const char* message;
  };
  const Row rows[] = {
      {"lo and hi of different ranks",
       {0, 0},
       {1},
       "lower bound has 2 coordinates but upper "
       "bound has 1"},
      {"rank 0", {}, {}, "rank 0 is outside 1..8"},
      {"rank 9", std::vector<int64_t>(9, 0), std::vector<int64_t>(9, 1), "rank 9 is outside 1..8"},
      {"lo > hi, named by dimension", {0, 5}, {1, 4}, "dimension 1 has lo 5 > hi 4"},
      {"lo > hi by one", {-1}, {-2}, "dimension 0 has lo -1 > hi -2"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    expect_invalid(Box::create(row.lo, row.hi), row.message);
  }
  // The message says what the bounds mean, so that the caller can fix them.
  expect_invalid(Box::create({2}, {1}), "half-open [lo, hi)");
}

TEST(BoxCreate, FromExtents) {
  const int64_t extents[] = {2, 3};
  absl::StatusOr<Box> b = Box::from_extents(extents);
  ASSERT_TRUE(b.ok()) << b.status();
  expect_box(*b, box("[0,2)x[0,3)"));

  const int64_t zero[] = {0};
  ASSERT_TRUE(Box::from_extents(zero).ok());
  EXPECT_TRUE(Box::from_extents(zero)->empty());

  const int64_t negative[] = {4, -1};
  expect_invalid(Box::from_extents(negative), "dimension 1 has lo 0 > hi -1");
  const std::vector<int64_t> nine(9, 1);
  expect_invalid(Box::from_extents(nine), "rank 9 is outside 1..8");
  expect_invalid(Box::from_extents({}), "rank 0 is outside 1..8");
}

TEST(BoxCreate, MakeUncheckedKeepsTheBounds) {
  const int64_t lo[] = {1, 2, 3}, hi[] = {4, 5, 6};
  expect_box(Box::make_unchecked(3, lo, hi), box("[1,4)x[2,5)x[3,6)"));
}

TEST(Box, DefaultIsRankZeroAndEmpty) {
  const Box b;
  EXPECT_EQ(b.rank(), 0);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.volume(), 0);
  EXPECT_EQ(b.to_string(), "[]");
}

// ---------------------------------------------------------------------------
// Printing.

TEST(Box, ToString) {
  struct Row {
    const char* why;
    std::vector<int64_t> lo, hi;
    const char* want;
  };
  const Row rows[] = {
      {"rank 1", {0}, {4}, "[0,4)"},
      {"rank 2, the documented example", {0, 2}, {4, 5}, "[0,4)x[2,5)"},
      {"negative bounds", {-3, -2}, {-1, 0}, "[-3,-1)x[-2,0)"},
      {"an empty box prints its bounds", {3, 0}, {3, 2}, "[3,3)x[0,2)"},
      {"rank 4", {0, 1, 2, 3}, {1, 2, 3, 4}, "[0,1)x[1,2)x[2,3)x[3,4)"},
      {"extremes", {kMin}, {kMax}, "[-9223372036854775808,9223372036854775807)"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    const Box b = *Box::create(row.lo, row.hi);
    EXPECT_EQ(b.to_string(), row.want);
    std::ostringstream os;
    os << b;
    EXPECT_EQ(os.str(), row.want);
  }
}

// ---------------------------------------------------------------------------
// empty, volume, extent, contains.

TEST(Box, EmptyAndVolume) {
  struct Row {
    const char* why;
    Box b;
    bool empty;
    int64_t volume;
  };
  const int64_t big_lo[] = {0, 0}, big_hi[] = {int64_t{1} << 32, int64_t{1} << 32};
  const int64_t wide_lo[] = {kMin}, wide_hi[] = {kMax};
  const int64_t edge_lo[] = {0, 0}, edge_hi[] = {int64_t{1} << 31, int64_t{1} << 31};
  const Row rows[] = {
      {"rank 1", box("[2,7)"), false, 5},
      {"rank 2", box("[0,4)x[2,5)"), false, 12},
      {"rank 3", box("[0,2)x[0,3)x[0,4)"), false, 24},
      {"rank 4 unit box", box("[5,6)x[5,6)x[5,6)x[5,6)"), false, 1},
      {"lo == hi in the first dimension", box("[3,3)x[0,2)"), true, 0},
      {"lo == hi in the last dimension", box("[0,3)x[0,2)x[7,7)"), true, 0},
      {"the rank-0 placeholder", Box(), true, 0},
      {"2^64 points saturate", Box::make_unchecked(2, big_lo, big_hi), false, kMax},
      {"2^62 points do not", Box::make_unchecked(2, edge_lo, edge_hi), false, int64_t{1} << 62},
      {"an extent of 2^64 - 1 saturates", Box::make_unchecked(1, wide_lo, wide_hi), false, kMax},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    EXPECT_EQ(row.b.empty(), row.empty);
    EXPECT_EQ(row.b.volume(), row.volume);
  }
  EXPECT_EQ(box("[2,7)x[-1,3)").extent(0), 5);
  EXPECT_EQ(box("[2,7)x[-1,3)").extent(1), 4);
}

TEST(Box, ContainsPoint) {
  struct Row {
    const char* why;
    Box b;
    std::vector<int64_t> point;
    bool want;
  };
  const Row rows[] = {
      {"inside", box("[0,4)x[2,5)"), {1, 3}, true},
      {"on the lower bounds: in", box("[0,4)x[2,5)"), {0, 2}, true},
      {"on an upper bound: out (half-open)", box("[0,4)x[2,5)"), {4, 3}, false},
      {"last point in", box("[0,4)x[2,5)"), {3, 4}, true},
      {"below", box("[0,4)x[2,5)"), {1, 1}, false},
      {"rank 1", box("[-2,2)"), {-2}, true},
      {"rank 4", box("[0,1)x[0,2)x[0,3)x[0,4)"), {0, 1, 2, 3}, true},
      {"an empty box holds nothing", box("[3,3)x[0,2)"), {3, 1}, false},
      {"a point of another rank", box("[0,4)x[2,5)"), {1}, false},
      {"a point of higher rank", box("[0,4)"), {1, 1}, false},
      {"the rank-0 box", Box(), {}, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    EXPECT_EQ(row.b.contains(row.point), row.want);
  }
  EXPECT_TRUE(box("[0,4)x[2,5)").contains({3, 4}));
}

// ---------------------------------------------------------------------------
// Equality.

TEST(Box, Equality) {
  struct Row {
    const char* why;
    Box a, b;
    bool equal;
  };
  const Row rows[] = {
      {"same bounds", box("[0,4)x[2,5)"), box("[0,4)x[2,5)"), true},
      {"one bound differs", box("[0,4)x[2,5)"), box("[0,4)x[2,6)"), false},
      {"dimensions swapped", box("[0,4)x[2,5)"), box("[2,5)x[0,4)"), false},
      {"empty boxes with different bounds are the same (empty) set", box("[3,3)x[0,2)"),
       box("[0,9)x[5,5)"), true},
      {"empty vs nonempty", box("[3,3)x[0,2)"), box("[3,4)x[0,2)"), false},
      {"different ranks, both empty", box("[0,0)"), box("[0,0)x[0,0)"), false},
      {"different ranks, same leading bounds", box("[0,1)"), box("[0,1)x[0,1)"), false},
      {"rank-0 boxes", Box(), Box(), true},
      {"rank 0 vs an empty rank-1 box", Box(), box("[0,0)"), false},
      {"rank 4", box("[0,1)x[0,2)x[0,3)x[0,4)"), box("[0,1)x[0,2)x[0,3)x[0,4)"), true},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    EXPECT_EQ(row.a == row.b, row.equal);
    EXPECT_EQ(row.b == row.a, row.equal);
    EXPECT_EQ(row.a != row.b, !row.equal);
  }
}

// ---------------------------------------------------------------------------
// Binary Box operations.

TEST(Box, Intersection) {
  struct Row {
    const char* why;
    const char *a, *b, *want;  // want "" means: empty, of the operands' rank
  };
  const Row rows[] = {
      {"overlap", "[0,4)x[0,4)", "[2,6)x[1,3)", "[2,4)x[1,3)"},
      {"b inside a", "[0,9)x[0,9)", "[2,3)x[4,5)", "[2,3)x[4,5)"},
      {"identical", "[1,2)x[3,4)", "[1,2)x[3,4)", "[1,2)x[3,4)"},
      {"touching in dimension 0: no common point", "[0,2)x[0,2)", "[2,4)x[0,2)", ""},
      {"touching at a corner", "[0,2)x[0,2)", "[2,4)x[2,4)", ""},
      {"apart", "[0,1)x[0,1)", "[5,6)x[5,6)", ""},
      {"empty operand", "[0,4)x[0,4)", "[1,1)x[0,4)", ""},
      {"rank 1", "[0,5)", "[3,9)", "[3,5)"},
      {"rank 3", "[0,4)x[0,4)x[0,4)", "[1,5)x[-1,2)x[3,4)", "[1,4)x[0,2)x[3,4)"},
      {"rank 4", "[0,2)x[0,2)x[0,2)x[0,2)", "[1,3)x[1,3)x[1,3)x[1,3)", "[1,2)x[1,2)x[1,2)x[1,2)"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    const Box a = box(row.a), b = box(row.b);
    for (const auto& [x, y] : {std::pair(a, b), std::pair(b, a)}) {
      absl::StatusOr<Box> got = intersection(x, y);
      ASSERT_TRUE(got.ok()) << got.status();
      if (*row.want == '\0') {
        EXPECT_EQ(got->rank(), a.rank());
        EXPECT_TRUE(has_no_point(*got)) << show(*got);
      } else {
        expect_box(*got, box(row.want));
      }
    }
  }
}

TEST(Box, Subtract) {
  // The pieces are the documented slabs: dimension 0 below b, dimension 0
  // above b, then dimension 1 below and above within b's range of dimension
  // 0, and so on.
  struct Row {
    const char* why;
    const char *a, *b, *want;
  };
  const Row rows[] = {
      {"hole in the middle: 2*rank pieces", "[0,3)x[0,3)", "[1,2)x[1,2)",
       "{[0,1)x[0,3), [2,3)x[0,3), [1,2)x[0,1), [1,2)x[2,3)}"},
      {"corner overlap", "[0,4)x[0,4)", "[2,6)x[2,6)", "{[0,2)x[0,4), [2,4)x[0,2)}"},
      {"b covers a", "[1,2)x[1,2)", "[0,3)x[0,3)", "{}"},
      {"b equals a", "[1,2)x[1,2)", "[1,2)x[1,2)", "{}"},
      {"touching: a is untouched", "[0,2)x[0,2)", "[2,4)x[0,2)", "{[0,2)x[0,2)}"},
      {"apart", "[0,2)x[0,2)", "[5,6)x[5,6)", "{[0,2)x[0,2)}"},
      {"b empty", "[0,2)x[0,2)", "[1,1)x[0,9)", "{[0,2)x[0,2)}"},
      {"a empty", "[1,1)x[0,9)", "[0,2)x[0,2)", "{}"},
      {"cut through: two pieces", "[0,6)x[0,2)", "[2,4)x[-1,3)", "{[0,2)x[0,2), [4,6)x[0,2)}"},
      {"rank 1", "[0,10)", "[3,5)", "{[0,3), [5,10)}"},
      {"rank 3 centre: 6 pieces", "[0,3)x[0,3)x[0,3)", "[1,2)x[1,2)x[1,2)",
       "{[0,1)x[0,3)x[0,3), [2,3)x[0,3)x[0,3), [1,2)x[0,1)x[0,3), [1,2)x[2,3)x[0,3), "
       "[1,2)x[1,2)x[0,1), [1,2)x[1,2)x[2,3)}"},
      {"rank 4 centre: 8 pieces", "[0,3)x[0,3)x[0,3)x[0,3)", "[1,2)x[1,2)x[1,2)x[1,2)",
       "{[0,1)x[0,3)x[0,3)x[0,3), [2,3)x[0,3)x[0,3)x[0,3), [1,2)x[0,1)x[0,3)x[0,3), "
       "[1,2)x[2,3)x[0,3)x[0,3), [1,2)x[1,2)x[0,1)x[0,3), [1,2)x[1,2)x[2,3)x[0,3), "
       "[1,2)x[1,2)x[1,2)x[0,1), [1,2)x[1,2)x[1,2)x[2,3)}"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    const Box a = box(row.a), b = box(row.b);
    absl::StatusOr<BoxSet> got = subtract(a, b);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->rank(), a.rank());
    EXPECT_LE(got->size(), static_cast<size_t>(2 * a.rank()));
    expect_boxes(boxes_of(*got), boxes(row.want));
    // And independently of the expected pieces: exactly the points of a - b.
    std::vector<Box> a_minus_b;
    for (const auto& [p, n] : point_counts({a})) {
      if (!inside(b, p)) {
        std::vector<int64_t> hi = p;
        for (int64_t& x : hi) ++x;
        a_minus_b.push_back(*Box::create(p, hi));
      }
    }
    expect_disjoint_cover(boxes_of(*got), a_minus_b, a.rank());
  }
}

TEST(Box, ConvexUnion) {
  struct Row {
    const char* why;
    const char *a, *b, *want;  // want "" means: empty
  };
  const Row rows[] = {
      {"overlap", "[0,4)x[0,4)", "[2,6)x[1,3)", "[0,6)x[0,4)"},
      {"apart: the hull adds points", "[0,1)x[0,1)", "[5,6)x[5,6)", "[0,6)x[0,6)"},
      {"touching", "[0,2)x[0,2)", "[2,4)x[0,2)", "[0,4)x[0,2)"},
      {"nested", "[0,9)x[0,9)", "[2,3)x[4,5)", "[0,9)x[0,9)"},
      {"an empty operand is ignored, wherever its bounds", "[7,7)x[20,30)", "[1,2)x[1,2)",
       "[1,2)x[1,2)"},
      {"both empty", "[7,7)x[20,30)", "[0,5)x[1,1)", ""},
      {"rank 1", "[0,2)", "[5,9)", "[0,9)"},
      {"rank 3", "[0,1)x[0,1)x[0,1)", "[2,3)x[-1,0)x[4,5)", "[0,3)x[-1,1)x[0,5)"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    const Box a = box(row.a), b = box(row.b);
    for (const auto& [x, y] : {std::pair(a, b), std::pair(b, a)}) {
      absl::StatusOr<Box> got = convex_union(x, y);
      ASSERT_TRUE(got.ok()) << got.status();
      if (*row.want == '\0') {
        EXPECT_EQ(got->rank(), a.rank());
        EXPECT_TRUE(has_no_point(*got)) << show(*got);
      } else {
        expect_box(*got, box(row.want));
      }
    }
  }
}

TEST(Box, SimpleUnion) {
  struct Row {
    const char* why;
    const char *a, *b, *want;
  };
  const Row rows[] = {
      {"overlap: a, then b - a", "[0,4)x[0,4)", "[2,6)x[2,6)",
       "{[0,4)x[0,4), [4,6)x[2,6), [2,4)x[4,6)}"},
      {"b inside a", "[0,4)x[0,4)", "[1,2)x[1,2)", "{[0,4)x[0,4)}"},
      {"touching: both as they are", "[0,2)x[0,2)", "[2,4)x[0,2)", "{[0,2)x[0,2), [2,4)x[0,2)}"},
      {"a empty: b only", "[1,1)x[0,9)", "[0,2)x[0,2)", "{[0,2)x[0,2)}"},
      {"b empty: a only", "[0,2)x[0,2)", "[1,1)x[0,9)", "{[0,2)x[0,2)}"},
      {"both empty", "[1,1)x[0,9)", "[0,2)x[3,3)", "{}"},
      {"rank 1", "[0,5)", "[3,9)", "{[0,5), [5,9)}"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    const Box a = box(row.a), b = box(row.b);
    absl::StatusOr<BoxSet> got = simple_union(a, b);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->rank(), a.rank());
    expect_boxes(boxes_of(*got), boxes(row.want));
    expect_disjoint_cover(boxes_of(*got), {a, b}, a.rank());
  }
}

TEST(Box, SubsetAndOverlaps) {
  struct Row {
    const char* why;
    Box a, b;
    bool subset, overlaps;
  };
  const Row rows[] = {
      {"a inside b", box("[1,2)x[1,2)"), box("[0,3)x[0,3)"), true, true},
      {"b inside a", box("[0,3)x[0,3)"), box("[1,2)x[1,2)"), false, true},
      {"equal", box("[0,3)x[0,3)"), box("[0,3)x[0,3)"), true, true},
      {"a inside b, sharing the upper faces", box("[1,3)x[1,3)"), box("[0,3)x[0,3)"), true, true},
      {"partial overlap", box("[0,4)x[0,4)"), box("[2,6)x[2,6)"), false, true},
      {"touching along a face", box("[0,2)x[0,2)"), box("[2,4)x[0,2)"), false, false},
      {"touching at a corner", box("[0,2)x[0,2)"), box("[2,4)x[2,4)"), false, false},
      {"apart", box("[0,1)"), box("[5,6)"), false, false},
      {"one cell of overlap, rank 4", box("[0,2)x[0,2)x[0,2)x[0,2)"),
       box("[1,3)x[1,3)x[1,3)x[1,3)"), false, true},
      {"an empty a is a subset of anything of its rank", box("[5,5)x[0,9)"), box("[0,1)x[0,1)"),
       true, false},
      {"even of an empty b", box("[5,5)x[0,9)"), box("[2,2)x[2,2)"), true, false},
      {"a nonempty a is no subset of an empty b", box("[0,1)x[0,1)"), box("[0,5)x[3,3)"), false,
       false},
      {"different ranks", box("[0,1)"), box("[0,1)x[0,1)"), false, false},
      {"different ranks, a empty", box("[0,0)"), box("[0,1)x[0,1)"), false, false},
      {"rank 0", Box(), Box(), false, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    EXPECT_EQ(is_subset(row.a, row.b), row.subset);
    EXPECT_EQ(overlaps(row.a, row.b), row.overlaps);
    EXPECT_EQ(overlaps(row.b, row.a), row.overlaps);
  }
}

TEST(Box, BinaryOperationsRejectRankMismatch) {
  const Box a = box("[0,1)"), b = box("[0,2)x[0,3)");
  const char* message = "rank mismatch between box [0,1) (rank 1) and box [0,2)x[0,3) (rank 2)";
  expect_invalid(intersection(a, b), std::string("intersection: ") + message);
  expect_invalid(subtract(a, b), std::string("subtract: ") + message);
  expect_invalid(convex_union(a, b), std::string("convex_union: ") + message);
  expect_invalid(simple_union(a, b), std::string("simple_union: ") + message);
  expect_invalid(intersection(Box(), b), "rank 0");
}

// ---------------------------------------------------------------------------
// BoxSet.

TEST(BoxSet, Disjoint) {
  struct Row {
    const char* why;
    int rank;
    const char* in;
    int max_boxes;  // what the documented algorithm gives, worked out by hand
  };
  const Row rows[] = {
      {"one box", 2, "{[0,2)x[0,3)}", 1},
      {"two overlapping squares: a, then an L of two boxes", 2, "{[0,2)x[0,2), [1,3)x[1,3)}", 3},
      {"touching boxes stay as they are", 2, "{[0,2)x[0,2), [2,4)x[0,2)}", 2},
      {"identical boxes count once", 2, "{[0,2)x[0,2), [0,2)x[0,2), [0,2)x[0,2)}", 1},
      {"big first: the small one adds nothing", 2, "{[0,9)x[0,9), [2,3)x[2,3)}", 1},
      {"small first: the big one becomes a frame", 2, "{[2,3)x[2,3), [0,9)x[0,9)}", 5},
      {"empty boxes are dropped", 2, "{[1,1)x[0,5), [0,2)x[0,2), [3,4)x[9,9)}", 1},
      {"only empty boxes", 3, "{[1,1)x[0,5)x[0,1)}", 0},
      {"rank 1 chain", 1, "{[0,4), [2,6), [5,9), [1,3)}", 3},
      {"5-point stencil reads of a tile, rank 2", 2,
       "{[1,5)x[1,5), [0,4)x[1,5), [2,6)x[1,5), [1,5)x[0,4), [1,5)x[2,6)}", 5},
      {"rank 3, shifted cubes", 3, "{[0,2)x[0,2)x[0,2), [1,3)x[1,3)x[1,3), [0,2)x[0,2)x[1,3)}", 6},
      {"rank 4, shifted hypercubes", 4,
       "{[0,2)x[0,2)x[0,2)x[0,2), [1,3)x[1,3)x[1,3)x[1,3), [1,3)x[0,2)x[1,3)x[0,2)}", 9},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    const std::vector<Box> in = boxes(row.in);
    absl::StatusOr<BoxSet> got = BoxSet::disjoint(in);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->rank(), row.rank);
    EXPECT_LE(got->size(), static_cast<size_t>(row.max_boxes)) << show(boxes_of(*got));
    expect_disjoint_cover(boxes_of(*got), in, row.rank);
    // Each box keeps the part not covered by the boxes before it: the first
    // nonempty box stays whole.
    for (const Box& b : in) {
      if (has_no_point(b)) continue;
      bool kept = false;
      for (const Box& g : boxes_of(*got)) kept = kept || same_bounds(g, b);
      EXPECT_TRUE(kept) << show(b) << " is not kept whole in " << show(boxes_of(*got));
      break;
    }
  }
}

// A new box cut by many kept boxes: 25 unit holes leave far more than the 32
// pieces that fit the stack buffer of `disjoint`, and the set outgrows its
// inline storage.
TEST(BoxSet, ManyPiecesSpillToTheHeap) {
  std::vector<Box> in;
  for (int64_t i = 0; i < 5; ++i) {
    for (int64_t j = 0; j < 5; ++j) {
      in.push_back(*Box::create({2 * i + 1, 2 * j + 1}, {2 * i + 2, 2 * j + 2}));
    }
  }
  in.push_back(box("[0,11)x[0,11)"));
  absl::StatusOr<BoxSet> got = BoxSet::disjoint(in);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_GT(got->size(), 25u + 32u);
  expect_disjoint_cover(boxes_of(*got), in, 2);
  // The same through add(), and removing the holes again through remove().
  BoxSet s;
  for (const Box& b : in) ASSERT_TRUE(s.add(b).ok());
  expect_disjoint_cover(boxes_of(s), in, 2);
  for (size_t k = 0; k < 25; ++k) ASSERT_TRUE(s.remove(in[k]).ok());
  std::vector<Box> left;  // the square's points outside the holes, one box each
  for (const auto& [p, n] : point_counts({in.back()})) {
    if (n != 1) continue;
    bool in_hole = false;
    for (size_t k = 0; k < 25; ++k) in_hole = in_hole || inside(in[k], p);
    if (!in_hole) left.push_back(*Box::create({p[0], p[1]}, {p[0] + 1, p[1] + 1}));
  }
  ASSERT_EQ(left.size(), 121u - 25u);
  expect_disjoint_cover(boxes_of(s), left, 2);
  s.coalesce();
  expect_disjoint_cover(boxes_of(s), left, 2);
}

// Ranks 5..8 take the generic (not rank-specialised) code path.
TEST(BoxSet, HighRanks) {
  struct Row {
    const char* why;
    int rank;
    const char* in;
    const char* remove;
  };
  const Row rows[] = {
      {"rank 5", 5, "{[0,2)x[0,2)x[0,2)x[0,2)x[0,2), [1,3)x[1,3)x[1,3)x[1,3)x[1,3)}",
       "[1,2)x[0,3)x[1,2)x[0,3)x[1,2)"},
      {"rank 6, touching and nested", 6,
       "{[0,2)x[0,1)x[0,1)x[0,1)x[0,1)x[0,2), [2,3)x[0,1)x[0,1)x[0,1)x[0,1)x[0,2), "
       "[0,1)x[0,1)x[0,1)x[0,1)x[0,1)x[0,1)}",
       "[0,3)x[0,1)x[0,1)x[0,1)x[0,1)x[1,2)"},
      {"rank 8", 8,
       "{[0,2)x[0,2)x[0,2)x[0,2)x[0,2)x[0,2)x[0,2)x[0,2), "
       "[1,3)x[0,2)x[1,3)x[0,2)x[1,3)x[0,2)x[1,3)x[0,2)}",
       "[1,2)x[1,2)x[1,2)x[1,2)x[1,2)x[1,2)x[1,2)x[1,2)"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    const std::vector<Box> in = boxes(row.in);
    absl::StatusOr<BoxSet> got = BoxSet::disjoint(in);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->rank(), row.rank);
    expect_disjoint_cover(boxes_of(*got), in, row.rank);

    // remove(): what is left is the input points outside the removed box.
    const Box cut = box(row.remove);
    BoxSet s = *got;
    ASSERT_TRUE(s.remove(cut).ok());
    std::vector<Box> left;
    for (const auto& [p, n] : point_counts(in)) {
      if (inside(cut, p)) continue;
      std::vector<int64_t> hi = p;
      for (int64_t& x : hi) ++x;
      left.push_back(*Box::create(p, hi));
    }
    expect_disjoint_cover(boxes_of(s), left, row.rank);

    const size_t before = s.size();
    s.coalesce();
    EXPECT_LE(s.size(), before);
    expect_disjoint_cover(boxes_of(s), left, row.rank);
  }
  // Two halves of a rank-8 box coalesce into it.
  BoxSet halves(8);
  halves.append_unchecked(box("[0,1)x[0,2)x[0,2)x[0,2)x[0,2)x[0,2)x[0,2)x[0,2)"));
  halves.append_unchecked(box("[1,2)x[0,2)x[0,2)x[0,2)x[0,2)x[0,2)x[0,2)x[0,2)"));
  halves.coalesce();
  ASSERT_EQ(halves.size(), 1u);
  expect_box(halves[0], box("[0,2)x[0,2)x[0,2)x[0,2)x[0,2)x[0,2)x[0,2)x[0,2)"));
}

TEST(BoxSet, DisjointOfNothingHasNoRank) {
  absl::StatusOr<BoxSet> got = BoxSet::disjoint(std::vector<Box>{});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->rank(), 0);
  EXPECT_TRUE(got->empty());
  EXPECT_EQ(got->size(), 0u);
}

TEST(BoxSet, DisjointRejectsMixedRanks) {
  expect_invalid(BoxSet::disjoint({box("[0,1)"), box("[0,2)"), box("[0,1)x[0,1)")}),
                 "BoxSet::disjoint: box 2 [0,1)x[0,1) has rank 2 but box 0 [0,1) has rank 1");
  // An empty box has a rank too.
  expect_invalid(BoxSet::disjoint({box("[0,0)"), box("[0,1)x[0,1)")}),
                 "box 1 [0,1)x[0,1) has rank 2 but box 0 [0,0) has rank 1");
  expect_invalid(BoxSet::disjoint({Box()}), "BoxSet::disjoint: box 0 has rank 0");
  expect_invalid(BoxSet::disjoint({box("[0,1)"), Box()}), "box 1 [] has rank 0");
}

TEST(BoxSet, AddAndRemove) {
  // Each row applies its steps to an empty set of no rank and compares the
  // points with `want`; '+' adds a box, '-' removes one.
  struct Row {
    const char* why;
    std::vector<std::pair<char, const char*>> steps;
    const char* want;
  };
  const Row rows[] = {
      {"add to a set of no rank takes the box's rank", {{'+', "[0,2)x[0,2)"}}, "{[0,2)x[0,2)}"},
      {"add an overlapping box",
       {{'+', "[0,2)x[0,2)"}, {'+', "[1,3)x[1,3)"}},
       "{[0,2)x[0,2), [1,3)x[1,3)}"},
      {"add a covered box", {{'+', "[0,4)x[0,4)"}, {'+', "[1,2)x[1,2)"}}, "{[0,4)x[0,4)}"},
      {"add an empty box", {{'+', "[0,2)x[0,2)"}, {'+', "[5,5)x[0,2)"}}, "{[0,2)x[0,2)}"},
      {"remove a hole",
       {{'+', "[0,3)x[0,3)"}, {'-', "[1,2)x[1,2)"}},
       "{[0,1)x[0,3), [2,3)x[0,3), [1,2)x[0,1), [1,2)x[2,3)}"},
      {"remove across two boxes",
       {{'+', "[0,2)x[0,2)"}, {'+', "[2,4)x[0,2)"}, {'-', "[1,3)x[0,1)"}},
       "{[0,1)x[0,2), [1,3)x[1,2), [3,4)x[0,2)}"},
      {"remove everything", {{'+', "[0,2)"}, {'+', "[4,6)"}, {'-', "[-9,9)"}}, "{}"},
      {"remove a touching box changes nothing",
       {{'+', "[0,2)x[0,2)"}, {'-', "[2,4)x[0,2)"}},
       "{[0,2)x[0,2)}"},
      {"remove an empty box", {{'+', "[0,2)"}, {'-', "[1,1)"}}, "{[0,2)}"},
      {"add back what was removed",
       {{'+', "[0,3)x[0,3)x[0,3)"}, {'-', "[1,2)x[1,2)x[1,2)"}, {'+', "[1,2)x[1,2)x[1,2)"}},
       "{[0,3)x[0,3)x[0,3)}"},
      {"rank 4",
       {{'+', "[0,2)x[0,2)x[0,2)x[0,2)"}, {'-', "[1,3)x[1,3)x[1,3)x[1,3)"}},
       "{[0,1)x[0,2)x[0,2)x[0,2), [1,2)x[0,1)x[0,2)x[0,2), [1,2)x[1,2)x[0,1)x[0,2), "
       "[1,2)x[1,2)x[1,2)x[0,1)}"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    BoxSet s;
    for (const auto& [op, text] : row.steps) {
      const absl::Status status = op == '+' ? s.add(box(text)) : s.remove(box(text));
      ASSERT_TRUE(status.ok()) << status;
    }
    const std::vector<Box> want = boxes(row.want);
    const int rank = box(row.steps[0].second).rank();
    EXPECT_EQ(s.rank(), rank);
    expect_disjoint_cover(boxes_of(s), want, rank);
    EXPECT_EQ(s.empty(), want.empty());
  }
}

TEST(BoxSet, AddAndRemoveRejectRankMismatch) {
  BoxSet s;
  ASSERT_TRUE(s.add(box("[0,1)x[0,1)")).ok());
  expect_invalid(s.add(box("[0,1)")), "BoxSet::add: box [0,1) has rank 1 but the set has rank 2");
  expect_invalid(s.remove(box("[0,1)x[0,1)x[0,1)")),
                 "BoxSet::remove: box [0,1)x[0,1)x[0,1) has rank 3 but the set has rank 2");
  expect_invalid(s.add(Box()), "has rank 0 but the set has rank 2");
  BoxSet no_rank;
  expect_invalid(no_rank.add(Box()), "rank 0");
  // Removing from a set of no rank removes nothing and is no error.
  EXPECT_TRUE(no_rank.remove(box("[0,1)")).ok());
  EXPECT_EQ(no_rank.rank(), 0);
  // An empty box still fixes the rank of a set of no rank.
  ASSERT_TRUE(no_rank.add(box("[0,0)x[0,1)x[0,1)")).ok());
  EXPECT_EQ(no_rank.rank(), 3);
  EXPECT_TRUE(no_rank.empty());
  // The failed calls changed nothing.
  expect_disjoint_cover(boxes_of(s), {box("[0,1)x[0,1)")}, 2);
}

TEST(BoxSet, Coalesce) {
  struct Row {
    const char* why;
    int rank;
    const char* in;  // disjoint boxes
    size_t want_size;
  };
  const Row rows[] = {
      {"two halves", 2, "{[0,2)x[0,2), [2,4)x[0,2)}", 1},
      {"halves in the other order", 2, "{[2,4)x[0,2), [0,2)x[0,2)}", 1},
      {"four quarters (needs merges of merged boxes)", 2,
       "{[0,1)x[0,1), [1,2)x[1,2), [0,1)x[1,2), [1,2)x[0,1)}", 1},
      {"a row of four, scrambled", 1, "{[2,3), [0,1), [3,4), [1,2)}", 1},
      {"an L stays two boxes", 2, "{[0,1)x[0,2), [1,2)x[0,1)}", 2},
      {"touching with different extents", 2, "{[0,2)x[0,2), [2,4)x[0,3)}", 2},
      {"same extents but a gap", 2, "{[0,2)x[0,2), [3,5)x[0,2)}", 2},
      {"a frame of four stays four", 2, "{[0,1)x[0,3), [2,3)x[0,3), [1,2)x[0,1), [1,2)x[2,3)}", 4},
      {"the frame with its centre becomes one", 2,
       "{[0,1)x[0,3), [2,3)x[0,3), [1,2)x[0,1), [1,2)x[2,3), [1,2)x[1,2)}", 1},
      {"rank 3, a 2x2x2 cube of unit cells", 3,
       "{[0,1)x[0,1)x[0,1), [1,2)x[0,1)x[0,1), [0,1)x[1,2)x[0,1), [1,2)x[1,2)x[0,1), "
       "[0,1)x[0,1)x[1,2), [1,2)x[0,1)x[1,2), [0,1)x[1,2)x[1,2), [1,2)x[1,2)x[1,2)}",
       1},
      {"a 4x4 grid: rows first, then columns, gives one box", 2,
       "{[0,1)x[0,1), [0,1)x[1,2), [0,1)x[2,3), [0,1)x[3,4), [1,2)x[0,1), [1,2)x[1,2), "
       "[1,2)x[2,3), [1,2)x[3,4), [2,3)x[0,1), [2,3)x[1,2), [2,3)x[2,3), [2,3)x[3,4), "
       "[3,4)x[0,1), [3,4)x[1,2), [3,4)x[2,3), [3,4)x[3,4)}",
       1},
      {"rank 4, two halves", 4, "{[0,1)x[0,2)x[0,2)x[0,2), [1,2)x[0,2)x[0,2)x[0,2)}", 1},
      {"empty set", 2, "{}", 0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    const std::vector<Box> in = boxes(row.in);
    BoxSet s = set_of(row.rank, in);
    s.coalesce();
    EXPECT_EQ(s.size(), row.want_size) << show(boxes_of(s));
    EXPECT_EQ(s.rank(), row.rank);
    expect_disjoint_cover(boxes_of(s), in, row.rank);
  }
}

TEST(BoxSet, SetAlgebra) {
  struct Row {
    const char* why;
    int rank;
    const char *a, *b;               // disjoint boxes each
    const char *uni, *inter, *diff;  // a | b, a & b, a - b, as any boxes
  };
  const Row rows[] = {
      {"overlapping squares", 2, "{[0,2)x[0,2)}", "{[1,3)x[1,3)}", "{[0,2)x[0,2), [1,3)x[1,3)}",
       "{[1,2)x[1,2)}", "{[0,1)x[0,2), [1,2)x[0,1)}"},
      {"touching sets", 2, "{[0,2)x[0,2)}", "{[2,4)x[0,2)}", "{[0,4)x[0,2)}", "{}",
       "{[0,2)x[0,2)}"},
      {"b inside a", 1, "{[0,10)}", "{[2,4), [6,7)}", "{[0,10)}", "{[2,4), [6,7)}",
       "{[0,2), [4,6), [7,10)}"},
      {"a inside b", 1, "{[2,4), [6,7)}", "{[0,10)}", "{[0,10)}", "{[2,4), [6,7)}", "{}"},
      {"several boxes each, rank 2", 2, "{[0,2)x[0,4), [2,4)x[0,1)}", "{[1,3)x[0,2), [3,5)x[3,4)}",
       "{[0,2)x[0,4), [2,4)x[0,1), [1,3)x[0,2), [3,5)x[3,4)}", "{[1,2)x[0,2), [2,3)x[0,1)}",
       "{[0,1)x[0,4), [1,2)x[2,4), [3,4)x[0,1)}"},
      {"rank 3", 3, "{[0,2)x[0,2)x[0,2)}", "{[1,3)x[1,3)x[1,3)}",
       "{[0,2)x[0,2)x[0,2), [1,3)x[1,3)x[1,3)}", "{[1,2)x[1,2)x[1,2)}",
       "{[0,1)x[0,2)x[0,2), [1,2)x[0,1)x[0,2), [1,2)x[1,2)x[0,1)}"},
      {"rank 4 with an empty b", 4, "{[0,1)x[0,1)x[0,1)x[0,2)}", "{}", "{[0,1)x[0,1)x[0,1)x[0,2)}",
       "{}", "{[0,1)x[0,1)x[0,1)x[0,2)}"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    const BoxSet a = set_of(row.rank, boxes(row.a)), b = set_of(row.rank, boxes(row.b));
    absl::StatusOr<BoxSet> u = set_union(a, b), i = set_intersection(a, b),
                           d = set_difference(a, b);
    ASSERT_TRUE(u.ok() && i.ok() && d.ok());
    EXPECT_EQ(u->rank(), row.rank);
    EXPECT_EQ(i->rank(), row.rank);
    EXPECT_EQ(d->rank(), row.rank);
    {
      SCOPED_TRACE("union");
      expect_disjoint_cover(boxes_of(*u), boxes(row.uni), row.rank);
    }
    {
      SCOPED_TRACE("intersection");
      expect_disjoint_cover(boxes_of(*i), boxes(row.inter), row.rank);
    }
    {
      SCOPED_TRACE("difference");
      expect_disjoint_cover(boxes_of(*d), boxes(row.diff), row.rank);
    }
  }
}

TEST(BoxSet, SetAlgebraWithASetOfNoRank) {
  const BoxSet none;
  const BoxSet b = set_of(2, {box("[0,2)x[0,2)")});
  for (const auto& [x, y] : {std::pair(none, b), std::pair(b, none)}) {
    absl::StatusOr<BoxSet> u = set_union(x, y), i = set_intersection(x, y),
                           d = set_difference(x, y);
    ASSERT_TRUE(u.ok() && i.ok() && d.ok());
    // The result takes the rank of the operand that has one.
    EXPECT_EQ(u->rank(), 2);
    EXPECT_EQ(i->rank(), 2);
    EXPECT_EQ(d->rank(), 2);
    expect_disjoint_cover(boxes_of(*u), {box("[0,2)x[0,2)")}, 2);
    EXPECT_TRUE(i->empty());
  }
  EXPECT_TRUE(set_difference(none, b)->empty());
  expect_disjoint_cover(boxes_of(*set_difference(b, none)), {box("[0,2)x[0,2)")}, 2);
  absl::StatusOr<BoxSet> both = set_union(none, none);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->rank(), 0);
}

TEST(BoxSet, SetAlgebraRejectsRankMismatch) {
  const BoxSet a = set_of(2, {box("[0,1)x[0,1)")}), b = set_of(3, {box("[0,1)x[0,1)x[0,1)")});
  expect_invalid(set_union(a, b), "set_union: rank mismatch between sets of rank 2 and 3");
  expect_invalid(set_intersection(a, b),
                 "set_intersection: rank mismatch between sets of rank 2 and 3");
  expect_invalid(set_difference(a, b),
                 "set_difference: rank mismatch between sets of rank 2 and 3");
  expect_invalid(same_points(a, b), "rank mismatch between sets of rank 2 and 3");
  // Empty sets of different ranks are still of different ranks.
  expect_invalid(set_union(BoxSet(2), BoxSet(3)), "rank 2 and 3");
}

TEST(BoxSet, SamePoints) {
  struct Row {
    const char* why;
    int rank;
    const char *a, *b;
    bool same;
  };
  const Row rows[] = {
      {"same boxes", 2, "{[0,2)x[0,2)}", "{[0,2)x[0,2)}", true},
      {"cut differently", 2, "{[0,2)x[0,4)}", "{[0,1)x[0,4), [1,2)x[0,2), [1,2)x[2,4)}", true},
      {"one point short", 2, "{[0,2)x[0,2)}", "{[0,2)x[0,1), [0,1)x[1,2)}", false},
      {"touching but not equal", 1, "{[0,2)}", "{[2,4)}", false},
      {"both empty", 3, "{}", "{}", true},
      {"empty vs not", 1, "{}", "{[0,1)}", false},
      {"rank 4", 4, "{[0,2)x[0,1)x[0,1)x[0,1)}",
       "{[1,2)x[0,1)x[0,1)x[0,1), [0,1)x[0,1)x[0,1)x[0,1)}", true},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    const BoxSet a = set_of(row.rank, boxes(row.a)), b = set_of(row.rank, boxes(row.b));
    ASSERT_TRUE(same_points(a, b).ok());
    EXPECT_EQ(*same_points(a, b), row.same);
    EXPECT_EQ(*same_points(b, a), row.same);
  }
  EXPECT_TRUE(*same_points(BoxSet(), BoxSet(2)));
}

TEST(BoxSet, VolumeHullContains) {
  struct Row {
    const char* why;
    int rank;
    const char* in;  // disjoint boxes
    int64_t volume;
    const char* hull;  // "" means: an empty box of the rank
  };
  const Row rows[] = {
      {"one box", 2, "{[0,2)x[0,3)}", 6, "[0,2)x[0,3)"},
      {"two apart: the hull spans the gap", 2, "{[0,1)x[0,1), [4,5)x[2,3)}", 2, "[0,5)x[0,3)"},
      {"touching", 1, "{[0,2), [2,5)}", 5, "[0,5)"},
      {"negative coordinates", 2, "{[-3,-1)x[0,1), [0,1)x[-2,0)}", 4, "[-3,1)x[-2,1)"},
      {"rank 3", 3, "{[0,2)x[0,2)x[0,2), [2,3)x[0,1)x[0,1)}", 9, "[0,3)x[0,2)x[0,2)"},
      {"rank 4", 4, "{[0,1)x[0,2)x[0,3)x[0,4)}", 24, "[0,1)x[0,2)x[0,3)x[0,4)"},
      {"empty", 2, "{}", 0, ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    const std::vector<Box> in = boxes(row.in);
    const BoxSet s = set_of(row.rank, in);
    EXPECT_EQ(s.volume(), row.volume);
    const Box h = s.hull();
    if (*row.hull == '\0') {
      EXPECT_EQ(h.rank(), row.rank);
      EXPECT_TRUE(has_no_point(h));
    } else {
      expect_box(h, box(row.hull));
    }
    // contains() agrees with the brute-force points on and around the hull.
    const auto points = point_counts(in);
    if (!has_no_point(h)) {
      std::vector<int64_t> lo(row.rank), hi(row.rank);
      for (int d = 0; d < row.rank; ++d) {
        lo[d] = h.lo(d) - 1;
        hi[d] = h.hi(d) + 1;
      }
      for (const auto& [p, n] : point_counts({*Box::create(lo, hi)})) {
        EXPECT_EQ(s.contains(p), points.count(p) == 1) << "point " << show_point(p);
      }
    }
  }
  EXPECT_EQ(BoxSet().hull().rank(), 0);
  EXPECT_FALSE(set_of(1, {box("[0,2)")}).contains(std::vector<int64_t>{0, 0}));
}

TEST(BoxSet, VolumeSaturates) {
  const int64_t big = int64_t{1} << 62;
  const BoxSet s = set_of(2, {*Box::create({0, 0}, {big, 1}), *Box::create({0, 1}, {big, 2}),
                              *Box::create({0, 2}, {big, 3})});
  EXPECT_EQ(s.volume(), kMax);
  const BoxSet exact = set_of(1, {*Box::create({0}, {big}), *Box::create({big}, {kMax})});
  EXPECT_EQ(exact.volume(), kMax);
}

TEST(BoxSet, AccessorsAndPrinting) {
  BoxSet s;
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.size(), 0u);
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.to_string(), "{}");
  s.append_unchecked(box("[0,2)x[0,3)"));
  s.append_unchecked(box("[2,4)x[1,3)"));
  EXPECT_EQ(s.rank(), 2);
  EXPECT_EQ(s.size(), 2u);
  EXPECT_FALSE(s.empty());
  expect_box(s[0], box("[0,2)x[0,3)"));
  expect_box(s[1], box("[2,4)x[1,3)"));
  expect_boxes(s.boxes(), boxes("{[0,2)x[0,3), [2,4)x[1,3)}"));
  EXPECT_EQ(s.to_string(), "{[0,2)x[0,3), [2,4)x[1,3)}");
  std::ostringstream os;
  os << s;
  EXPECT_EQ(os.str(), "{[0,2)x[0,3), [2,4)x[1,3)}");
  // clear() drops the boxes, not the rank.
  s.clear();
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.size(), 0u);
  EXPECT_EQ(s.rank(), 2);
  EXPECT_EQ(BoxSet(3).rank(), 3);
}

}  // namespace
}  // namespace bbmm
