#include "bbmm/box_set.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace bbmm {
namespace {

absl::Status set_rank_mismatch(const char* op, int ra, int rb) {
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": rank mismatch between sets of rank ", ra, " and ", rb));
}

// True when the union of the disjoint nonempty boxes `a` and `b` is a box:
// equal bounds in every dimension but one, and touching in that one.
bool union_is_box(const Box& a, const Box& b) {
  int differing = -1;
  for (int d = 0; d < a.rank(); ++d) {
    if (a.lo(d) == b.lo(d) && a.hi(d) == b.hi(d)) continue;
    if (differing >= 0) return false;
    differing = d;
  }
  if (differing < 0) return true;
  return a.hi(differing) == b.lo(differing) || b.hi(differing) == a.lo(differing);
}

}  // namespace

absl::StatusOr<BoxSet> BoxSet::disjoint(std::span<const Box> boxes) {
  BoxSet out;
  for (const Box& b : boxes) {
    absl::Status s = out.add(b);
    if (!s.ok()) return s;
  }
  return out;
}

std::vector<Box> BoxSet::boxes() const {
  std::vector<Box> v;
  v.reserve(size());
  for (size_t i = 0; i < size(); ++i) v.push_back((*this)[i]);
  return v;
}

int64_t BoxSet::volume() const {
  int64_t total = 0;
  for (size_t i = 0; i < size(); ++i) {
    if (__builtin_add_overflow(total, (*this)[i].volume(), &total)) {
      return std::numeric_limits<int64_t>::max();
    }
  }
  return total;
}

bool BoxSet::contains(std::span<const int64_t> point) const {
  for (size_t i = 0; i < size(); ++i) {
    if ((*this)[i].contains(point)) return true;
  }
  return false;
}

Box BoxSet::hull() const {
  if (rank_ == 0) return Box();
  if (empty()) {
    int64_t zeros[Box::kMaxRank] = {};
    return Box::make_unchecked(rank_, zeros, zeros);
  }
  Box h = (*this)[0];
  for (size_t i = 1; i < size(); ++i) h = *convex_union(h, (*this)[i]);
  return h;
}

void BoxSet::append_unchecked(const Box& b) {
  if (rank_ == 0) rank_ = b.rank();
  coords_.insert(coords_.end(), b.lo_data(), b.lo_data() + rank_);
  coords_.insert(coords_.end(), b.hi_data(), b.hi_data() + rank_);
}

void BoxSet::erase_box(size_t i) {
  const size_t w = 2 * rank_;
  const size_t last = size() - 1;
  if (i != last) std::copy_n(&coords_[last * w], w, &coords_[i * w]);
  coords_.resize(last * w);
}

void BoxSet::subtract_from(size_t first, const Box& cut) {
  const int r = rank_;
  const size_t w = 2 * r;
  size_t n = size();
  absl::InlinedVector<int64_t, 8 * 2 * 3> pieces;
  for (size_t i = first; i < n;) {
    int64_t* lo = &coords_[i * w];
    int64_t* hi = lo + r;
    bool hit = true;
    for (int d = 0; d < r; ++d) {
      if (std::max(lo[d], cut.lo(d)) >= std::min(hi[d], cut.hi(d))) {
        hit = false;
        break;
      }
    }
    if (!hit) {
      ++i;
      continue;
    }
    // Same slab peeling as `subtract`, writing the pieces to `pieces`.
    int64_t plo[Box::kMaxRank], phi[Box::kMaxRank];
    std::copy_n(lo, r, plo);
    std::copy_n(hi, r, phi);
    for (int d = 0; d < r; ++d) {
      if (plo[d] < cut.lo(d)) {
        pieces.insert(pieces.end(), plo, plo + r);
        const size_t at = pieces.size();
        pieces.insert(pieces.end(), phi, phi + r);
        pieces[at + d] = cut.lo(d);
        plo[d] = cut.lo(d);
      }
      if (phi[d] > cut.hi(d)) {
        const size_t at = pieces.size();
        pieces.insert(pieces.end(), plo, plo + r);
        pieces[at + d] = cut.hi(d);
        pieces.insert(pieces.end(), phi, phi + r);
        phi[d] = cut.hi(d);
      }
    }
    // Fill slot i with the last unprocessed box and look at slot i again.
    --n;
    if (i != n) std::copy_n(&coords_[n * w], w, &coords_[i * w]);
  }
  // Boxes [n, old size) are stale copies; drop them and append the pieces.
  coords_.resize(n * w);
  coords_.insert(coords_.end(), pieces.begin(), pieces.end());
}

absl::Status BoxSet::add(const Box& b) {
  if (rank_ != 0 && b.rank() != rank_) {
    return absl::InvalidArgumentError(absl::StrCat("BoxSet::add: box ", b.to_string(),
                                                   " has rank ", b.rank(),
                                                   " but the set has rank ", rank_));
  }
  if (b.rank() == 0) return absl::InvalidArgumentError("BoxSet::add: box of rank 0");
  if (b.empty()) {
    if (rank_ == 0) rank_ = b.rank();
    return absl::OkStatus();
  }
  const size_t kept = size();
  append_unchecked(b);
  for (size_t k = 0; k < kept; ++k) {
    const Box cut = (*this)[k];
    if (overlaps(cut, b)) subtract_from(kept, cut);
    if (size() == kept) break;  // `b` was covered entirely.
  }
  return absl::OkStatus();
}

absl::Status BoxSet::remove(const Box& b) {
  if (rank_ != 0 && b.rank() != rank_) {
    return absl::InvalidArgumentError(absl::StrCat("BoxSet::remove: box ", b.to_string(),
                                                   " has rank ", b.rank(),
                                                   " but the set has rank ", rank_));
  }
  if (rank_ == 0 || b.empty()) return absl::OkStatus();
  subtract_from(0, b);
  return absl::OkStatus();
}

void BoxSet::coalesce() {
  bool merged = true;
  while (merged) {
    merged = false;
    for (size_t i = 0; i < size(); ++i) {
      for (size_t j = i + 1; j < size();) {
        const Box a = (*this)[i], b = (*this)[j];
        if (!union_is_box(a, b)) {
          ++j;
          continue;
        }
        const Box h = *convex_union(a, b);
        std::copy_n(h.lo_data(), rank_, &coords_[i * 2 * rank_]);
        std::copy_n(h.hi_data(), rank_, &coords_[i * 2 * rank_ + rank_]);
        erase_box(j);
        merged = true;
      }
    }
  }
}

std::string BoxSet::to_string() const {
  std::string s = "{";
  for (size_t i = 0; i < size(); ++i) {
    if (i > 0) s += ", ";
    s += (*this)[i].to_string();
  }
  return s + "}";
}

absl::StatusOr<BoxSet> set_union(const BoxSet& a, const BoxSet& b) {
  if (a.rank() != 0 && b.rank() != 0 && a.rank() != b.rank()) {
    return set_rank_mismatch("set_union", a.rank(), b.rank());
  }
  BoxSet out = a.rank() != 0 ? a : BoxSet(b.rank());
  for (size_t i = 0; i < b.size(); ++i) {
    absl::Status s = out.add(b[i]);
    if (!s.ok()) return s;
  }
  return out;
}

absl::StatusOr<BoxSet> set_intersection(const BoxSet& a, const BoxSet& b) {
  if (a.rank() != 0 && b.rank() != 0 && a.rank() != b.rank()) {
    return set_rank_mismatch("set_intersection", a.rank(), b.rank());
  }
  BoxSet out(std::max(a.rank(), b.rank()));
  for (size_t i = 0; i < a.size(); ++i) {
    const Box x = a[i];
    for (size_t j = 0; j < b.size(); ++j) {
      const Box y = b[j];
      if (!overlaps(x, y)) continue;
      out.append_unchecked(*intersection(x, y));
    }
  }
  return out;
}

absl::StatusOr<BoxSet> set_difference(const BoxSet& a, const BoxSet& b) {
  if (a.rank() != 0 && b.rank() != 0 && a.rank() != b.rank()) {
    return set_rank_mismatch("set_difference", a.rank(), b.rank());
  }
  // Like set_union and set_intersection, the result takes the rank of
  // whichever operand has one, even when `a` has none (and so no points).
  BoxSet out = a.rank() != 0 ? a : BoxSet(b.rank());
  for (size_t j = 0; j < b.size() && !out.empty(); ++j) {
    absl::Status s = out.remove(b[j]);
    if (!s.ok()) return s;
  }
  return out;
}

absl::StatusOr<bool> same_points(const BoxSet& a, const BoxSet& b) {
  absl::StatusOr<BoxSet> ab = set_difference(a, b);
  if (!ab.ok()) return ab.status();
  absl::StatusOr<BoxSet> ba = set_difference(b, a);
  if (!ba.ok()) return ba.status();
  return ab->empty() && ba->empty();
}

}  // namespace bbmm
