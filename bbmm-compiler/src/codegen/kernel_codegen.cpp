#include "codegen/kernel_codegen.h"

#include <isl/map.h>
#include <isl/set.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "codegen/box_printer.h"
#include "codegen/c_printer.h"
#include "codegen/loop_ast.h"
#include "poly/scalars.h"

namespace bbmm::compiler {
namespace {

// Position of "phase" in its partition's phase list.
int phase_slot(const Partition& part, int phase) {
  for (size_t k = 0; k < part.phases.size(); ++k) {
    if (part.phases[k] == phase) return static_cast<int>(k);
  }
  return -1;
}

// "m" with its range padded with zero dimensions up to "n".
isl::map pad_range(isl::map m, int n) {
  int have = static_cast<int>(isl_map_dim(m.get(), isl_dim_out));
  if (have >= n) return m;
  isl_map* r = isl_map_add_dims(m.release(), isl_dim_out, n - have);
  for (int k = have; k < n; ++k) r = isl_map_fix_si(r, isl_dim_out, k, 0);
  return isl::manage(r);
}

}  // namespace

KernelSignature kernel_signature(const Scop& scop, const ScopBoxes& boxes, int phase) {
  KernelSignature sig;
  sig.params = scop.params;
  const Phase& ph = scop.phases[phase];
  for (int l : ph.serial_loops) sig.serial.push_back(scop.loops[l].c_name);
  const PhaseBoxes& pb = boxes.phases[phase];
  const Partition& part = boxes.partitions[pb.partition];
  for (const PartitionDim& d : part.dims) {
    sig.tile.push_back(d.lo_param);
    sig.tile.push_back(d.hi_param);
  }
  std::vector<bool> used(scop.arrays.size(), false);
  for (int s : ph.statements) {
    for (int a : scop.statements[s].accesses) used[scop.accesses[a].array] = true;
  }
  for (size_t a = 0; a < scop.arrays.size(); ++a) {
    if (!used[a]) continue;
    const ArrayInfo& arr = scop.arrays[a];
    if (scop.is_private(phase, static_cast<int>(a))) {
      sig.privates.push_back(static_cast<int>(a));
      // Its last value copied out: its memory too.
      for (const CopyOut& c : ph.copy_outs) {
        if (scop.accesses[c.access].array == static_cast<int>(a)) {
          sig.arrays.push_back(static_cast<int>(a));
          break;
        }
      }
    } else if (arr.is_scalar && !arr.promoted) {
      // A scalar that is also a parameter is passed as a parameter already.
      if (std::find(sig.params.begin(), sig.params.end(), arr.c_name) == sig.params.end()) {
        sig.scalars.push_back(static_cast<int>(a));
      }
    } else {
      sig.arrays.push_back(static_cast<int>(a));
    }
  }
  return sig;
}

std::string private_decl(const Scop& scop, int array,
                                const std::function<std::string(const std::string&)>& type) {
  const ArrayInfo& arr = scop.arrays[array];
  // Every read sees a write of the same iteration (poly/scalars.h): the 0 is never read,
  // it only keeps compilers from warning.
  const std::string t = type ? type(arr.elem_type) : arr.elem_type;
  if (arr.is_scalar) return t + " " + arr.c_name + " = 0;  /* private scalar */";
  // A private array (at most kMaxPrivateArrayBytes): a C array of its constant extents.
  std::string dims;
  for (int64_t n : constant_extents(arr)) dims += "[" + std::to_string(n) + "]";
  return t + " " + arr.c_name + dims + " = {0};  /* private array */";
}

std::string kernel_arg_locals(const Scop& scop, const KernelSignature& sig, const std::string& from,
                              bool scalars, std::vector<std::string>& names,
                              const std::function<std::string(const std::string&)>& type) {
  std::ostringstream os;
  for (const auto* v : {&sig.params, &sig.serial, &sig.tile}) {
    for (const std::string& p : *v) {
      os << "  const int64_t " << p << " = " << from << p << ";\n";
      names.push_back(p);
    }
  }
  if (scalars) {
    for (int a : sig.scalars) {
      const ArrayInfo& arr = scop.arrays[a];
      os << "  const " << arr.elem_type << " " << arr.c_name << " = " << from << arr.c_name << ";\n";
      names.push_back(arr.c_name);
    }
    for (int a : sig.privates) {
      os << "  " << private_decl(scop, a, type) << "\n";
      names.push_back(scop.arrays[a].c_name);
    }
  }
  return os.str();
}

std::string host_kernel_args_struct(const Scop& scop, const KernelSignature& sig,
                                    const std::string& name) {
  std::ostringstream os;
  os << "struct " << name << "_args {\n";
  auto ints = [&](const char* what, const std::vector<std::string>& v) {
    if (v.empty()) return;
    os << "  int64_t " << join(v, ", ") << ";  /* " << what << " */\n";
  };
  ints("scop parameters", sig.params);
  ints("serial iterators", sig.serial);
  ints("tile", sig.tile);
  for (int a : sig.scalars) {
    os << "  " << scop.arrays[a].elem_type << " " << scop.arrays[a].c_name
       << ";  /* read-only scalar */\n";
  }
  size_t n = std::max<size_t>(sig.arrays.size(), 1);
  os << "  /* per array (";
  for (size_t k = 0; k < sig.arrays.size(); ++k) os << (k ? ", " : "") << scop.arrays[sig.arrays[k]].c_name;
  os << "): the number of pieces and the byte offset of the pieces after this struct */\n";
  os << "  int64_t npieces[" << n << "], offset[" << n << "];\n";
  os << "};\n";
  return os.str();
}

namespace {

// The identifiers "e" uses, added to "names".
void identifiers(const Expr* e, std::set<std::string>& names) {
  if (!e) return;
  if (e->kind == Expr::Kind::kIdent) names.insert(e->text);
  for (const ExprPtr& k : e->kids) identifiers(k.get(), names);
}

// The accesses in memory (Scop::in_memory: arrays, and promoted scalars outside the phases
// that keep them private) of statement "stmt" as its text spells them: one per access
// expression (a compound assignment's read and write share one), the first in the model's
// order; "decl_write" is a declaration's write of a scalar in memory (it has no
// expression), or null.
std::map<const Expr*, const Access*> printed_accesses(const Scop& scop, int stmt,
                                                      const Access** decl_write = nullptr) {
  std::map<const Expr*, const Access*> by_expr;
  if (decl_write) *decl_write = nullptr;
  for (int a : scop.statements[stmt].accesses) {
    const Access& acc = scop.accesses[a];
    if (!scop.in_memory(a)) continue;
    if (acc.expr) {
      by_expr.emplace(acc.expr, &acc);
    } else if (acc.kind == AccessKind::kWrite && decl_write) {
      *decl_write = &acc;
    }
  }
  return by_expr;
}

// The C condition of "c.last" over the scop parameters, the serial iterators and the
// statement's iterators (by their C names, as bound in its block), knowing the instance
// is in the statement's domain.
std::string copy_out_guard(const Scop& scop, const CopyOut& c) {
  const Statement& st = scop.statements[scop.accesses[c.access].statement];
  const int depth = static_cast<int>(st.iterators.size());
  auto as_params = [&](isl_set* s) {
    for (int d = 0; d < depth; ++d) {
      s = isl_set_set_dim_name(s, isl_dim_set, d, scop.c_iterator(st.index, d).c_str());
    }
    const int np = static_cast<int>(isl_set_dim(s, isl_dim_param));
    s = isl_set_move_dims(s, isl_dim_param, np, isl_dim_set, 0, depth);
    return isl::manage(isl_set_params(s));
  };
  return rename_isl_macros(
      c_condition_from_set(as_params(c.last.copy()), as_params(st.domain.copy())));
}

// The copy-outs (Phase::copy_outs) after the instances of statement "stmt".
std::vector<const CopyOut*> copy_outs_of(const Scop& scop, int stmt) {
  std::vector<const CopyOut*> r;
  const int phase = scop.statements[stmt].phase;
  if (phase < 0) return r;
  for (const CopyOut& c : scop.phases[phase].copy_outs) {
    if (scop.accesses[c.access].statement == stmt) r.push_back(&c);
  }
  return r;
}

}  // namespace

void statement_block(const Scop& scop, int stmt, const std::vector<std::string>& bind0,
                     const std::string& iter_type, const AccessPrinter& access,
                     std::vector<std::string>& lines, bool count, bool operands_first) {
  const Statement& st = scop.statements[stmt];
  // Only the iterators the statement uses (`t = 0;` inside a loop uses none): an unused
  // constant is a warning, an error for nvcc -Werror all-warnings.
  std::set<std::string> used;
  identifiers(st.rhs_value ? st.expr->kids[0].get() : st.expr, used);
  identifiers(st.rhs_value, used);
  if (st.decl) identifiers(st.decl->init.get(), used);
  const std::vector<const CopyOut*> copy = copy_outs_of(scop, stmt);
  std::vector<std::string> bind;
  for (const std::string& b : bind0) {
    if (!copy.empty() || used.count(b.substr(0, b.find(' ')))) bind.push_back(b);
  }
  lines.push_back("{");
  lines.push_back("  /* " + st.name + ": " + comment_safe(st.text) + " */");
  if (!bind.empty()) lines.push_back("  const " + iter_type + " " + join(bind, ", ") + ";");
  std::vector<std::string> loads;
  const std::string text = rewrite_statement(scop, stmt, access, operands_first ? &loads : nullptr);
  for (const std::string& l : loads) lines.push_back("  " + l);
  lines.push_back("  " + text);
  if (count) lines.push_back("  BBMM_GEN_INSTANCE();");
  for (const CopyOut* c : copy) {
    // The last value of a live-out private scalar, or of the element of a private array
    // the statement wrote: into its memory (poly/scalars.h).
    const Access& acc = scop.accesses[c->access];
    const ArrayInfo& arr = scop.arrays[acc.array];
    const std::string guard = copy_out_guard(scop, *c);
    std::vector<std::string> subs = {"0"};
    std::string local = arr.c_name;
    if (!arr.is_scalar) {
      std::string base;
      std::vector<const Expr*> sub_exprs;
      access_subscripts(*acc.expr, base, sub_exprs);
      subs.clear();
      for (const Expr* e : sub_exprs) {
        subs.push_back(print_c_expr(*e, [](const Expr&) { return std::string(); }));
        local += "[" + subs.back() + "]";
      }
    }
    lines.push_back("  " + (guard == "1" ? std::string() : "if (" + guard + ") ") +
                    access(acc, subs) + " = " + local + ";  /* last value */");
  }
  lines.push_back("}");
}

namespace {

bool has_call(const Expr* e) {
  if (!e) return false;
  if (e->kind == Expr::Kind::kCall) return true;
  for (const ExprPtr& k : e->kids) {
    if (has_call(k.get())) return true;
  }
  return false;
}

// The reads in memory of "e" that every evaluation of it performs, in source order: not
// under a branch of ?: or the right operand of && and || ("cond"), and not the operand of an
// assignment, ++, -- or & ("lvalue").
void unconditional_reads(const Expr& e, bool cond, bool lvalue,
                         const std::map<const Expr*, const Access*>& by_expr,
                         std::vector<const Expr*>& out) {
  auto it = by_expr.find(&e);
  if (it != by_expr.end()) {
    if (!cond && !lvalue && it->second->kind == AccessKind::kRead) out.push_back(&e);
    return;  // affine subscripts read nothing
  }
  using K = Expr::Kind;
  for (size_t k = 0; k < e.kids.size(); ++k) {
    bool c = cond, l = false;
    switch (e.kind) {
      case K::kAssign:
        l = k == 0;
        break;
      case K::kUnary:
        l = e.text == "&" || e.text == "++" || e.text == "--";
        break;
      case K::kPostfix:
        l = true;
        break;
      case K::kTernary:
        c = cond || k > 0;
        break;
      case K::kBinary:
        c = cond || (k == 1 && (e.text == "&&" || e.text == "||"));
        break;
      case K::kMember:
        l = lvalue;
        break;
      default:
        break;
    }
    unconditional_reads(*e.kids[k], c, l, by_expr, out);
  }
}

}  // namespace

std::string rewrite_statement(const Scop& scop, int stmt, const AccessPrinter& access,
                              std::vector<std::string>* operand_loads) {
  const Statement& st = scop.statements[stmt];
  const Access* decl_write = nullptr;
  const std::map<const Expr*, const Access*> by_expr = printed_accesses(scop, stmt, &decl_write);
  // Operands first: each read every evaluation performs becomes a local declared before the
  // statement, one per distinct text, in source order.
  std::map<const Expr*, std::string> loaded;
  std::function<std::string(const Expr&)> rewrite = [&](const Expr& e) -> std::string {
    auto ld = loaded.find(&e);
    if (ld != loaded.end()) return ld->second;
    auto it = by_expr.find(&e);
    if (it == by_expr.end()) return "";
    if (scop.arrays[it->second->array].is_scalar) return access(*it->second, {"0"});
    std::string base;
    std::vector<const Expr*> subs;
    access_subscripts(e, base, subs);
    std::vector<std::string> texts;
    for (const Expr* s : subs) texts.push_back(print_c_expr(*s, rewrite));
    return access(*it->second, texts);
  };
  const Expr* value = st.decl && st.decl->init ? st.decl->init.get()
                      : st.rhs_value           ? st.rhs_value
                                               : st.expr;
  if (operand_loads && has_call(value)) {
    std::vector<const Expr*> reads;
    if (st.rhs_value) {
      unconditional_reads(*st.expr->kids[0], false, true, by_expr, reads);
      unconditional_reads(*st.rhs_value, false, false, by_expr, reads);
    } else {
      unconditional_reads(*value, false, false, by_expr, reads);
    }
    std::map<std::string, std::string> by_text;
    for (const Expr* e : reads) {
      const std::string text = rewrite(*e);
      auto [slot, fresh] = by_text.emplace(text, "bbmm_v" + std::to_string(by_text.size()));
      if (fresh) operand_loads->push_back("const auto " + slot->second + " = " + text + ";");
      loaded[e] = slot->second;
    }
  }
  if (st.decl && st.decl->init) {
    const std::string lhs = decl_write ? access(*decl_write, {"0"}) : st.decl->name;
    return lhs + " = " + print_c_expr(*st.decl->init, rewrite) + ";";
  }
  if (!st.expr) return "";
  if (st.rhs_value) {
    return print_c_expr(*st.expr->kids[0], rewrite) + " " + st.expr->text + " " +
           print_c_expr(*st.rhs_value, rewrite) + ";";
  }
  return print_c_expr(*st.expr, rewrite) + ";";
}

namespace {

// Box-local addressing of a piece held in locals "<var>_d" (element pointer), "<var>_o" and
// "<var>_s<d>" (the strides of all but the last dimension): the text that sets "<var>_s<d>"
// from piece "piece" (each line "<indent><decl><var>_s<d> = <piece>->stride[d];") and
// returns the offset "-(<piece>->lo[0] * <var>_s0 + ... + <piece>->lo[rank-1])".
std::string piece_strides_and_offset(std::ostream& os, const std::string& indent,
                                     const std::string& decl, const std::string& var,
                                     const std::string& piece, int rank) {
  std::string off;
  for (int d = 0; d < rank; ++d) {
    if (d + 1 < rank) {
      os << indent << decl << var << "_s" << d << " = " << piece << "->stride[" << d << "];\n";
      off += (d ? " + " : "") + piece + "->lo[" + std::to_string(d) + "] * " + var + "_s" +
             std::to_string(d);
    } else {
      off += (d ? " + " : "") + piece + "->lo[" + std::to_string(d) + "]";
    }
  }
  return "-(" + off + ")";
}

// "<var>_d[<var>_o + (s0) * <var>_s0 + ... + (s_last)]": an element through those locals.
std::string box_local_element(const std::string& var, const std::vector<std::string>& subs) {
  const int rank = static_cast<int>(subs.size());
  std::string idx = var + "_o";
  for (int d = 0; d < rank; ++d) {
    idx += " + (" + subs[d] + ")";
    if (d + 1 < rank) idx += " * " + var + "_s" + std::to_string(d);
  }
  return var + "_d[" + idx + "]";
}

}  // namespace

std::string ref_name(const Access& acc) { return "bbmm_ref" + std::to_string(acc.id); }

std::vector<const Access*> printed_references(const Scop& scop, int stmt) {
  std::vector<const Access*> printed;
  const Access* decl_write = nullptr;
  for (const auto& [expr, acc] : printed_accesses(scop, stmt, &decl_write)) printed.push_back(acc);
  if (decl_write) printed.push_back(decl_write);
  for (const CopyOut* c : copy_outs_of(scop, stmt)) printed.push_back(&scop.accesses[c->access]);
  std::sort(printed.begin(), printed.end(),
            [](const Access* x, const Access* y) { return x->id < y->id; });
  return printed;
}

std::string ref_piece_lookups(const Scop& scop, const ScopBoxes& boxes, int phase,
                              const std::string& lookup, const std::string& per_element,
                              const std::string& indent, std::vector<std::string>& locals) {
  std::map<int, const TileBox*> box_of;  // access id -> the box it touches in the tile
  for (const ArrayBoxes& ab : boxes.phases[phase].arrays) {
    for (size_t i = 0; i < ab.accesses.size() && i < ab.access_boxes.size(); ++i) {
      box_of[ab.accesses[i]] = &ab.access_boxes[i];
    }
  }
  std::ostringstream os;
  std::vector<std::string> refs;
  for (int s : scop.phases[phase].statements) {
    for (const Access* ap : printed_references(scop, s)) {
      const Access& acc = *ap;
      const ArrayInfo& arr = scop.arrays[acc.array];
      const std::string r = ref_name(acc);
      const std::string p = "bbmm_" + arr.c_name;
      const int rank = static_cast<int>(arr.extents.size());
      refs.push_back(r);
      os << indent << "/* " << comment_safe(acc.text) << " */\n";
      os << indent << "const bbmm_piece* " << r << " = NULL;\n";
      os << indent << arr.elem_type << "* " << r << "_d = NULL;\n";
      os << indent << "int64_t " << r << "_o = 0";
      for (int d = 0; d + 1 < rank; ++d) os << ", " << r << "_s" << d << " = 0";
      os << ";\n";
      os << indent << "int " << r << "_k = 0;  /* the piece of its last element, per element */\n";
      locals.push_back(r + "_d");
      locals.push_back(r + "_o");
      locals.push_back(r + "_k");
      for (int d = 0; d + 1 < rank; ++d) locals.push_back(r + "_s" + std::to_string(d));
      auto it = box_of.find(acc.id);
      if (it == box_of.end()) continue;
      BoxText box;
      try {
        box = box_c_text(*it->second);
      } catch (const std::logic_error&) {
        continue;  // no C form: this reference finds the piece of each element
      }
      std::vector<std::string> lo, hi;
      for (int d = 0; d < rank; ++d) {
        lo.push_back(rename_isl_macros(box.lo[d]));
        hi.push_back(rename_isl_macros(box.hi[d]));
      }
      // Under the per-element test setting no reference has a piece.
      os << indent << "if (!" << per_element
         << (box.guard == "1" ? "" : " && (" + rename_isl_macros(box.guard) + ")") << ") {\n";
      os << indent << "  const int64_t bbmm_rlo[" << rank << "] = {" << join(lo, ", ") << "};\n";
      os << indent << "  const int64_t bbmm_rhi[" << rank << "] = {" << join(hi, ", ") << "};\n";
      os << indent << "  " << r << " = " << lookup << "(" << p << "_p, " << p << "_n, " << rank
         << ", bbmm_rlo, bbmm_rhi);\n";
      os << indent << "}\n";
      os << indent << "if (" << r << ") {\n";
      os << indent << "  " << r << "_d = (" << arr.elem_type << "*)((char*)" << r << "->data + " << r
         << "->offset);\n";
      const std::string off = piece_strides_and_offset(os, indent + "  ", "", r, r, rank);
      os << indent << "  " << r << "_o = " << off << ";\n";
      os << indent << "}\n";
    }
  }
  for (std::string& r : refs) r += " != NULL";
  if (refs.empty()) refs.push_back("1");
  os << indent << "const int bbmm_direct = " << join(refs, " && ") << ";\n";
  locals.push_back("bbmm_direct");
  return os.str();
}

bool phase_writes(const Scop& scop, const Phase& ph, int array) {
  for (int st : ph.statements) {
    for (int a : scop.statements[st].accesses) {
      const Access& acc = scop.accesses[a];
      if (acc.array == array && acc.kind == AccessKind::kWrite) return true;
    }
  }
  return false;
}

std::string ref_direct_access(const Access& acc, const std::vector<std::string>& subs) {
  return box_local_element(ref_name(acc), subs);
}

std::vector<std::string> tile_param_names(const KernelSignature& sig,
                                          const std::vector<std::string>& extra) {
  std::vector<std::string> names = sig.params;
  names.insert(names.end(), sig.serial.begin(), sig.serial.end());
  names.insert(names.end(), sig.tile.begin(), sig.tile.end());
  names.insert(names.end(), extra.begin(), extra.end());
  return names;
}

isl::set tile_param_context(const Scop& scop, const ScopBoxes& boxes, int phase,
                            const KernelSignature& sig, const std::vector<std::string>& extra) {
  const Partition& part = boxes.partitions[boxes.phases[phase].partition];
  std::vector<std::string> cons;
  for (const PartitionDim& d : part.dims) cons.push_back(d.lo_param + " < " + d.hi_param);
  return isl::set(scop.context.ctx(), "[" + join(tile_param_names(sig, extra), ", ") +
                                          "] -> { : " +
                                          (cons.empty() ? "true" : join(cons, " and ")) + " }");
}

namespace {

// tile_domain with extra parameters and constraints "extra_cons" on the statement's
// dimensions (named bbmm_d0, bbmm_d1, ...).
isl::set tile_domain_with(const Scop& scop, const ScopBoxes& boxes, int phase,
                          const KernelSignature& sig, int stmt,
                          const std::vector<std::string>& extra,
                          const std::vector<std::string>& extra_cons) {
  const Phase& ph = scop.phases[phase];
  const Partition& part = boxes.partitions[boxes.phases[phase].partition];
  const int slot = phase_slot(part, phase);
  const int ns = static_cast<int>(ph.serial_loops.size());
  const Statement& st = scop.statements[stmt];
  const int depth = static_cast<int>(st.iterators.size());
  std::vector<std::string> dims, cons = extra_cons;
  for (int d = 0; d < depth; ++d) dims.push_back("bbmm_d" + std::to_string(d));
  for (int d = 0; d < ns && d < depth; ++d) cons.push_back(dims[d] + " = " + sig.serial[d]);
  for (size_t pd = 0; pd < part.dims.size(); ++pd) {
    if (slot < 0 || slot >= static_cast<int>(part.dims[pd].loops.size())) continue;
    const int d = split_dim(st, part.dims[pd].loops[slot]);
    if (d >= 0 && d < depth)
      cons.push_back(part.dims[pd].lo_param + " <= " + dims[d] + " < " + part.dims[pd].hi_param);
  }
  isl::set tile(scop.context.ctx(), "[" + join(tile_param_names(sig, extra), ", ") + "] -> { " +
                                        st.name + "[" + join(dims, ", ") + "] : " +
                                        (cons.empty() ? "true" : join(cons, " and ")) + " }");
  // The statement's domain has the scop parameters only: align it to the tile's.
  isl::set dom = isl::manage(isl_set_align_params(st.domain.copy(), tile.get_space().release()));
  return dom.intersect(tile);
}

}  // namespace

isl::set tile_domain(const Scop& scop, const ScopBoxes& boxes, int phase,
                     const KernelSignature& sig, int stmt) {
  return tile_domain_with(scop, boxes, phase, sig, stmt, {}, {});
}

TileLoops::TileLoops(const Scop& scop, const ScopBoxes& boxes, int phase,
                     const KernelSignature& sig, const TileLoopOptions& opts)
    : scop_(scop), indent_(opts.indent) {
  const Phase& ph = scop.phases[phase];
  const PhaseBoxes& pb = boxes.phases[phase];
  const Partition& part = boxes.partitions[pb.partition];
  const int slot = phase_slot(part, phase);
  const int ns = static_cast<int>(ph.serial_loops.size());
  serial_ = ns;

  std::vector<std::string> extra = opts.extra_params;
  if (opts.one_iteration_per_item) extra.push_back("bbmm_x");
  isl::set context = tile_param_context(scop, boxes, phase, sig, extra);
  if (!opts.known.is_null()) {
    context = context.intersect(isl::manage(
        isl_set_align_params(opts.known.copy(), isl_set_get_space(context.get()))));
  }

  std::vector<isl::map> maps;
  int max_out = 0;
  for (int s : ph.statements) {
    const Statement& st = scop.statements[s];
    const int depth = static_cast<int>(st.iterators.size());
    std::vector<std::string> cons;
    for (int d = 0; d < depth; ++d) {
      const std::string dim = "bbmm_d" + std::to_string(d);
      if (opts.one_iteration_per_item && !part.dims.empty() && slot >= 0 &&
          slot < static_cast<int>(part.dims[0].loops.size()) &&
          d == split_dim(st, part.dims[0].loops[slot])) {
        cons.push_back(dim + " = bbmm_x");
      }
      auto it = opts.fixed.find(s);
      if (it == opts.fixed.end()) continue;
      for (const auto& [loop, param] : it->second) {
        if (st.loops[d] == loop) cons.push_back(dim + " = " + param);
      }
    }
    isl::set dom = tile_domain_with(scop, boxes, phase, sig, s, extra, cons);
    isl::map sched = isl::manage(
        isl_map_align_params(st.schedule.copy(), dom.get_space().release()));
    sched = sched.intersect_domain(dom);
    // Drop the serial part of the schedule (constant within the tile).
    sched = isl::manage(isl_map_project_out(sched.release(), isl_dim_out, 0, 2 * ns));
    max_out = std::max(max_out, static_cast<int>(isl_map_dim(sched.get(), isl_dim_out)));
    maps.push_back(sched);
  }
  isl::union_map schedule = isl::union_map::empty(scop.context.ctx());
  for (isl::map& m : maps) schedule = schedule.unite(isl::union_map(pad_range(m, max_out)));

  ast_ = std::make_unique<LoopAst>(schedule, context, "bbmm_k");
  if (ph.block_loop >= 0) {
    // The block loop's schedule dimension, 2d + 1 for the loop at depth d, less the serial
    // part dropped above (the same in every statement: all are inside it).
    const Statement& st = scop.statements[ph.statements[0]];
    const auto at = std::find(st.loops.begin(), st.loops.end(), ph.block_loop);
    if (at != st.loops.end())
      block_iterator_ = "bbmm_k" + std::to_string(2 * (static_cast<int>(at - st.loops.begin()) - ns) + 1);
  }
}

std::string TileLoops::print(const PrintStatement& print_stmt) const {
  return print(print_stmt, indent_);
}

std::string TileLoops::print(const PrintStatement& print_stmt, int indent) const {
  return print_loops(print_stmt, indent, nullptr);
}

std::string TileLoops::print(const PrintStatement& print_stmt, int indent, SharedLoop shared) const {
  if (block_iterator_.empty()) return print_loops(print_stmt, indent, nullptr);
  shared.iterator = block_iterator_;
  return print_loops(print_stmt, indent, &shared);
}

std::string TileLoops::print_loops(const PrintStatement& print_stmt, int indent,
                                   const SharedLoop* shared) const {
  PrintInstance print = [&](const std::string& name, const std::vector<std::string>& args,
                            std::vector<std::string>& lines) {
    int s = scop_.statement_index(name);
    const Statement& st = scop_.statements[s];
    std::vector<std::string> bind;
    // A serial iterator is the kernel's parameter named after its loop; a rescheduled
    // statement may call it by another (source) name (poly/reschedule.h).
    for (size_t d = 0; d < static_cast<size_t>(serial_) && d < st.loops.size(); ++d) {
      const std::string& name = scop_.c_iterator(s, static_cast<int>(d));
      if (name != scop_.loops[st.loops[d]].c_name) {
        bind.push_back(name + " = " + scop_.loops[st.loops[d]].c_name);
      }
    }
    if (!st.source_rows.empty()) {
      // A skewed statement (a wavefront): each source iterator is an affine expression of
      // the loops' values; the loops' own names are bound too where the source has none.
      std::vector<std::string> value(st.loops.size());
      for (size_t d = 0; d < st.loops.size(); ++d) {
        value[d] = d < static_cast<size_t>(serial_) ? scop_.loops[st.loops[d]].c_name
                   : d < args.size()                ? "(" + args[d] + ")"
                                                    : "0";
      }
      for (size_t k = 0; k < st.source_rows.size(); ++k) {
        std::string e;
        for (size_t d = 0; d < st.source_rows[k].size(); ++d) {
          const long c = st.source_rows[k][d];
          if (c == 0) continue;
          const long m = c < 0 ? -c : c;
          e += (c < 0 ? (e.empty() ? "-" : " - ") : (e.empty() ? "" : " + ")) +
               (m == 1 ? value[d] : std::to_string(m) + " * " + value[d]);
        }
        if (e == st.source_c_names[k]) continue;  // a serial loop of the same name
        bind.push_back(st.source_c_names[k] + " = " + (e.empty() ? "0" : e));
      }
      for (size_t d = serial_; d < args.size() && d < st.loops.size(); ++d) {
        const std::string& name = scop_.c_iterator(s, static_cast<int>(d));
        if (std::find(st.source_c_names.begin(), st.source_c_names.end(), name) ==
            st.source_c_names.end())
          bind.push_back(name + " = " + args[d]);
      }
      print_stmt(s, bind, lines);
      return;
    }
    for (size_t d = serial_; d < args.size() && d < st.loops.size(); ++d) {
      bind.push_back(scop_.c_iterator(s, static_cast<int>(d)) + " = " + args[d]);
    }
    print_stmt(s, bind, lines);
  };
  return ast_->print(indent, print, shared);
}

std::string tile_loops(const Scop& scop, const ScopBoxes& boxes, int phase,
                       const KernelSignature& sig, const TileLoopOptions& opts,
                       const PrintStatement& print_stmt) {
  return TileLoops(scop, boxes, phase, sig, opts).print(print_stmt);
}

std::string host_kernel_functions(const Scop& scop, const ScopBoxes& boxes, int phase,
                                  const KernelSignature& sig, const std::string& name,
                                  const std::string& fn_name) {
  std::ostringstream os;
  TileLoopOptions opts;
  opts.indent = 2;
  const TileLoops loops(scop, boxes, phase, sig, opts);
  for (int variant = 0; variant < 2; ++variant) {
    const bool pieces = variant == 1;
    const std::string fn = (fn_name.empty() ? name : fn_name) + (pieces ? "_pieces" : "");
    os << "/* " << (pieces ? "Any number of pieces per array: each access finds its piece."
                           : "One piece per array: direct box-local addressing.")
       << " */\n";
    os << "static void " << fn << "(const bbmm_launch_info* bbmm_info, void* bbmm_argp) {\n";
    os << "  const struct " << name << "_args* bbmm_a = (const struct " << name
       << "_args*)bbmm_argp;\n";
    std::vector<std::string> locals;
    os << kernel_arg_locals(scop, sig, "bbmm_a->", true, locals);
    for (size_t k = 0; k < sig.arrays.size(); ++k) {
      const ArrayInfo& arr = scop.arrays[sig.arrays[k]];
      const std::string p = "bbmm_" + arr.c_name;
      os << "  const bbmm_piece* " << p << "_p = (const bbmm_piece*)((const char*)bbmm_argp + bbmm_a->offset["
         << k << "]);\n";
      if (pieces) {
        os << "  const int " << p << "_n = (int)bbmm_a->npieces[" << k << "];\n";
        locals.push_back(p + "_n");
      } else {
        const int rank = static_cast<int>(arr.extents.size());
        os << "  " << arr.elem_type << "* const " << p << "_d = (" << arr.elem_type << "*)((char*)"
           << p << "_p->data + " << p << "_p->offset);\n";
        const std::string off =
            piece_strides_and_offset(os, "  ", "const int64_t ", p, p + "_p", rank);
        os << "  const int64_t " << p << "_o = " << off << ";\n";
        locals.push_back(p + "_d");
        locals.push_back(p + "_o");
      }
      locals.push_back(p + "_p");
    }
    if (pieces) os << ref_piece_lookups(scop, boxes, phase, "bbmm_gen_piece_of", "bbmm_gen_per_element", "  ", locals);
    os << "  BBMM_GEN_INSTANCES_BEGIN();\n";
    os << "  (void)bbmm_info;\n";
    for (const std::string& l : locals) os << "  (void)" << l << ";\n";

    auto access = [&](const Access& acc, const std::vector<std::string>& subs) -> std::string {
      const ArrayInfo& arr = scop.arrays[acc.array];
      const std::string p = "bbmm_" + arr.c_name;
      const int rank = static_cast<int>(subs.size());
      if (pieces) {
        // A reference with its piece addressed in it; the others find each element's.
        const std::string r = ref_name(acc);
        return "(*(" + r + "_d ? &" + ref_direct_access(acc, subs) + " : (" + arr.elem_type +
               "*)bbmm_gen_at_from(" + p + "_p, " + p + "_n, " + std::to_string(rank) +
               ", (const int64_t[]){" + join(subs, ", ") + "}, sizeof(" + arr.elem_type +
               "), \"" + arr.c_name + "\", &" + r + "_k)))";
      }
      return box_local_element(p, subs);
    };
    auto print_loops_with = [&](const AccessPrinter& printer, int indent) {
      return loops.print(
          [&](int s, const std::vector<std::string>& bind, std::vector<std::string>& lines) {
            statement_block(scop, s, bind, "int64_t", printer, lines, /*count=*/true);
          },
          indent);
    };
    if (pieces) {
      // Every reference in one piece: direct addressing (no test in the loops); else each
      // reference in its piece where it has one, per element where not.
      os << "  if (bbmm_direct) {\n" << print_loops_with(ref_direct_access, 4) << "  } else {\n"
         << print_loops_with(access, 4) << "  }\n";
    } else {
      os << print_loops_with(access, 2);
    }
    os << "  BBMM_GEN_INSTANCES_END(bbmm_info);\n";
    os << "}\n\n";
  }
  return os.str();
}

}  // namespace bbmm::compiler
