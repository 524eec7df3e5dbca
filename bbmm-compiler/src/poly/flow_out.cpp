#include "poly/flow_out.h"

#include <isl/map.h>
#include <isl/set.h>

#include <algorithm>

#include "poly/box_util.h"

namespace bbmm::compiler {

namespace {

// Whether "elems" lies in the hulls that stand for thin written rows (ArrayBoxes::write_hulls).
bool covered_by_hulls(const ArrayBoxes& ab, const isl::set& elems) {
  if (ab.write_hulls.empty()) return false;
  isl::set rest = elems;
  for (const TileBox& h : ab.write_hulls) rest = rest.subtract(h.set);
  return rest.is_empty();
}

// The flow-out boxes (or rows) of the exact flow-out set "f" of "ab", in context "ctx".
void add_flow_out(ArrayBoxes& ab, const isl::set& f, const isl::set& ctx) {
  if (f.is_null() || f.is_empty()) return;
  ab.flow_out_set = f.coalesce();
  for (const isl::basic_set& b0 : basic_sets(ab.flow_out_set)) {
    // A piece with existentially quantified variables (a stride, a parity) would need
    // floor divisions in every bound, and isl's work on those grows quickly (minutes for
    // a diagonal write, found by the brute-force oracle's random nests). Such a piece is
    // flowed out as its shadow without them: a superset, still cut to the write set below.
    isl::basic_set b = b0;
    if (isl_basic_set_dim(b.get(), isl_dim_div) > 0) {
      b = isl::manage(isl_basic_set_remove_divs(b.copy()));
      ab.flow_out_note = "pieces with strides are flowed out as their hull without the strides, cut to the write set";
    }
    TileBox box = make_box(isl::set(b), ctx);
    if (box.set.is_subset(ab.write_set) || ab.write_strategy == WriteStrategy::kSingleDevice) {
      ab.flow_out.push_back(std::move(box));
    } else if (ab.write_strategy == WriteStrategy::kExactBoxes ||
               ab.write_strategy == WriteStrategy::kWidened) {
      // Widened: the hull's elements the tile does not write are valid on its device (read
      // in, unchanged), so flowing them out costs transfers, never correctness.
      for (const TileBox& wb : ab.write_boxes) {
        isl::set x = wb.set.intersect(box.set);
        if (!x.is_empty()) ab.flow_out.push_back(make_box(x, ctx));
      }
    } else if (covered_by_hulls(ab, ab.write_set.intersect(box.set))) {
      // Written as the hull of thin rows (a diagonal, widen_thin_rows): a flow-out of it
      // would be a copy per row of one or two elements (nussinov at LARGE on 2 logical
      // devices of one H200: 23.3 s, against 1.6 s on one). Its readers copy what they
      // read of it from the writer's device when they acquire (the directory has it there):
      // a flow-out only brings data early, so leaving it out costs no correctness.
      ab.flow_out_note = "thin rows written as their hull are not flowed out: readers copy them when they acquire";
    } else if (auto rows = make_rows(ab.write_set.intersect(box.set), ctx)) {
      ab.flow_out_rows.push_back(std::move(*rows));
    } else {
      ab.flow_out.push_back(std::move(box));
    }
  }
  // Pieces with the same bounds (e.g. one row reached from either side) become one box
  // whose guard is the union of theirs (exact: see same_bounds).
  std::vector<TileBox> merged;
  for (TileBox& b : ab.flow_out) {
    auto same = std::find_if(merged.begin(), merged.end(),
                             [&](const TileBox& m) { return same_bounds(m, b); });
    if (same == merged.end()) {
      merged.push_back(std::move(b));
      continue;
    }
    isl::set u = same->set.unite(b.set).coalesce();
    *same = make_box(u, ctx);
  }
  ab.flow_out = std::move(merged);
}

}  // namespace

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
    isl::set elems = inst.domain().apply(scop.memory_relation(src));
    out = out.is_null() ? elems : out.unite(elems);
  }
  return out.is_null() ? isl::set() : out.coalesce();
}

void compute_flow_out(const Scop& scop, const TilePlan& plan, int p, const isl::set& tile_context,
                      ArrayBoxes& ab) {
  add_flow_out(ab, flow_out_set(scop, plan, p, ab.array), tile_context);
}

}  // namespace bbmm::compiler
