#include "bbmm/box.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "bbmm/box_set.h"

namespace bbmm {
namespace detail {

absl::Status box_rank_mismatch(const char* op, const Box& a, const Box& b) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": rank mismatch between box ", a.to_string(),
                                                 " (rank ", a.rank(), ") and box ", b.to_string(),
                                                 " (rank ", b.rank(), ")"));
}

}  // namespace detail

absl::StatusOr<Box> Box::create(std::span<const int64_t> lo, std::span<const int64_t> hi) {
  if (lo.size() != hi.size()) {
    return absl::InvalidArgumentError(absl::StrCat("box: lower bound has ", lo.size(),
                                                   " coordinates but upper bound has ", hi.size()));
  }
  if (lo.empty() || lo.size() > static_cast<size_t>(kMaxRank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("box: rank ", lo.size(), " is outside 1..", kMaxRank));
  }
  for (size_t d = 0; d < lo.size(); ++d) {
    if (lo[d] > hi[d]) {
      return absl::InvalidArgumentError(absl::StrCat("box: dimension ", d, " has lo ", lo[d],
                                                     " > hi ", hi[d],
                                                     " (bounds are half-open [lo, hi))"));
    }
  }
  return make_unchecked(static_cast<int>(lo.size()), lo.data(), hi.data());
}

absl::StatusOr<Box> Box::from_extents(std::span<const int64_t> extents) {
  // Check the rank here: with more than kMaxRank extents, `create` would see
  // lower and upper bounds of different lengths and report that instead.
  if (extents.empty() || extents.size() > static_cast<size_t>(kMaxRank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("box: rank ", extents.size(), " is outside 1..", kMaxRank));
  }
  int64_t zeros[kMaxRank] = {};
  return create(std::span<const int64_t>(zeros, extents.size()), extents);
}


int64_t Box::volume() const {
  if (empty()) return 0;
  constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();
  int64_t v = 1;
  for (int d = 0; d < rank_; ++d) {
    // hi - lo can exceed INT64_MAX (e.g. [INT64_MIN, INT64_MAX)); in uint64
    // the difference is exact and well defined.
    const uint64_t extent = static_cast<uint64_t>(hi_[d]) - static_cast<uint64_t>(lo_[d]);
    if (extent > static_cast<uint64_t>(kSaturated) ||
        __builtin_mul_overflow(v, static_cast<int64_t>(extent), &v)) {
      return kSaturated;
    }
  }
  return v;
}

bool Box::contains(std::span<const int64_t> point) const {
  if (rank_ == 0 || point.size() != static_cast<size_t>(rank_)) return false;
  for (int d = 0; d < rank_; ++d) {
    if (point[d] < lo_[d] || point[d] >= hi_[d]) return false;
  }
  return true;
}


std::string Box::to_string() const {
  if (rank_ == 0) return "[]";
  std::string s;
  for (int d = 0; d < rank_; ++d) {
    if (d > 0) s += 'x';
    absl::StrAppend(&s, "[", lo_[d], ",", hi_[d], ")");
  }
  return s;
}


absl::StatusOr<BoxSet> subtract(const Box& a, const Box& b) {
  if (a.rank() != b.rank()) return detail::box_rank_mismatch("subtract", a, b);
  BoxSet out(a.rank());
  for_each_difference_piece(a, b, [&](const Box& piece) { out.append_unchecked(piece); });
  return out;
}

absl::StatusOr<Box> convex_union(const Box& a, const Box& b) {
  if (a.rank() != b.rank()) return detail::box_rank_mismatch("convex_union", a, b);
  if (a.empty()) return b;
  if (b.empty()) return a;
  int64_t lo[Box::kMaxRank], hi[Box::kMaxRank];
  for (int d = 0; d < a.rank(); ++d) {
    lo[d] = std::min(a.lo(d), b.lo(d));
    hi[d] = std::max(a.hi(d), b.hi(d));
  }
  return Box::make_unchecked(a.rank(), lo, hi);
}

absl::StatusOr<BoxSet> simple_union(const Box& a, const Box& b) {
  if (a.rank() != b.rank()) return detail::box_rank_mismatch("simple_union", a, b);
  absl::StatusOr<BoxSet> rest = subtract(b, a);
  if (!rest.ok()) return rest.status();
  BoxSet out(a.rank());
  if (!a.empty()) out.append_unchecked(a);
  for (size_t i = 0; i < rest->size(); ++i) out.append_unchecked((*rest)[i]);
  return out;
}



}  // namespace bbmm
