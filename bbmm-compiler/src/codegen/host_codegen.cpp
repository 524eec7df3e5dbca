#include "codegen/host_codegen.h"

#include <isl/map.h>
#include <isl/set.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "codegen/box_printer.h"
#include "codegen/c_printer.h"
#include "codegen/cuda_codegen.h"
#include "codegen/kernel_codegen.h"
#include "codegen/loop_ast.h"
#include "codegen/opencl_codegen.h"
#include "codegen/split_weights.h"
#include "poly/box_util.h"

namespace bbmm::compiler {
namespace {

// Box expressions come from isl's printer; use the helpers of bbmm/generated_support.h.
std::string cx(const std::string& e) { return rename_isl_macros(e); }

std::string access_name(BoxAccess a) {
  switch (a) {
    case BoxAccess::kRead: return "BBMM_READ";
    case BoxAccess::kWrite: return "BBMM_WRITE";
    case BoxAccess::kReadWrite: return "BBMM_READ_WRITE";
  }
  return "BBMM_READ_WRITE";
}

// Prints, indented by "ind", the call "fn(tile, array, rank, lo, hi[, mode], ...)" for
// "tile_box", under its guard.
void emit_box(std::ostream& os, const std::string& ind, const TileBox& tile_box,
              const std::string& call, const std::string& array, const std::string& tail) {
  const BoxText box = box_c_text(tile_box);
  const size_t rank = box.lo.size();
  std::vector<std::string> lo, hi;
  for (size_t d = 0; d < rank; ++d) {
    lo.push_back(cx(box.lo[d]));
    hi.push_back(cx(box.hi[d]));
  }
  const std::string& inner = ind;
  if (box.guard != "1") os << ind << "if (" << cx(box.guard) << ") {\n";
  else os << ind << "{\n";
  os << inner << "  const int64_t bbmm_blo[" << rank << "] = {" << join(lo, ", ") << "};\n";
  os << inner << "  const int64_t bbmm_bhi[" << rank << "] = {" << join(hi, ", ") << "};\n";
  os << inner << "  " << call << "(bbmm_t, " << array << ", " << rank << ", bbmm_blo, bbmm_bhi"
     << tail << ");\n";
  if (box.guard != "1") os << ind << "}\n";
  else os << ind << "}\n";
}

// The same for every row segment of "row_enumeration".
void emit_rows(std::ostream& os, const std::string& ind, const RowEnumeration& row_enumeration,
               const std::string& call, const std::string& array, const std::string& tail) {
  const RowsText rows = rows_c_text(row_enumeration);
  const size_t outer = rows.rows.lo.size();
  const size_t rank = outer + 1;
  os << ind << "if (" << cx(rows.rows.guard) << ") {  /* row by row */\n";
  std::string in = ind + "  ";
  for (size_t d = 0; d < outer; ++d) {
    const std::string r = "bbmm_r" + std::to_string(d);
    // (Bounds in parentheses: a piecewise one is a conditional expression, which binds
    // more loosely than the comparison.)
    os << in << "for (int64_t " << r << " = " << cx(rows.rows.lo[d]) << "; " << r << " < ("
       << cx(rows.rows.hi[d]) << "); ++" << r << ")\n";
    in += "  ";
  }
  os << in << "if (" << cx(rows.seg_guard) << ") {\n";
  std::vector<std::string> lo, hi;
  for (size_t d = 0; d < outer; ++d) {
    lo.push_back("bbmm_r" + std::to_string(d));
    hi.push_back("bbmm_r" + std::to_string(d) + " + 1");
  }
  lo.push_back(cx(rows.seg_lo));
  hi.push_back(cx(rows.seg_hi));
  os << in << "  const int64_t bbmm_blo[" << rank << "] = {" << join(lo, ", ") << "};\n";
  os << in << "  const int64_t bbmm_bhi[" << rank << "] = {" << join(hi, ", ") << "};\n";
  os << in << "  " << call << "(bbmm_t, " << array << ", " << rank << ", bbmm_blo, bbmm_bhi"
     << tail << ");\n";
  os << in << "}\n";
  os << ind << "}\n";
}

class ScopGenerator {
 public:
  ScopGenerator(const Scop& scop, const ScopBoxes& boxes, const CodegenOptions& opts,
                Diagnostics& diag)
      : s_(scop), b_(boxes), opts_(opts), diag_(diag), pre_(opts.symbol_prefix + "_s" + std::to_string(scop.index)) {}

  bool run(GeneratedScop& out) {
    if (!check()) return false;
    std::ostringstream k;
    k << "/* ---- bbmmc: scop " << s_.index << " of " << s_.function << " (lines " << s_.begin_loc.line
      << "-" << s_.end_loc.line << "), target " << target_name(opts_.target)
      << " ---- */\n\n";
    std::string work_functions;
    for (const Partition& part : b_.partitions) {
      if (single_device(part)) continue;
      const std::string fn = pre_ + "_part" + std::to_string(part.id) + "_work";
      std::string text = row_work_function(s_, part, fn, "struct " + pre_ + "_ctx", param_locals("  "));
      if (text.empty()) continue;
      work_fn_[part.id] = fn;
      work_functions += text;
    }
    k << context_struct();
    k << work_functions;
    if (opts_.target == Target::kCuda) {
      device_ << "/* ---- bbmmc: scop " << s_.index << " of " << s_.function << " (lines "
              << s_.begin_loc.line << "-" << s_.end_loc.line << "): CUDA kernels ---- */\n\n";
    }
    for (size_t p = 0; p < s_.phases.size(); ++p) k << phase_code(static_cast<int>(p));
    out.kernels = k.str();
    out.device = device_.str();
    out.body = body();
    return true;
  }

 private:
  bool check() {
    bool ok = true;
    for (size_t a = 0; a < s_.arrays.size(); ++a) {
      const ArrayInfo& arr = s_.arrays[a];
      if (!arr.unknown_type.empty()) {
        diag_.error(arr.decl_loc) << "unknown type name '" << arr.unknown_type << "'";
        diag_.set_last_hint("'" + arr.c_name + "' is declared with it and used in the scop: declare '" +
                            arr.unknown_type + "' before (for example 'typedef double " +
                            arr.unknown_type + ";') or include the header that defines it");
        ok = false;
        continue;
      }
      if (arr.elem_type == "?" || arr.elem_type.empty()) {
        diag_.error(arr.decl_loc) << "code generation needs the type of '" << arr.c_name << "'";
        diag_.set_last_hint("declare it before the scop");
        ok = false;
        continue;
      }
      // Generated names come from the C names: two variables of one C name (a scalar
      // declared in the scop that shadows another) would collide.
      for (size_t b = 0; b < a; ++b) {
        if (s_.arrays[b].c_name != arr.c_name) continue;
        diag_.error(arr.decl_loc) << "code generation does not support two variables named '"
                                  << arr.c_name << "' in one scop";
        diag_.set_last_hint("rename one of them");
        ok = false;
      }
    }
    if (opts_.target == Target::kCuda && !cuda_check_statements(s_, diag_)) ok = false;
    if (b_.phases.size() != s_.phases.size()) {
      diag_.internal_error("codegen", "boxes and phases disagree");
      ok = false;
    }
    return ok;
  }

  // The registered arrays: arrays and promoted scalars (one element).
  std::vector<int> arrays() const {
    std::vector<int> r;
    for (size_t a = 0; a < s_.arrays.size(); ++a) {
      if (!s_.arrays[a].is_scalar || s_.arrays[a].promoted) r.push_back(static_cast<int>(a));
    }
    return r;
  }
  // The read-only scalars, passed by value (written ones are promoted or private).
  std::vector<int> scalars() const {
    std::vector<int> r;
    for (size_t a = 0; a < s_.arrays.size(); ++a) {
      const ArrayInfo& arr = s_.arrays[a];
      if (arr.is_scalar && !arr.written &&
          std::find(s_.params.begin(), s_.params.end(), arr.c_name) == s_.params.end()) {
        r.push_back(static_cast<int>(a));
      }
    }
    return r;
  }

  std::string context_struct() {
    std::ostringstream os;
    os << "/* What every phase of the scop needs: the runtime, the scop parameters, read-only\n"
          "   scalars and the registered arrays. */\n";
    os << "struct " << pre_ << "_ctx {\n";
    os << "  bbmm_runtime* rt;\n  int devices, tiles_per_device;\n";
    os << "  uint64_t capacity;  /* the smallest device memory (bbmm_device_memory) */\n";
    os << "  int64_t* ordered;  /* ordered phase calls so far (bbmm_gen_order_tiles) */\n";
    if (!s_.params.empty()) os << "  int64_t " << join(s_.params, ", ") << ";\n";
    for (int a : scalars()) os << "  " << s_.arrays[a].elem_type << " " << s_.arrays[a].c_name << ";\n";
    std::vector<std::string> arr;
    for (int a : arrays()) arr.push_back("*" + s_.arrays[a].c_name);
    if (!arr.empty()) os << "  bbmm_array " << join(arr, ", ") << ";\n";
    for (const auto& [id, fn] : work_fn_) {
      os << "  bbmm_gen_weights w" << id << ";  /* partition " << id << "'s work (" << fn << ") */\n";
    }
    os << "};\n\n";
    return os.str();
  }

  // Locals "const int64_t N = bbmm_x->N;" for the scop parameters.
  std::string param_locals(const std::string& ind) {
    std::ostringstream os;
    for (const std::string& p : s_.params) {
      os << ind << "const int64_t " << p << " = bbmm_x->" << p << ";\n";
      os << ind << "(void)" << p << ";\n";
    }
    return os.str();
  }

  std::string phase_code(int p) {
    const Phase& ph = s_.phases[p];
    const PhaseBoxes& pb = b_.phases[p];
    const Partition& part = b_.partitions[pb.partition];
    const KernelSignature sig = kernel_signature(s_, b_, p);
    const std::string name = pre_ + "_p" + std::to_string(p);
    std::ostringstream os;
    os << "/* Phase " << p << ": statements";
    for (int st : ph.statements) os << " " << s_.statements[st].name;
    if (ph.parallel_loop >= 0) os << ", parallel loop " << s_.loops[ph.parallel_loop].c_name;
    if (!ph.serial_loops.empty()) {
      os << " inside serial loops";
      for (int l : ph.serial_loops) os << " " << s_.loops[l].c_name;
    }
    os << "; partition " << part.id;
    if (pb.single_device) os << " (runs on one device: a write set is not a union of boxes)";
    os << ". */\n";
    for (int st : ph.statements) {
      os << "/*   " << s_.statements[st].name << ": " << comment_safe(s_.statements[st].text) << " */\n";
    }
    os << host_kernel_args_struct(s_, sig, name) << "\n";
    if (opts_.target != Target::kHost && serial_region(p)) {
      // A serial region may run as a host tile (bbmm_gen_serial_device): its host kernels.
      os << "/* Phase " << p << " on the host (a host tile, BBMM_DEVICE_HOST). */\n";
      os << host_kernel_functions(s_, b_, p, sig, name, name + "_host");
    }
    if (opts_.target == Target::kHost) {
      os << host_kernel_functions(s_, b_, p, sig, name);
    } else if (opts_.target == Target::kOpenCL) {
      os << opencl_kernel_launcher(s_, b_, p, sig, name);
    } else {
      os << cuda_launcher_declarations(name);
      device_ << "/* Phase " << p << " (see the C file for its statements and tiles). */\n";
      device_ << host_kernel_args_struct(s_, sig, name) << "\n";
      device_ << cuda_kernel_launcher(s_, b_, p, sig, name);
    }
    os << bytes_function(p, sig, name);
    os << tile_function(p, sig, name);
    os << phase_function(p, sig, name);
    return os.str();
  }

  // Whether a phase of "part" runs as one tile on one device (its writes have no box form).
  bool single_device(const Partition& part) const {
    for (int p : part.phases) {
      if (b_.phases[p].single_device) return true;
    }
    return false;
  }

  // C expressions [lo, hi) of the 1-D "range" (split_range) over the scop parameters.
  void range_text(const isl::set& range, std::string& lo, std::string& hi) const {
    lo = cx(c_expr_from_pw_aff(isl::manage(isl_set_dim_min(range.copy(), 0)), s_.context));
    isl_pw_aff* mx = isl_set_dim_max(range.copy(), 0);
    mx = isl_pw_aff_add_constant_val(mx, isl_val_one(isl_pw_aff_get_ctx(mx)));
    hi = cx(c_expr_from_pw_aff(isl::manage(mx), s_.context));
  }

  // Whether phase "p" has no parallel loop (its partition has no dimension): it runs as
  // one tile per call, on the host or on device 0 (phase_function).
  bool serial_region(int p) const { return b_.partitions[b_.phases[p].partition].dims.empty(); }

  std::string serial_params_decl(const KernelSignature& sig) {
    std::string r;
    for (const std::string& v : sig.serial) r += ", int64_t " + v;
    return r;
  }

  // "<name>_bytes": the bytes of the boxes a tile of phase "p" requires (an upper bound of
  // its footprint: boxes may overlap), for the capacity-driven tile count; and, when the
  // phase flows out, "<name>_flow_bytes": the bytes of its flow-out boxes (rows not
  // counted), for the order of issue.
  std::string bytes_function(int p, const KernelSignature& sig, const std::string& name) {
    std::string r = box_bytes_function(p, sig, name + "_bytes", "the boxes a tile requires",
                                       &ArrayBoxes::required);
    if (has_flow_out(p)) {
      r += box_bytes_function(p, sig, name + "_flow_bytes",
                              "a tile's flow-out boxes (rows not counted)",
                              &ArrayBoxes::flow_out);
    }
    return r;
  }

  // A C function "fn" returning the bytes of the boxes "which" of a tile of phase "p".
  std::string box_bytes_function(int p, const KernelSignature& sig, const std::string& fn,
                                 const std::string& what,
                                 std::vector<TileBox> ArrayBoxes::*which) {
    const PhaseBoxes& pb = b_.phases[p];
    std::ostringstream os;
    os << "/* Phase " << p << ": the bytes of " << what << ". */\n";
    os << "static uint64_t " << fn << "(const struct " << pre_ << "_ctx* bbmm_x"
       << serial_params_decl(sig);
    for (const std::string& t : sig.tile) os << ", int64_t " << t;
    os << ") {\n";
    os << param_locals("  ");
    for (const std::string& v : sig.serial) os << "  (void)" << v << ";\n";
    for (const std::string& v : sig.tile) os << "  (void)" << v << ";\n";
    os << "  uint64_t bbmm_bytes = 0;\n";
    os << "  uint64_t* const bbmm_t = &bbmm_bytes;\n";
    for (int a : sig.arrays) {
      const ArrayBoxes* ab = array_boxes(pb, a);
      if (!ab) continue;
      const std::string elem = "sizeof(" + s_.arrays[a].elem_type + ")";
      for (const TileBox& box : ab->*which) emit_box(os, "  ", box, "bbmm_gen_box_bytes", elem, "");
    }
    os << "  return bbmm_bytes;\n";
    os << "}\n\n";
    return os.str();
  }

  bool has_flow_out(int p) const {
    for (const ArrayBoxes& ab : b_.phases[p].arrays) {
      if (!ab.flow_out.empty()) return true;
    }
    return false;
  }

  // "x" with the iterators of phase "p"'s serial loops projected out (its parameters).
  isl_set* without_serial_iterators(isl_set* x, int p) const {
    for (int l : s_.phases[p].serial_loops) x = project_out_param(x, s_.loops[l].c_name);
    return x;
  }
  static isl_set* project_out_param(isl_set* x, const std::string& name) {
    const int pos = isl_set_find_dim_by_name(x, isl_dim_param, name.c_str());
    return pos >= 0 ? isl_set_project_out(x, isl_dim_param, pos, 1) : x;
  }

  // "box" of phase "p" over all iterations of the phase's serial loops (their iterators
  // projected out).
  isl::set over_serial_iterations(const TileBox& box, int p) const {
    return isl::manage(without_serial_iterators(box.set.copy(), p));
  }

  // The union over all tiles and all serial iterations of "box" of phase "p": the box of
  // one tile spanning the whole split range "range" (lo_p, hi_p its bounds at each serial
  // iteration) holds every tile's, since a tile's box is the hull of its instances'
  // accesses; then the serial iterators projected out. Over the scop parameters only.
  isl::set over_all_tiles(const TileBox& box, int p, const isl::set& range, const std::string& lo_p,
                          const std::string& hi_p) const {
    isl_pw_aff* mn = isl_set_dim_min(range.copy(), 0);
    isl_pw_aff* mx = isl_set_dim_max(range.copy(), 0);
    mx = isl_pw_aff_add_constant_val(mx, isl_val_one(isl_pw_aff_get_ctx(mx)));
    auto param = [&](const std::string& name, isl_pw_aff* like) {
      isl_set* dom = isl_set_universe(isl_pw_aff_get_domain_space(like));
      return isl_pw_aff_param_on_domain_id(dom, isl_id_alloc(isl_pw_aff_get_ctx(like), name.c_str(), nullptr));
    };
    isl_set* bounds = isl_set_intersect(isl_pw_aff_eq_set(param(lo_p, mn), mn),
                                        isl_pw_aff_eq_set(param(hi_p, mx), mx));
    isl_set* x = isl_set_intersect_params(box.set.copy(), bounds);
    x = project_out_param(project_out_param(x, lo_p), hi_p);
    return isl::manage(without_serial_iterators(x, p));
  }

  // Whether "box" of phase "p" changes with the phase's serial iterators: for some serial
  // iteration where it is nonempty, it is smaller than its union "all" over all iterations
  // (floyd's row k, lu's pivot row).
  static bool moves(const TileBox& box, const isl::set& all) {
    isl_set* u = isl_set_align_params(all.copy(), box.set.get_space().release());
    u = isl_set_intersect_params(u, isl_set_params(box.set.copy()));
    const bool moving = isl_set_is_subset(u, box.set.get()) != isl_bool_true;
    isl_set_free(u);
    return moving;
  }

  std::string tile_function(int p, const KernelSignature& sig, const std::string& name) {
    const PhaseBoxes& pb = b_.phases[p];
    std::ostringstream os;
    os << "/* One tile of phase " << p << " on device \"bbmm_dev\": require, acquire, launch, "
          "flow out, release. */\n";
    os << "static void " << name << "_tile(const struct " << pre_ << "_ctx* bbmm_x"
       << serial_params_decl(sig);
    for (const std::string& t : sig.tile) os << ", int64_t " << t;
    os << ", int bbmm_dev) {\n";
    os << param_locals("  ");
    for (const std::string& v : sig.serial) os << "  (void)" << v << ";\n";
    for (const std::string& v : sig.tile) os << "  (void)" << v << ";\n";
    os << "  bbmm_tile* bbmm_t;\n";
    os << "  int bbmm_required[" << std::max<size_t>(sig.arrays.size(), 1) << "] = {0};\n";
    os << "  bbmm_gen_check(bbmm_tile_begin(bbmm_x->rt, bbmm_dev, &bbmm_t), \"bbmm_tile_begin\");\n";
    // Require.
    for (size_t k = 0; k < sig.arrays.size(); ++k) {
      const int a = sig.arrays[k];
      const ArrayBoxes* ab = array_boxes(pb, a);
      const std::string arr = "bbmm_x->" + s_.arrays[a].c_name;
      const std::string count = ", &bbmm_required[" + std::to_string(k) + "]";
      if (!ab) continue;
      os << "  /* " << s_.arrays[a].c_name << ": " << (ab->read ? "read" : "")
         << (ab->read && ab->written ? ", " : "") << (ab->written ? "written" : "");
      if (ab->written) os << " (" << write_strategy_name(ab->write_strategy) << ")";
      os << "; " << (ab->choice == BoxChoice::kConvex ? "convex hull" : "disjoint boxes") << " */\n";
      const bool per_row = ab->written && ab->write_strategy == WriteStrategy::kPerRow;
      const bool widened = ab->written && ab->write_strategy == WriteStrategy::kWidened;
      for (size_t r = 0; r < ab->required.size(); ++r) {
        BoxAccess mode = ab->required_mode[r];
        // Per-row (or widened) writes: the covering boxes are read here; the rows actually
        // written (their hull) are declared READ_WRITE below, so that the runtime takes only
        // those as written.
        if ((per_row || widened) && mode != BoxAccess::kRead) mode = BoxAccess::kRead;
        // A box only read that moves with the serial iterators is needed for this
        // iteration only: its instance goes at the next phase boundary (a device that
        // reads row k of every step would otherwise keep every row).
        const bool transient = mode == BoxAccess::kRead &&
                               moves(ab->required[r], over_serial_iterations(ab->required[r], p));
        emit_box(os, "  ", ab->required[r], "bbmm_gen_require", arr,
                 ", " + (transient ? std::string("BBMM_READ_TRANSIENT") : access_name(mode)) + count);
      }
      if (per_row) {
        for (const RowEnumeration& rows : ab->write_rows) {
          emit_rows(os, "  ", rows, "bbmm_gen_require", arr, ", BBMM_READ_WRITE" + count);
        }
        for (const TileBox& box : ab->write_boxes) {
          emit_box(os, "  ", box, "bbmm_gen_require", arr, ", BBMM_READ_WRITE" + count);
        }
        for (const TileBox& box : ab->write_hulls) {
          emit_box(os, "  ", box, "bbmm_gen_require", arr, ", BBMM_READ_WRITE" + count);
        }
      }
      if (widened) {
        emit_box(os, "  ", ab->write_boxes.front(), "bbmm_gen_require", arr,
                 ", BBMM_READ_WRITE" + count);
      }
    }
    os << "  bbmm_gen_check(bbmm_tile_acquire(bbmm_t), \"bbmm_tile_acquire\");\n";
    // Launch.
    os << "  {\n";
    const size_t na = std::max<size_t>(sig.arrays.size(), 1);
    os << "    bbmm_view bbmm_v[" << na << "];\n";
    os << "    size_t bbmm_size = sizeof(struct " << name << "_args);\n";
    os << "    int bbmm_single = 1;\n";
    os << "    memset(bbmm_v, 0, sizeof bbmm_v);\n";
    for (size_t k = 0; k < sig.arrays.size(); ++k) {
      os << "    if (bbmm_required[" << k << "]) bbmm_gen_check(bbmm_tile_view(bbmm_t, bbmm_x->"
         << s_.arrays[sig.arrays[k]].c_name << ", &bbmm_v[" << k << "]), \"bbmm_tile_view\");\n";
    }
    os << "    for (int bbmm_k = 0; bbmm_k < " << sig.arrays.size() << "; ++bbmm_k) {\n";
    os << "      bbmm_size += (size_t)bbmm_v[bbmm_k].npieces * sizeof(bbmm_piece);\n";
    os << "      if (bbmm_v[bbmm_k].npieces != 1) bbmm_single = 0;\n";
    os << "    }\n";
    os << "    struct " << name << "_args* bbmm_a = (struct " << name
       << "_args*)bbmm_gen_calloc(bbmm_size);\n";
    for (const auto* v : {&sig.params, &sig.serial, &sig.tile}) {
      for (const std::string& x : *v) os << "    bbmm_a->" << x << " = " << x << ";\n";
    }
    for (int a : sig.scalars) {
      os << "    bbmm_a->" << s_.arrays[a].c_name << " = bbmm_x->" << s_.arrays[a].c_name << ";\n";
    }
    os << "    size_t bbmm_off = sizeof(struct " << name << "_args);\n";
    os << "    for (int bbmm_k = 0; bbmm_k < " << sig.arrays.size() << "; ++bbmm_k) {\n";
    os << "      bbmm_a->npieces[bbmm_k] = bbmm_v[bbmm_k].npieces;\n";
    os << "      bbmm_a->offset[bbmm_k] = (int64_t)bbmm_off;\n";
    os << "      if (bbmm_v[bbmm_k].npieces > 0) memcpy((char*)bbmm_a + bbmm_off, bbmm_v[bbmm_k].pieces, "
          "(size_t)bbmm_v[bbmm_k].npieces * sizeof(bbmm_piece));\n";
    os << "      bbmm_off += (size_t)bbmm_v[bbmm_k].npieces * sizeof(bbmm_piece);\n";
    os << "    }\n";
    if (opts_.target == Target::kHost) {
      os << "    bbmm_gen_check(bbmm_tile_launch(bbmm_t, bbmm_single ? " << name << " : " << name
         << "_pieces, bbmm_a, bbmm_size), \"bbmm_tile_launch\");\n";
    } else if (serial_region(p)) {
      os << "    bbmm_gen_check(bbmm_tile_launch(bbmm_t, bbmm_dev == BBMM_DEVICE_HOST ? "
            "(bbmm_single ? "
         << name << "_host : " << name << "_host_pieces) : (bbmm_single ? " << name
         << "_launch : " << name << "_launch_pieces), bbmm_a, bbmm_size), \"bbmm_tile_launch\");\n";
    } else {
      os << "    bbmm_gen_check(bbmm_tile_launch(bbmm_t, bbmm_single ? " << name << "_launch : "
         << name << "_launch_pieces, bbmm_a, bbmm_size), \"bbmm_tile_launch\");\n";
    }
    os << "    free(bbmm_a);\n";
    os << "  }\n";
    // Flow out.
    for (size_t k = 0; k < sig.arrays.size(); ++k) {
      const int a = sig.arrays[k];
      const ArrayBoxes* ab = array_boxes(pb, a);
      if (!ab || (ab->flow_out.empty() && ab->flow_out_rows.empty())) continue;
      const std::string arr = "bbmm_x->" + s_.arrays[a].c_name;
      os << "  /* " << s_.arrays[a].c_name << ": what other tiles read of what this tile wrote */\n";
      for (const TileBox& box : ab->flow_out) emit_box(os, "  ", box, "bbmm_gen_flow_out", arr, "");
      for (const RowEnumeration& rows : ab->flow_out_rows) {
        emit_rows(os, "  ", rows, "bbmm_gen_flow_out", arr, "");
      }
    }
    os << "  bbmm_gen_check(bbmm_tile_release(bbmm_t), \"bbmm_tile_release\");\n";
    os << "}\n\n";
    return os.str();
  }

  // Whether "u" (an array's boxes over a device's block [lo_p, hi_p) of the partition range
  // "range") is convex. Exact and cheap when its simple hull (the pieces' constraints, each
  // moved out to hold for all of them) lies inside it. Otherwise the parametric convex hull
  // cost up to a second (fdtd-2d's hz: 0.9 s of its 1.1 s), so the hull is taken with the
  // parameters fixed instead: at the report's values (32) and the blocks of 1 to 4 devices,
  // as the box choice samples them (poly/boxes.cpp).
  bool convex_for_devices(const isl::set& u, const isl::set& range, const std::string& lo_p,
                          const std::string& hi_p) const {
    isl::set simple = isl::manage(isl_set_from_basic_set(isl_set_simple_hull(u.copy())));
    if (simple.is_subset(u)) return true;
    Values v(b_.params.begin(), b_.params.end());
    const std::optional<int64_t> mn = eval(isl::manage(isl_set_dim_min(range.copy(), 0)), v);
    const std::optional<int64_t> mx = eval(isl::manage(isl_set_dim_max(range.copy(), 0)), v);
    if (!mn || !mx || *mx < *mn) return false;
    const int64_t span = *mx + 1 - *mn;
    for (int i = 0; i < isl_set_dim(u.get(), isl_dim_param); ++i) {
      const char* name = isl_set_get_dim_name(u.get(), isl_dim_param, i);
      if (!name || (!v.count(name) && name != lo_p && name != hi_p)) return false;
    }
    for (int devices = 1; devices <= 4; ++devices)
      for (int d = 0; d < devices; ++d) {
        v[lo_p] = *mn + span * d / devices;
        v[hi_p] = *mn + span * (d + 1) / devices;
        if (v[lo_p] >= v[hi_p]) continue;
        const isl::set f = fix_params(u, v);
        const isl::set conv = isl::manage(isl_set_from_basic_set(isl_set_convex_hull(f.copy())));
        if (!conv.is_subset(f)) return false;
      }
    return true;
  }

  // Allocation hints (bbmm_reserve), before the serial loops: for every 1-D partition and
  // every device, the hull of the boxes its tiles require over all phases of the partition
  // and all serial iterations, for each array. A device's tiles are the consecutive tiles
  // [d*t, (d+1)*t) of the n = devices*t of every phase call (t: tiles per device, doubled
  // by the capacity rule), so their union is the block [from + span*d/devices,
  // from + span*(d+1)/devices) of the range over all iterations, and the boxes of a tile
  // are the hull of its instances' accesses: the block's boxes hold every tile's. A device
  // reserves only when its hulls take at most half its memory (else its tiles box in and
  // out as usual). Hints are hints: a tile whose boxes leave the reserved instance grows
  // or adds an instance as before (BBMM_RESERVE=0 turns them off).
  std::string reservations() {
    std::ostringstream os;
    // An array required by the phases of several partitions has no single hull per device.
    // It gets the hint of its home partition, the one with most of its phases, when that
    // one is unique (fdtd2d's ey: three phases by rows, one writing row 0 by columns; the
    // other partitions' boxes then get instances of their own); with no unique home (mvt,
    // adi: read by rows in one partition and by columns in another) it gets none.
    std::map<int, std::map<int, int>> phases_in;  // array -> partition -> phases
    for (size_t p = 0; p < b_.phases.size(); ++p) {
      for (const ArrayBoxes& ab : b_.phases[p].arrays) {
        if (!ab.required.empty()) ++phases_in[ab.array][b_.phases[p].partition];
      }
    }
    std::map<int, int> home;  // array -> its home partition (-1: none)
    for (const auto& [a, counts] : phases_in) {
      int best = -1, most = 0;
      bool tie = false;
      for (const auto& [part, n] : counts) {
        if (n > most) {
          most = n;
          best = part;
          tie = false;
        } else if (n == most) {
          tie = true;
        }
      }
      home[a] = tie ? -1 : best;
    }
    for (const Partition& part : b_.partitions) {
      if (part.dims.size() != 1) continue;
      if (single_device(part)) continue;
      const isl::set range = split_range(s_, part, 0);
      if (range.is_null()) continue;
      const std::string lo_p = part.dims[0].lo_param, hi_p = part.dims[0].hi_param;
      // With BBMM_SPLIT=step, a range that moves with the serial iterators is split anew
      // at every iteration: a device's tiles are not one block, and it reserves nothing.
      std::string glo, ghi;
      const bool range_moves = whole_range(part, 0, glo, ghi);
      // Per array: the union over phases and required boxes, serial iterators projected.
      std::map<int, isl::set> hull;
      std::set<int> moving;  // arrays whose boxes change with the serial iterators
      std::set<int> flows;   // arrays some tile of the partition flows out
      for (int p : part.phases) {
        for (const ArrayBoxes& ab : b_.phases[p].arrays) {
          if (s_.arrays[ab.array].is_scalar || home[ab.array] != part.id) continue;
          if (!ab.flow_out.empty() || !ab.flow_out_rows.empty()) flows.insert(ab.array);
          for (const TileBox& box : ab.required) {
            isl::set v = over_serial_iterations(box, p);
            if (moves(box, v)) moving.insert(ab.array);
            auto it = hull.find(ab.array);
            if (it == hull.end()) hull.emplace(ab.array, v);
            else it->second = it->second.unite(v);
          }
        }
      }
      // The hull of every tile's boxes, where the range moves and an array's boxes do too
      // and nothing flows them out (below).
      std::map<int, isl::set> whole;
      if (range_moves) {
        for (int p : part.phases) {
          for (const ArrayBoxes& ab : b_.phases[p].arrays) {
            if (!hull.count(ab.array) || !moving.count(ab.array) || flows.count(ab.array)) continue;
            for (const TileBox& box : ab.required) {
              isl::set w = over_all_tiles(box, p, range, lo_p, hi_p);
              auto it = whole.find(ab.array);
              if (it == whole.end()) whole.emplace(ab.array, w);
              else it->second = it->second.unite(w);
            }
          }
        }
      }
      // Only arrays whose boxes over all phases and iterations form one convex set (a row
      // band with its halo): for rows in one phase and columns in another (mvt's A, adi's
      // arrays) the hull would be most of the array on every device.
      // Nor arrays whose boxes move with the serial iterators and that a tile flows out
      // (floyd's row k, lu's pivot row): their hull over all iterations is more than any
      // iteration needs, and a flow-out reaches every device holding an instance of the
      // box. Moving boxes that nothing flows out (each tile's readers copy what they need
      // when they acquire) keep their hint: without it each iteration's boxes are new
      // instances, freed at the next phase boundary (BBMM_READ_TRANSIENT) and read in
      // again whole from the devices that wrote them (nussinov at MEDIUM on 2 devices:
      // 40x its table between the devices); with it a device keeps what it read, and only
      // what another device wrote since is copied again. Where the split range itself
      // moves with the serial iterators (nussinov's diagonals, [0, n - d)), a device's
      // tiles are a different block at every iteration: the hint is then the hull of
      // every tile's boxes, the same on every device.
      for (auto it = hull.begin(); it != hull.end();) {
        if (moving.count(it->first) && flows.count(it->first)) {
          it = hull.erase(it);
          continue;
        }
        if (moving.count(it->first) && range_moves) it->second = whole.at(it->first);
        isl::set u = it->second.coalesce();
        if (convex_for_devices(u, range, lo_p, hi_p)) {
          it->second = u;
          ++it;
        } else {
          it = hull.erase(it);
        }
      }
      if (hull.empty()) continue;
      std::vector<std::string> names = s_.params;
      names.push_back(lo_p);
      names.push_back(hi_p);
      const isl::set context(s_.context.ctx(),
                             "[" + join(names, ", ") + "] -> { : " + lo_p + " < " + hi_p + " }");
      std::string from, to;
      range_text(range, from, to);
      os << "    /* Allocation hints of partition " << part.id
         << ": each device's hull of the boxes its tiles require, over all iterations. */\n";
      os << "    if (bbmm_gen_reserve_enabled()" << (range_moves ? " && !bbmm_gen_split_step" : "")
         << ") {\n";
      os << "      const int64_t bbmm_from = " << from << ", bbmm_to = " << to << ";\n";
      os << "      for (int bbmm_d = 0; bbmm_from < bbmm_to && bbmm_d < bbmm_ctx.devices; ++bbmm_d) {\n";
      os << "        int64_t " << lo_p << ", " << hi_p << ";\n";
      os << "        " << split_call(part, "&bbmm_ctx.", "bbmm_from", "bbmm_to", "bbmm_ctx.devices",
                                     "bbmm_ctx.devices", "bbmm_d", lo_p, hi_p)
         << ";\n";
      os << "        if (" << lo_p << " >= " << hi_p << ") continue;\n";
      std::vector<std::string> boxes;
      int k = 0;
      for (auto& [a, set] : hull) {
        isl::set h = set.coalesce();
        const int rank = static_cast<int>(isl_set_dim(h.get(), isl_dim_set));
        isl::set nonempty = isl::manage(isl_set_params(h.copy()));
        std::vector<std::string> lo, hi;
        for (int d = 0; d < rank; ++d) {
          lo.push_back(cx(c_expr_from_pw_aff(isl::manage(isl_set_dim_min(h.copy(), d)), context)));
          isl_pw_aff* m = isl_set_dim_max(h.copy(), d);
          m = isl_pw_aff_add_constant_val(m, isl_val_one(isl_pw_aff_get_ctx(m)));
          hi.push_back(cx(c_expr_from_pw_aff(isl::manage(m), context)));
        }
        const std::string guard = cx(c_condition_from_set(nonempty, context));
        const std::string v = "bbmm_h" + std::to_string(k++);
        os << "        const int " << v << "_ok = " << guard << ";\n";
        os << "        const int64_t " << v << "_lo[" << rank << "] = {" << join(lo, ", ") << "};\n";
        os << "        const int64_t " << v << "_hi[" << rank << "] = {" << join(hi, ", ") << "};\n";
        boxes.push_back(v);
        (void)a;
      }
      os << "        uint64_t bbmm_bytes = 0;\n";
      k = 0;
      for (auto& [a, set] : hull) {
        const std::string v = boxes[static_cast<size_t>(k++)];
        const int rank = static_cast<int>(isl_set_dim(set.get(), isl_dim_set));
        os << "        if (" << v << "_ok) bbmm_gen_box_bytes(&bbmm_bytes, sizeof("
           << s_.arrays[a].elem_type << "), " << rank << ", " << v << "_lo, " << v << "_hi);\n";
      }
      os << "        if (bbmm_bytes > bbmm_device_memory(bbmm_ctx.rt, bbmm_d) / 2) continue;\n";
      k = 0;
      for (auto& [a, set] : hull) {
        const std::string v = boxes[static_cast<size_t>(k++)];
        const int rank = static_cast<int>(isl_set_dim(set.get(), isl_dim_set));
        os << "        if (" << v << "_ok) bbmm_gen_reserve(bbmm_ctx.rt, bbmm_d, bbmm_ctx."
           << s_.arrays[a].c_name << ", " << rank << ", " << v << "_lo, " << v << "_hi);\n";
      }
      os << "      }\n";
      os << "    }\n";
    }
    return os.str();
  }

  // The same range as C expressions [lo, hi) over the scop parameters. False when the
  // range does not depend on the serial iterators' values.
  bool whole_range(const Partition& part, size_t d, std::string& lo, std::string& hi) {
    isl::set vals = split_range(s_, part, d);
    if (vals.is_null()) return false;
    isl::pw_aff mn = isl::manage(isl_set_dim_min(vals.copy(), 0));
    isl_pw_aff* mx = isl_set_dim_max(vals.copy(), 0);
    mx = isl_pw_aff_add_constant_val(mx, isl_val_one(isl_pw_aff_get_ctx(mx)));
    // Nothing to do when this iteration's range is the whole range wherever it is defined.
    auto same = [](const isl::pw_aff& per_iteration, isl_pw_aff* whole) {
      if (per_iteration.is_null()) return true;
      isl_set* dom = isl_pw_aff_domain(per_iteration.copy());
      isl_set* eq = isl_pw_aff_eq_set(per_iteration.copy(), isl_pw_aff_copy(whole));
      isl_bool r = isl_set_is_subset(dom, eq);
      isl_set_free(dom);
      isl_set_free(eq);
      return r == isl_bool_true;
    };
    isl_pw_aff* mx_incl = isl_pw_aff_add_constant_val(isl_pw_aff_copy(mx),
                                                      isl_val_negone(isl_pw_aff_get_ctx(mx)));
    const bool unchanged = same(part.dims[d].range_min, mn.get()) &&
                           same(part.dims[d].range_max, mx_incl);
    isl_pw_aff_free(mx_incl);
    if (unchanged) {
      isl_pw_aff_free(mx);
      return false;
    }
    lo = c_expr_from_pw_aff(mn, s_.context);
    hi = c_expr_from_pw_aff(isl::manage(mx), s_.context);
    return true;
  }

  std::vector<std::string> serial_names(const Partition& part) const {
    std::vector<std::string> r;
    for (int p : part.phases) {
      for (int l : s_.phases[p].serial_loops) r.push_back(s_.loops[l].c_name);
    }
    return r;
  }

  const ArrayBoxes* array_boxes(const PhaseBoxes& pb, int a) const {
    for (const ArrayBoxes& ab : pb.arrays) {
      if (ab.array == a) return &ab;
    }
    return nullptr;
  }

  // The tile count of a 1-D split of [from, to) (clamped to [bbmm_from0, bbmm_to0) when
  // "clamp") and the opening of the loop over its tiles (bbmm_k, lo/hi parameters). The
  // count starts at devices x tiles per device and doubles (keeping tile k's device
  // k * devices / n) until every tile's boxes fit twice in the smallest device (a tile
  // and the next one's read-ins) or every tile is one iteration wide: a program whose
  // data exceeds the devices' memory runs without any setting.
  void split_1d(std::ostream& os, const Partition& part, const std::string& name,
                const std::string& serial_args, const std::string& from, const std::string& to,
                bool clamp, bool order) {
    const std::string lo = part.dims[0].lo_param, hi = part.dims[0].hi_param;
    // Tile bbmm_k of "n" tiles (a variable of the generated code).
    auto bounds = [&](const std::string& ind, const char* n = "bbmm_n") {
      os << ind << "int64_t " << lo << ", " << hi << ";\n";
      os << ind << split_call(part, "&bbmm_x->", from, to, n, "bbmm_x->devices", "bbmm_k", lo, hi)
         << ";\n";
      if (clamp) {
        os << ind << lo << " = bbmm_max(bbmm_from0, " << lo << ");\n";
        os << ind << hi << " = bbmm_min(bbmm_to0, " << hi << ");\n";
      }
    };
    os << "  int64_t bbmm_n = (int64_t)bbmm_x->devices * bbmm_x->tiles_per_device;\n";
    os << "  if (bbmm_n > " << to << " - " << from << ") bbmm_n = " << to << " - " << from << ";\n";
    // With the default tiles per device, small tiles stay one per device
    // (bbmm_gen_small_tiles).
    os << "  if (bbmm_n > bbmm_x->devices) {\n";
    os << "    const int64_t bbmm_n1 = bbmm_min(bbmm_x->devices, " << to << " - " << from << ");\n";
    os << "    uint64_t bbmm_big = 0;\n";
    os << "    for (int64_t bbmm_k = 0; bbmm_k < bbmm_n1; ++bbmm_k) {\n";
    bounds("      ", "bbmm_n1");
    os << "      if (" << lo << " < " << hi << ") bbmm_big = bbmm_max_u64(bbmm_big, " << name
       << "_bytes(bbmm_x" << serial_args << ", " << lo << ", " << hi << "));\n";
    os << "    }\n";
    os << "    if (bbmm_gen_small_tiles(bbmm_big)) bbmm_n = bbmm_n1;\n";
    os << "  }\n";
    os << "  while (bbmm_x->capacity > 0) {\n";
    os << "    uint64_t bbmm_worst = 0;\n";
    os << "    for (int64_t bbmm_k = 0; bbmm_k < bbmm_n; ++bbmm_k) {\n";
    bounds("      ");
    os << "      if (" << lo << " < " << hi << ") bbmm_worst = bbmm_max_u64(bbmm_worst, " << name
       << "_bytes(bbmm_x" << serial_args << ", " << lo << ", " << hi << "));\n";
    os << "    }\n";
    os << "    if (bbmm_worst <= bbmm_x->capacity / 2) break;\n";
    os << "    if (bbmm_n >= " << to << " - " << from << ") {\n";
    os << "      bbmm_gen_tile_too_large(\"" << phase_label_ << "\", bbmm_worst, bbmm_x->capacity, 1);\n";
    os << "      break;\n";
    os << "    }\n";
    os << "    bbmm_n = bbmm_min(2 * bbmm_n, " << to << " - " << from << ");\n";
    os << "  }\n";
    if (order) {
      // The tiles with the most flow-out to other devices first (a tile at the edge of its
      // device's block: its flow-out boxes reach the neighbour device): their copies start
      // early and run under the kernels of the tiles issued after them. Ties, and every
      // tile on one device, follow the range's order (with BBMM_TILE_ORDER=alternate,
      // upwards and downwards in turn from one phase call to the next;
      // bbmm_gen_order_tiles).
      os << "  bbmm_gen_tile_rank* bbmm_rank = (bbmm_gen_tile_rank*)bbmm_gen_calloc((size_t)bbmm_n * "
            "sizeof(bbmm_gen_tile_rank));\n";
      os << "  for (int64_t bbmm_k = 0; bbmm_k < bbmm_n; ++bbmm_k) {\n";
      bounds("    ");
      os << "    bbmm_rank[bbmm_k].k = bbmm_k;\n";
      os << "    const int64_t bbmm_dk = bbmm_k * bbmm_x->devices / bbmm_n;\n";
      os << "    const int bbmm_edge = (bbmm_k > 0 && (bbmm_k - 1) * bbmm_x->devices / bbmm_n != bbmm_dk) ||\n"
            "                          (bbmm_k + 1 < bbmm_n && (bbmm_k + 1) * bbmm_x->devices / bbmm_n != bbmm_dk);\n";
      os << "    bbmm_rank[bbmm_k].bytes = bbmm_edge && " << lo << " < " << hi << " ? " << name
         << "_flow_bytes(bbmm_x" << serial_args << ", " << lo << ", " << hi << ") : 0;\n";
      os << "  }\n";
      os << "  bbmm_gen_order_tiles(bbmm_rank, bbmm_n, (*bbmm_x->ordered)++, "
            "bbmm_gen_alternating(bbmm_x->rt));\n";
      os << "  for (int64_t bbmm_j = 0; bbmm_j < bbmm_n; ++bbmm_j) {\n";
      os << "    const int64_t bbmm_k = bbmm_rank[bbmm_j].k;\n";
    } else {
      os << "  for (int64_t bbmm_k = 0; bbmm_k < bbmm_n; ++bbmm_k) {\n";
    }
    bounds("    ");
    // Split points weighted by work may leave a tile empty.
    if (clamp || work_fn_.count(part.id)) os << "    if (" << lo << " >= " << hi << ") continue;\n";
  }

  // The C call setting [lo, hi) to tile "k" of "n" splitting [from, to) over "devices":
  // at equal shares of the work when partition "part" has a work function (its weights
  // are "<ctx>w<id>"), else of the iterations.
  std::string split_call(const Partition& part, const std::string& ctx, const std::string& from,
                         const std::string& to, const std::string& n, const std::string& devices,
                         const std::string& k, const std::string& lo, const std::string& hi) const {
    const std::string tail = from + ", " + to + ", " + n + ", " + devices + ", " + k + ", &" + lo +
                             ", &" + hi + ")";
    if (!work_fn_.count(part.id)) return "bbmm_gen_tile_bounds(" + tail;
    return "bbmm_gen_split(" + ctx + "w" + std::to_string(part.id) + ", " + tail;
  }

  std::string phase_function(int p, const KernelSignature& sig, const std::string& name) {
    phase_label_ = "phase " + std::to_string(p) + " of scop " + std::to_string(s_.index) + " in " +
                   s_.function;
    const PhaseBoxes& pb = b_.phases[p];
    const Partition& part = b_.partitions[pb.partition];
    std::ostringstream os;
    os << "/* Phase " << p << ": splits the partitioned range into tiles (owner computes: every "
          "phase of\n   partition "
       << part.id << " gives tile k to the same device). */\n";
    os << "static void " << pre_ << "_phase" << p << "(const struct " << pre_ << "_ctx* bbmm_x"
       << serial_params_decl(sig) << ") {\n";
    os << param_locals("  ");
    for (const std::string& v : sig.serial) os << "  (void)" << v << ";\n";
    // Every call of a phase follows the previous ones in program order: a new checking
    // epoch (two devices may write the same elements in two phases, not in one).
    os << "  bbmm_gen_check(bbmm_phase_boundary(bbmm_x->rt), \"bbmm_phase_boundary\");\n";
    std::string serial_args;
    for (const std::string& v : sig.serial) serial_args += ", " + v;
    const size_t nd = part.dims.size();
    // A phase that runs as one tile: say so when that tile cannot fit a device.
    auto whole_tile_check = [&](const std::string& tile_args) {
      os << "  if (bbmm_x->capacity > 0) {\n";
      os << "    const uint64_t bbmm_need = " << name << "_bytes(bbmm_x" << serial_args << tile_args
         << ");\n";
      os << "    bbmm_gen_tile_too_large(\"" << phase_label_
         << "\", bbmm_need, bbmm_x->capacity, 0);\n";
      os << "  }\n";
    };
    if (nd == 0) {
      // A serial region: on the host or on device 0 (a whole nest, or nested in serial loops).
      os << "  const uint64_t bbmm_need = " << name << "_bytes(bbmm_x" << serial_args << ");\n";
      // Nested in serial loops: 1, or 2 when a step's loops are two or more deep (a step of
      // quadratic work, too slow for the one GPU thread of a device's serial tile).
      const Phase& ph = s_.phases[p];
      size_t depth = 0;
      for (int st : ph.statements) {
        const size_t n = s_.statements[st].loops.size();
        depth = std::max(depth, n > ph.serial_loops.size() ? n - ph.serial_loops.size() : 0);
      }
      // A wavefront's region (poly/block_wavefronts.h) is made for a device: on CUDA one
      // thread block runs it (1, device 0).
      const int nested = ph.block_loop >= 0 ? 1 : ph.serial_loops.empty() ? 0 : (depth >= 2 ? 2 : 1);
      os << "  const int bbmm_dev = bbmm_gen_serial_device(bbmm_x->rt, bbmm_need, bbmm_x->capacity, "
         << nested << ");\n";
      os << "  if (bbmm_dev != BBMM_DEVICE_HOST && bbmm_x->capacity > 0)\n";
      os << "    bbmm_gen_tile_too_large(\"" << phase_label_
         << "\", bbmm_need, bbmm_x->capacity, 0);\n";
      os << "  " << name << "_tile(bbmm_x" << serial_args << ", bbmm_dev);\n";
      os << "}\n\n";
      return os.str();
    }
    for (size_t d = 0; d < nd; ++d) {
      const RangeText range = partition_range_c_text(part.dims[d]);
      os << "  const int64_t bbmm_from" << d << " = " << cx(range.lo) << ", bbmm_to" << d << " = "
         << cx(range.hi) << ";\n";
      os << "  if (bbmm_from" << d << " >= bbmm_to" << d << ") return;\n";
    }
    if (pb.single_device) {
      os << "  /* single device: one tile covering the whole range */\n";
      std::string range_args;
      for (size_t d = 0; d < nd; ++d) {
        range_args += ", bbmm_from" + std::to_string(d) + ", bbmm_to" + std::to_string(d);
      }
      whole_tile_check(range_args);
      os << "  " << name << "_tile(bbmm_x" << serial_args;
      for (size_t d = 0; d < nd; ++d) os << ", bbmm_from" << d << ", bbmm_to" << d;
      os << ", 0);\n}\n\n";
      return os.str();
    }
    if (nd == 1) {
      std::string glo, ghi;
      if (!serial_args.empty() && whole_range(part, 0, glo, ghi)) {
        // The range moves with the serial iterators: split the range of all serial
        // iterations instead, so that an element's owner never changes between iterations
        // (no two devices write the same data between synchronisation points), and clamp
        // each tile to this iteration's range.
        // BBMM_SPLIT=step splits this iteration's range instead (bbmm_gen_split_step).
        os << "  /* tiles of the whole range over all serial iterations, clamped (or of this "
              "iteration's range: BBMM_SPLIT=step) */\n";
        os << "  const int64_t bbmm_all_from = bbmm_gen_split_step ? bbmm_from0 : " << glo
           << ", bbmm_all_to = bbmm_gen_split_step ? bbmm_to0 : " << ghi << ";\n";
        split_1d(os, part, name, serial_args, "bbmm_all_from", "bbmm_all_to", true, has_flow_out(p));
      } else {
        split_1d(os, part, name, serial_args, "bbmm_from0", "bbmm_to0", false, has_flow_out(p));
      }
      os << "    " << name << "_tile(bbmm_x" << serial_args << ", " << part.dims[0].lo_param << ", "
         << part.dims[0].hi_param << ", (int)(bbmm_k * bbmm_x->devices / bbmm_n));\n";
      os << "  }\n";
      if (has_flow_out(p)) os << "  free(bbmm_rank);\n";
      os << "}\n\n";
      return os.str();
    }
    // 2-D: a grid of devices (d0 x d1, as square as possible; with rows_first, from
    // --partition=auto, d0 = devices and d1 = 1: the 1-D split), each block split along the
    // outer dimension into tiles_per_device tiles (at equal shares of the work where the
    // partition has a work function); under a capacity, the tile grid is refined (the
    // dimension with fewer tiles per iteration first) until every tile requires at most
    // half a device, as the 1-D split does.
    if (part.rows_first) {
      os << "  const int bbmm_d0 = bbmm_x->devices;\n";
    } else {
      os << "  int bbmm_d0 = 1;\n";
      os << "  for (int bbmm_f = 1; bbmm_f * bbmm_f <= bbmm_x->devices; ++bbmm_f)\n";
      os << "    if (bbmm_x->devices % bbmm_f == 0) bbmm_d0 = bbmm_f;\n";
    }
    os << "  const int bbmm_d1 = bbmm_x->devices / bbmm_d0;\n";
    os << "  const int64_t bbmm_span0 = bbmm_to0 - bbmm_from0, bbmm_span1 = bbmm_to1 - bbmm_from1;\n";
    os << "  int64_t bbmm_n0 = (int64_t)bbmm_d0 * bbmm_x->tiles_per_device, bbmm_n1 = bbmm_d1;\n";
    os << "  if (bbmm_n0 > bbmm_span0) bbmm_n0 = bbmm_span0;\n";
    os << "  if (bbmm_n1 > bbmm_span1) bbmm_n1 = bbmm_span1;\n";
    // Tile (k0, k1) of the n0 x n1 grid: its bounds.
    const bool weighted = work_fn_.count(part.id) > 0;
    auto bounds = [&](const std::string& ind) {
      for (int d = 0; d < 2; ++d) {
        const std::string k = "bbmm_k" + std::to_string(d), n = "bbmm_n" + std::to_string(d),
                          f = "bbmm_from" + std::to_string(d), s = "bbmm_span" + std::to_string(d);
        if (d == 0 && weighted) {
          os << ind << "int64_t " << part.dims[0].lo_param << ", " << part.dims[0].hi_param << ";\n";
          os << ind << split_call(part, "&bbmm_x->", "bbmm_from0", "bbmm_to0", n, "bbmm_d0", k,
                                  part.dims[0].lo_param, part.dims[0].hi_param)
             << ";\n";
          continue;
        }
        os << ind << "const int64_t " << part.dims[d].lo_param << " = " << f << " + " << s << " * "
           << k << " / " << n << ";\n";
        os << ind << "const int64_t " << part.dims[d].hi_param << " = " << f << " + " << s
           << " * (" << k << " + 1) / " << n << ";\n";
      }
    };
    std::string tile_args;
    for (size_t d = 0; d < 2; ++d) tile_args += ", " + part.dims[d].lo_param + ", " + part.dims[d].hi_param;
    os << "  while (bbmm_x->capacity > 0) {\n";
    os << "    uint64_t bbmm_worst = 0;\n";
    os << "    for (int64_t bbmm_k0 = 0; bbmm_k0 < bbmm_n0; ++bbmm_k0)\n";
    os << "      for (int64_t bbmm_k1 = 0; bbmm_k1 < bbmm_n1; ++bbmm_k1) {\n";
    bounds("        ");
    if (weighted) os << "        if (" << part.dims[0].lo_param << " >= " << part.dims[0].hi_param << ") continue;\n";
    os << "        bbmm_worst = bbmm_max_u64(bbmm_worst, " << name << "_bytes(bbmm_x" << serial_args
       << tile_args << "));\n";
    os << "      }\n";
    os << "    if (bbmm_worst <= bbmm_x->capacity / 2) break;\n";
    os << "    if (bbmm_n0 >= bbmm_span0 && bbmm_n1 >= bbmm_span1) {\n";
    os << "      bbmm_gen_tile_too_large(\"" << phase_label_ << "\", bbmm_worst, bbmm_x->capacity, 2);\n";
    os << "      break;\n";
    os << "    }\n";
    os << "    if (bbmm_n1 >= bbmm_span1 || (bbmm_n0 < bbmm_span0 && bbmm_span0 / bbmm_n0 >= bbmm_span1 / bbmm_n1))\n";
    os << "      bbmm_n0 = bbmm_min(2 * bbmm_n0, bbmm_span0);\n";
    os << "    else\n";
    os << "      bbmm_n1 = bbmm_min(2 * bbmm_n1, bbmm_span1);\n";
    os << "  }\n";
    os << "  for (int64_t bbmm_k0 = 0; bbmm_k0 < bbmm_n0; ++bbmm_k0)\n";
    os << "    for (int64_t bbmm_k1 = 0; bbmm_k1 < bbmm_n1; ++bbmm_k1) {\n";
    bounds("      ");
    if (weighted) os << "      if (" << part.dims[0].lo_param << " >= " << part.dims[0].hi_param << ") continue;\n";
    os << "      const int bbmm_dev = (int)((bbmm_k0 * bbmm_d0 / bbmm_n0) * bbmm_d1 + bbmm_k1 * bbmm_d1 / bbmm_n1);\n";
    os << "      " << name << "_tile(bbmm_x" << serial_args << tile_args << ", bbmm_dev);\n";
    os << "    }\n}\n\n";
    return os.str();
  }

  // The serial loops over the phases, as the scop's replacement.
  std::string body() {
    std::ostringstream os;
    os << "  /* bbmmc: scop " << s_.index << " runs on the devices of libbbmm (generated code; "
          "see the definitions above the function) */\n";
    os << "  {\n";
    os << "    struct " << pre_ << "_ctx bbmm_ctx;\n";
    os << "    memset(&bbmm_ctx, 0, sizeof bbmm_ctx);\n";
    os << "    bbmm_ctx.rt = bbmm_gen_runtime();\n";
    os << "    bbmm_ctx.devices = bbmm_device_count(bbmm_ctx.rt);\n";
    os << "    bbmm_ctx.tiles_per_device = bbmm_gen_tiles_per_device;\n";
    os << "    bbmm_ctx.capacity = bbmm_gen_min_device_memory(bbmm_ctx.rt);\n";
    os << "    int64_t bbmm_ordered = 0;\n";
    os << "    bbmm_ctx.ordered = &bbmm_ordered;\n";
    for (const std::string& p : s_.params) os << "    bbmm_ctx." << p << " = " << p << ";\n";
    for (int a : scalars()) os << "    bbmm_ctx." << s_.arrays[a].c_name << " = " << s_.arrays[a].c_name << ";\n";
    for (int a : arrays()) {
      const ArrayInfo& arr = s_.arrays[a];
      if (arr.is_scalar && arr.where == Decl::Where::kScop) {
        // Declared in the scop, which this block replaces: the host variable is here.
        os << "    " << arr.elem_type << " " << arr.c_name << " = 0;\n";
      } else if (arr.where == Decl::Where::kScop) {
        // An array bbmmc declared in the scop (a reduction's partial sums): its host copy,
        // freed after the scop.
        std::vector<std::string> ext;
        for (const isl::pw_aff& e : arr.extents) ext.push_back("(size_t)(" + c_expr_from_pw_aff(e, s_.context) + ")");
        os << "    " << arr.elem_type << "* " << arr.c_name << " = (" << arr.elem_type
           << "*)bbmm_gen_calloc(" << join(ext, " * ") << " * sizeof(" << arr.elem_type << "));\n";
      }
    }
    for (int a : arrays()) {
      const ArrayInfo& arr = s_.arrays[a];
      std::vector<std::string> ext;
      for (const isl::pw_aff& e : arr.extents) ext.push_back(c_expr_from_pw_aff(e, s_.context));
      os << "    {\n";
      if (arr.is_scalar) os << "      /* scalar written in the scop: one element */\n";
      os << "      const int64_t bbmm_ext[" << ext.size() << "] = {" << join(ext, ", ") << "};\n";
      os << "      bbmm_gen_check(bbmm_array_register(bbmm_ctx.rt, \"" << arr.c_name << "\", (void*)("
         << (arr.is_scalar ? "&" : "") << arr.c_name << "), sizeof(" << arr.elem_type << "), "
         << ext.size()
         << ", bbmm_ext, NULL, " << (arr.written ? "0" : "BBMM_ARRAY_READ_ONLY") << ", &bbmm_ctx."
         << arr.c_name << "), \"bbmm_array_register(" << arr.c_name << ")\");\n";
      os << "    }\n";
    }
    os << weights();
    os << reservations();
    os << loops();
    os << "    /* The host copies become current (the write-backs of all arrays start before any\n"
          "       is waited for, so that they run together); the device instances are freed. */\n";
    for (int a : arrays()) {
      const ArrayInfo& arr = s_.arrays[a];
      if (!arr.written) continue;
      // Values nobody reads after the scop (a local array not used after it, or one named
      // by '#pragma bbmm scratch') are dropped, not copied back.
      const char* call = arr.live_out ? "bbmm_array_write_back" : "bbmm_array_discard";
      if (!arr.live_out) os << "    /* " << arr.c_name << ": not used after the scop */\n";
      os << "    bbmm_gen_check(" << call << "(bbmm_ctx.rt, bbmm_ctx." << arr.c_name << "), \""
         << call << "(" << arr.c_name << ")\");\n";
    }
    for (int a : arrays()) {
      os << "    bbmm_gen_check(bbmm_array_unregister(bbmm_ctx.rt, bbmm_ctx." << s_.arrays[a].c_name
         << "), \"bbmm_array_unregister(" << s_.arrays[a].c_name << ")\");\n";
    }
    for (int a : arrays())
      if (!s_.arrays[a].is_scalar && s_.arrays[a].where == Decl::Where::kScop)
        os << "    free(" << s_.arrays[a].c_name << ");\n";
    os << "  }\n";
    return os.str();
  }

  // The work along the range of each partition with a work function, for its split points.
  std::string weights() {
    std::ostringstream os;
    for (const Partition& part : b_.partitions) {
      if (!work_fn_.count(part.id)) continue;
      const int id = part.id;
      const std::string& fn = work_fn_.at(id);
      const isl::set range = split_range(s_, part, 0);
      std::string from, to, offset;
      range_text(range, from, to);
      const int64_t stride = split_stride(range, s_.context, offset);
      os << "    /* Partition " << id << " splits its range at equal shares of the work. */\n";
      os << "    bbmm_gen_weights_init(&bbmm_ctx.w" << id << ", " << from << ", " << to << ", "
         << stride << ", " << offset << ", " << fn << ", &bbmm_ctx);\n";
    }
    return os.str();
  }

  std::string loops() {
    isl::ctx ctx = s_.context.ctx();
    int max_ns = 0;
    for (const Phase& ph : s_.phases) max_ns = std::max(max_ns, static_cast<int>(ph.serial_loops.size()));
    const int out_dims = 2 * max_ns + 1;
    isl::union_map sched = isl::union_map::empty(ctx);
    for (size_t p = 0; p < s_.phases.size(); ++p) {
      const Phase& ph = s_.phases[p];
      const int ns = static_cast<int>(ph.serial_loops.size());
      const std::string tuple = "P" + std::to_string(p);
      // The phase's instances: its statements' domains projected on the serial dimensions.
      isl::set dom;
      int first_pos = -1;
      std::vector<int> pos;
      for (int st_i : ph.statements) {
        const Statement& st = s_.statements[st_i];
        const int depth = static_cast<int>(st.iterators.size());
        isl_set* d = isl_set_project_out(st.domain.copy(), isl_dim_set, ns, depth - ns);
        d = isl_set_set_tuple_name(d, tuple.c_str());
        isl::set ds = isl::manage(d);
        dom = dom.is_null() ? ds : dom.unite(ds);
        if (pos.empty()) pos.assign(st.position.begin(), st.position.begin() + ns + 1);
        first_pos = first_pos < 0 ? st.position[ns] : std::min(first_pos, st.position[ns]);
      }
      pos[ns] = first_pos;
      std::vector<std::string> dims, out;
      for (int k = 0; k < ns; ++k) dims.push_back("bbmm_i" + std::to_string(k));
      for (int k = 0; k <= ns; ++k) {
        out.push_back(std::to_string(pos[k]));
        if (k < ns) {
          bool down = s_.loops[ph.serial_loops[k]].step < 0;
          out.push_back((down ? "-" : "") + dims[k]);
        }
      }
      while (static_cast<int>(out.size()) < out_dims) out.push_back("0");
      isl::map m(ctx, "[" + join(s_.params, ", ") + "] -> { " + tuple + "[" + join(dims, ", ") +
                          "] -> [" + join(out, ", ") + "] }");
      m = m.intersect_domain(dom.coalesce());
      sched = sched.unite(isl::union_map(m));
    }
    PrintInstance print = [&](const std::string& name, const std::vector<std::string>& args,
                              std::vector<std::string>& lines) {
      const int p = std::stoi(name.substr(1));
      std::string call = pre_ + "_phase" + std::to_string(p) + "(&bbmm_ctx";
      for (const std::string& a : args) call += ", " + a;
      lines.push_back(call + ");");
    };
    return print_loops(sched, s_.context, "bbmm_c", 4, print);
  }

  const Scop& s_;
  const ScopBoxes& b_;
  const CodegenOptions& opts_;
  Diagnostics& diag_;
  std::string pre_;
  std::ostringstream device_;  // CUDA: the scop's part of STEM.cu
  std::string phase_label_;    // "phase 0 of scop 0 in kernel_gemm", for run-time notes
  std::map<int, std::string> work_fn_;  // partition id -> its work function (split_weights.h)
};

// Byte offset in "text" of the start of the line holding byte "pos".
size_t line_start(const std::string& text, size_t pos) {
  while (pos > 0 && text[pos - 1] != '\n') --pos;
  return pos;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// Where a function's definition starts: the line of its name, moved up over the lines of
// its declaration specifiers (a return type on its own line).
size_t function_start(const std::string& text, size_t name_line) {
  size_t pos = name_line;
  while (pos > 0) {
    size_t prev = line_start(text, pos - 1);
    std::string line = trim(text.substr(prev, pos - 1 - prev));
    if (line.empty() || line[0] == '#' || line.back() == ';' || line.back() == '}' ||
        line.back() == '{' || line.rfind("//", 0) == 0 ||
        (line.size() >= 2 && line.compare(line.size() - 2, 2, "*/") == 0)) {
      break;
    }
    pos = prev;
  }
  return pos;
}

}  // namespace

bool generate_scop(const Scop& scop, const ScopBoxes& boxes, const CodegenOptions& opts,
                   Diagnostics& diag, GeneratedScop& out) {
  ScopGenerator g(scop, boxes, opts, diag);
  return g.run(out);
}

std::string generated_prelude(const CodegenOptions& opts) {
  std::ostringstream os;
  os << "/* ---- bbmmc: helpers of the generated code (bbmm/generated_support.h) ---- */\n";
  if (opts.target == Target::kCuda) {
    os << "/* The kernels and their launch functions are in the CUDA file generated with this "
          "one. */\n";
  }
  switch (opts.target) {
    case Target::kHost: os << "#define BBMM_GEN_TARGET BBMM_BACKEND_HOST\n"; break;
    case Target::kCuda: os << "#define BBMM_GEN_TARGET BBMM_BACKEND_CUDA\n"; break;
    case Target::kOpenCL: os << "#define BBMM_GEN_TARGET BBMM_BACKEND_OPENCL\n"; break;
  }
  // The OpenCL helpers need CL/cl.h: they have a header of their own.
  os << "#include \"bbmm/generated_support" << (opts.target == Target::kOpenCL ? "_opencl" : "")
     << ".h\"\n\n";
  return os.str();
}

const char* target_name(Target t) {
  switch (t) {
    case Target::kHost: return "host";
    case Target::kOpenCL: return "opencl";
    case Target::kCuda: return "cuda";
  }
  return "host";
}

std::string generate_device_file(const Program& prog, const std::vector<GeneratedScop>& gen,
                                 const CodegenOptions& opts) {
  std::ostringstream os;
  os << "/* Generated by bbmmc from " << prog.sm->main_file()
     << " (--target=cuda): the CUDA kernels of its scops and their launch functions, called by "
        "the C file generated with this one. Edit the input, not this file. */\n";
  os << cuda_prelude(opts);
  for (const GeneratedScop& g : gen) os << g.device;
  return os.str();
}

bool generate_file(const Program& prog, const std::vector<GeneratedScop>& gen,
                   const CodegenOptions& opts, Diagnostics& diag, std::string& out) {
  const std::string& main = prog.sm->main_file();
  const std::string* text = prog.sm->file_contents(main);
  if (!text) {
    diag.error({main, 0, 0}) << "cannot read '" << main << "' again to generate code";
    return false;
  }
  // Insertion points: before the function holding each scop.
  std::map<size_t, std::string> inserts;  // offset -> text (ordered: deterministic)
  std::vector<std::pair<size_t, size_t>> replaced;
  bool prelude_done = false;
  for (size_t k = 0; k < prog.scops.size() && k < gen.size(); ++k) {
    const Scop& s = prog.scops[k];
    if (s.file != main) {
      diag.error(s.begin_loc) << "code generation needs the scop in the main file, not in '"
                              << s.file << "'";
      return false;
    }
    size_t at = line_start(*text, s.begin_byte);
    const ScopAst& ast = prog.tu->scops[s.index];
    if (ast.function >= 0) {
      const Function& fn = *prog.tu->functions[ast.function];
      SourceLoc l = prog.sm->resolve(fn.offset);
      std::optional<size_t> ls = prog.sm->line_start_offset(main, l.line);
      if (l.file == main && ls) at = function_start(*text, *ls);
    }
    std::string block;
    if (!prelude_done) {
      block += generated_prelude(opts);
      prelude_done = true;
    }
    block += gen[k].kernels;
    inserts[at] += block;
    replaced.emplace_back(s.begin_byte, s.end_byte);
  }
  // main(), when this file defines it after the helpers: its first statement starts
  // initialising the devices in the background (bbmm_gen_warm_up), while the program
  // does its own setup, instead of at the first scop.
  if (!inserts.empty()) {
    for (const auto& fn : prog.tu->functions) {
      if (fn->name != "main") continue;
      const SourceLoc l = prog.sm->resolve(fn->body_offset);
      std::optional<size_t> ls = prog.sm->line_start_offset(main, l.line);
      if (l.file != main || !ls || l.col < 1) break;
      const size_t brace = *ls + static_cast<size_t>(l.col - 1);
      if (brace >= text->size() || (*text)[brace] != '{' || brace <= inserts.begin()->first) break;
      bool in_scop = false;
      for (const auto& [b, e] : replaced) in_scop = in_scop || (brace >= b && brace < e);
      if (!in_scop) inserts[brace + 1] += " bbmm_gen_warm_up();";
      break;
    }
  }
  std::ostringstream os;
  os << "/* Generated by bbmmc " << "from " << main
     << ": the scops run on libbbmm's devices. Edit the input, not this file. */\n";
  size_t pos = 0;
  auto ins = inserts.begin();
  for (size_t k = 0; k <= replaced.size(); ++k) {
    size_t stop = k < replaced.size() ? replaced[k].first : text->size();
    while (ins != inserts.end() && ins->first <= stop) {
      if (ins->first >= pos) {
        os << text->substr(pos, ins->first - pos);
        pos = ins->first;
      }
      os << ins->second;
      ++ins;
    }
    os << text->substr(pos, stop - pos);
    if (k < replaced.size()) {
      os << gen[k].body;
      pos = replaced[k].second;
    }
  }
  out = os.str();
  return true;
}

}  // namespace bbmm::compiler
