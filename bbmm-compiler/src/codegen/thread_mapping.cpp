#include "codegen/thread_mapping.h"

#include <isl/aff.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/union_map.h>

#include <algorithm>
#include <cstdlib>

#include "codegen/c_printer.h"
#include "codegen/loop_ast.h"
#include "poly/isl_util.h"
#include "poly/within.h"

namespace bbmm::compiler {
namespace {

// The coefficient of input dimension "in" in output dimension "out" of the single-valued
// affine relation "rel", or 0 when it is not one affine piece.
long coefficient(const isl::map& rel, int out, int in) {
  isl_pw_multi_aff* pma = isl_pw_multi_aff_from_map(rel.copy());
  if (!pma) return 0;
  isl_pw_aff* pa = isl_pw_multi_aff_get_pw_aff(pma, out);
  isl_pw_multi_aff_free(pma);
  long result = 0;
  if (pa && isl_pw_aff_n_piece(pa) == 1) {
    struct Found {
      int in;
      long value;
    } found{in, 0};
    isl_pw_aff_foreach_piece(
        pa,
        [](isl_set* set, isl_aff* aff, void* user) -> isl_stat {
          auto* f = static_cast<Found*>(user);
          isl_val* v = isl_aff_get_coefficient_val(aff, isl_dim_in, f->in);
          if (v && isl_val_is_int(v)) f->value = isl_val_get_num_si(v);
          isl_val_free(v);
          isl_set_free(set);
          isl_aff_free(aff);
          return isl_stat_ok;
        },
        &found);
    result = found.value;
  }
  isl_pw_aff_free(pa);
  return result;
}

// The candidate loops of statement "s" for the grid, in order (see thread_mapping.h).
std::vector<int> candidates(const Scop& scop, const Phase& ph, int s) {
  const Statement& st = scop.statements[s];
  const int ns = static_cast<int>(ph.serial_loops.size());
  const int depth = static_cast<int>(st.loops.size());
  std::vector<int> r;
  auto used = [&](int loop) { return std::find(r.begin(), r.end(), loop) != r.end(); };
  for (int a : st.accesses) {
    const Access& acc = scop.accesses[a];
    // Writes in memory (a private array's are thread-local).
    if (acc.kind != AccessKind::kWrite || scop.arrays[acc.array].is_scalar ||
        !scop.in_memory(a)) {
      continue;
    }
    const int rank = static_cast<int>(isl_map_dim(acc.relation.get(), isl_dim_out));
    for (int d = rank - 1; d >= 0; --d) {
      // The innermost loop with a unit coefficient, else any nonzero one.
      int best = -1;
      bool unit = false;
      for (int k = depth - 1; k >= ns; --k) {
        const int loop = st.loops[k];
        if (used(loop)) continue;
        const long c = coefficient(acc.relation, d, k);
        if (c == 0) continue;
        const bool u = std::labs(c) == 1;
        if (best < 0 || (u && !unit)) {
          best = loop;
          unit = u;
        }
      }
      if (best >= 0) r.push_back(best);
    }
    break;  // the first write
  }
  if (ph.parallel_loop >= 0 && !used(ph.parallel_loop) &&
      std::find(st.loops.begin(), st.loops.end(), ph.parallel_loop) != st.loops.end()) {
    r.push_back(ph.parallel_loop);
  }
  return r;
}

// Whether, in a tile of "phase", the coordinate of each statement's last loop in "loops"
// (one list per statement of the phase) is a function of its other loops' coordinates: a
// grid dimension for it would only add threads without instances (a tiled wavefront's
// block row of one row, r = i: a grid over both is a square of threads of which one
// diagonal works).
bool determined(const Scop& scop, const ScopBoxes& boxes, int phase, const KernelSignature& sig,
                const std::vector<std::vector<int>>& loops) {
  const Phase& ph = scop.phases[phase];
  for (size_t i = 0; i < ph.statements.size(); ++i) {
    const int s = ph.statements[i];
    const Statement& st = scop.statements[s];
    if (loops[i].size() < 2) return false;
    isl_set* dom = tile_domain(scop, boxes, phase, sig, s).release();
    const int depth = static_cast<int>(isl_set_dim(dom, isl_dim_set));
    // [mapped dims] -> [last]: every other dimension projected out.
    std::vector<int> keep;
    for (int l : loops[i]) keep.push_back(split_dim(st, {l}));
    isl_map* m = isl_map_from_domain(dom);
    for (int d = depth - 1; d >= 0; --d) {
      if (std::find(keep.begin(), keep.end(), d) == keep.end())
        m = isl_map_project_out(m, isl_dim_in, d, 1);
    }
    // The input dimensions are now the kept ones in increasing order; move the last
    // mapped one to the output.
    std::vector<int> sorted = keep;
    std::sort(sorted.begin(), sorted.end());
    const int pos = static_cast<int>(std::find(sorted.begin(), sorted.end(), keep.back()) - sorted.begin());
    m = isl_map_move_dims(m, isl_dim_out, 0, isl_dim_in, pos, 1);
    const bool single = isl_map_is_single_valued(m) == isl_bool_true;
    isl_map_free(m);
    if (!single) return false;
  }
  return !ph.statements.empty();
}

}  // namespace

std::string grid_param(int d) { return "bbmm_g" + std::to_string(d); }

ThreadMapping map_threads(const Scop& scop, const ScopBoxes& boxes, int phase,
                          const KernelSignature& sig, int max_dims) {
  const Phase& ph = scop.phases[phase];
  ThreadMapping m;
  m.loops.assign(ph.statements.size(), {});
  // Each round maps one grid dimension: every statement's next candidate, else the
  // phase's parallel loop for every statement; a round that finds neither legal drops
  // the statements' next candidates and tries again.
  std::vector<std::vector<int>> cand;
  for (int s : ph.statements) cand.push_back(candidates(scop, ph, s));
  // The loops around every statement of the phase, inside its serial loops: the
  // parallel loop first, then the others innermost first.
  std::vector<int> common;
  if (ph.parallel_loop >= 0) common.push_back(ph.parallel_loop);
  if (!ph.statements.empty()) {
    const std::vector<int>& first = scop.statements[ph.statements[0]].loops;
    for (size_t k = first.size(); k-- > ph.serial_loops.size();) {
      const int loop = first[k];
      bool everywhere = loop != ph.parallel_loop;
      for (int s : ph.statements) {
        const std::vector<int>& sl = scop.statements[s].loops;
        everywhere = everywhere && std::find(sl.begin(), sl.end(), loop) != sl.end();
      }
      if (everywhere) common.push_back(loop);
    }
  }
  std::vector<std::string> skipped;
  auto unused = [&](size_t i, int loop) {
    return std::find(m.loops[i].begin(), m.loops[i].end(), loop) == m.loops[i].end();
  };
  // A wavefront's region (poly/block_wavefronts.h) has no grid: one block runs it.
  while (m.dims < max_dims && !ph.statements.empty() && ph.block_loop < 0) {
    // Drop what is mapped already.
    bool exhausted = false;
    for (size_t i = 0; i < cand.size(); ++i) {
      cand[i].erase(std::remove_if(cand[i].begin(), cand[i].end(),
                                   [&](int l) { return !unused(i, l); }),
                    cand[i].end());
      exhausted = exhausted || cand[i].empty();
    }
    std::vector<std::vector<int>> trial = m.loops;
    bool ok = false;
    if (!exhausted) {
      for (size_t i = 0; i < trial.size(); ++i) trial[i].push_back(cand[i][0]);
      ok = dependences_within(scop, ph, trial);
    }
    // Else a loop around every statement: the phase's parallel loop, then the others
    // inside the serial loops, innermost first (doitgen's q, around statements whose
    // only writes are to a private array).
    for (size_t c = 0; !ok && c < common.size(); ++c) {
      trial = m.loops;
      bool fresh = true;
      for (size_t i = 0; i < trial.size(); ++i) {
        fresh = fresh && unused(i, common[c]);
        trial[i].push_back(common[c]);
      }
      ok = fresh && dependences_within(scop, ph, trial);
    }
    if (ok && m.dims > 0 && determined(scop, boxes, phase, sig, trial)) {
      // Legal but one value per thread already: it runs inside the thread.
      ok = false;
      exhausted = true;
    }
    if (ok) {
      m.loops = trial;
      ++m.dims;
      continue;
    }
    if (exhausted) break;
    skipped.push_back(scop.loops[cand[0][0]].c_name);
    for (std::vector<int>& c : cand) c.erase(c.begin());
  }

  // The hull of each grid coordinate over the tile, and what a thread may assume.
  std::vector<std::string> gp;
  for (int d = 0; d < m.dims; ++d) gp.push_back(grid_param(d));
  const isl::set context = tile_param_context(scop, boxes, phase, sig);
  m.known = tile_param_context(scop, boxes, phase, sig, gp);
  isl::set nonempty;
  for (int d = 0; d < m.dims; ++d) {
    isl::set vals;
    for (size_t i = 0; i < ph.statements.size(); ++i) {
      const int s = ph.statements[i];
      const Statement& st = scop.statements[s];
      const int pos = split_dim(st, {m.loops[i][d]});
      const int depth = static_cast<int>(st.iterators.size());
      isl_set* x = tile_domain(scop, boxes, phase, sig, s).release();
      x = isl_set_project_out(x, isl_dim_set, pos + 1, depth - pos - 1);
      x = isl_set_project_out(x, isl_dim_set, 0, pos);
      x = isl_set_reset_tuple_id(x);
      isl::set v = isl::manage(x);
      vals = vals.is_null() ? v : vals.unite(v);
    }
    vals = vals.coalesce();
    if (nonempty.is_null()) {
      nonempty = isl::manage(isl_set_params(vals.copy())).coalesce();
    }
    isl::pw_aff mn = isl::manage(isl_set_dim_min(vals.copy(), 0));
    isl::pw_aff mx = isl::manage(isl_set_dim_max(vals.copy(), 0));
    // min <= g_d <= max, over the parameters with the grid coordinates.
    isl::pw_aff g(scop.context.ctx(), "[" + join(tile_param_names(sig, gp), ", ") + "] -> { [(" +
                                          gp[d] + ")] }");
    isl_pw_aff* mn_a = isl_pw_aff_align_params(mn.copy(), isl_pw_aff_get_space(g.get()));
    isl_pw_aff* mx_a = isl_pw_aff_align_params(mx.copy(), isl_pw_aff_get_space(g.get()));
    isl_set* in = isl_pw_aff_le_set(mn_a, g.copy());
    in = isl_set_intersect(in, isl_pw_aff_le_set(g.copy(), mx_a));
    m.known = m.known.intersect(isl::manage(in));
    m.lo.push_back(rename_isl_macros(c_expr_from_pw_aff(mn, context)));
    isl_pw_aff* hi = isl_pw_aff_add_constant_val(mx.release(), isl_val_one(scop.context.ctx().get()));
    m.hi.push_back(rename_isl_macros(c_expr_from_pw_aff(isl::manage(hi), context)));
  }
  if (!nonempty.is_null()) {
    m.nonempty = rename_isl_macros(c_condition_from_set(nonempty, context));
    isl::set ne = isl::manage(
        isl_set_align_params(nonempty.copy(), isl_set_get_space(m.known.get())));
    m.known = m.known.intersect(ne);
    // (Only a context: coalescing many pieces costs more than it saves.)
    m.known = isl_set_n_basic_set(m.known.get()) <= kMaxAstContextPieces ? m.known.coalesce()
                                                                          : ast_context(m.known);
  }

  static const char* const kAxis[] = {"x", "y", "z"};
  std::vector<std::string> parts;
  for (int d = 0; d < m.dims; ++d) {
    std::vector<std::string> names;
    for (const std::vector<int>& l : m.loops) {
      const std::string& nm = scop.loops[l[d]].c_name;
      if (std::find(names.begin(), names.end(), nm) == names.end()) names.push_back(nm);
    }
    parts.push_back(std::string(kAxis[d]) + ": " + join(names, "/"));
  }
  m.note = ph.block_loop >= 0 ? "one block runs the tile, its threads sharing " +
                                     scop.loops[ph.block_loop].c_name + " between barriers"
           : m.dims == 0      ? "one thread runs the tile"
                              : join(parts, ", ");
  if (!skipped.empty()) {
    m.note += " (not mapped, a dependence joins different values: " + join(skipped, ", ") + ")";
  }
  return m;
}

}  // namespace bbmm::compiler
