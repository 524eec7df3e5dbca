#include "poly/within.h"

#include <isl/map.h>
#include <isl/union_map.h>

#include <algorithm>
#include <string>

#include "codegen/c_printer.h"
#include "poly/isl_util.h"
#include "poly/partition.h"

namespace bbmm::compiler {

bool dependences_within(const Scop& scop, const Phase& ph, const std::vector<std::vector<int>>& chosen) {
  const int ns = static_cast<int>(ph.serial_loops.size());
  const int k = chosen.empty() ? 0 : static_cast<int>(chosen[0].size());
  if (k == 0) return true;
  isl::ctx ctx = scop.context.ctx();
  const std::string params = "[" + join(scop.params, ", ") + "]";
  // G: S[...] -> [serial..., g0, ..., g<k-1>].
  isl::union_map g = isl::union_map::empty(ctx);
  std::vector<std::string> names;
  for (size_t i = 0; i < ph.statements.size(); ++i) {
    const Statement& st = scop.statements[ph.statements[i]];
    std::vector<std::string> dims, out;
    for (size_t d = 0; d < st.iterators.size(); ++d) dims.push_back("d" + std::to_string(d));
    for (int d = 0; d < ns; ++d) out.push_back(dims[d]);
    for (int loop : chosen[i]) out.push_back(dims[split_dim(st, {loop})]);
    g = g.unite(isl::union_map(isl::map(
        ctx, params + " -> { " + st.name + "[" + join(dims, ", ") + "] -> [" + join(out, ", ") +
                 "] }")));
    names.push_back(st.name);
  }
  // The phase's dependences (flow, anti, output), untagged. A private scalar or array
  // has a copy per thread, and each thread runs a grid point's instances together, in
  // program order: the anti and output dependences on it join different copies or stay
  // inside one thread, so only its flow dependences (each within one iteration of the
  // parallel loop, poly/scalars.h) must stay within a thread.
  const int phase = scop.statements[ph.statements[0]].phase;
  isl::union_map deps = isl::union_map::empty(ctx);
  const isl::union_map* const kinds[] = {&scop.deps.raw, &scop.deps.war, &scop.deps.waw};
  for (int kind = 0; kind < 3; ++kind) {
    const isl::union_map* um = kinds[kind];
    if (um->is_null()) continue;
    for (const isl::map& m : sorted_maps(*um)) {
      isl::map u = untag(m);
      const char* src = isl_map_get_tuple_name(u.get(), isl_dim_in);
      const char* dst = isl_map_get_tuple_name(u.get(), isl_dim_out);
      if (!src || !dst) continue;
      if (std::find(names.begin(), names.end(), src) == names.end() ||
          std::find(names.begin(), names.end(), dst) == names.end()) {
        continue;
      }
      const int src_access = scop.access_index_of_tag(tagged_ref(m.domain().space()));
      if (kind != 0 && src_access >= 0 &&
          scop.is_private(phase, scop.accesses[src_access].array)) {
        continue;
      }
      deps = deps.unite(isl::union_map(u));
    }
  }
  isl::union_map rel = deps.apply_domain(g).apply_range(g);
  // Same serial iteration; iterations of a mapped loop asserted parallel (in every
  // statement) are independent by the user's word.
  std::vector<std::string> a, b, same, diff;
  for (int d = 0; d < ns + k; ++d) {
    a.push_back("a" + std::to_string(d));
    b.push_back("b" + std::to_string(d));
  }
  for (int d = 0; d < ns; ++d) same.push_back(a[d] + " = " + b[d]);
  for (int j = 0; j < k; ++j) {
    bool asserted = true;
    for (const std::vector<int>& c : chosen) asserted = asserted && scop.loops[c[j]].asserted_parallel;
    if (asserted) same.push_back(a[ns + j] + " = " + b[ns + j]);
  }
  std::string cond = same.empty() ? "" : " : " + join(same, " and ");
  isl::union_map in_scope(isl::map(ctx, params + " -> { [" + join(a, ", ") + "] -> [" +
                                            join(b, ", ") + "]" + cond + " }"));
  isl::union_map crossing = rel.intersect(in_scope);
  isl::union_map identity(isl::map(ctx, params + " -> { [" + join(a, ", ") + "] -> [" +
                                            join(a, ", ") + "] }"));
  return crossing.is_subset(identity);
}

}  // namespace bbmm::compiler
