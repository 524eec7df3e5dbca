#include "poly/flow_out.h"

#include <isl/map.h>

namespace bbmm::compiler {

isl::set flow_out_set(const Scop& scop, const TilePlan& plan, int p, int array) {
  std::vector<int> phase_of(scop.statements.size(), -1);
  for (size_t q = 0; q < scop.phases.size(); ++q)
    for (int s : scop.phases[q].statements) phase_of[s] = q;
  isl::set out;
  for (const isl::map& m : sorted_maps(scop.deps.raw_asserted)) {
    int src = scop.access_index_of_tag(tagged_ref(m.domain().space()));
    int snk = scop.access_index_of_tag(tagged_ref(m.range().space()));
    if (src < 0 || snk < 0) continue;
    const Access& w = scop.accesses[src];
    if (w.array != array || w.kind != AccessKind::kWrite || phase_of[w.statement] != p) continue;
    const Access& r = scop.accesses[snk];
    int q = phase_of[r.statement];
    if (q < 0) continue;
    bool same_partition = plan.partition_of_phase[q] == plan.partition_of_phase[p];
    if (same_partition && !plan.partitioned[p] && q == p) continue;  // same single tile
    isl::map inst = untag(m);
    inst = inst.intersect_domain(tile_instances(scop.statements[w.statement], plan.frames[p]));
    if (same_partition && plan.partitioned[p])
      inst = inst.intersect_range(outside_instances(scop.statements[r.statement], plan.frames[q]));
    isl::set elems = inst.domain().apply(w.relation);
    out = out.is_null() ? elems : out.unite(elems);
  }
  return out.is_null() ? isl::set() : out.coalesce();
}

}  // namespace bbmm::compiler
