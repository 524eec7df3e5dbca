#include "isl_box_oracle.h"

#include <isl/ctx.h>
#include <isl/ilp.h>
#include <isl/mat.h>
#include <isl/options.h>
#include <isl/point.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/val.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

namespace bbmm::test {
namespace {

// isl reports errors through return values that are easy to misread as
// "false"; an oracle must never answer when isl failed, so stop the binary.
bool checked(isl_bool b, const char* what) {
  if (b == isl_bool_error) {
    std::fprintf(stderr, "isl oracle: %s failed\n", what);
    std::abort();
  }
  return b == isl_bool_true;
}

template <typename T>
T* non_null(T* p, const char* what) {
  if (p == nullptr) {
    std::fprintf(stderr, "isl oracle: %s returned NULL\n", what);
    std::abort();
  }
  return p;
}

isl_stat count_one(isl_point* pnt, void* user) {
  isl_point_free(pnt);
  ++*static_cast<int64_t*>(user);
  return isl_stat_ok;
}

}  // namespace

IslSet& IslSet::operator=(IslSet&& other) noexcept {
  if (this != &other) {
    isl_set_free(set_);
    set_ = other.release();
  }
  return *this;
}

IslSet::~IslSet() { isl_set_free(set_); }

isl_set* IslSet::copy() const { return isl_set_copy(set_); }

IslBoxOracle::IslBoxOracle() : ctx_(non_null(isl_ctx_alloc(), "isl_ctx_alloc")) {
  isl_options_set_on_error(ctx_, ISL_ON_ERROR_ABORT);
}

IslBoxOracle::~IslBoxOracle() { isl_ctx_free(ctx_); }

IslSet IslBoxOracle::empty(int rank) const {
  return IslSet(non_null(isl_set_empty(isl_space_set_alloc(ctx_, 0, rank)), "isl_set_empty"));
}

isl_basic_set* IslBoxOracle::basic_box(const Box& box) const {
  // One inequality row per bound, columns [x_0 .. x_{rank-1}, constant]:
  //   x_d - lo_d >= 0  and  -x_d + (hi_d - 1) >= 0,
  // the half-open [lo, hi) on integers. Building the matrix at once is about
  // three times faster than adding bounds one by one, which matters at
  // hundreds of thousands of cases; isl_val keeps hi - 1 exact even for
  // hi == INT64_MIN.
  const int rank = box.rank();
  isl_mat* eq = isl_mat_alloc(ctx_, 0, rank + 1);
  isl_mat* ineq = isl_mat_alloc(ctx_, 2 * rank, rank + 1);
  for (int row = 0; row < 2 * rank; ++row) {
    for (int col = 0; col < rank; ++col) ineq = isl_mat_set_element_si(ineq, row, col, 0);
  }
  for (int d = 0; d < rank; ++d) {
    ineq = isl_mat_set_element_si(ineq, 2 * d, d, 1);
    ineq = isl_mat_set_element_val(ineq, 2 * d, rank,
                                   isl_val_neg(isl_val_int_from_si(ctx_, box.lo(d))));
    ineq = isl_mat_set_element_si(ineq, 2 * d + 1, d, -1);
    ineq = isl_mat_set_element_val(ineq, 2 * d + 1, rank,
                                   isl_val_sub_ui(isl_val_int_from_si(ctx_, box.hi(d)), 1));
  }
  return non_null(
      isl_basic_set_from_constraint_matrices(isl_space_set_alloc(ctx_, 0, rank), eq, ineq,
                                             isl_dim_set, isl_dim_div, isl_dim_param, isl_dim_cst),
      "basic_box");
}

IslSet IslBoxOracle::box(const Box& box) const {
  return IslSet(non_null(isl_set_from_basic_set(basic_box(box)), "isl_set_from_basic_set"));
}

IslSet IslBoxOracle::union_of(std::span<const Box> boxes, int rank) const {
  isl_set* u = isl_set_empty(isl_space_set_alloc(ctx_, 0, rank));
  for (const Box& b : boxes) u = isl_set_union(u, isl_set_from_basic_set(basic_box(b)));
  return IslSet(non_null(u, "union_of"));
}

IslSet IslBoxOracle::set(const BoxSet& set, int rank) const {
  isl_set* u = isl_set_empty(isl_space_set_alloc(ctx_, 0, set.rank() != 0 ? set.rank() : rank));
  for (size_t i = 0; i < set.size(); ++i) {
    u = isl_set_union(u, isl_set_from_basic_set(basic_box(set[i])));
  }
  return IslSet(non_null(u, "set"));
}

IslSet IslBoxOracle::point(std::span<const int64_t> point) const {
  isl_set* s = isl_set_universe(isl_space_set_alloc(ctx_, 0, static_cast<unsigned>(point.size())));
  for (size_t d = 0; d < point.size(); ++d) {
    s = isl_set_fix_val(s, isl_dim_set, static_cast<unsigned>(d),
                        isl_val_int_from_si(ctx_, point[d]));
  }
  return IslSet(non_null(s, "point"));
}

IslSet IslBoxOracle::unite(const IslSet& a, const IslSet& b) {
  return IslSet(non_null(isl_set_union(a.copy(), b.copy()), "isl_set_union"));
}

IslSet IslBoxOracle::intersect(const IslSet& a, const IslSet& b) {
  return IslSet(non_null(isl_set_intersect(a.copy(), b.copy()), "isl_set_intersect"));
}

IslSet IslBoxOracle::subtract(const IslSet& a, const IslSet& b) {
  return IslSet(non_null(isl_set_subtract(a.copy(), b.copy()), "isl_set_subtract"));
}

IslSet IslBoxOracle::box_hull(const IslSet& s) const {
  const isl_size rank = isl_set_dim(s.get(), isl_dim_set);
  if (rank < 0) std::abort();
  if (is_empty(s)) return empty(rank);
  isl_set* h = isl_set_universe(isl_space_set_alloc(ctx_, 0, rank));
  for (int d = 0; d < rank; ++d) {
    isl_val* lo = non_null(isl_set_dim_min_val(s.copy(), d), "isl_set_dim_min_val");
    isl_val* hi = non_null(isl_set_dim_max_val(s.copy(), d), "isl_set_dim_max_val");
    if (!checked(isl_val_is_int(lo), "isl_val_is_int") ||
        !checked(isl_val_is_int(hi), "isl_val_is_int")) {
      std::fprintf(stderr, "isl oracle: box_hull of an unbounded set\n");
      std::abort();
    }
    h = isl_set_lower_bound_val(h, isl_dim_set, d, lo);
    h = isl_set_upper_bound_val(h, isl_dim_set, d, hi);
  }
  return IslSet(non_null(h, "box_hull"));
}

bool IslBoxOracle::is_equal(const IslSet& a, const IslSet& b) {
  return checked(isl_set_is_equal(a.get(), b.get()), "isl_set_is_equal");
}

bool IslBoxOracle::is_empty(const IslSet& s) {
  return checked(isl_set_is_empty(s.get()), "isl_set_is_empty");
}

bool IslBoxOracle::is_subset(const IslSet& a, const IslSet& b) {
  return checked(isl_set_is_subset(a.get(), b.get()), "isl_set_is_subset");
}

int64_t IslBoxOracle::count_points(const IslSet& s) {
  int64_t n = 0;
  if (isl_set_foreach_point(s.get(), count_one, &n) < 0) {
    std::fprintf(stderr, "isl oracle: isl_set_foreach_point failed\n");
    std::abort();
  }
  return n;
}

bool IslBoxOracle::pairwise_disjoint(std::span<const Box> boxes, std::string* why) const {
  std::vector<isl_basic_set*> bsets;
  bsets.reserve(boxes.size());
  for (const Box& b : boxes) bsets.push_back(basic_box(b));
  bool disjoint = true;
  for (size_t i = 0; i < bsets.size() && disjoint; ++i) {
    for (size_t j = i + 1; j < bsets.size(); ++j) {
      if (!checked(isl_basic_set_is_disjoint(bsets[i], bsets[j]), "isl_basic_set_is_disjoint")) {
        *why = "boxes " + std::to_string(i) + " " + boxes[i].to_string() + " and " +
               std::to_string(j) + " " + boxes[j].to_string() + " share a point";
        disjoint = false;
        break;
      }
    }
  }
  for (isl_basic_set* b : bsets) isl_basic_set_free(b);
  return disjoint;
}

std::string IslBoxOracle::to_string(const IslSet& s) {
  char* str = isl_set_to_str(s.get());
  std::string out = str != nullptr ? str : "(null)";
  std::free(str);
  return out;
}

}  // namespace bbmm::test
