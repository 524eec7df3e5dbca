#include "bbmm/box_set.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"

namespace bbmm {
namespace {

absl::Status set_rank_mismatch(const char* op, int ra, int rb) {
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": rank mismatch between sets of rank ", ra, " and ", rb));
}

// The kernels below work on the raw coordinates (a box of rank r is 2r
// consecutive values, lo then hi) rather than on `Box` values (136 bytes
// each) and StatusOr results, and are instantiated for ranks 1..4 (R = rank)
// so that the per-dimension loops unroll and the box width is a constant;
// R = 0 is the generic version for ranks 5..8, with the rank in `r`. With
// the piece buffer below, this brought BoxSet::disjoint of 8 overlapping
// rank-2 boxes from ~2 us to a few hundred ns (docs/performance.md).

template <int R>
constexpr int rank_of(int r) {
  return R > 0 ? R : r;
}

// True when the boxes `a` and `b` (2r values each) share a point.
template <int R>
inline bool raw_overlaps(int r_, const int64_t* a, const int64_t* b) {
  if constexpr (R > 0) {
    // All dimensions without early exit: no data-dependent branch to
    // mispredict, and R is small.
    bool hit = true;
    for (int d = 0; d < R; ++d) hit &= std::max(a[d], b[d]) < std::min(a[R + d], b[R + d]);
    return hit;
  }
  for (int d = 0; d < r_; ++d) {
    if (std::max(a[d], b[d]) >= std::min(a[r_ + d], b[r_ + d])) return false;
  }
  return true;
}

// True when the box [lo, hi) (r values each) holds no point.
template <int R>
inline bool raw_empty(int r_, const int64_t* lo, const int64_t* hi) {
  const int r = rank_of<R>(r_);
  bool empty = false;
  for (int d = 0; d < r; ++d) empty |= hi[d] <= lo[d];
  return empty;
}

// Boxes being cut, in a stack buffer while they fit (the usual case: the
// pieces of one new box), else on the heap. InlinedVector's accessors
// re-check inline-vs-heap storage (and bounds, in hardened builds) on every
// access, which cost more than the cutting itself; here the hot loop works on
// one raw pointer, refreshed only when the buffer grows.
template <int R>
class PieceBuffer {
 public:
  int64_t* data() { return data_; }
  size_t size() const { return size_; }
  void push_box(const int64_t* p, size_t w) {
    if (size_ + w > capacity_) grow(size_ + w);
    std::copy_n(p, w, data_ + size_);
    size_ += w;
  }
  void shrink(size_t n) { size_ = n; }

 private:
  static constexpr size_t kLocal = 32 * 2 * (R > 0 ? R : Box::kMaxRank);
  void grow(size_t need) {
    heap_.resize(std::max(need, 2 * capacity_));
    if (data_ == local_) std::copy_n(local_, size_, heap_.data());
    data_ = heap_.data();
    capacity_ = heap_.size();
  }
  int64_t local_[kLocal];
  std::vector<int64_t> heap_;
  int64_t* data_ = local_;
  size_t size_ = 0;
  size_t capacity_ = kLocal;
};

// The same interface over the set's own storage, for `remove`.
template <typename Coords>
class CoordsBuffer {
 public:
  explicit CoordsBuffer(Coords& coords) : coords_(coords) {}
  int64_t* data() { return coords_.data(); }
  size_t size() const { return coords_.size(); }
  void push_box(const int64_t* p, size_t w) { coords_.insert(coords_.end(), p, p + w); }
  void shrink(size_t n) { coords_.resize(n); }

 private:
  Coords& coords_;
};

// Removes the points of `cut` (2r values) from the boxes [first, end) of
// `buf`; the boxes before `first` are neither read nor moved. A box that
// `cut` misses stays in its slot; a box that it hits is replaced by its slabs
// outside `cut`, peeled dimension by dimension as in `subtract` (below `cut`
// in dimension 0, above it, then dimension 1 within cut's range of dimension
// 0, ...): the first slab takes the box's slot, the others are appended (they
// miss `cut`, so they are not looked at again); a box inside `cut` is
// dropped. `cut` must not point into `buf`, which may reallocate.
template <int R, typename Buffer>
void cut_boxes(Buffer& buf, int r_, size_t first, const int64_t* cut) {
  const int r = rank_of<R>(r_);
  const size_t w = 2 * static_cast<size_t>(r);
  size_t total = buf.size() / w;
  size_t end = total;
  int64_t* base = buf.data();
  size_t i = first;
  while (i < end) {
    int64_t* box = base + i * w;
    if (!raw_overlaps<R>(r, box, cut)) {
      ++i;
      continue;
    }
    int64_t slabs[2 * Box::kMaxRank][2 * Box::kMaxRank];
    int64_t rest[2 * Box::kMaxRank];  // the part of the box not peeled off yet
    std::copy_n(box, w, rest);
    int n = 0;
    for (int d = 0; d < r; ++d) {
      if (rest[d] < cut[d]) {
        std::copy_n(rest, w, slabs[n]);
        slabs[n++][r + d] = cut[d];
        rest[d] = cut[d];
      }
      if (rest[r + d] > cut[r + d]) {
        std::copy_n(rest, w, slabs[n]);
        slabs[n++][d] = cut[r + d];
        rest[r + d] = cut[r + d];
      }
    }
    if (n == 0) {
      // Inside `cut`: fill the slot with the last box still to be looked at,
      // and that one's slot with the last box of all; look at slot i again.
      --end;
      --total;
      if (i != end) std::copy_n(base + end * w, w, box);
      if (end != total) std::copy_n(base + total * w, w, base + end * w);
      buf.shrink(total * w);
      continue;
    }
    std::copy_n(slabs[0], w, box);
    ++i;
    if (n > 1) {
      for (int k = 1; k < n; ++k) buf.push_box(slabs[k], w);
      total += n - 1;
      base = buf.data();
    }
  }
}

// Algorithm 2 for one box: cuts each box kept so far in `coords` out of `b`
// (2r values, nonempty) and appends the pieces left. A kept box that misses
// `b` misses all of its pieces, which the test against `b` itself settles
// cheaply; `coords` is only read until the pieces are appended.
template <int R, typename Coords>
void add_box(Coords& coords, int r_, const int64_t* b) {
  const int r = rank_of<R>(r_);
  const size_t w = 2 * static_cast<size_t>(r);
  const size_t kept = coords.size() / w;
  const int64_t* kept_boxes = coords.data();
  PieceBuffer<R> pieces;
  pieces.push_box(b, w);
  for (size_t k = 0; k < kept; ++k) {
    const int64_t* cut = kept_boxes + k * w;
    if (!raw_overlaps<R>(r, cut, b)) continue;
    cut_boxes<R>(pieces, r, 0, cut);
    if (pieces.size() == 0) return;  // `b` was covered entirely
  }
  // push_back's inline fast path: InlinedVector::insert takes a general path
  // that costs several times more for the few values of a few pieces.
  const int64_t* p = pieces.data();
  for (size_t k = 0; k < pieces.size(); ++k) coords.push_back(p[k]);
}

// Merges pairs of boxes whose union is a box until no pair merges. Merges
// go one dimension at a time, the last (contiguous) dimension first: merging
// in whatever order the pairs come gets stuck on grids (a 4x4 grid of cubes
// ended as 6 boxes, row pieces and column pieces that no longer pair up),
// while rows first, then columns, gives one box. A pass that merges nothing
// costs the same as before, and notes the dimensions where pairs could
// merge, so a set with nothing to merge is still one pass over the pairs.
template <int R, typename Coords>
void coalesce_boxes(Coords& coords, int r_) {
  const int r = rank_of<R>(r_);
  const size_t w = 2 * static_cast<size_t>(r);
  size_t n = coords.size() / w;
  int64_t* base = coords.data();  // boxes only move within the storage
  int target = r - 1;
  while (true) {
    bool merged = false;
    int other = -1;  // highest other dimension in which some pair can merge
    for (size_t i = 0; i < n; ++i) {
      int64_t* a = base + i * w;
      for (size_t j = i + 1; j < n;) {
        const int64_t* b = base + j * w;
        // The union of two disjoint boxes is a box when their bounds agree in
        // every dimension but one, and they touch in that one.
        int differing = -1;
        bool mergeable = true;
        for (int d = 0; d < r; ++d) {
          if (a[d] == b[d] && a[r + d] == b[r + d]) continue;
          if (differing >= 0) {
            mergeable = false;
            break;
          }
          differing = d;
        }
        if (mergeable && differing >= 0) {
          mergeable = a[r + differing] == b[differing] || b[r + differing] == a[differing];
        }
        if (mergeable && differing >= 0 && differing != target) {
          other = std::max(other, differing);
          mergeable = false;
        }
        if (!mergeable) {
          ++j;
          continue;
        }
        if (differing >= 0) {
          a[differing] = std::min(a[differing], b[differing]);
          a[r + differing] = std::max(a[r + differing], b[r + differing]);
        }
        // Drop box j by moving the last box into its slot.
        --n;
        if (j != n) std::copy_n(base + n * w, w, base + j * w);
        merged = true;
      }
    }
    // Keep the dimension while it merges; then go to the highest dimension
    // that had a mergeable pair in this (unchanged) pass; stop when none.
    if (merged) continue;
    if (other < 0) break;
    target = other;
  }
  coords.resize(n * w);  // shrinking: never reallocates
}

// Calls `f.template operator()<R>()` with R = the rank for ranks 1..4, else 0.
template <typename F>
inline void dispatch_rank(int r, F&& f) {
  switch (r) {
    case 1:
      f.template operator()<1>();
      break;
    case 2:
      f.template operator()<2>();
      break;
    case 3:
      f.template operator()<3>();
      break;
    case 4:
      f.template operator()<4>();
      break;
    default:
      f.template operator()<0>();
  }
}

}  // namespace

absl::StatusOr<BoxSet> BoxSet::disjoint(std::span<const Box> boxes) {
  // Built in place: moving a BoxSet that never stored anything makes GCC 12
  // warn (falsely) that InlinedVector's inline buffer is read uninitialized.
  if (boxes.empty()) return absl::StatusOr<BoxSet>(absl::in_place);
  // Check every rank first, so that the loop below is one rank-specialised
  // pass without per-box status handling.
  const int r = boxes[0].rank();
  if (r == 0) return absl::InvalidArgumentError("BoxSet::disjoint: box 0 has rank 0");
  for (size_t i = 1; i < boxes.size(); ++i) {
    if (boxes[i].rank() != r) {
      return absl::InvalidArgumentError(absl::StrCat(
          "BoxSet::disjoint: box ", i, " ", boxes[i].to_string(), " has rank ", boxes[i].rank(),
          " but box 0 ", boxes[0].to_string(), " has rank ", r, "; all boxes need one rank"));
    }
  }
  BoxSet out(r);
  dispatch_rank(r, [&]<int R>() {
    int64_t packed[2 * Box::kMaxRank];
    for (const Box& b : boxes) {
      if (raw_empty<R>(r, b.lo_data(), b.hi_data())) continue;
      std::copy_n(b.lo_data(), rank_of<R>(r), packed);
      std::copy_n(b.hi_data(), rank_of<R>(r), packed + rank_of<R>(r));
      add_box<R>(out.coords_, r, packed);
    }
  });
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
  const size_t old = coords_.size();
  coords_.resize(old + 2 * rank_);
  std::copy_n(b.lo_data(), rank_, coords_.data() + old);
  std::copy_n(b.hi_data(), rank_, coords_.data() + old + rank_);
}

absl::Status BoxSet::add(const Box& b) {
  if (rank_ != 0 && b.rank() != rank_) {
    return absl::InvalidArgumentError(absl::StrCat("BoxSet::add: box ", b.to_string(), " has rank ",
                                                   b.rank(), " but the set has rank ", rank_));
  }
  if (b.rank() == 0) return absl::InvalidArgumentError("BoxSet::add: box of rank 0");
  if (b.empty()) {
    if (rank_ == 0) rank_ = b.rank();
    return absl::OkStatus();
  }
  rank_ = b.rank();
  if (coords_.empty()) {  // the first box (a tile's requirement, mostly): nothing to cut
    append_unchecked(b);
    return absl::OkStatus();
  }
  int64_t packed[2 * Box::kMaxRank];
  std::copy_n(b.lo_data(), rank_, packed);
  std::copy_n(b.hi_data(), rank_, packed + rank_);
  dispatch_rank(rank_, [&]<int R>() { add_box<R>(coords_, rank_, packed); });
  return absl::OkStatus();
}

absl::Status BoxSet::remove(const Box& b) {
  if (rank_ != 0 && b.rank() != rank_) {
    return absl::InvalidArgumentError(absl::StrCat("BoxSet::remove: box ", b.to_string(),
                                                   " has rank ", b.rank(), " but the set has rank ",
                                                   rank_));
  }
  if (rank_ == 0 || b.empty()) return absl::OkStatus();
  int64_t cut[2 * Box::kMaxRank];
  std::copy_n(b.lo_data(), rank_, cut);
  std::copy_n(b.hi_data(), rank_, cut + rank_);
  CoordsBuffer buf(coords_);
  dispatch_rank(rank_, [&]<int R>() { cut_boxes<R>(buf, rank_, 0, cut); });
  return absl::OkStatus();
}

void BoxSet::coalesce() {
  if (rank_ == 0 || coords_.size() <= 2 * static_cast<size_t>(rank_)) return;  // 0 or 1 box
  dispatch_rank(rank_, [&]<int R>() { coalesce_boxes<R>(coords_, rank_); });
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
