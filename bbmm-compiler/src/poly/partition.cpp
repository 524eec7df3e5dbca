#include "poly/partition.h"

#include <isl/aff.h>
#include <isl/constraint.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "poly/box_util.h"
#include "poly/within.h"

namespace bbmm::compiler {

namespace {

int param_pos(isl_space* sp, const std::string& name) {
  return isl_space_find_dim_by_name(sp, isl_dim_param, name.c_str());
}

// "s" with the constraint sum(coef * x) + cst >= 0 over set dims / params.
isl::set add_ineq(isl::set s, const std::vector<std::pair<int, int>>& set_coefs,
                  const std::vector<std::pair<std::string, int>>& param_coefs, int cst) {
  isl_space* sp = isl_set_get_space(s.get());
  isl_constraint* c = isl_constraint_alloc_inequality(isl_local_space_from_space(isl_space_copy(sp)));
  for (auto [d, k] : set_coefs) c = isl_constraint_set_coefficient_si(c, isl_dim_set, d, k);
  for (auto& [n, k] : param_coefs) {
    int p = param_pos(sp, n);
    if (p < 0) {
      isl_space_free(sp);
      isl_constraint_free(c);
      throw std::logic_error("boxes: missing parameter " + n);
    }
    c = isl_constraint_set_coefficient_si(c, isl_dim_param, p, k);
  }
  c = isl_constraint_set_constant_si(c, cst);
  isl_space_free(sp);
  return isl::manage(isl_set_add_constraint(s.release(), c));
}

// The dimension of "st" split by dimension k of "frame"; a statement outside the split
// loops is a bug of the partition pass.
int frame_dim(const Statement& st, const TileFrame& frame, size_t k) {
  const int x = split_dim(st, frame.part_loops[k]);
  if (x < 0) throw std::logic_error("partition: statement " + st.name + " lies in no split loop");
  return x;
}

}  // namespace

int split_dim(const Statement& st, const std::vector<int>& loops) {
  for (size_t d = st.loops.size(); d-- > 0;)
    if (std::find(loops.begin(), loops.end(), st.loops[d]) != loops.end()) return static_cast<int>(d);
  return -1;
}

isl::set tile_instances(const Statement& stmt, const TileFrame& frame, bool with_tile) {
  isl::set d = stmt.domain;
  for (const std::string& n : frame.serial_names) d = add_param(d, n);
  if (with_tile)
    for (size_t k = 0; k < frame.part_loops.size(); ++k) {
      d = add_param(d, frame.lo_params[k]);
      d = add_param(d, frame.hi_params[k]);
    }
  for (size_t i = 0; i < frame.serial_names.size(); ++i) {
    int p = isl_set_find_dim_by_name(d.get(), isl_dim_param, frame.serial_names[i].c_str());
    d = isl::manage(isl_set_equate(d.release(), isl_dim_param, p, isl_dim_set, i));
  }
  if (with_tile)
    for (size_t k = 0; k < frame.part_loops.size(); ++k) {
      int x = frame_dim(stmt, frame, k);
      d = add_ineq(d, {{x, 1}}, {{frame.lo_params[k], -1}}, 0);   // x - lo >= 0
      d = add_ineq(d, {{x, -1}}, {{frame.hi_params[k], 1}}, -1);  // hi - x - 1 >= 0
    }
  return d;
}

isl::set outside_instances(const Statement& stmt, const TileFrame& frame) {
  isl::set u = stmt.domain;
  for (size_t k = 0; k < frame.part_loops.size(); ++k) {
    u = add_param(u, frame.lo_params[k]);
    u = add_param(u, frame.hi_params[k]);
  }
  isl::set out = isl::manage(isl_set_empty(isl_set_get_space(u.get())));
  for (size_t k = 0; k < frame.part_loops.size(); ++k) {
    int x = frame_dim(stmt, frame, k);
    out = out.unite(add_ineq(u, {{x, -1}}, {{frame.lo_params[k], 1}}, -1));  // lo - x - 1 >= 0
    out = out.unite(add_ineq(u, {{x, 1}}, {{frame.hi_params[k], -1}}, 0));   // x - hi >= 0
  }
  return out.coalesce();
}

std::vector<std::string> serial_names(const Scop& scop, const Phase& phase) {
  std::vector<std::string> names;
  for (int l : phase.serial_loops) {
    const Loop& L = scop.loops[l];
    std::string n = L.c_name.empty() ? L.iterator : L.c_name;
    // Nested loops reusing a C name keep their (unique) isl names.
    if (std::find(names.begin(), names.end(), n) != names.end()) n = L.iterator;
    names.push_back(n);
  }
  return names;
}

std::vector<std::vector<int>> partition_loops(const Scop& scop, int p, bool two_d, std::string& note) {
  const Phase& ph = scop.phases[p];
  if (ph.parallel_loop < 0) return {};
  std::vector<std::vector<int>> loops{{ph.parallel_loop}};
  if (!two_d) return loops;
  const Loop& outer = scop.loops[ph.parallel_loop];
  // Per statement, the outermost parallel loop nested in the outer one, else the outer one.
  std::vector<int> inner;
  std::vector<std::vector<int>> chosen;
  std::string without;  // the first statement in no such loop
  for (int s : ph.statements) {
    const Statement& st = scop.statements[s];
    int pick = -1;
    for (size_t d = outer.depth + 1; d < st.loops.size() && pick < 0; ++d)
      if (scop.loops[st.loops[d]].verdict.parallel) pick = st.loops[d];
    if (pick < 0) {
      pick = ph.parallel_loop;
      if (without.empty()) without = st.name;
    }
    chosen.push_back({ph.parallel_loop, pick});
    if (std::find(inner.begin(), inner.end(), pick) == inner.end()) inner.push_back(pick);
  }
  if (inner.size() == 1 && inner[0] == ph.parallel_loop) {
    note = "2-D asked, but " + without + " lies in no parallel loop nested in " + outer.iterator;
    return loops;
  }
  // A statement's coordinate is the innermost of the loops split that encloses it: it must
  // be its own pick (else two picks would be nested in one another).
  for (size_t i = 0; i < ph.statements.size(); ++i) {
    const Statement& st = scop.statements[ph.statements[i]];
    const int d = split_dim(st, inner);
    if (d < 0 || st.loops[d] != chosen[i][1]) {
      note = "2-D asked, but the parallel loops nested in " + outer.iterator + " are nested in one another";
      return loops;
    }
  }
  if ((inner.size() > 1 || !without.empty()) && !dependences_within(scop, ph, chosen)) {
    note = "2-D asked, but a dependence joins different iterations of the loops nested in " + outer.iterator;
    return loops;
  }
  loops.push_back(inner);
  return loops;
}

namespace {

// The arrays in memory that some tile of phase "p", one iteration wide along every
// dimension that "loops" split, accesses whole (every element that any such tile
// accesses), with the scop parameters fixed to "params" (a value for each).
std::set<int> arrays_accessed_whole(const Scop& scop, int p, const std::vector<std::vector<int>>& loops,
                                    const std::map<std::string, int64_t>& params) {
  const TileFrame f = make_frame(scop, p, loops);
  std::map<int, isl::set> image;
  for (int s : scop.phases[p].statements) {
    const isl::set inst = tile_instances(scop.statements[s], f);
    for (int a : scop.statements[s].accesses) {
      const Access& acc = scop.accesses[a];
      if (!scop.in_memory(a) || scop.arrays[acc.array].is_scalar) continue;
      isl::set img = inst.apply(scop.memory_relation(a));
      auto it = image.find(acc.array);
      if (it == image.end()) image.emplace(acc.array, img);
      else it->second = it->second.unite(img);
    }
  }
  std::set<int> whole;
  for (auto& [array, img] : image) {
    isl::set s = img;
    for (const std::string& n : scop.params) {
      const int pos = isl_set_find_dim_by_name(s.get(), isl_dim_param, n.c_str());
      if (pos >= 0) s = isl::manage(isl_set_fix_si(s.release(), isl_dim_param, pos, params.at(n)));
    }
    // hi = lo + 1 per dimension; then the map lo... -> elements.
    for (size_t k = 0; k < f.lo_params.size(); ++k) {
      const std::string& lo = f.lo_params[k];
      const std::string& hi = f.hi_params[k];
      s = add_ineq(add_ineq(s, {}, {{hi, 1}, {lo, -1}}, -1), {}, {{hi, -1}, {lo, 1}}, 1);
      const int pos = isl_set_find_dim_by_name(s.get(), isl_dim_param, hi.c_str());
      s = isl::manage(isl_set_project_out(s.release(), isl_dim_param, pos, 1));
    }
    isl_map* m = isl_map_from_range(s.release());
    for (size_t k = 0; k < f.lo_params.size(); ++k) {
      const int pos = isl_map_find_dim_by_name(m, isl_dim_param, f.lo_params[k].c_str());
      m = isl_map_move_dims(m, isl_dim_in, k, isl_dim_param, pos, 1);
    }
    isl::map tile_to_elements = isl::manage(m);
    isl::set tiles = tile_to_elements.domain();
    isl::set any = tile_to_elements.range();
    isl::map missing = isl::manage(isl_map_from_domain_and_range(tiles.copy(), any.copy()))
                           .subtract(tile_to_elements);
    if (!tiles.subtract(missing.domain()).is_empty()) whole.insert(array);
  }
  return whole;
}

}  // namespace

std::vector<std::vector<int>> auto_partition_loops(const Scop& scop, int p,
                                                   const std::map<std::string, int64_t>& params,
                                                   std::string& why) {
  std::string note;
  std::vector<std::vector<int>> one = partition_loops(scop, p, false, note);
  if (one.empty() || !scop.phases[p].serial_loops.empty()) return one;
  std::vector<std::vector<int>> two = partition_loops(scop, p, true, note);
  if (two.size() != 2) return one;
  const std::set<int> whole1 = arrays_accessed_whole(scop, p, one, params);
  if (whole1.empty()) return one;
  const std::set<int> whole2 = arrays_accessed_whole(scop, p, two, params);
  for (int a : whole1) {
    // A vector read whole (gemver's v1[j]) is no larger than a row: only an array of rank 2
    // or more makes a tile one iteration wide grow faster than its rows.
    if (whole2.count(a) || scop.arrays[a].extents.size() < 2) continue;
    const std::string outer = scop.loops[one[0][0]].iterator;
    why = "2-D (--partition=auto): a tile one iteration of " + outer + " wide accesses all of " +
          scop.arrays[a].c_name + "; a block of the 2-D split accesses a part";
    return two;
  }
  return one;
}

TileFrame make_frame(const Scop& scop, int p, const std::vector<std::vector<int>>& loops) {
  TileFrame f;
  f.serial_names = serial_names(scop, scop.phases[p]);
  for (size_t k = 0; k < loops.size(); ++k) {
    f.part_loops.push_back(loops[k]);
    std::string suffix = loops.size() == 1 ? "" : std::to_string(k);
    f.lo_params.push_back("bbmm_lo" + suffix);
    f.hi_params.push_back("bbmm_hi" + suffix);
  }
  return f;
}

isl::set loop_range(const Scop& scop, int p, const std::vector<int>& loops) {
  const Phase& ph = scop.phases[p];
  TileFrame f = make_frame(scop, p, {});
  isl::set r;
  for (int s : ph.statements) {
    const Statement& st = scop.statements[s];
    const int depth = split_dim(st, loops);
    if (depth < 0) continue;
    isl::set d = tile_instances(st, f, false);
    int n = isl_set_dim(d.get(), isl_dim_set);
    isl_set* x = isl_set_project_out(d.copy(), isl_dim_set, depth + 1, n - depth - 1);
    x = isl_set_project_out(x, isl_dim_set, 0, depth);
    x = isl_set_reset_tuple_id(x);
    x = isl_set_set_dim_name(x, isl_dim_set, 0, "x");
    isl::set xs = isl::manage(x);
    r = r.is_null() ? xs : r.unite(xs);
  }
  return r.coalesce();
}
namespace {

bool constant_offset(const isl::pw_aff& a, const isl::pw_aff& b) {
  isl::pw_aff d = isl::manage(isl_pw_aff_sub(a.copy(), b.copy()));
  return !d.domain().is_empty() && isl_pw_aff_is_cst(d.get()) == isl_bool_true;
}

}  // namespace

std::vector<Partition> group_partitions(const Scop& scop,
                                        const std::vector<std::vector<std::vector<int>>>& loops,
                                        const std::vector<std::string>& notes,
                                        const std::vector<bool>& rows_first) {
  std::vector<Partition> parts;
  for (size_t p = 0; p < scop.phases.size(); ++p) {
    std::vector<PartitionDim> dims;
    TileFrame f = make_frame(scop, p, loops[p]);
    for (size_t k = 0; k < loops[p].size(); ++k) {
      PartitionDim d;
      d.lo_param = f.lo_params[k];
      d.hi_param = f.hi_params[k];
      d.loops = {loops[p][k]};
      isl::set r = loop_range(scop, p, loops[p][k]);
      d.range_min = isl::manage(isl_set_dim_min(r.copy(), 0)).coalesce();
      d.range_max = isl::manage(isl_set_dim_max(r.copy(), 0)).coalesce();
      dims.push_back(std::move(d));
    }
    bool placed = false;
    if (!dims.empty())
      for (Partition& part : parts) {
        int q = part.phases.front();
        if (part.dims.size() != dims.size() || part.rows_first != rows_first[p] ||
            scop.phases[q].serial_loops != scop.phases[p].serial_loops)
          continue;
        bool ok = true;
        for (size_t k = 0; k < dims.size() && ok; ++k)
          ok = constant_offset(part.dims[k].range_min, dims[k].range_min) &&
               constant_offset(part.dims[k].range_max, dims[k].range_max);
        if (!ok) continue;
        part.phases.push_back(p);
        for (size_t k = 0; k < dims.size(); ++k) {
          PartitionDim& pd = part.dims[k];
          pd.loops.push_back(dims[k].loops[0]);
          pd.range_min = isl::manage(isl_pw_aff_union_min(pd.range_min.copy(), dims[k].range_min.copy())).coalesce();
          pd.range_max = isl::manage(isl_pw_aff_union_max(pd.range_max.copy(), dims[k].range_max.copy())).coalesce();
        }
        part.reason = "shared by phases with the same serial loops whose ranges differ by constants";
        if (!notes[p].empty()) part.reason += "; phase " + std::to_string(p) + ": " + notes[p];
        if (part.one_loop_why.empty()) part.one_loop_why = notes[p];
        placed = true;
        break;
      }
    if (placed) continue;
    Partition part;
    part.id = parts.size();
    part.phases = {static_cast<int>(p)};
    part.dims = std::move(dims);
    part.rows_first = rows_first[p] && part.dims.size() == 2;
    if (part.dims.empty())
      part.reason = notes[p].empty() ? "no parallel loop: one tile on one device" : notes[p];
    else
      part.reason = notes[p].empty() ? "one phase" : notes[p];
    if (part.dims.size() == 1) part.one_loop_why = notes[p];
    parts.push_back(std::move(part));
  }
  return parts;
}

TilePlan make_tile_plan(const Scop& scop, const std::vector<Partition>& partitions) {
  const size_t np = scop.phases.size();
  TilePlan plan;
  plan.partition_of_phase.assign(np, 0);
  plan.partitioned.assign(np, false);
  plan.frames.resize(np);
  for (const Partition& part : partitions)
    for (size_t k = 0; k < part.phases.size(); ++k) {
      int p = part.phases[k];
      plan.partition_of_phase[p] = part.id;
      plan.partitioned[p] = !part.dims.empty();
      std::vector<std::vector<int>> pl;
      for (const PartitionDim& d : part.dims) pl.push_back(d.loops[k]);
      plan.frames[p] = make_frame(scop, p, pl);
    }
  return plan;
}

isl::set tile_context(const Scop& scop, const Partition& part, bool* relaxed) {
  if (relaxed) *relaxed = false;
  if (part.dims.empty()) return isl::manage(isl_set_universe(isl_set_get_space(scop.context.get()))).params();
  isl::set ctx;
  for (const PartitionDim& d : part.dims) {
    isl::space sp = d.range_min.domain().space();
    for (const std::string& n : {d.lo_param, d.hi_param}) {
      isl_size np = isl_space_dim(sp.get(), isl_dim_param);
      if (isl_space_find_dim_by_name(sp.get(), isl_dim_param, n.c_str()) < 0)
        sp = isl::manage(isl_space_set_dim_name(isl_space_add_dims(sp.release(), isl_dim_param, 1), isl_dim_param, np, n.c_str()));
    }
    isl::set dom = isl::manage(isl_set_universe(sp.copy()));
    auto param = [&](const std::string& n) {
      isl_id* id = isl_id_alloc(scop.context.ctx().get(), n.c_str(), nullptr);
      return isl::manage(isl_pw_aff_param_on_domain_id(dom.copy(), id));
    };
    isl::pw_aff lo = param(d.lo_param), hi = param(d.hi_param);
    isl::pw_aff mn = align(d.range_min, sp), mx = align(d.range_max, sp);
    isl::pw_aff mx1 = isl::manage(isl_pw_aff_add_constant_val(mx.copy(), isl_val_one(scop.context.ctx().get())));
    isl::set c = pw_le_set(mn, lo)
                     .intersect(isl::manage(isl_pw_aff_lt_set(lo.copy(), hi.copy())))
                     .intersect(pw_le_set(hi, mx1));
    ctx = ctx.is_null() ? c : ctx.intersect(c);
  }
  // Without redundant constraints, so that its printed form (--emit=boxes) does not depend on
  // what isl simplifies in place in shared sets while the boxes are computed and printed.
  // A range with divisions (a wavefront of slope 2: i from ceil((w - n + 2) / 2)) makes the
  // context's lo and hi bounds need existential variables; every box then carries them into
  // pieces per residue. The context is only ever assumed (gist, the tiles' instances), so
  // its convex relaxation without them is used instead: a superset, still true of every tile.
  const std::vector<isl::basic_set> pieces = basic_sets(ctx);
  if (std::any_of(pieces.begin(), pieces.end(),
                  [](const isl::basic_set& b) { return isl_basic_set_dim(b.get(), isl_dim_div) > 0; })) {
    ctx = isl::manage(isl_set_remove_divs(ctx.release()));
    if (relaxed) *relaxed = true;
  }
  return isl::manage(isl_set_remove_redundancies(ctx.coalesce().release()));
}

}  // namespace bbmm::compiler
