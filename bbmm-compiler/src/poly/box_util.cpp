#include "poly/box_util.h"

#include <isl/aff.h>
#include <isl/point.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace bbmm::compiler {

isl::set align(const isl::set& x, const isl::space& model) {
  return isl::manage(isl_set_align_params(x.copy(), model.copy()));
}
isl::pw_aff align(const isl::pw_aff& x, const isl::space& model) {
  return isl::manage(isl_pw_aff_align_params(x.copy(), model.copy()));
}
isl::space align(const isl::space& x, const isl::space& model) {
  return isl::manage(isl_space_align_params(x.copy(), model.copy()));
}

isl::set add_param(isl::set s, const std::string& name) {
  if (isl_set_find_dim_by_name(s.get(), isl_dim_param, name.c_str()) >= 0) return s;
  isl_size n = isl_set_dim(s.get(), isl_dim_param);
  isl_set* r = isl_set_add_dims(s.release(), isl_dim_param, 1);
  r = isl_set_set_dim_name(r, isl_dim_param, n, name.c_str());
  return isl::manage(r);
}

isl::map add_param(isl::map m, const std::string& name) {
  if (isl_map_find_dim_by_name(m.get(), isl_dim_param, name.c_str()) >= 0) return m;
  isl_size n = isl_map_dim(m.get(), isl_dim_param);
  isl_map* r = isl_map_add_dims(m.release(), isl_dim_param, 1);
  r = isl_map_set_dim_name(r, isl_dim_param, n, name.c_str());
  return isl::manage(r);
}

isl::set pw_le_set(const isl::pw_aff& a, const isl::pw_aff& b) {
  return isl::manage(isl_pw_aff_le_set(a.copy(), b.copy()));
}

isl::set box_set_from_bounds(const isl::space& set_space, const std::vector<isl::pw_aff>& mins,
                             const std::vector<isl::pw_aff>& maxs) {
  isl::space sp = set_space;
  for (size_t d = 0; d < mins.size(); ++d) sp = align(align(sp, mins[d].space()), maxs[d].space());
  isl::set r = isl::manage(isl_set_universe(sp.copy()));
  for (size_t d = 0; d < mins.size(); ++d) {
    isl::pw_aff var = isl::manage(isl_pw_aff_var_on_domain(isl_local_space_from_space(sp.copy()), isl_dim_set, d));
    isl::pw_aff mn = align(mins[d], sp).insert_domain(sp);
    isl::pw_aff mx = align(maxs[d], sp).insert_domain(sp);
    r = r.intersect(pw_le_set(mn, var)).intersect(pw_le_set(var, mx));
  }
  return r.coalesce();
}

namespace {
thread_local MakeBoxMemo* g_make_box_memo = nullptr;
}  // namespace

MakeBoxMemo::MakeBoxMemo() : owner_(g_make_box_memo == nullptr) {
  if (owner_) g_make_box_memo = this;
}
MakeBoxMemo::~MakeBoxMemo() {
  if (owner_) g_make_box_memo = nullptr;
}
MakeBoxMemo* MakeBoxMemo::active() { return g_make_box_memo; }
const TileBox* MakeBoxMemo::find(const std::string& key) const {
  auto it = boxes_.find(key);
  return it == boxes_.end() ? nullptr : &it->second;
}
void MakeBoxMemo::remember(std::string key, const TileBox& box) { boxes_.emplace(std::move(key), box); }

TileBox make_box(const isl::set& s, const isl::set& context) {
  MakeBoxMemo* memo = MakeBoxMemo::active();
  std::string key;
  if (memo != nullptr) {
    char* text = isl_set_to_str(s.get());
    if (text != nullptr) {
      key = text;
      free(text);
    }
    if (const TileBox* known = key.empty() ? nullptr : memo->find(key)) {
      TileBox b = *known;
      b.context = context;
      return b;
    }
  }
  TileBox b;
  int n = isl_set_dim(s.get(), isl_dim_set);
  b.guard = s.params().coalesce();
  b.context = context;
  std::vector<isl::pw_aff> mins, maxs;
  for (int d = 0; d < n; ++d) {
    TileBoxDim bd;
    bd.min = isl::manage(isl_set_dim_min(s.copy(), d)).coalesce();
    bd.max = isl::manage(isl_set_dim_max(s.copy(), d)).coalesce();
    mins.push_back(bd.min);
    maxs.push_back(bd.max);
    b.dims.push_back(std::move(bd));
  }
  b.set = box_set_from_bounds(s.space(), mins, maxs);
  if (memo != nullptr && !key.empty()) memo->remember(std::move(key), b);
  return b;
}

namespace {

// The single affine piece of "pa", or a null aff when it has several.
isl::aff single_piece(const isl::pw_aff& pa) {
  isl::aff r;
  if (isl_pw_aff_n_piece(pa.get()) != 1) return r;
  isl_pw_aff_foreach_piece(
      pa.get(),
      [](isl_set* set, isl_aff* aff, void* user) -> isl_stat {
        *static_cast<isl::aff*>(user) = isl::manage(aff);
        isl_set_free(set);
        return isl_stat_ok;
      },
      &r);
  return r;
}

}  // namespace

bool same_bounds(const TileBox& a, const TileBox& b) {
  if (a.dims.size() != b.dims.size()) return false;
  isl::set ca = align(a.context, a.guard.space()).intersect(align(a.guard, a.context.space()));
  isl::set cb = align(b.context, b.guard.space()).intersect(align(b.guard, b.context.space()));
  isl::space sp = align(ca.space(), cb.space());
  ca = align(ca, sp);
  cb = align(cb, sp);
  for (size_t d = 0; d < a.dims.size(); ++d) {
    for (int k = 0; k < 2; ++k) {
      const isl::pw_aff& x = k == 0 ? a.dims[d].min : a.dims[d].max;
      const isl::pw_aff& y = k == 0 ? b.dims[d].min : b.dims[d].max;
      isl::aff ax = single_piece(align(x, sp).gist(ca));
      isl::aff ay = single_piece(align(y, sp).gist(cb));
      if (ax.is_null() || ay.is_null() || isl_aff_plain_is_equal(ax.get(), ay.get()) != isl_bool_true)
        return false;
    }
  }
  return true;
}

std::vector<isl::basic_set> basic_sets(const isl::set& s) {
  std::vector<isl::basic_set> v;
  s.foreach_basic_set([&](isl::basic_set b) { v.push_back(b); });
  return v;
}

std::optional<RowEnumeration> make_rows(const isl::set& s, const isl::set& context) {
  int n = isl_set_dim(s.get(), isl_dim_set);
  if (n < 2) return std::nullopt;
  int k = n - 1;
  isl_set* named = s.copy();
  for (int i = 0; i < k; ++i) named = isl_set_set_dim_name(named, isl_dim_set, i, ("bbmm_r" + std::to_string(i)).c_str());
  isl_size np = isl_set_dim(named, isl_dim_param);
  isl::set moved = isl::manage(isl_set_move_dims(named, isl_dim_param, np, isl_dim_set, 0, k));
  isl::pw_aff mn = isl::manage(isl_set_dim_min(moved.copy(), 0)).coalesce();
  isl::pw_aff mx = isl::manage(isl_set_dim_max(moved.copy(), 0)).coalesce();
  isl::set rebuilt = box_set_from_bounds(moved.space(), {mn}, {mx});
  if (!rebuilt.is_equal(moved)) return std::nullopt;
  RowEnumeration r;
  r.exact = s;
  isl::set proj = isl::manage(isl_set_project_out(s.copy(), isl_dim_set, k, 1));
  r.rows = make_box(proj, context);
  // The row iterators as parameters, limited to the rows box.
  isl_set* rows_named = r.rows.set.copy();
  for (int i = 0; i < k; ++i) rows_named = isl_set_set_dim_name(rows_named, isl_dim_set, i, ("bbmm_r" + std::to_string(i)).c_str());
  isl_size rp = isl_set_dim(rows_named, isl_dim_param);
  isl::set rows_params = isl::manage(isl_set_params(isl_set_move_dims(rows_named, isl_dim_param, rp, isl_dim_set, 0, k)));
  isl::set ctx_r = align(context, rows_params.space()).intersect(align(rows_params, context.space()));
  r.seg_guard = moved.params().coalesce();
  r.seg_context = ctx_r;
  r.seg_min = mn;
  r.seg_max = mx;
  return r;
}

std::optional<int64_t> eval(const isl::pw_aff& pa, const Values& v) {
  isl_space* sp = isl_pw_aff_get_domain_space(pa.get());
  isl_size np = isl_space_dim(sp, isl_dim_param);
  isl_point* pt = isl_point_zero(isl_space_copy(sp));
  for (int i = 0; i < np; ++i) {
    const char* name = isl_space_get_dim_name(sp, isl_dim_param, i);
    auto it = v.find(name ? name : "");
    if (it == v.end()) {
      isl_point_free(pt);
      isl_space_free(sp);
      throw std::logic_error(std::string("boxes: no value for parameter ") + (name ? name : "?"));
    }
    pt = isl_point_set_coordinate_val(pt, isl_dim_param, i, isl_val_int_from_si(pa.ctx().get(), it->second));
  }
  isl_space_free(sp);
  isl_val* r = isl_pw_aff_eval(pa.copy(), pt);
  if (!r) throw std::logic_error("boxes: cannot evaluate a bound");
  std::optional<int64_t> out;
  if (!isl_val_is_nan(r)) out = isl_val_get_num_si(r);
  isl_val_free(r);
  return out;
}

isl::set fix_params(const isl::set& s, const Values& v) {
  isl_set* r = s.copy();
  isl_size np = isl_set_dim(r, isl_dim_param);
  for (int i = 0; i < np; ++i) {
    const char* name = isl_set_get_dim_name(r, isl_dim_param, i);
    auto it = v.find(name ? name : "");
    if (it == v.end()) {
      isl_set_free(r);
      throw std::logic_error(std::string("boxes: no value for parameter ") + (name ? name : "?"));
    }
    r = isl_set_fix_si(r, isl_dim_param, i, it->second);
  }
  return isl::manage(r);
}

bool eval_cond(const isl::set& params, const Values& v) { return !fix_params(params, v).is_empty(); }

namespace {

// The points of "s" (no parameters) by isl's counting scan, which adds the innermost
// dimension's interval at once: its cost grows with the rows, not the points.
int64_t count_by_scan(const isl::set& s) {
  isl_val* n = isl_set_count_val(s.get());
  if (!n) throw std::logic_error("boxes: cannot count the points of a set");
  const int64_t r = isl_val_is_int(n) ? isl_val_get_num_si(n) : 0;
  isl_val_free(n);
  return r;
}

// The volume of "b" (bounded, no parameters) when it is a box, else -1.
int64_t box_volume(const isl::basic_set& b) {
  if (isl_basic_set_dim(b.get(), isl_dim_div) != 0) return -1;
  const isl::set s(b);
  isl::set box = isl::manage(isl_set_universe(s.space().release()));
  int64_t v = 1;
  for (unsigned d = 0; d < s.tuple_dim(); ++d) {
    const std::optional<int64_t> lo = eval(isl::manage(isl_set_dim_min(s.copy(), d)), {});
    const std::optional<int64_t> hi = eval(isl::manage(isl_set_dim_max(s.copy(), d)), {});
    if (!lo || !hi) return -1;
    if (*hi < *lo) return 0;
    v *= *hi - *lo + 1;
    box = isl::manage(isl_set_lower_bound_si(box.release(), isl_dim_set, d, *lo));
    box = isl::manage(isl_set_upper_bound_si(box.release(), isl_dim_set, d, *hi));
  }
  return box.is_subset(s) ? v : -1;
}

}  // namespace

int64_t count_points(const isl::set& s, const Values& v) {
  // Tile footprints are mostly a few boxes: split into disjoint pieces and add the boxes'
  // volumes; a piece that is no box is counted by isl's scan (heat-3d's footprints: the scan
  // took a fifth of its compile time; enumerating points, seconds).
  isl::set f = fix_params(s, v);
  const isl_size np = isl_set_dim(f.get(), isl_dim_param);
  f = isl::manage(isl_set_project_out(f.release(), isl_dim_param, 0, np));  // all fixed
  f = isl::manage(isl_set_make_disjoint(f.coalesce().release()));
  int64_t total = 0;
  for (const isl::basic_set& b : basic_sets(f)) {
    const int64_t n = box_volume(b);
    total += n >= 0 ? n : count_by_scan(isl::set(b));
  }
  return total;
}

bool CBox::empty() const {
  for (size_t d = 0; d < lo.size(); ++d)
    if (lo[d] >= hi[d]) return true;
  return false;
}

int64_t CBox::volume() const {
  if (empty()) return 0;
  int64_t v = 1;
  for (size_t d = 0; d < lo.size(); ++d) v *= hi[d] - lo[d];
  return v;
}

std::optional<CBox> eval_box(const TileBox& b, const Values& v) {
  if (!eval_cond(b.guard, v)) return std::nullopt;
  CBox c;
  for (const TileBoxDim& d : b.dims) {
    auto mn = eval(d.min, v), mx = eval(d.max, v);
    if (!mn || !mx) return std::nullopt;
    c.lo.push_back(*mn);
    c.hi.push_back(*mx + 1);
  }
  if (c.empty()) return std::nullopt;
  return c;
}

CBox hull(const CBox& a, const CBox& b) {
  CBox h = a;
  for (size_t d = 0; d < a.lo.size(); ++d) {
    h.lo[d] = std::min(a.lo[d], b.lo[d]);
    h.hi[d] = std::max(a.hi[d], b.hi[d]);
  }
  return h;
}

namespace {
// Appends to "out" the parts of "a" outside "b" (at most 2 * rank boxes).
void subtract(const CBox& a, const CBox& b, std::vector<CBox>& out) {
  CBox rest = a;
  for (size_t d = 0; d < a.lo.size(); ++d)
    if (b.hi[d] <= rest.lo[d] || b.lo[d] >= rest.hi[d]) {
      out.push_back(a);
      return;
    }
  for (size_t d = 0; d < a.lo.size(); ++d) {
    if (b.lo[d] > rest.lo[d]) {
      CBox p = rest;
      p.hi[d] = b.lo[d];
      out.push_back(p);
      rest.lo[d] = b.lo[d];
    }
    if (b.hi[d] < rest.hi[d]) {
      CBox p = rest;
      p.lo[d] = b.hi[d];
      out.push_back(p);
      rest.hi[d] = b.hi[d];
    }
  }
}
}  // namespace

int64_t union_volume(const std::vector<CBox>& boxes) {
  std::vector<CBox> disjoint;
  for (const CBox& b : boxes) {
    if (b.empty()) continue;
    std::vector<CBox> pieces{b};
    for (const CBox& k : disjoint) {
      std::vector<CBox> next;
      for (const CBox& p : pieces) subtract(p, k, next);
      pieces.swap(next);
    }
    disjoint.insert(disjoint.end(), pieces.begin(), pieces.end());
  }
  int64_t v = 0;
  for (const CBox& b : disjoint) v += b.volume();
  return v;
}

}  // namespace bbmm::compiler
