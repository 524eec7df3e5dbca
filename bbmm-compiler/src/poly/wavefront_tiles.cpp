#include "poly/wavefront_tiles.h"

#include <isl/aff.h>
#include <isl/constraint.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/union_map.h>
#include <isl/val.h>

#include <algorithm>
#include <functional>

#include "poly/scalars.h"

namespace bbmm::compiler {
namespace {

// The rows per block: "tiles.rows", else from the constant first extent of the array the
// statement's first write goes to.
int block_rows(const Scop& s, const Statement& x, const WavefrontTiles& tiles) {
  if (tiles.rows > 0) return tiles.rows;
  for (int a : x.accesses) {
    const Access& acc = s.accesses[a];
    if (acc.kind != AccessKind::kWrite) continue;
    const std::vector<int64_t> ext = constant_extents(s.arrays[acc.array]);
    if (ext.empty()) break;
    return static_cast<int>(std::clamp<int64_t>(ext[0] / WavefrontTiles::kBlocksPerExtent, 1,
                                                WavefrontTiles::kMaxRows));
  }
  return WavefrontTiles::kMaxRows;
}

// +1 when every distance in "deltas" along dimension "d" is >= 0, -1 when every one is
// <= 0 (+1 when both: all 0), 0 otherwise.
int distance_sign(const isl::set& deltas, int d) {
  auto empty_with = [&](int sign) {  // deltas with sign * x_d >= 1
    isl_constraint* c = isl_constraint_alloc_inequality(
        isl_local_space_from_space(isl_set_get_space(deltas.get())));
    c = isl_constraint_set_coefficient_si(c, isl_dim_set, d, sign);
    c = isl_constraint_set_constant_si(c, -1);
    isl_set* x = isl_set_add_constraint(deltas.copy(), c);
    const bool e = isl_set_is_empty(x) == isl_bool_true;
    isl_set_free(x);
    return e;
  };
  if (empty_with(-1)) return 1;
  if (empty_with(1)) return -1;
  return 0;
}

// Adds sum coef[k] * out_k + cst >= 0 to "m".
isl_map* add_ge(isl_map* m, const std::vector<std::pair<int, long>>& coef, long cst) {
  isl_constraint* c = isl_constraint_alloc_inequality(isl_local_space_from_space(isl_map_get_space(m)));
  for (auto [k, v] : coef) c = isl_constraint_set_coefficient_si(c, isl_dim_out, k, static_cast<int>(v));
  c = isl_constraint_set_constant_si(c, static_cast<int>(cst));
  return isl_map_add_constraint(m, c);
}

// The loops of "s" renumbered in the order of the tree (parents before children).
void renumber_loops(Scop& s) {
  std::vector<int> order;
  std::function<void(const std::vector<Node>&)> walk = [&](const std::vector<Node>& body) {
    for (const Node& n : body) {
      if (!n.is_loop) continue;
      order.push_back(n.index);
      walk(s.loops[n.index].body);
    }
  };
  walk(s.body);
  std::vector<int> id(s.loops.size(), -1);
  for (size_t k = 0; k < order.size(); ++k) id[order[k]] = static_cast<int>(k);
  std::vector<Loop> loops;
  for (int old : order) {
    Loop l = s.loops[old];
    l.id = id[old];
    l.parent = l.parent < 0 ? -1 : id[l.parent];
    for (Node& n : l.body)
      if (n.is_loop) n.index = id[n.index];
    loops.push_back(std::move(l));
  }
  for (Node& n : s.body)
    if (n.is_loop) n.index = id[n.index];
  for (Statement& st : s.statements)
    for (int& l : st.loops) l = id[l];
  s.loops = std::move(loops);
}

}  // namespace

bool tile_wavefront(Scop& s, int stmt, int outer, const isl::union_map& src_deps,
                    const WavefrontTiles& tiles, std::string* why) {
  Statement& x = s.statements[stmt];
  const int depth = static_cast<int>(x.loops.size());
  auto refuse = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (tiles.steps <= 0) return refuse("wavefront tiles off");
  if (x.source_rows.empty() || outer < 0 || outer + 2 > depth) return refuse("not a skewed nest");
  const int p = outer, f = outer + 1;
  // The dependences of the statement in its new coordinates, inside one iteration of the
  // outer loops.
  const isl::map to_new = source_map(x).reverse();
  isl::union_set own(to_new.domain());
  isl::union_map d = src_deps.intersect_domain(own).intersect_range(own);
  d = d.apply_domain(isl::union_map(to_new)).apply_range(isl::union_map(to_new));
  isl_space* msp = isl_space_map_from_set(isl_set_get_space(x.domain.get()));
  isl_map* inner = isl_union_map_extract_map(d.get(), msp);
  for (int k = 0; k < p; ++k) inner = isl_map_equate(inner, isl_dim_in, k, isl_dim_out, k);
  const isl::set deltas = isl::manage(isl_map_deltas(inner));
  const int sign = distance_sign(deltas, f);
  if (sign == 0) return refuse("dependences go both ways along the loop inside the wavefront");
  const long rows = block_rows(s, x, tiles), steps = tiles.steps;

  // S[o.., h, i, ..] -> S[o.., T, r, h, i, ..]: R r <= s i <= R r + R - 1 and
  // W (T - r) <= h <= W (T - r) + W - 1.
  isl_map* m = isl_map_identity(isl_space_map_from_set(isl_set_get_space(x.domain.get())));
  m = isl_map_insert_dims(m, isl_dim_out, p, 2);
  const int T = p, R = p + 1, H = p + 2, I = p + 3;
  m = add_ge(m, {{I, sign}, {R, -rows}}, 0);
  m = add_ge(m, {{R, rows}, {I, -sign}}, rows - 1);
  m = add_ge(m, {{H, 1}, {T, -steps}, {R, steps}}, 0);
  m = add_ge(m, {{T, steps}, {R, -steps}, {H, -1}}, steps - 1);

  // The loops T and r above h.
  const int h_loop = x.loops[p];
  const int t_id = static_cast<int>(s.loops.size()), r_id = t_id + 1;
  Loop lt, lr;
  for (Loop* l : {&lt, &lr}) {
    const Loop& h = s.loops[h_loop];
    l->iterator = "bbmm_it" + std::to_string(l == &lt ? t_id : r_id);
    l->c_name = l->iterator;
    l->step = 1;
    l->loc = h.loc;
    l->ast = h.ast;
    l->statements = h.statements;
  }
  lt.id = t_id;
  lt.parent = s.loops[h_loop].parent;
  lt.depth = p;
  lt.body = {Node{true, r_id}};
  lr.id = r_id;
  lr.parent = t_id;
  lr.depth = p + 1;
  lr.body = {Node{true, h_loop}};
  std::vector<Node>& around = lt.parent < 0 ? s.body : s.loops[lt.parent].body;
  for (Node& n : around)
    if (n.is_loop && n.index == h_loop) n.index = t_id;
  s.loops[h_loop].parent = r_id;
  for (int k = p; k < depth; ++k) s.loops[x.loops[k]].depth += 2;
  const std::string t_name = lt.iterator, r_name = lr.iterator;
  s.loops.push_back(std::move(lt));
  s.loops.push_back(std::move(lr));

  x.loops.insert(x.loops.begin() + p, {t_id, r_id});
  x.iterators.insert(x.iterators.begin() + p, {t_name, r_name});
  for (std::vector<long>& row : x.source_rows) row.insert(row.begin() + p, {0, 0});
  m = isl_map_set_tuple_name(m, isl_dim_out, isl_set_get_tuple_name(x.domain.get()));
  for (int k = 0; k < depth + 2; ++k)
    m = isl_map_set_dim_name(m, isl_dim_out, k, x.iterators[k].c_str());
  map_statement(s, x, isl::manage(m));
  renumber_loops(s);
  rebuild_schedules(s);
  return true;
}

}  // namespace bbmm::compiler
