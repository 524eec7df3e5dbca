#include "poly/scalars.h"

#include <isl/map.h>
#include <isl/set.h>
#include <isl/aff.h>
#include <isl/val.h>

#include <algorithm>
#include <set>

namespace bbmm::compiler {
namespace {

// Does "m" (an untagged S -> T dependence) relate instances that differ in one of their
// first "k" dimensions?
bool differs_in_first(const isl::map& m, int k) {
  isl_map* eq = m.copy();
  for (int d = 0; d < k; ++d) eq = isl_map_equate(eq, isl_dim_in, d, isl_dim_out, d);
  return !m.subtract(isl::manage(eq)).is_empty();
}

}  // namespace

std::vector<int64_t> constant_extents(const ArrayInfo& arr) {
  std::vector<int64_t> out;
  if (arr.is_scalar || arr.extents.empty()) return out;
  for (const isl::pw_aff& e : arr.extents) {
    if (e.is_null() || !isl_pw_aff_is_cst(e.get())) return {};
    isl_val* v = isl_pw_aff_max_val(e.copy());
    const bool ok = v != nullptr && isl_val_is_int(v) && isl_val_is_pos(v);
    const int64_t n = ok ? isl_val_get_num_si(v) : 0;
    isl_val_free(v);
    if (!ok || n <= 0) return {};
    out.push_back(n);
  }
  return out;
}

bool can_privatise(const ArrayInfo& arr) {
  if (arr.is_scalar) return true;
  if (arr.elem_size <= 0) return false;
  const std::vector<int64_t> ext = constant_extents(arr);
  if (ext.empty()) return false;
  int64_t bytes = arr.elem_size;
  for (int64_t n : ext) {
    if (n > kMaxPrivateArrayBytes) return false;
    bytes *= n;
    if (bytes > kMaxPrivateArrayBytes) return false;
  }
  return true;
}

void classify_scalars(Scop& scop) {
  for (Phase& p : scop.phases) {
    p.private_scalars.clear();
    p.copy_outs.clear();
  }
  struct Flow {
    int src, sink;
    isl::map map;  // untagged
  };
  std::vector<Flow> raw;
  for (const isl::map& m : sorted_maps(scop.deps.raw)) {
    const int src = scop.access_index_of_tag(tagged_ref(m.domain().space()));
    const int snk = scop.access_index_of_tag(tagged_ref(m.range().space()));
    if (src < 0 || snk < 0 || !can_privatise(scop.arrays[scop.accesses[src].array])) continue;
    raw.push_back({src, snk, untag(m)});
  }
  std::set<int> live_in_reads;
  for (const isl::set& s : sorted_sets(scop.deps.live_in)) {
    const int a = scop.access_index_of_tag(tagged_ref(s.space()));
    if (a >= 0) live_in_reads.insert(a);
  }
  // The write instances with a later write (the domains of the output dependences), per
  // write access: the others are last writes.
  std::vector<isl::set> overwritten(scop.accesses.size());
  for (const isl::map& m : sorted_maps(scop.deps.waw)) {
    const int src = scop.access_index_of_tag(tagged_ref(m.domain().space()));
    if (src < 0) continue;
    isl::set d = untag(m).domain();
    overwritten[src] = overwritten[src].is_null() ? d : overwritten[src].unite(d);
  }

  for (size_t a = 0; a < scop.arrays.size(); ++a) {
    ArrayInfo& arr = scop.arrays[a];
    if (!arr.written || !can_privatise(arr)) continue;
    std::set<int> phases;
    for (const Access& acc : scop.accesses) {
      if (acc.array == static_cast<int>(a)) phases.insert(scop.statements[acc.statement].phase);
    }
    for (int p : phases) {
      if (p < 0) continue;
      const Phase& ph = scop.phases[p];
      const int same = static_cast<int>(ph.serial_loops.size()) + (ph.parallel_loop >= 0 ? 1 : 0);
      auto in_phase = [&](int access) {
        return scop.statements[scop.accesses[access].statement].phase == p;
      };
      bool ok = true;
      for (const Flow& f : raw) {
        if (!ok) break;
        if (scop.accesses[f.src].array != static_cast<int>(a)) continue;
        const bool src_in = in_phase(f.src), snk_in = in_phase(f.sink);
        if (!src_in && !snk_in) continue;
        ok = src_in && snk_in && !differs_in_first(f.map, same);
      }
      for (int r : live_in_reads) {
        if (ok && scop.accesses[r].array == static_cast<int>(a) && in_phase(r)) ok = false;
      }
      // A live-out scalar's last value, when written here, is copied out of the local.
      std::vector<CopyOut> copy;
      if (ok && arr.live_out) {
        for (size_t w = 0; w < scop.accesses.size(); ++w) {
          const Access& acc = scop.accesses[w];
          if (acc.array != static_cast<int>(a) || acc.kind != AccessKind::kWrite || !in_phase(w))
            continue;
          isl::set last = acc.relation.domain();
          if (!overwritten[w].is_null()) last = last.subtract(overwritten[w]);
          if (last.is_empty()) continue;
          // A copy-out only where it keeps a loop parallel: a phase without a parallel
          // loop just writes the scalar in memory.
          if (ph.parallel_loop < 0) ok = false;
          copy.push_back({static_cast<int>(w), last.coalesce()});
        }
        if (!ok) copy.clear();
      }
      // An array is private only where that makes the phase's loop parallel (the loop
      // analysis privatised it for that loop): elsewhere it is an array in memory as
      // always (a copy of gemm's C per thread would be correct, and absurd).
      if (ok && !arr.is_scalar) {
        const std::vector<std::string>* v =
            ph.parallel_loop >= 0 ? &scop.loops[ph.parallel_loop].verdict.privatised : nullptr;
        ok = v != nullptr && std::find(v->begin(), v->end(), arr.name) != v->end();
      }
      if (ok) {
        scop.phases[p].private_scalars.push_back(static_cast<int>(a));
        for (CopyOut& c : copy) scop.phases[p].copy_outs.push_back(std::move(c));
      }
      if (arr.is_scalar && (!ok || !copy.empty())) arr.promoted = true;
    }
    if (arr.promoted) {
      arr.extent_text = {"1"};
      arr.extents = {isl::manage(isl_pw_aff_val_on_domain(
          isl_set_universe(
              isl_space_set_from_params(isl_space_params(scop.context.get_space().release()))),
          isl_val_one(scop.context.ctx().get())))};
    }
  }
  for (Phase& p : scop.phases) std::sort(p.private_scalars.begin(), p.private_scalars.end());
}

}  // namespace bbmm::compiler
