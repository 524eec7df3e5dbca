#include "poly/reschedule.h"

#include <isl/aff.h>
#include <isl/constraint.h>
#include <isl/map.h>
#include <isl/options.h>
#include <isl/schedule.h>
#include <isl/set.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "poly/budget.h"
#include "poly/deps.h"
#include "poly/wavefront_tiles.h"

namespace bbmm::compiler {
namespace {

constexpr unsigned long kRescheduleOperations = 300'000;

// One dimension of a statement's flat schedule from isl: +-iterator "src" or a constant.
struct Entry {
  bool iter = false;
  int src = 0;
  int sign = 1;
  long c = 0;
  std::vector<long> row;  // a wavefront: the coefficients over every iterator (src unused)
};

// A node of the new loop tree of a scop: a statement, a loop kept from the model
// ("old_loop"), or a new loop with, per statement inside, the source iterator it runs.
struct TNode {
  bool is_loop = false;
  int stmt = -1;
  int old_loop = -1;
  int sign = 1;
  std::vector<std::pair<int, int>> members;  // (statement, source dimension or -1: row)
  std::map<int, std::vector<long>> rows;      // statement -> its wavefront row
  std::vector<TNode> kids;
};

// Loops outside statement "st"'s phase's parallel loop (all its loops without one).
// Whether statement "st" runs in a serial region (a phase without a parallel loop).
bool in_serial_region(const Scop& s, int st) {
  const int p = s.statements[st].phase;
  return p < 0 || s.phases[p].parallel_loop < 0;
}

int serial_depth(const Scop& s, int st) {
  const Statement& x = s.statements[st];
  if (x.phase < 0) return static_cast<int>(x.loops.size());
  const Phase& p = s.phases[x.phase];
  return p.parallel_loop >= 0 ? static_cast<int>(p.serial_loops.size())
                              : static_cast<int>(x.loops.size());
}

TNode kept(const Scop& s, const Node& n) {
  TNode t;
  t.is_loop = n.is_loop;
  if (!n.is_loop) {
    t.stmt = n.index;
    return t;
  }
  t.old_loop = n.index;
  for (const Node& k : s.loops[n.index].body) t.kids.push_back(kept(s, k));
  return t;
}

// The untagged S -> T union of "deps".
isl::union_map untagged(const isl::union_map& deps) {
  isl::union_map u = isl::union_map::empty(deps.ctx());
  for (const isl::map& m : sorted_maps(deps)) u = u.unite(isl::union_map(untag(m)));
  return u;
}

// The affine function of "flat" (S -> [t0, ...]) when it has one piece; nullptr otherwise.
isl_multi_aff* single_multi_aff(const isl::map& flat) {
  isl_pw_multi_aff* pma = isl_pw_multi_aff_from_map(flat.copy());
  if (!pma) return nullptr;
  if (isl_pw_multi_aff_n_piece(pma) != 1) {
    isl_pw_multi_aff_free(pma);
    return nullptr;
  }
  isl_multi_aff* ma = nullptr;
  isl_pw_multi_aff_foreach_piece(
      pma,
      [](isl_set* set, isl_multi_aff* m, void* user) -> isl_stat {
        isl_set_free(set);
        *static_cast<isl_multi_aff**>(user) = m;
        return isl_stat_ok;
      },
      &ma);
  isl_pw_multi_aff_free(pma);
  return ma;
}

// Statement "st"'s flat schedule from isl's "flat" map (S -> [t0, ...]); false when a
// dimension is not +-one iterator or a constant, or the iterators are not each used once.
bool flat_entries(const Statement& st, const isl::map& flat, std::vector<Entry>& out) {
  isl_multi_aff* ma = single_multi_aff(flat);
  if (!ma) return false;
  const int depth = static_cast<int>(st.iterators.size());
  const int n = static_cast<int>(isl_multi_aff_dim(ma, isl_dim_out));
  std::vector<int> used(depth, 0);
  bool ok = true;
  for (int k = 0; k < n && ok; ++k) {
    isl_aff* a = isl_multi_aff_get_aff(ma, k);
    Entry e;
    isl_val* den = isl_aff_get_denominator_val(a);
    ok = isl_val_is_one(den) == isl_bool_true;
    isl_val_free(den);
    const int np = static_cast<int>(isl_aff_dim(a, isl_dim_param));
    const int nd = static_cast<int>(isl_aff_dim(a, isl_dim_div));
    if (ok && np > 0 && isl_aff_involves_dims(a, isl_dim_param, 0, np) != isl_bool_false) ok = false;
    if (ok && nd > 0 && isl_aff_involves_dims(a, isl_dim_div, 0, nd) != isl_bool_false) ok = false;
    int nonzero = 0;
    for (int d = 0; d < depth && ok; ++d) {
      isl_val* v = isl_aff_get_coefficient_val(a, isl_dim_in, d);
      if (!isl_val_is_zero(v)) {
        ++nonzero;
        long c = isl_val_get_num_si(v);
        if (c == 1 || c == -1) {
          e.iter = true;
          e.src = d;
          e.sign = static_cast<int>(c);
        } else {
          ok = false;
        }
      }
      isl_val_free(v);
    }
    isl_val* c = isl_aff_get_constant_val(a);
    e.c = isl_val_get_num_si(c);
    isl_val_free(c);
    isl_aff_free(a);
    if (!ok) break;
    if (nonzero > 1 || (e.iter && e.c != 0)) ok = false;
    if (e.iter && ++used[e.src] > 1) ok = false;
    out.push_back(e);
  }
  isl_multi_aff_free(ma);
  for (int u : used) ok = ok && u == 1;
  return ok;
}

// Whether every instance of "st" (domain "dom") has sign * x_src >= c ("ge") or <= c.
bool member_bound(const isl::set& dom, int src, int sign, long c, bool ge) {
  isl_set* b = isl_set_universe(isl_set_get_space(dom.get()));
  // sign * x >= c  <=>  x >= c (sign 1) or x <= -c (sign -1).
  const bool lower = (sign > 0) == ge;
  const long bound = sign > 0 ? c : -c;
  b = lower ? isl_set_lower_bound_si(b, isl_dim_set, src, bound)
            : isl_set_upper_bound_si(b, isl_dim_set, src, bound);
  return dom.is_subset(isl::manage(b));
}

class Rebuilder {
 public:
  explicit Rebuilder(const Scop& src) : src_(src) {}

  // The loop tree of the statements "stmts" from their flat schedules at dimension "k" on.
  bool build(const std::map<int, std::vector<Entry>>& flat, std::vector<int> stmts, size_t k,
             std::vector<TNode>& out) const {
    std::sort(stmts.begin(), stmts.end());
    size_t len = 0;
    for (int s : stmts) len = std::max(len, flat.at(s).size());
    if (k >= len) {
      // Statements at the same schedule prefix never share a time point (isl's schedule is
      // injective), so each iteration runs at most one of them: any order is the same.
      for (int s : stmts) {
        TNode t;
        t.stmt = s;
        out.push_back(t);
      }
      return true;
    }
    auto entry = [&](int s) { return k < flat.at(s).size() ? flat.at(s)[k] : Entry(); };
    std::vector<int> iters;
    std::map<long, std::vector<int>> consts;
    for (int s : stmts) {
      Entry e = entry(s);
      if (e.iter) {
        iters.push_back(s);
      } else {
        consts[e.c].push_back(s);
      }
    }
    if (iters.empty()) {
      for (auto& [c, group] : consts)
        if (!build(flat, group, k + 1, out)) return false;
      return true;
    }
    TNode loop;
    loop.is_loop = true;
    loop.sign = entry(iters[0]).sign;
    bool rows = false;
    for (int s : iters) {
      if (entry(s).sign != loop.sign) return false;
      if (!entry(s).row.empty()) {
        rows = true;
        loop.rows[s] = entry(s).row;
      }
      loop.members.push_back({s, entry(s).row.empty() ? entry(s).src : -1});
    }
    if (rows && !consts.empty()) return false;  // no order against a wavefront's statements
    if (!build(flat, iters, k + 1, loop.kids)) return false;
    // Statements at a constant of this dimension go before the loop when every instance
    // of the loop comes at or after that constant, after it when at or before (ties are
    // left to the legality check).
    std::vector<TNode> before, after;
    for (auto& [c, group] : consts) {
      bool all_ge = true, all_le = true;
      for (int s : iters) {
        const isl::set& dom = src_.statements[s].domain;
        all_ge = all_ge && member_bound(dom, entry(s).src, loop.sign, c, true);
        all_le = all_le && member_bound(dom, entry(s).src, loop.sign, c, false);
      }
      if (all_ge) {
        if (!build(flat, group, k + 1, before)) return false;
      } else if (all_le) {
        if (!build(flat, group, k + 1, after)) return false;
      } else {
        return false;
      }
    }
    out.insert(out.end(), before.begin(), before.end());
    out.push_back(std::move(loop));
    out.insert(out.end(), after.begin(), after.end());
    return true;
  }

  // Rewrites "out" (a copy of the source model) after the top-level tree "top".
  void rewrite(const std::vector<TNode>& top, Scop& out) {
    out.loops.clear();
    out.body.clear();
    paths_.assign(src_.statements.size(), {});
    srcdims_.assign(src_.statements.size(), {});
    rows_.assign(src_.statements.size(), {});
    std::vector<int> path;
    std::vector<int> src_path;
    for (const TNode& n : top) add(n, -1, path, src_path, out, out.body);
    for (Statement& st : out.statements) {
      const Statement& old = src_.statements[st.index];
      const std::vector<int>& dims = srcdims_[st.index];
      bool identity = true;
      for (size_t d = 0; d < dims.size(); ++d) identity = identity && dims[d] == static_cast<int>(d);
      st.loops = paths_[st.index];
      bool moved = false;  // under a new loop, which may have another name
      for (int l : st.loops) moved = moved || owners_[l];
      if (!moved) continue;
      const int depth = static_cast<int>(dims.size());
      if (st.source_c_names.empty())
        for (int d = 0; d < depth; ++d) st.source_c_names.push_back(src_.loops[old.loops[d]].c_name);
      if (std::find(dims.begin(), dims.end(), -1) != dims.end()) {
        skew(old, dims, rows_[st.index], out, st);
        continue;
      }
      std::vector<int> to_source;
      for (int d = 0; d < depth; ++d)
        to_source.push_back(old.to_source.empty() ? dims[d] : old.to_source[dims[d]]);
      st.to_source = to_source;
      if (identity) continue;
      map_statement(out, st, permutation(old, dims));
      std::vector<std::string> its;
      for (int d = 0; d < depth; ++d) its.push_back(old.iterators[dims[d]]);
      st.iterators = its;
    }
    rebuild_schedules(out);
  }

  // Statement "st" (source "old") under loops whose depth d runs source dimension dims[d],
  // or the row rows[d] when dims[d] is -1: its domain and accesses mapped by that unimodular
  // matrix, its source iterators given by the inverse (Statement::source_rows).
  static void skew(const Statement& old, const std::vector<int>& dims,
                   const std::vector<std::vector<long>>& rows, Scop& out, Statement& st) {
    const int depth = static_cast<int>(dims.size());
    std::vector<std::vector<long>> m(depth, std::vector<long>(depth, 0));
    std::vector<std::string> names;
    for (int d = 0; d < depth; ++d) {
      if (dims[d] < 0) {
        m[d] = rows[d];
        names.push_back(out.loops[st.loops[d]].iterator);
      } else {
        m[d][dims[d]] = 1;
        names.push_back(old.iterators[dims[d]]);
      }
    }
    std::vector<std::vector<long>> inv;
    if (!integer_inverse(m, inv)) {
      std::string t;
      for (auto& r : m) {
        t += "[";
        for (long v : r) t += std::to_string(v) + " ";
        t += "]";
      }
      throw std::logic_error("reschedule: a wavefront is not unimodular: " + t);
    }
    map_statement(out, st, matrix_map(old.domain, m, names));
    st.iterators = names;
    st.to_source.clear();
    st.source_rows = inv;
  }

  // The inverse of the integer matrix "m" when it is integer (|det m| = 1).
  static bool integer_inverse(const std::vector<std::vector<long>>& m,
                              std::vector<std::vector<long>>& inv) {
    const int n = static_cast<int>(m.size());
    // Gauss-Jordan over the rationals, as numerator/denominator pairs kept reduced.
    struct Q {
      long p = 0, q = 1;
    };
    auto norm = [](Q x) {
      long a = x.p < 0 ? -x.p : x.p, b = x.q < 0 ? -x.q : x.q;
      while (b) {
        long t = a % b;
        a = b;
        b = t;
      }
      if (a > 1) x.p /= a, x.q /= a;
      if (x.q < 0) x.p = -x.p, x.q = -x.q;
      return x;
    };
    auto sub = [&](Q a, Q b) { return norm({a.p * b.q - b.p * a.q, a.q * b.q}); };
    auto mul = [&](Q a, Q b) { return norm({a.p * b.p, a.q * b.q}); };
    auto div = [&](Q a, Q b) { return norm({a.p * b.q, a.q * b.p}); };
    std::vector<std::vector<Q>> a(n, std::vector<Q>(2 * n));
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) a[i][j] = {m[i][j], 1};
      a[i][n + i] = {1, 1};
    }
    for (int c = 0; c < n; ++c) {
      int piv = c;
      while (piv < n && a[piv][c].p == 0) ++piv;
      if (piv == n) return false;
      std::swap(a[c], a[piv]);
      const Q d = a[c][c];
      for (Q& x : a[c]) x = div(x, d);
      for (int r = 0; r < n; ++r) {
        if (r == c || a[r][c].p == 0) continue;
        const Q f = a[r][c];
        for (int j = 0; j < 2 * n; ++j) a[r][j] = sub(a[r][j], mul(f, a[c][j]));
      }
    }
    inv.assign(n, std::vector<long>(n, 0));
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        if (a[i][n + j].q != 1) return false;
        inv[i][j] = a[i][n + j].p;
      }
    return true;
  }

  // S[source dims] -> S[new dims] of statement "st" (dims[d]: source dim at new d).
  static isl::map permutation(const Statement& st, const std::vector<int>& dims) {
    isl_space* sp = isl_set_get_space(st.domain.get());
    isl_local_space* ls = isl_local_space_from_space(isl_space_copy(sp));
    isl_multi_aff* ma = isl_multi_aff_zero(isl_space_map_from_set(sp));
    for (size_t d = 0; d < dims.size(); ++d) {
      isl_aff* v = isl_aff_var_on_domain(isl_local_space_copy(ls), isl_dim_set, dims[d]);
      ma = isl_multi_aff_set_aff(ma, static_cast<int>(d), v);
    }
    isl_local_space_free(ls);
    isl_map* m = isl_map_from_multi_aff(ma);
    for (size_t d = 0; d < dims.size(); ++d)
      m = isl_map_set_dim_name(m, isl_dim_out, static_cast<int>(d), st.iterators[dims[d]].c_str());
    return isl::manage(m);
  }

 private:
  void add(const TNode& n, int parent, std::vector<int>& path, std::vector<int>& src_path, Scop& out,
           std::vector<Node>& body) {
    if (!n.is_loop) {
      body.push_back({false, n.stmt});
      paths_[n.stmt] = path;
      std::vector<int>& dims = srcdims_[n.stmt];
      dims.clear();
      for (size_t d = 0; d < path.size(); ++d) dims.push_back(src_path[d] >= 0 ? src_path[d] : static_cast<int>(d));
      // Kept loops run source dimension d at depth d; new ones say which (-1: a row).
      rows_[n.stmt].assign(path.size(), {});
      for (size_t d = 0; d < path.size(); ++d) {
        const TNode* owner = owners_[path[d]];
        if (!owner) continue;
        for (auto [st, sd] : owner->members)
          if (st == n.stmt) dims[d] = sd;
        if (dims[d] < 0) rows_[n.stmt][d] = owner->rows.at(n.stmt);
      }
      return;
    }
    Loop L;
    L.id = static_cast<int>(out.loops.size());
    L.depth = static_cast<int>(path.size());
    L.parent = parent;
    if (n.old_loop >= 0) {
      const Loop& o = src_.loops[n.old_loop];
      L.iterator = o.iterator;
      L.c_name = o.c_name;
      L.step = o.step;
      L.asserted_parallel = o.asserted_parallel;
      L.loc = o.loc;
      L.pragma_loc = o.pragma_loc;
      L.ast = o.ast;
    } else if (n.members[0].second < 0) {
      // A wavefront: a new iterator (an affine function of the source ones).
      const Loop& o = src_.loops[src_.statements[n.members[0].first].loops[0]];
      L.iterator = "bbmm_it" + std::to_string(L.id);
      L.c_name = L.iterator;
      L.step = 1;
      L.loc = o.loc;
      L.ast = o.ast;
    } else {
      // The common source iterator of its statements, else a synthetic name.
      const Statement& first = src_.statements[n.members[0].first];
      const Loop& o = src_.loops[first.loops[n.members[0].second]];
      bool same = true;
      int64_t stride = o.step < 0 ? -o.step : o.step;
      for (auto [st, sd] : n.members) {
        const Loop& x = src_.loops[src_.statements[st].loops[sd]];
        same = same && x.c_name == o.c_name && x.iterator == o.iterator;
        int64_t xs = x.step < 0 ? -x.step : x.step;
        stride = std::max(stride, xs);
      }
      for (int a : path) same = same && out.loops[a].c_name != o.c_name;
      L.iterator = same ? o.iterator : "bbmm_it" + std::to_string(L.id);
      L.c_name = same ? o.c_name : L.iterator;
      L.step = n.sign * stride;
      L.loc = o.loc;
      L.ast = o.ast;
    }
    out.loops.push_back(L);
    owners_.resize(out.loops.size(), nullptr);
    owners_[L.id] = n.old_loop >= 0 ? nullptr : &n;
    body.push_back({true, L.id});
    path.push_back(L.id);
    src_path.push_back(-1);
    std::vector<Node> kids;
    for (const TNode& k : n.kids) add(k, L.id, path, src_path, out, kids);
    path.pop_back();
    src_path.pop_back();
    out.loops[L.id].body = kids;
    std::vector<int> stmts;
    std::function<void(const std::vector<Node>&)> collect = [&](const std::vector<Node>& b) {
      for (const Node& x : b) {
        if (x.is_loop) {
          collect(out.loops[x.index].body);
        } else {
          stmts.push_back(x.index);
        }
      }
    };
    collect(kids);
    out.loops[L.id].statements = stmts;
  }

  const Scop& src_;
  std::vector<std::vector<int>> paths_;    // per statement: its new loops
  std::vector<std::vector<int>> srcdims_;  // per statement: source dimension at each depth
  std::vector<std::vector<std::vector<long>>> rows_;  // per statement and depth: a row or {}
  std::vector<const TNode*> owners_;       // per new loop id: its node when new
};

// The first dimension of "flat" (S -> [t0, ...]) that involves an iterator, as its
// coefficients over the statement's iterators, when it has one piece, no parameter, no
// division and integer coefficients; empty otherwise.
std::vector<long> leading_row(const isl::map& flat) {
  const int depth = static_cast<int>(isl_map_dim(flat.get(), isl_dim_in));
  isl_multi_aff* ma = single_multi_aff(flat);
  if (!ma) return {};
  std::vector<long> h;
  const int n = static_cast<int>(isl_multi_aff_dim(ma, isl_dim_out));
  for (int k = 0; k < n; ++k) {
    isl_aff* a = isl_multi_aff_get_aff(ma, k);
    std::vector<long> row(depth, 0);
    bool any = false;
    for (int d = 0; d < depth; ++d) {
      isl_val* v = isl_aff_get_coefficient_val(a, isl_dim_in, d);
      row[d] = isl_val_get_num_si(v);
      any = any || row[d] != 0;
      isl_val_free(v);
    }
    isl_val* den = isl_aff_get_denominator_val(a);
    bool ok = isl_val_is_one(den) == isl_bool_true;
    isl_val_free(den);
    const int np = static_cast<int>(isl_aff_dim(a, isl_dim_param));
    const int nd = static_cast<int>(isl_aff_dim(a, isl_dim_div));
    if (np > 0 && isl_aff_involves_dims(a, isl_dim_param, 0, np) != isl_bool_false) ok = false;
    if (nd > 0 && isl_aff_involves_dims(a, isl_dim_div, 0, nd) != isl_bool_false) ok = false;
    isl_aff_free(a);
    if (!any) continue;
    if (ok) h = row;
    break;
  }
  isl_multi_aff_free(ma);
  return h;
}

// How many entries of "row" are not zero.
int nonzeros(const std::vector<long>& row) {
  return static_cast<int>(std::count_if(row.begin(), row.end(), [](long c) { return c != 0; }));
}

// The dimension of statement "st" that the first subscript of its first write varies with,
// other than "elim"; -1 when none.
int first_write_dim(const Scop& s, int st, int elim) {
  const Statement& x = s.statements[st];
  const int depth = static_cast<int>(x.iterators.size());
  int first = -1;
  for (int a : x.accesses) {
    const Access& acc = s.accesses[a];
    if (acc.kind != AccessKind::kWrite || isl_map_dim(acc.relation.get(), isl_dim_out) < 1) continue;
    isl_pw_multi_aff* w = isl_pw_multi_aff_from_map(acc.relation.copy());
    if (w && isl_pw_multi_aff_n_piece(w) == 1) {
      isl_aff* a0 = nullptr;
      isl_pw_aff* p0 = isl_pw_multi_aff_get_pw_aff(w, 0);
      isl_pw_aff_foreach_piece(
          p0,
          [](isl_set* set, isl_aff* aff, void* user) -> isl_stat {
            isl_set_free(set);
            *static_cast<isl_aff**>(user) = aff;
            return isl_stat_ok;
          },
          &a0);
      for (int d = 0; d < depth && first < 0 && a0; ++d) {
        isl_val* v = isl_aff_get_coefficient_val(a0, isl_dim_in, d);
        if (d != elim && !isl_val_is_zero(v)) first = d;
        isl_val_free(v);
      }
      isl_aff_free(a0);
      isl_pw_aff_free(p0);
    }
    isl_pw_multi_aff_free(w);
    break;
  }
  return first;
}

// A skewed statement's entries: its first "kept" iterators as they are, then the wavefront
// row "h", then the iterator "first" (when >= 0), then its other iterators in source order
// but "elim" (left out of a depth-"depth" nest so that the matrix is unimodular).
std::vector<Entry> skewed_entries(const std::vector<long>& h, int first, int elim, int depth,
                                  int kept = 0) {
  std::vector<Entry> out;
  auto add = [&](int d) {
    Entry e;
    e.iter = true;
    e.src = d;
    out.push_back(e);
  };
  for (int d = 0; d < kept; ++d) add(d);
  Entry e0;
  e0.iter = true;
  e0.row = h;
  out.push_back(e0);
  if (first >= 0) add(first);
  for (int d = kept; d < depth; ++d)
    if (d != elim && d != first) add(d);
  return out;
}

// Whether the hyperplane "h" strictly carries every dependence whose distance set is in
// "deltas" (h . delta >= 1 for each).
bool strictly_carries(const std::vector<long>& h, const isl::union_set& deltas) {
  struct Carry {
    const std::vector<long>* h;
    bool carried = true;
  } carry{&h};
  return isl_union_set_foreach_set(
             deltas.get(),
             [](isl_set* d, void* user) -> isl_stat {
               Carry* c = static_cast<Carry*>(user);
               isl_constraint* k = isl_constraint_alloc_inequality(
                   isl_local_space_from_space(isl_set_get_space(d)));
               for (size_t j = 0; j < c->h->size(); ++j)
                 k = isl_constraint_set_coefficient_si(k, isl_dim_set, static_cast<int>(j),
                                                       static_cast<int>(-(*c->h)[j]));
               d = isl_set_add_constraint(d, k);  // h . delta <= 0
               c->carried = c->carried && isl_set_is_empty(d) == isl_bool_true;
               isl_set_free(d);
               return isl_stat_ok;
             },
             &carry) >= 0 &&
         carry.carried;
}

// A wavefront for the nest of one statement "st" whose isl schedule "flat" starts with a
// hyperplane h over several of its iterators (seidel-2d: 4t + 2i + j): when h strictly
// carries every dependence in "deps" (h . (target - source) >= 1), the instances at one
// value of h . x are independent, so every loop inside it is parallel. The entries: h, then
// each iterator but the innermost one whose coefficient in h is +-1 (so the matrix is
// unimodular), the iterator of the first subscript of the statement's first write first
// (tiles then split the written array's rows: seidel-2d's tile at one wavefront writes rows
// [lo, hi), disjoint from the other tiles'), the others in source order. False when the
// schedule does not start so, or a loop of the statement has a step other than +-1.
bool wavefront_entries(const Scop& s, int st, const isl::map& flat, const isl::union_map& deps,
                       std::vector<Entry>& out) {
  const Statement& x = s.statements[st];
  const int depth = static_cast<int>(x.iterators.size());
  if (depth < 2) return false;
  for (int l : x.loops)
    if (s.loops[l].step != 1 && s.loops[l].step != -1) return false;
  // The first dimension that involves an iterator.
  const std::vector<long> h = leading_row(flat);
  int elim = -1;
  for (int d = 0; d < static_cast<int>(h.size()); ++d)
    if (h[d] == 1 || h[d] == -1) elim = d;
  if (nonzeros(h) < 2 || elim < 0) return false;
  // h strictly carries every dependence of the nest.
  isl::union_map own = deps.intersect_domain(isl::union_set(x.domain)).intersect_range(isl::union_set(x.domain));
  if (!strictly_carries(h, isl::manage(isl_union_map_deltas(own.copy())))) return false;
  // The first write's first subscript.
  out = skewed_entries(h, first_write_dim(s, st, elim), elim, depth);
  return true;
}

// The schedule isl computes for the instances in "dom" under the dependences "deps" (validity
// and coincidence; proximity: "proximity"), as a flat map; throws when isl fails (a quota
// surfaces as a NULL: run_within_isl_budget tells it from a real failure).
isl::union_map isl_schedule_map(const isl::union_set& dom, const isl::union_map& deps,
                                const isl::union_map& proximity) {
  isl_ctx* ctx = dom.ctx().get();
  isl_schedule_constraints* sc = isl_schedule_constraints_on_domain(dom.copy());
  sc = isl_schedule_constraints_set_validity(sc, deps.copy());
  sc = isl_schedule_constraints_set_coincidence(sc, deps.copy());
  sc = isl_schedule_constraints_set_proximity(sc, proximity.copy());
  const int outer = isl_options_get_schedule_outer_coincidence(ctx);
  isl_options_set_schedule_outer_coincidence(ctx, 1);
  isl_schedule* sched = isl_schedule_constraints_compute_schedule(sc);
  isl_options_set_schedule_outer_coincidence(ctx, outer);
  if (!sched) throw std::runtime_error("reschedule: isl's scheduler failed");
  if (std::getenv("BBMM_RESCHEDULE_DEBUG")) {
    char* t = isl_schedule_to_str(sched);
    std::cerr << "isl schedule:\n" << t << "\n";
    free(t);
  }
  isl::union_map flat = isl::manage(isl_schedule_get_map(sched));
  isl_schedule_free(sched);
  return flat;
}

// A wavefront inside the outer loops of a one-statement nest (seidel-2d: each time step t
// swept by the hyperplane 2i + j). For p = 1, 2, ... outer loops (at least two loops left
// inside): when the dependences between instances of one iteration of the outer loops
// (distance 0 on them) are uniform (finitely many distances), they go to isl's scheduler over the inner iterators alone (the outer ones made
// parameters); when its first row h involves several inner iterators, one of them with a
// coefficient of +-1, and strictly carries every such dependence, the instances at one
// value of the outer loops and of h are independent. The entries: the p outer iterators as
// they are (every dependence they carry stays carried), h, then the first write's first
// subscript's iterator (the loop tiles split), then the other inner iterators but the
// innermost one with a coefficient of +-1 in h (so the matrix is unimodular). False when no
// p gives one, or a loop of the statement has a step other than +-1.
bool inner_wavefront_entries(const Scop& s, int st, const isl::union_map& deps,
                             std::vector<Entry>& out) {
  const Statement& x = s.statements[st];
  const int depth = static_cast<int>(x.iterators.size());
  for (int l : x.loops)
    if (s.loops[l].step != 1 && s.loops[l].step != -1) return false;
  isl::union_set udom(x.domain);
  isl::union_map own = deps.intersect_domain(udom).intersect_range(udom);
  if (own.is_empty()) return false;
  isl_space* msp = isl_space_map_from_set(isl_set_get_space(x.domain.get()));
  isl::map all = isl::manage(isl_union_map_extract_map(own.get(), msp));
  for (int p = 1; p + 2 <= depth; ++p) {
    isl_map* eq = isl_map_universe(isl_map_get_space(all.get()));
    for (int d = 0; d < p; ++d) eq = isl_map_equate(eq, isl_dim_in, d, isl_dim_out, d);
    isl::map inner = all.intersect(isl::manage(eq));
    if (inner.is_empty()) continue;
    // Uniform dependences only (Lamport's hyperplane method): finitely many distances over
    // every parameter value. Floyd-Warshall's row and column k are read at every distance
    // (0, j - k) within a step k: a wavefront would be legal there but make 2n phases of
    // each step, where the note and '#pragma bbmm parallel' give the real parallel loop.
    isl_set* dist = isl_map_deltas(inner.copy());
    dist = isl_set_project_out(dist, isl_dim_param, 0, isl_set_dim(dist, isl_dim_param));
    const bool uniform = isl_set_is_bounded(dist) == isl_bool_true;
    isl_set_free(dist);
    if (!uniform) continue;
    // The outer iterators as parameters of fresh names, in the domain and the dependences.
    isl_set* dom = x.domain.copy();
    isl_map* dep = isl_map_project_out(inner.copy(), isl_dim_out, 0, p);
    for (int d = 0; d < p; ++d) {
      const std::string name = "bbmm_outer" + std::to_string(d);
      dom = isl_set_set_dim_name(dom, isl_dim_set, d, name.c_str());
      dep = isl_map_set_dim_name(dep, isl_dim_in, d, name.c_str());
    }
    const int np = static_cast<int>(isl_set_dim(dom, isl_dim_param));
    dom = isl_set_move_dims(dom, isl_dim_param, np, isl_dim_set, 0, p);
    dep = isl_map_move_dims(dep, isl_dim_param, np, isl_dim_in, 0, p);
    isl::set pdom = isl::manage(dom);
    isl::map pdep = isl::manage(dep).intersect_domain(pdom).intersect_range(pdom);
    isl::union_map flat = isl_schedule_map(isl::union_set(pdom), isl::union_map(pdep),
                                           isl::union_map(pdep));
    const std::vector<isl::map> maps = sorted_maps(flat);
    if (maps.size() != 1) continue;
    const std::vector<long> hi = leading_row(maps[0]);
    if (nonzeros(hi) < 2) continue;
    std::vector<long> h(p, 0);
    h.insert(h.end(), hi.begin(), hi.end());
    int elim = -1;
    for (int d = p; d < depth; ++d)
      if (h[d] == 1 || h[d] == -1) elim = d;
    if (elim < 0) continue;
    if (!strictly_carries(h, isl::manage(isl_union_map_deltas(isl::union_map(inner).release())))) continue;
    int first = first_write_dim(s, st, elim);
    if (first < p) first = -1;
    out = skewed_entries(h, first, elim, depth, p);
    return true;
  }
  return false;
}

// A wavefront for a nest of several statements (nussinov: the DP table filled one
// diagonal j - i at a time) whose isl schedule starts, for some statement, with a
// hyperplane h over loops that every statement of the nest runs in, with unit
// coefficients (h . x with each coefficient in {-1, 0, 1}: the wavefront's bounds need no
// division). Every statement gets h over its own iterators, then the iterator of the first
// subscript of its first write (the loop tiles split), then its other iterators in source
// order, leaving out one loop of h whose coefficient is +-1 (the same for all, so each
// matrix is unimodular). The instances of one wavefront need not be independent here
// (statements of one element follow each other inside it): whether the loop inside h is
// parallel is the dependence analysis's verdict on the new nest, and the legality check
// (respects_dependences) refuses a wrong order. False when no statement's schedule starts
// so, a loop of h is missing from a statement, or a loop has a step other than +-1.
bool nest_wavefront_entries(const Scop& s, const std::vector<int>& stmts,
                            const isl::union_map& flat, std::map<int, std::vector<Entry>>& out) {
  std::map<int, long> h;  // loop id -> coefficient
  for (const isl::map& m : sorted_maps(flat)) {
    const char* name = isl_map_get_tuple_name(m.get(), isl_dim_in);
    const int st = s.statement_index(name ? name : "");
    if (st < 0) return false;
    const std::vector<long> row = leading_row(m);
    if (nonzeros(row) < 2) continue;
    for (size_t d = 0; d < row.size(); ++d)
      if (row[d] != 0) h[s.statements[st].loops[d]] = row[d];
    break;
  }
  if (h.empty()) return false;
  int elim_loop = -1;
  for (auto [l, c] : h) {
    if (c < -1 || c > 1) return false;
    if (elim_loop < 0 || s.loops[l].depth > s.loops[elim_loop].depth) elim_loop = l;  // innermost
  }
  for (int st : stmts) {
    const Statement& x = s.statements[st];
    for (int l : x.loops)
      if (s.loops[l].step != 1 && s.loops[l].step != -1) return false;
    const int depth = static_cast<int>(x.iterators.size());
    std::vector<long> row(depth, 0);
    int elim = -1, found = 0;
    for (int d = 0; d < depth; ++d) {
      auto it = h.find(x.loops[d]);
      if (it == h.end()) continue;
      row[d] = it->second;
      ++found;
      if (x.loops[d] == elim_loop) elim = d;
    }
    if (found != static_cast<int>(h.size()) || elim < 0) return false;
    out[st] = skewed_entries(row, first_write_dim(s, st, elim), elim, depth);
  }
  return true;
}

// isl's schedule for the statements "stmts" of "s" as a loop tree; false when refused.
// "inner" gets (statement, outer loops) of each wavefront inside outer loops.
bool schedule_nest(const Scop& s, const std::vector<int>& stmts, bool wavefront,
                   std::vector<TNode>& out, std::vector<std::pair<int, int>>& inner) {
  isl::ctx ctx = s.context.ctx();
  isl::union_set dom = isl::union_set::empty(ctx);
  for (int st : stmts) dom = dom.unite(isl::union_set(s.statements[st].domain));
  isl::union_map raw = untagged(s.deps.raw).intersect_domain(dom).intersect_range(dom);
  isl::union_map all = raw.unite(untagged(s.deps.war)).unite(untagged(s.deps.waw));
  all = all.intersect_domain(dom).intersect_range(dom);
  isl::union_map flat = isl_schedule_map(dom, all, raw);
  std::map<int, std::vector<Entry>> entries;
  for (const isl::map& m : sorted_maps(flat)) {
    const char* name = isl_map_get_tuple_name(m.get(), isl_dim_in);
    const int st = s.statement_index(name ? name : "");
    if (st < 0) return false;
    if (!flat_entries(s.statements[st], m, entries[st])) {
      entries[st].clear();
      if (wavefront && stmts.size() == 1 && wavefront_entries(s, st, m, all, entries[st])) continue;
      entries[st].clear();
      if (stmts.size() == 1 && inner_wavefront_entries(s, st, all, entries[st])) {
        int outer = 0;
        while (entries[st][outer].row.empty()) ++outer;
        inner.push_back({st, outer});
        continue;
      }
      if (stmts.size() > 1 && nest_wavefront_entries(s, stmts, flat, entries)) break;
      if (std::getenv("BBMM_RESCHEDULE_DEBUG")) std::cerr << "refused: " << str(m) << "\n";
      return false;
    }
  }
  for (int st : stmts)
    if (!entries.count(st)) return false;
  const bool built = Rebuilder(s).build(entries, stmts, 0, out);
  if (!built && std::getenv("BBMM_RESCHEDULE_DEBUG")) std::cerr << "refused: no loop tree\n";
  return built;
}

// Whether every dependence of "src" goes forward in "out"'s schedule.
bool respects_dependences(const Scop& src, const Scop& out) {
  isl::ctx ctx = src.context.ctx();
  isl::union_map time = isl::union_map::empty(ctx);
  for (const Statement& st : out.statements) {
    const Statement& old = src.statements[st.index];
    std::vector<int> dims(st.loops.size());
    for (size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int>(d);
    isl::map perm;
    if (!st.source_rows.empty()) {
      // Skewed (and tiled): the new dimensions of each source instance, through the
      // inverse of source_rows on the new domain.
      time = time.unite(isl::union_map(source_map(st).reverse().apply_range(st.schedule)));
      continue;
    }
    if (!st.to_source.empty()) {
      // Source dimension at new d: to_source relative to the source model (identity there).
      for (size_t d = 0; d < dims.size(); ++d) dims[d] = st.to_source[d];
    }
    perm = Rebuilder::permutation(old, dims);
    time = time.unite(isl::union_map(perm.apply_range(st.schedule)));
  }
  isl::union_map deps = untagged(src.deps.raw).unite(untagged(src.deps.war)).unite(untagged(src.deps.waw));
  isl::union_map d = deps.apply_domain(time).apply_range(time);
  isl_space* sp = isl_space_set_alloc(ctx.get(), 0, out.schedule_dims);
  isl::union_map lt = isl::union_map(isl::manage(isl_map_lex_lt(sp)));
  return d.is_subset(lt);
}

}  // namespace

bool reschedule_nests_unchecked(const Scop& scop, const std::vector<int>& nests, Scop& out,
                                bool wavefront, const WavefrontTiles& tiles) {
  std::vector<TNode> top;
  std::vector<std::pair<int, int>> inner;
  bool any = false;
  for (size_t t = 0; t < scop.body.size(); ++t) {
    const Node& n = scop.body[t];
    if (n.is_loop && std::find(nests.begin(), nests.end(), static_cast<int>(t)) != nests.end()) {
      std::vector<TNode> repl;
      if (schedule_nest(scop, scop.loops[n.index].statements, wavefront, repl, inner)) {
        top.insert(top.end(), repl.begin(), repl.end());
        any = true;
        continue;
      }
    }
    top.push_back(kept(scop, n));
  }
  if (!any) return false;
  out = scop;
  Rebuilder(scop).rewrite(top, out);
  if (!inner.empty()) {
    const isl::union_map deps =
        untagged(scop.deps.raw).unite(untagged(scop.deps.war)).unite(untagged(scop.deps.waw));
    for (auto [st, outer] : inner) {
      std::string why;
      if (!tile_wavefront(out, st, outer, deps, tiles, &why) && std::getenv("BBMM_RESCHEDULE_DEBUG"))
        std::cerr << "wavefront of " << out.statements[st].name << " not tiled: " << why << "\n";
    }
  }
  if (!respects_dependences(scop, out)) {
    if (std::getenv("BBMM_RESCHEDULE_DEBUG")) std::cerr << "refused: a dependence goes back\n";
    return false;
  }
  compute_dependences(out);
  return true;
}

bool reschedule(Scop& scop, IslContext& isl, Diagnostics& diag, bool wavefront,
                const WavefrontTiles& tiles) {
  // Candidate nests: top-level loops with a statement in a serial region and no asserted
  // loop. (Nests whose statements all have a parallel loop already are left alone: making
  // an outer loop parallel there, as in symm, widens each tile's boxes, and small devices
  // that held a tile no longer do.)
  std::vector<int> candidates;
  for (size_t t = 0; t < scop.body.size(); ++t) {
    const Node& n = scop.body[t];
    if (!n.is_loop) continue;
    bool serial = false, asserted = false;
    for (int st : scop.loops[n.index].statements) {
      serial = serial || (in_serial_region(scop, st) && serial_depth(scop, st) > 0);
      for (int l : scop.statements[st].loops) asserted = asserted || scop.loops[l].asserted_parallel;
    }
    if (serial && !asserted) candidates.push_back(static_cast<int>(t));
  }
  if (candidates.empty()) return false;
  // isl's scheduler is the costliest pass on some nests it cannot help (adi: 0.6 s for a
  // schedule the acceptance rule refuses), so it gets a smaller budget than the others;
  // the kernels it helps need less than 100,000 operations.
  const unsigned long budget = isl.budget();
  isl.set_budget(budget == 0 ? 0 : std::min(budget, kRescheduleOperations));
  bool changed = false;
  std::unique_ptr<Scop> next;  // isl's C++ objects cannot be copied while null
  const bool within = run_within_isl_budget(isl, [&] {
    // Drop the nests that do not gain until the rest all do.
    while (!candidates.empty()) {
      next = std::make_unique<Scop>(scop);
      if (!reschedule_nests_unchecked(scop, candidates, *next, wavefront, tiles)) {
        // Some nest's schedule was refused: try the nests one at a time.
        if (candidates.size() == 1) return;
        std::vector<int> good;
        for (int c : candidates) {
          Scop one = scop;
          if (reschedule_nests_unchecked(scop, {c}, one, wavefront, tiles)) good.push_back(c);
        }
        if (good.size() == candidates.size()) return;  // each alone, not together: give up
        candidates = good;
        continue;
      }
      std::vector<int> worse;
      for (int c : candidates) {
        bool grows = false, shrinks = false;
        for (int st : scop.loops[scop.body[c].index].statements) {
          const int before = serial_depth(scop, st), after = serial_depth(*next, st);
          grows = grows || after > before;
          shrinks = shrinks || (after < before && in_serial_region(scop, st));
        }
        if (grows || !shrinks) worse.push_back(c);
      }
      if (worse.empty()) {
        changed = true;
        return;
      }
      for (int c : worse) candidates.erase(std::find(candidates.begin(), candidates.end(), c));
    }
  });
  const unsigned long spent_limit = isl.budget();
  isl.set_budget(budget);
  if (!within) {
    auto b = diag.note(scop.begin_loc);
    b << "scop";
    if (!scop.function.empty()) b << " in function '" << scop.function << "'";
    b << " keeps its source schedule: finding a parallel one with isl's scheduler needs more "
         "than "
      << spent_limit << " isl operations";
    return false;
  }
  if (changed) scop = *next;
  return changed;
}

}  // namespace bbmm::compiler
