// --emit=boxes: the partitions, per phase and array the boxes (C and isl), the choice and
// its numbers, the write strategy, the flow-out boxes and the exactness report. The C text
// is the generated code's (codegen/box_printer.h), with isl's names for min, max and floord.

#include <iomanip>
#include <sstream>

#include "codegen/box_printer.h"
#include "poly/boxes.h"

namespace bbmm::compiler {

namespace {

std::string box_text(const BoxText& b) {
  std::string s;
  for (size_t d = 0; d < b.lo.size(); ++d) {
    if (d) s += " x ";
    s += "[" + b.lo[d] + ", " + b.hi[d] + ")";
  }
  if (b.lo.empty()) s = "[]";
  if (b.guard != "1") s += "  if " + b.guard;
  return s;
}

std::string box_text(const TileBox& b) { return box_text(box_c_text(b)); }

void print_rows(std::ostream& out, const RowEnumeration& rows, const std::string& indent) {
  const RowsText r = rows_c_text(rows);
  out << indent << "rows (bbmm_r0..) in " << box_text(r.rows) << ": columns [" << r.seg_lo << ", " << r.seg_hi
      << ")";
  if (r.seg_guard != "1") out << "  if " << r.seg_guard;
  out << "\n" << indent << "  isl: " << str(rows.exact) << "\n";
}

std::string loop_name(const Scop& scop, int l) {
  return "L" + std::to_string(l) + " " + scop.loops[l].iterator;
}

}  // namespace

void print_boxes(std::ostream& out, const Scop& scop, const ScopBoxes& bx) {
  out << "scop " << scop.index << " in function " << scop.function << "\n";
  out << "  parameters: [";
  for (size_t i = 0; i < scop.params.size(); ++i) out << (i ? ", " : "") << scop.params[i];
  out << "]\n  report values:";
  for (const auto& [n, v] : bx.params) out << " " << n << "=" << v;
  out << "; " << bx.tiles << " tiles per partition dimension\n";
  out << "  rule: one box per access to start; two boxes merge into their hull while the hull\n"
         "    wastes <= 10% of their union (elements summed over the first, middle and last serial\n"
         "    iterations x the tiles); one box left = convex, several = disjoint\n";
  out << "  partitions:\n";
  for (const Partition& p : bx.partitions) {
    out << "    P" << p.id << ": phase" << (p.phases.size() > 1 ? "s " : " ");
    for (size_t k = 0; k < p.phases.size(); ++k) out << (k ? ", " : "") << p.phases[k];
    if (p.dims.empty()) out << "; not split";
    for (const PartitionDim& d : p.dims) {
      const RangeText range = partition_range_c_text(d);
      out << "; [" << d.lo_param << ", " << d.hi_param << ") over [" << range.lo << ", " << range.hi << ") on";
      for (size_t k = 0; k < d.loops.size(); ++k) {
        out << (k ? ", " : " ");
        for (size_t j = 0; j < d.loops[k].size(); ++j) out << (j ? "/" : "") << loop_name(scop, d.loops[k][j]);
      }
    }
    out << "\n      (" << p.reason << ")\n";
  }
  for (const PhaseBoxes& pb : bx.phases) {
    const Phase& ph = scop.phases[pb.phase];
    const Partition& part = bx.partitions[pb.partition];
    out << "  phase " << pb.phase << ": serial loops [";
    for (size_t i = 0; i < ph.serial_loops.size(); ++i) out << (i ? ", " : "") << loop_name(scop, ph.serial_loops[i]);
    out << "], partition P" << pb.partition << ", statements";
    for (int s : ph.statements) out << " " << scop.statements[s].name;
    out << "\n";
    int k = 0;
    for (size_t i = 0; i < part.phases.size(); ++i)
      if (part.phases[i] == pb.phase) k = i;
    for (const PartitionDim& d : part.dims)
      out << "    tile: " << d.lo_param << " <= " << scop.loops[d.loops[k][0]].iterator << " < " << d.hi_param << "\n";
    if (part.dims.empty()) out << "    tile: the whole phase (one device)\n";
    out << "    tile context: " << str(pb.tile_domain_context) << "\n";
    for (const ArrayBoxes& ab : pb.arrays) {
      const ArrayInfo& ai = scop.arrays[ab.array];
      out << "    array " << ai.c_name << ":" << (ab.read ? " read" : "") << (ab.written ? " written" : "") << "\n";
      for (size_t i = 0; i < ab.accesses.size(); ++i) {
        const Access& acc = scop.accesses[ab.accesses[i]];
        const TileBox& b = ab.access_boxes[i];
        out << "      " << (acc.kind == AccessKind::kWrite ? "write " : "read ") << acc.tag() << " " << acc.text
            << ": " << box_text(b) << "\n";
        for (size_t d = 0; d < b.dims.size(); ++d)
          out << "        dim " << d << ": min " << str(b.dims[d].min) << "\n"
              << "               max " << str(b.dims[d].max) << "\n";
      }
      out << "      choice: " << ab.choice_reason << " (elements: hull " << ab.convex_volume << ", boxes "
          << ab.disjoint_volume << ", exact " << ab.exact_volume << ")\n";
      for (size_t i = 0; i < ab.required.size(); ++i)
        out << "      require " << box_access_name(ab.required_mode[i]) << " " << box_text(ab.required[i]) << "\n";
      if (ab.written) {
        out << "      write: " << write_strategy_name(ab.write_strategy) << " (" << ab.write_reason << ")\n";
        for (const TileBox& b : ab.write_boxes) out << "        " << box_text(b) << "\n";
        for (const RowEnumeration& r : ab.write_rows) print_rows(out, r, "        ");
        for (const TileBox& b : ab.write_hulls) out << "        hull " << box_text(b) << "\n";
        size_t n = ab.flow_out.size() + ab.flow_out_rows.size();
        if (n == 0) {
          out << "      flow-out: none";
          if (!ab.flow_out_note.empty()) out << " (" << ab.flow_out_note << ")";
          out << "\n";
        } else {
          out << "      flow-out: " << ab.flow_out.size() << " box" << (ab.flow_out.size() == 1 ? "" : "es");
          if (!ab.flow_out_rows.empty()) out << ", " << ab.flow_out_rows.size() << " row enumeration(s)";
          if (!ab.flow_out_note.empty()) out << " (" << ab.flow_out_note << ")";
          out << "\n";
          for (const TileBox& b : ab.flow_out) out << "        " << box_text(b) << "\n";
          for (const RowEnumeration& r : ab.flow_out_rows) print_rows(out, r, "        ");
          out << "        isl: " << str(ab.flow_out_set) << "\n";
        }
      }
    }
  }
  out << "  exactness (elements touched by the tile vs covered by its required boxes, middle serial "
         "iteration):\n";
  for (const ExactnessRow& r : bx.exactness) {
    std::ostringstream ratio;
    ratio << std::fixed << std::setprecision(3) << (r.exact ? static_cast<double>(r.covered) / r.exact : 1.0);
    out << "    phase " << r.phase << " " << r.tile_text << ": " << r.array << " exact " << r.exact << ", covered "
        << r.covered << ", ratio " << ratio.str() << "\n";
  }
}

}  // namespace bbmm::compiler
