#include "poly/deps.h"

#include "poly/scalars.h"

#include <algorithm>
#include <functional>
#include <map>

namespace bbmm::compiler {
namespace {

// Does "u" (S -> T, both inside a loop at depth "d") relate instances that agree on the
// iterators of levels < d and differ at level d?
bool carried_at(const isl::map& u, int d) {
  isl_map* m = u.copy();
  for (int k = 0; k < d; ++k) m = isl_map_equate(m, isl_dim_in, k, isl_dim_out, k);
  isl_map* lt = isl_map_order_lt(isl_map_copy(m), isl_dim_in, d, isl_dim_out, d);
  isl_map* gt = isl_map_order_gt(m, isl_dim_in, d, isl_dim_out, d);
  isl::map both = isl::manage(isl_map_union(lt, gt));
  return !both.is_empty();
}

// Does "u" relate instances that differ at some level <= d?
bool differs_up_to(const isl::map& u, int d) {
  isl_map* m = u.copy();
  isl::map eq = isl::manage(isl_map_copy(m));
  for (int k = 0; k <= d; ++k) eq = isl::manage(isl_map_equate(eq.release(), isl_dim_in, k, isl_dim_out, k));
  isl::map all = isl::manage(m);
  return !all.subtract(eq).is_empty();
}

struct TaggedDep {
  int src_access;
  int sink_access;
  isl::map map;  // untagged S -> T
};

std::vector<TaggedDep> split(const Scop& scop, const isl::union_map& deps, const isl::set* params) {
  std::vector<TaggedDep> out;
  for (const isl::map& m0 : sorted_maps(deps)) {
    isl::map m = params ? m0.intersect_params(*params) : m0;
    if (m.is_empty()) continue;
    int src = scop.access_index_of_tag(tagged_ref(m.domain().space()));
    int snk = scop.access_index_of_tag(tagged_ref(m.range().space()));
    if (src < 0 || snk < 0) continue;
    out.push_back({src, snk, untag(m)});
  }
  return out;
}

bool in_loop(const Loop& L, int stmt) {
  return std::find(L.statements.begin(), L.statements.end(), stmt) != L.statements.end();
}

// Tags "rel" (S -> A) with "tag": [S -> tag[]] -> A.
isl::map tag_relation(const isl::map& rel, const std::string& tag) {
  isl_set* dom = isl_map_domain(rel.copy());
  isl_set* t = isl_set_universe(isl_space_set_from_params(isl_space_params(isl_set_get_space(dom))));
  t = isl_set_set_tuple_name(t, tag.c_str());
  isl::map tagger = isl::manage(isl_map_reverse(isl_map_domain_map(isl_map_from_domain_and_range(dom, t))));
  return rel.apply_domain(tagger);
}

// RAW dependences where the iterations of the asserted loops in "group" are unordered:
// sinks in those loops only see writes of their own iteration or of earlier iterations
// of the enclosing loops. Modelled with one parameter per asserted loop, the sink's
// iteration, and a schedule that puts every other iteration after the sink's.
isl::union_map asserted_flow(const Scop& scop, const std::vector<int>& group) {
  isl::ctx ctx = scop.context.ctx();
  std::vector<std::string> pnames;
  std::map<int, int> level_to_group;  // depth -> index in group
  for (size_t g = 0; g < group.size(); ++g) {
    pnames.push_back("__bbmm_par_" + std::to_string(group[g]));
    level_to_group[scop.loops[group[g]].depth] = static_cast<int>(g);
  }
  isl::space pspace = make_set_space(ctx, pnames, "", {}).params();
  auto align = [&](isl_map* m) { return isl_map_align_params(m, pspace.copy()); };
  auto param_pos = [&](isl_map* m, const std::string& n) {
    return isl_map_find_dim_by_name(m, isl_dim_param, n.c_str());
  };

  // Flagged schedules per statement.
  isl::union_map sched = isl::union_map::empty(ctx);
  for (const Statement& st : scop.statements) {
    isl_map* m = align(st.schedule.copy());
    // Insert flag dims from the innermost level outwards so positions stay valid.
    std::vector<int> levels;
    for (auto& [lvl, g] : level_to_group) levels.push_back(lvl);
    isl::union_map pieces = isl::union_map::empty(ctx);
    for (auto it = levels.rbegin(); it != levels.rend(); ++it) m = isl_map_insert_dims(m, isl_dim_out, 2 * *it + 1, 1);
    // Flag positions after insertion: level l's flag sits at 2*l + 1 + (number of flagged levels < l).
    std::vector<std::pair<int, int>> flags;  // (flag position, level)
    int shift = 0;
    for (int lvl : levels) {
      flags.push_back({2 * lvl + 1 + shift, lvl});
      ++shift;
    }
    std::vector<isl_map*> cur{m};
    for (auto [fpos, lvl] : flags) {
      int g = level_to_group[lvl];
      bool inside = lvl < static_cast<int>(st.loops.size()) && st.loops[lvl] == group[g];
      std::vector<isl_map*> next;
      for (isl_map* x : cur) {
        if (!inside) {
          next.push_back(isl_map_fix_si(x, isl_dim_out, fpos, 0));
          continue;
        }
        int pp = param_pos(x, pnames[g]);
        isl_map* same = isl_map_equate(isl_map_copy(x), isl_dim_in, lvl, isl_dim_param, pp);
        same = isl_map_fix_si(same, isl_dim_out, fpos, 0);
        isl_map* lt = isl_map_order_lt(isl_map_copy(x), isl_dim_in, lvl, isl_dim_param, pp);
        isl_map* gt = isl_map_order_gt(x, isl_dim_in, lvl, isl_dim_param, pp);
        isl_map* other = isl_map_fix_si(isl_map_union(lt, gt), isl_dim_out, fpos, 1);
        next.push_back(same);
        next.push_back(other);
      }
      cur = next;
    }
    for (isl_map* x : cur) sched = sched.unite(isl::union_map(isl::manage(x)));
    (void)pieces;
  }

  // Tagged schedule, sinks and sources.
  isl::union_map tsched = isl::union_map::empty(ctx);
  isl::union_map sinks = isl::union_map::empty(ctx);
  isl::union_map sources = isl::union_map::empty(ctx);
  for (const Access& a : scop.accesses) {
    const Statement& st = scop.statements[a.statement];
    isl::map rel = isl::manage(align(a.relation.copy()));
    isl::map tagged = tag_relation(rel, a.tag());
    isl::map proj = isl::manage(isl_set_unwrap(tagged.domain().release()));
    isl::map to_s = isl::manage(isl_map_domain_map(proj.release()));
    // Reads (0) before the write (1) inside an instance, as in Scop::tagged_schedule.
    isl::union_map ts = isl::union_map(to_s).apply_range(sched);
    for (const isl::map& piece : sorted_maps(ts)) {
      isl_map* x = isl_map_add_dims(piece.copy(), isl_dim_out, 1);
      x = isl_map_fix_si(x, isl_dim_out, isl_map_dim(x, isl_dim_out) - 1, a.kind == AccessKind::kWrite ? 1 : 0);
      tsched = tsched.unite(isl::union_map(isl::manage(x)));
    }
    if (a.kind == AccessKind::kWrite) {
      sources = sources.unite(isl::union_map(tagged));
      continue;
    }
    // Sinks: reads of statements whose asserted loops are exactly "group".
    std::vector<int> mine;
    for (int l : st.loops)
      if (scop.loops[l].asserted_parallel) mine.push_back(l);
    if (mine != group) continue;
    isl_map* r = rel.copy();
    for (size_t g = 0; g < group.size(); ++g)
      r = isl_map_equate(r, isl_dim_in, scop.loops[group[g]].depth, isl_dim_param, param_pos(r, pnames[g]));
    sinks = sinks.unite(isl::union_map(tag_relation(isl::manage(r), a.tag())));
  }
  isl::union_access_info ai(sinks);
  ai = ai.set_must_source(sources).set_schedule_map(tsched);
  isl::union_map deps = ai.compute_flow().may_dependence();
  isl::union_map out = isl::union_map::empty(ctx);
  for (const isl::map& m0 : sorted_maps(deps)) {
    isl_map* m = m0.copy();
    for (const std::string& n : pnames) {
      int pos = isl_map_find_dim_by_name(m, isl_dim_param, n.c_str());
      if (pos >= 0) m = isl_map_project_out(m, isl_dim_param, pos, 1);
    }
    out = out.unite(isl::union_map(isl::manage(m).coalesce()));
  }
  return out;
}

}  // namespace

std::vector<LoopAnalysis> analyse_loops(const Scop& scop, const isl::set* params) {
  std::vector<LoopAnalysis> res(scop.loops.size());
  std::vector<TaggedDep> raw = split(scop, scop.deps.raw, params);
  std::vector<TaggedDep> war = split(scop, scop.deps.war, params);
  std::vector<TaggedDep> waw = split(scop, scop.deps.waw, params);
  isl::union_set live_in = params ? scop.deps.live_in.intersect_params(*params) : scop.deps.live_in;
  std::vector<isl::set> live_in_sets = sorted_sets(live_in);

  for (const Loop& L : scop.loops) {
    LoopAnalysis& an = res[L.id];
    int d = L.depth;
    // Privatisable scalars of this loop.
    std::map<int, bool> priv;  // array -> privatisable
    auto privatisable = [&](int array) {
      auto it = priv.find(array);
      if (it != priv.end()) return it->second;
      const ArrayInfo& a = scop.arrays[array];
      // (d) live-out is fine: the phase copies the last value out (poly/scalars.h).
      // Scalars, and arrays small enough for a kernel-local copy.
      bool ok = can_privatise(a);
      bool written_inside = false;
      for (const Access& acc : scop.accesses)
        if (acc.array == array && acc.kind == AccessKind::kWrite && in_loop(L, acc.statement))
          written_inside = true;
      ok = ok && written_inside;
      // (a) no read inside the loop sees a value from before the scop.
      for (const isl::set& s : live_in_sets) {
        if (!ok) break;
        int ai = scop.access_index_of_tag(tagged_ref(s.space()));
        if (ai >= 0 && scop.accesses[ai].array == array && in_loop(L, scop.accesses[ai].statement)) ok = false;
      }
      // (b) reads inside see writes of the same iteration; (c) no value flows out.
      for (const TaggedDep& t : raw) {
        if (!ok) break;
        if (scop.accesses[t.src_access].array != array) continue;
        bool src_in = in_loop(L, scop.accesses[t.src_access].statement);
        bool snk_in = in_loop(L, scop.accesses[t.sink_access].statement);
        if (snk_in && (!src_in || differs_up_to(t.map, d))) ok = false;
        if (src_in && !snk_in) ok = false;
      }
      priv[array] = ok;
      return ok;
    };
    auto visit = [&](const std::vector<TaggedDep>& deps, const char* kind) {
      for (const TaggedDep& t : deps) {
        const Access& s = scop.accesses[t.src_access];
        const Access& k = scop.accesses[t.sink_access];
        if (!in_loop(L, s.statement) || !in_loop(L, k.statement)) continue;
        if (!carried_at(t.map, d)) continue;
        const ArrayInfo& a = scop.arrays[s.array];
        if (privatisable(s.array)) {
          an.privatised.insert(a.name);
          continue;
        }
        if (a.is_scalar) an.blocking_scalars.insert(a.name);
        an.carries = true;
        an.arrays.insert(a.name);
        // Which references: the write (or read, for WAR) and the access that depends on it.
        an.reasons.insert(std::string(kind) + " on " + a.name + ": " +
                          scop.statements[s.statement].name + " -> " +
                          scop.statements[k.statement].name + " (" + s.text + " -> " + k.text + ")");
      }
    };
    visit(raw, "RAW");
    visit(war, "WAR");
    visit(waw, "WAW");
  }
  return res;
}

void compute_dependences(Scop& scop) {
  isl::union_map tsched = scop.tagged_schedule();
  isl::union_map reads = scop.reads(true);
  isl::union_map writes = scop.writes(true);

  isl::union_access_info raw_info(reads);
  raw_info = raw_info.set_must_source(writes).set_schedule_map(tsched);
  isl::union_flow raw_flow = raw_info.compute_flow();
  scop.deps.raw = raw_flow.may_dependence();
  isl::union_map no_source = raw_flow.may_no_source();
  scop.deps.live_in = no_source.domain();
  for (const isl::map& m : sorted_maps(no_source)) {
    int ai = scop.access_index_of_tag(tagged_ref(m.domain().space()));
    if (ai >= 0) scop.arrays[scop.accesses[ai].array].live_in = true;
  }

  // WAW: each write and the previous write of the element.
  isl::union_access_info waw_info(writes);
  waw_info = waw_info.set_must_source(writes).set_schedule_map(tsched);
  scop.deps.waw = waw_info.compute_flow().may_dependence();
  // WAR: each read and the next write of the element, i.e. the flow from writes to
  // reads in reversed time, reversed. Same pairs as isl's dataflow with reads as may
  // sources and writes as kills, at a fraction of the cost.
  isl_space* ts = isl_space_set_alloc(scop.context.ctx().get(), 0, scop.schedule_dims + 1);
  isl_multi_aff* neg = isl_multi_aff_identity(isl_space_map_from_set(ts));
  neg = isl_multi_aff_neg(neg);
  isl::union_map reversed_time = tsched.apply_range(isl::union_map(isl::map(isl::manage(isl_map_from_multi_aff(neg)))));
  isl::union_access_info war_info(reads);
  war_info = war_info.set_must_source(writes).set_schedule_map(reversed_time);
  isl::union_map war = war_info.compute_flow().may_dependence().reverse();
  // Drop the pairs inside one instance (a statement reading what it then overwrites).
  scop.deps.war = isl::union_map::empty(scop.context.ctx());
  for (const isl::map& m : sorted_maps(war)) {
    isl::map kept = m;
    if (tagged_statement(m.domain().space()) == tagged_statement(m.range().space())) {
      isl::map zipped = isl::manage(isl_map_zip(m.copy()));  // [S -> S] -> [r -> w]
      isl_space* ss = isl_space_unwrap(isl_space_domain(isl_map_get_space(zipped.get())));
      isl_map* other = isl_map_subtract(isl_map_universe(isl_space_copy(ss)), isl_map_identity(ss));
      zipped = zipped.intersect_domain(isl::manage(isl_map_wrap(other)));
      kept = isl::manage(isl_map_zip(zipped.release()));
    }
    if (!kept.is_empty()) scop.deps.war = scop.deps.war.unite(isl::union_map(kept.coalesce()));
  }

  // Dataflow under the assertions.
  std::set<std::vector<int>> groups;
  for (const Statement& st : scop.statements) {
    std::vector<int> mine;
    for (int l : st.loops)
      if (scop.loops[l].asserted_parallel) mine.push_back(l);
    if (!mine.empty()) groups.insert(mine);
  }
  if (groups.empty()) {
    scop.deps.raw_asserted = scop.deps.raw;
  } else {
    // Sinks outside every asserted loop keep the sequential dataflow.
    isl::union_map keep = isl::union_map::empty(scop.context.ctx());
    for (const isl::map& m : sorted_maps(scop.deps.raw)) {
      int snk = scop.access_index_of_tag(tagged_ref(m.range().space()));
      bool asserted = false;
      if (snk >= 0)
        for (int l : scop.statements[scop.accesses[snk].statement].loops)
          asserted = asserted || scop.loops[l].asserted_parallel;
      if (!asserted) keep = keep.unite(isl::union_map(m));
    }
    for (const std::vector<int>& g : groups) keep = keep.unite(asserted_flow(scop, g));
    scop.deps.raw_asserted = keep;
  }
  scop.deps.computed = true;

  std::vector<LoopAnalysis> an = analyse_loops(scop, nullptr);
  for (Loop& L : scop.loops) {
    const LoopAnalysis& a = an[L.id];
    L.verdict.carries = a.carries;
    L.verdict.parallel = !a.carries || L.asserted_parallel;
    L.verdict.reasons.assign(a.reasons.begin(), a.reasons.end());
    L.verdict.privatised.assign(a.privatised.begin(), a.privatised.end());
    L.verdict.blocking_scalars.assign(a.blocking_scalars.begin(), a.blocking_scalars.end());
  }

  // Phases: walk the tree; a parallel loop ends the descent. A serial loop with no
  // parallel loop anywhere below it is not descended into either: it joins the loose
  // statements around it, so the whole serial region runs as one tile (one kernel, on one
  // device) per step of the serial loops outside it, never one tile per statement instance.
  std::function<bool(const Loop&)> has_parallel = [&](const Loop& L) {
    if (L.verdict.parallel) return true;
    for (const Node& n : L.body)
      if (n.is_loop && has_parallel(scop.loops[n.index])) return true;
    return false;
  };
  scop.phases.clear();
  std::vector<int> serial;
  std::function<void(const std::vector<Node>&)> walk = [&](const std::vector<Node>& body) {
    Phase loose;
    auto flush = [&]() {
      if (!loose.statements.empty()) {
        loose.serial_loops = serial;
        scop.phases.push_back(loose);
        loose = Phase();
      }
    };
    for (const Node& n : body) {
      if (!n.is_loop) {
        loose.statements.push_back(n.index);
        continue;
      }
      const Loop& L = scop.loops[n.index];
      if (!has_parallel(L)) {
        loose.statements.insert(loose.statements.end(), L.statements.begin(), L.statements.end());
        continue;
      }
      flush();
      if (L.verdict.parallel) {
        Phase p;
        p.serial_loops = serial;
        p.parallel_loop = L.id;
        p.statements = L.statements;
        scop.phases.push_back(p);
      } else {
        serial.push_back(L.id);
        walk(L.body);
        serial.pop_back();
      }
    }
    flush();
  };
  walk(scop.body);
  for (Statement& st : scop.statements) st.phase = -1;
  for (size_t p = 0; p < scop.phases.size(); ++p) {
    for (int st : scop.phases[p].statements) scop.statements[st].phase = static_cast<int>(p);
  }
  classify_scalars(scop);
}

}  // namespace bbmm::compiler
