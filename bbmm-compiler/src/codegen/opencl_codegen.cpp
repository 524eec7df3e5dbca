#include "codegen/opencl_codegen.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "codegen/box_printer.h"
#include "codegen/c_printer.h"
#include "codegen/loop_ast.h"

namespace bbmm::compiler {
namespace {

// Buffer arguments per array of the multi-piece kernel, at most (BBMM_CL_BUFFERS in
// bbmm/generated_support_opencl.h): a view whose pieces lie in more buffers stages some.
constexpr int kPieceBuffers = 8;
// The bytes of kernel arguments every OpenCL device accepts (CL_DEVICE_MAX_PARAMETER_SIZE's
// minimum, and PoCL's value).
constexpr int kParameterBytes = 1024;

// "text" as the contents of a C string literal, one source line per literal line.
std::string c_string_lines(const std::string& text, const std::string& ind) {
  std::ostringstream os;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    os << ind << "\"";
    for (char c : line) {
      if (c == '\\' || c == '"') os << '\\';
      os << c;
    }
    os << "\\n\"\n";
  }
  return os.str();
}

std::string cl_type(const std::string& t) {
  if (t == "long long" || t == "long" || t == "int64_t") return "long";
  if (t == "unsigned long" || t == "unsigned long long" || t == "uint64_t") return "ulong";
  if (t == "unsigned" || t == "unsigned int" || t == "uint32_t") return "uint";
  if (t == "int32_t") return "int";
  return t;
}

int rank_of(const ArrayInfo& a) { return static_cast<int>(a.extents.size()); }

// C99's float math functions ("expf") called by the statements of "scop": OpenCL C has
// none of them, its builtins ("exp") are overloaded for float instead (PolyBench's
// deriche calls expf and powf).
std::set<std::string> float_math_calls(const Scop& scop) {
  static const std::set<std::string> known = {
      "sqrtf", "cbrtf", "expf",  "exp2f", "expm1f", "logf",  "log2f", "log10f", "log1pf",
      "powf",  "sinf",  "cosf",  "tanf",  "asinf",  "acosf", "atanf", "atan2f", "sinhf",
      "coshf", "tanhf", "erff",  "erfcf", "fabsf",  "floorf", "ceilf", "roundf", "truncf",
      "fminf", "fmaxf", "fmodf", "hypotf", "copysignf", "fmaf"};
  std::set<std::string> used;
  std::function<void(const Expr*)> walk = [&](const Expr* e) {
    if (!e) return;
    if (e->kind == Expr::Kind::kCall && !e->kids.empty() &&
        e->kids[0]->kind == Expr::Kind::kIdent && known.count(e->kids[0]->text)) {
      used.insert(e->kids[0]->text);
    }
    for (const ExprPtr& k : e->kids) walk(k.get());
  };
  for (const Statement& st : scop.statements) {
    walk(st.expr);
    if (st.decl) walk(st.decl->init.get());
  }
  return used;
}

// The buffer arguments per array of the multi-piece kernel of "sig": 8, fewer when the
// arguments would exceed kParameterBytes (one at least; staging makes up for fewer).
int piece_buffers(const KernelSignature& sig) {
  const int arrays = static_cast<int>(sig.arrays.size());
  if (arrays == 0) return 1;
  const int fixed = 8 * static_cast<int>(sig.params.size() + sig.serial.size() + sig.tile.size() +
                                         sig.scalars.size() + 1);
  const int k = (kParameterBytes - fixed - 16 * arrays) / (8 * arrays);
  return std::max(1, std::min(kPieceBuffers, k));
}

// One access reference of a multi-piece kernel: the access (as the statement printer
// passes it: one per access expression, the first in the model's order, as
// kernel_codegen's ref_piece_lookups), the box it touches in the tile (null: none in C)
// and the index of its record (slot, o, strides) in the kernel's table.
struct PieceRef {
  const Access* acc;
  const TileBox* box;
  int at;
};

// The references of "phase" in access id order; their records follow the table's first
// long (bbmm_direct). "end" is the index after the last record.
std::vector<PieceRef> piece_refs(const Scop& scop, const ScopBoxes& boxes, int phase, int& end) {
  std::map<int, const TileBox*> box_of;
  for (const ArrayBoxes& ab : boxes.phases[phase].arrays) {
    for (size_t i = 0; i < ab.accesses.size() && i < ab.access_boxes.size(); ++i) {
      box_of[ab.accesses[i]] = &ab.access_boxes[i];
    }
  }
  std::vector<PieceRef> refs;
  end = 1;
  for (int s : scop.phases[phase].statements) {
    for (const Access* acc : printed_references(scop, s)) {
      auto it = box_of.find(acc->id);
      refs.push_back({acc, it == box_of.end() ? nullptr : it->second, end});
      end += rank_of(scop.arrays[acc->array]) + 1;
    }
  }
  return refs;
}

// The OpenCL C source of the kernel "<name>" (one piece per array).
std::string kernel_source(const Scop& scop, const ScopBoxes& boxes, int phase,
                          const KernelSignature& sig, const std::string& name,
                          const TileLoops& loops) {
  const PhaseBoxes& pb = boxes.phases[phase];
  const bool partitioned = !boxes.partitions[pb.partition].dims.empty();
  std::ostringstream os;
  std::vector<std::string> params;
  for (const auto* v : {&sig.params, &sig.serial, &sig.tile}) {
    for (const std::string& p : *v) params.push_back("long " + p);
  }
  for (int a : sig.scalars) params.push_back(cl_type(scop.arrays[a].elem_type) + " " + scop.arrays[a].c_name);
  for (int a : sig.arrays) {
    const ArrayInfo& arr = scop.arrays[a];
    const std::string p = "bbmm_" + arr.c_name + "0";
    params.push_back("__global " + cl_type(arr.elem_type) + "* " + p);
    params.push_back("long " + p + "_o");
    for (int d = 0; d < rank_of(arr); ++d) {
      params.push_back("long " + p + "_l" + std::to_string(d));
      if (d + 1 < rank_of(arr)) params.push_back("long " + p + "_s" + std::to_string(d));
    }
  }
  os << "__kernel void " << name << "(" << join(params, ", ") << ") {\n";
  if (partitioned) {
    os << "  const long bbmm_x = " << boxes.partitions[pb.partition].dims[0].lo_param
       << " + (long)get_global_id(0);\n";
  }
  for (int a : sig.privates) {
    os << "  " << private_decl(scop, a, cl_type) << "\n";
  }
  auto access = [&](const Access& acc, const std::vector<std::string>& subs) -> std::string {
    const ArrayInfo& arr = scop.arrays[acc.array];
    const std::string p = "bbmm_" + arr.c_name + "0";
    std::string idx = p + "_o";
    for (size_t d = 0; d < subs.size(); ++d) {
      idx += " + ((" + subs[d] + ") - " + p + "_l" + std::to_string(d) + ")";
      if (d + 1 < subs.size()) idx += " * " + p + "_s" + std::to_string(d);
    }
    return "(*(" + p + " + (" + idx + ")))";
  };
  os << loops.print([&](int s, const std::vector<std::string>& bind, std::vector<std::string>& lines) {
    statement_block(scop, s, bind, "long", access, lines);
  });
  os << "}\n";
  return os.str();
}

// The OpenCL C source of the kernel "<name>_pieces" (any number of pieces per array, from
// the table "bbmm_tab": generated_support_opencl.h describes its records) and of its
// per-array element lookups "bbmm_<name>_<array>_at".
std::string pieces_kernel_source(const Scop& scop, const ScopBoxes& boxes, int phase,
                                 const KernelSignature& sig, const std::string& name,
                                 const TileLoops& loops) {
  const PhaseBoxes& pb = boxes.phases[phase];
  const bool partitioned = !boxes.partitions[pb.partition].dims.empty();
  const int nbuf = piece_buffers(sig);
  std::ostringstream os;
  // The element lookup of each array: the first piece holding the element.
  for (int a : sig.arrays) {
    const ArrayInfo& arr = scop.arrays[a];
    const int r = rank_of(arr);
    const std::string t = cl_type(arr.elem_type);
    std::vector<std::string> xs, in;
    std::string idx = "t[1]";
    for (int d = 0; d < r; ++d) {
      const std::string x = "x" + std::to_string(d);
      xs.push_back("long " + x);
      in.push_back(x + " >= t[" + std::to_string(2 + d) + "] && " + x + " < t[" +
                   std::to_string(2 + r + d) + "]");
      idx += " + " + x + (d + 1 < r ? " * t[" + std::to_string(2 + 2 * r + d) + "]" : "");
    }
    os << "static __global " << t << "* " << name << "_" << arr.c_name << "_at(__global const long* t, "
       << "long n, __global " << t << "* const* b, " << join(xs, ", ") << ") {\n";
    os << "  for (long k = 0; k < n; ++k, t += " << 3 * r + 1 << ")\n";
    os << "    if (" << join(in, " && ") << ") return b[t[0]] + (" << idx << ");\n";
    os << "  return b[0];  /* not reached: the pieces cover every access */\n";
    os << "}\n";
  }
  std::vector<std::string> params;
  for (const auto* v : {&sig.params, &sig.serial, &sig.tile}) {
    for (const std::string& p : *v) params.push_back("long " + p);
  }
  for (int a : sig.scalars) params.push_back(cl_type(scop.arrays[a].elem_type) + " " + scop.arrays[a].c_name);
  params.push_back("__global const long* bbmm_tab");
  for (int a : sig.arrays) {
    const ArrayInfo& arr = scop.arrays[a];
    const std::string p = "bbmm_" + arr.c_name;
    for (int k = 0; k < nbuf; ++k) {
      params.push_back("__global " + cl_type(arr.elem_type) + "* " + p + "_b" + std::to_string(k));
    }
    params.push_back("long " + p + "_t");
    params.push_back("long " + p + "_n");
  }
  os << "__kernel void " << name << "_pieces(" << join(params, ", ") << ") {\n";
  for (int a : sig.arrays) {
    const ArrayInfo& arr = scop.arrays[a];
    const std::string p = "bbmm_" + arr.c_name;
    std::vector<std::string> bs;
    for (int k = 0; k < nbuf; ++k) bs.push_back(p + "_b" + std::to_string(k));
    os << "  __global " << cl_type(arr.elem_type) << "* const " << p << "_b[" << nbuf
       << "] = {" << join(bs, ", ") << "};\n";
  }
  if (partitioned) {
    os << "  const long bbmm_x = " << boxes.partitions[pb.partition].dims[0].lo_param
       << " + (long)get_global_id(0);\n";
  }
  for (int a : sig.privates) {
    os << "  " << private_decl(scop, a, cl_type) << "\n";
  }
  // Each reference's piece, looked up on the host (slot 0 and offsets 0 when it has none:
  // bbmm_tab[0], bbmm_direct, is then 0 and they are not used).
  int end = 0;
  for (const PieceRef& ref : piece_refs(scop, boxes, phase, end)) {
    const ArrayInfo& arr = scop.arrays[ref.acc->array];
    const std::string r = ref_name(*ref.acc);
    os << "  /* " << comment_safe(ref.acc->text) << " */\n";
    os << "  __global " << cl_type(arr.elem_type) << "* const " << r << "_d = bbmm_" << arr.c_name
       << "_b[bbmm_tab[" << ref.at << "]];\n";
    os << "  const long " << r << "_o = bbmm_tab[" << ref.at + 1 << "]";
    for (int d = 0; d + 1 < rank_of(arr); ++d) {
      os << ", " << r << "_s" << d << " = bbmm_tab[" << ref.at + 2 + d << "]";
    }
    os << ";\n";
  }
  auto access = [&](const Access& acc, const std::vector<std::string>& subs) -> std::string {
    const ArrayInfo& arr = scop.arrays[acc.array];
    const std::string p = "bbmm_" + arr.c_name;
    return "(*" + name + "_" + arr.c_name + "_at(bbmm_tab + " + p + "_t, " + p + "_n, " + p + "_b, " +
           join(subs, ", ") + "))";
  };
  auto print_loops_with = [&](const AccessPrinter& printer) {
    return loops.print(
        [&](int s, const std::vector<std::string>& bind, std::vector<std::string>& lines) {
          statement_block(scop, s, bind, "long", printer, lines);
        },
        4);
  };
  // Every reference in one piece: direct addressing per reference; else per element.
  os << "  if (bbmm_tab[0]) {\n" << print_loops_with(ref_direct_access) << "  } else {\n"
     << print_loops_with(access) << "  }\n";
  os << "}\n";
  return os.str();
}

}  // namespace

std::string opencl_kernel_launcher(const Scop& scop, const ScopBoxes& boxes, int phase,
                                   const KernelSignature& sig, const std::string& name) {
  const PhaseBoxes& pb = boxes.phases[phase];
  const Partition& part = boxes.partitions[pb.partition];
  const bool partitioned = !part.dims.empty();
  std::ostringstream os;
  std::string src =
      "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
      "#pragma OPENCL FP_CONTRACT OFF\n"
      "typedef long int64_t;\n"
      "static inline long bbmm_min(long a, long b) { return a < b ? a : b; }\n"
      "static inline long bbmm_max(long a, long b) { return a > b ? a : b; }\n"
      "static inline long bbmm_floord(long n, long d) { long q = n / d; "
      "return (n % d != 0 && ((n < 0) != (d < 0))) ? q - 1 : q; }\n";
  for (const std::string& f : float_math_calls(scop)) {
    src += "#define " + f + " " + f.substr(0, f.size() - 1) + "\n";
  }
  // Both kernels run the same loops: built once. The work-item's iterator value (bbmm_x) is
  // one more parameter of the loops.
  TileLoopOptions opts;
  opts.one_iteration_per_item = partitioned;
  opts.indent = 2;
  const TileLoops loops(scop, boxes, phase, sig, opts);
  src += kernel_source(scop, boxes, phase, sig, name, loops);
  src += pieces_kernel_source(scop, boxes, phase, sig, name, loops);
  os << "/* The OpenCL C source of phase " << phase << "'s kernels (built at run time). */\n";
  os << "static bbmm_cl_program " << name << "_cl = {\n" << c_string_lines(src, "    ")
     << "    , NULL, NULL, {NULL, NULL}};\n\n";
  std::string global;
  if (partitioned) {
    global = "(size_t)(bbmm_a->" + part.dims[0].hi_param + " - bbmm_a->" + part.dims[0].lo_param + ")";
  } else {
    global = "1";
  }
  auto scalar_args = [&]() {
    for (const auto* v : {&sig.params, &sig.serial, &sig.tile}) {
      for (const std::string& p : *v) {
        os << "  { cl_long bbmm_v = bbmm_a->" << p
           << "; bbmm_cl_arg(bbmm_k, &bbmm_i, sizeof bbmm_v, &bbmm_v); }\n";
      }
    }
    for (int a : sig.scalars) {
      os << "  bbmm_cl_arg(bbmm_k, &bbmm_i, sizeof bbmm_a->" << scop.arrays[a].c_name
         << ", &bbmm_a->" << scop.arrays[a].c_name << ");\n";
    }
  };

  // One piece per array.
  os << "static void " << name << "_launch(const bbmm_launch_info* bbmm_info, void* bbmm_argp) {\n";
  os << "  const struct " << name << "_args* bbmm_a = (const struct " << name << "_args*)bbmm_argp;\n";
  os << "  cl_command_queue bbmm_q = (cl_command_queue)bbmm_info->queue;\n";
  os << "  cl_kernel bbmm_k = bbmm_cl_kernel(&" << name << "_cl, bbmm_q, 0, \"" << name << "\");\n";
  os << "  cl_uint bbmm_i = 0;\n";
  scalar_args();
  for (size_t k = 0; k < sig.arrays.size(); ++k) {
    const ArrayInfo& arr = scop.arrays[sig.arrays[k]];
    os << "  bbmm_cl_piece(bbmm_k, &bbmm_i, (const bbmm_piece*)((const char*)bbmm_argp + bbmm_a->offset["
       << k << "]), " << rank_of(arr) << ", sizeof(" << arr.elem_type << "));\n";
  }
  os << "  const size_t bbmm_global = " << global << ";\n";
  os << "  if (bbmm_global > 0)\n";
  os << "    bbmm_cl_check(clEnqueueNDRangeKernel(bbmm_q, bbmm_k, 1, NULL, &bbmm_global, NULL, 0, "
        "NULL, NULL), \"clEnqueueNDRangeKernel\");\n";
  os << "}\n\n";

  // Any number of pieces: the table of pieces and references (generated_support_opencl.h),
  // each reference's piece looked up here once per tile.
  int refs_end = 0;
  const std::vector<PieceRef> refs = piece_refs(scop, boxes, phase, refs_end);
  os << "static void " << name
     << "_launch_pieces(const bbmm_launch_info* bbmm_info, void* bbmm_argp) {\n";
  os << "  const struct " << name << "_args* bbmm_a = (const struct " << name << "_args*)bbmm_argp;\n";
  os << "  const size_t bbmm_global = " << global << ";\n";
  os << "  if (bbmm_global == 0) return;\n";
  os << "  cl_command_queue bbmm_q = (cl_command_queue)bbmm_info->queue;\n";
  os << "  cl_kernel bbmm_k = bbmm_cl_kernel(&" << name << "_cl, bbmm_q, 1, \"" << name
     << "_pieces\");\n";
  os << "  cl_context bbmm_ctx = " << name << "_cl.context;\n";
  std::vector<std::string> names;
  os << kernel_arg_locals(scop, sig, "bbmm_a->", false, names);
  for (const std::string& n : names) os << "  (void)" << n << ";\n";
  os << "  size_t bbmm_size = " << refs_end << ";  /* bbmm_direct, the references' records */\n";
  for (size_t k = 0; k < sig.arrays.size(); ++k) {
    const ArrayInfo& arr = scop.arrays[sig.arrays[k]];
    const std::string p = "bbmm_" + arr.c_name;
    os << "  const bbmm_piece* const " << p << "_p = (const bbmm_piece*)((const char*)bbmm_argp + "
       << "bbmm_a->offset[" << k << "]);\n";
    os << "  const int " << p << "_n = (int)bbmm_a->npieces[" << k << "];\n";
    os << "  const size_t " << p << "_t = bbmm_size;\n";
    os << "  bbmm_size += (size_t)" << p << "_n * " << 3 * rank_of(arr) + 1 << ";\n";
  }
  os << "  cl_long* bbmm_tab = (cl_long*)bbmm_gen_calloc(bbmm_size * sizeof(cl_long));\n";
  for (int a : sig.arrays) {
    const ArrayInfo& arr = scop.arrays[a];
    const std::string p = "bbmm_" + arr.c_name;
    os << "  bbmm_cl_array " << p << "_a;\n";
    os << "  bbmm_cl_pieces_in(bbmm_ctx, bbmm_q, " << p << "_p, " << p << "_n, " << rank_of(arr)
       << ", sizeof(" << arr.elem_type << "), " << piece_buffers(sig) << ", bbmm_tab + " << p
       << "_t, &" << p << "_a);\n";
  }
  os << "  int bbmm_direct = !bbmm_gen_per_element;\n";
  for (const PieceRef& ref : refs) {
    const ArrayInfo& arr = scop.arrays[ref.acc->array];
    const std::string p = "bbmm_" + arr.c_name;
    const int rank = rank_of(arr);
    os << "  /* " << comment_safe(ref.acc->text) << " */\n";
    BoxText box;
    bool have = ref.box != nullptr;
    if (have) {
      try {
        box = box_c_text(*ref.box);
      } catch (const std::logic_error&) {
        have = false;  // no C form: the kernel finds the piece of each element
      }
    }
    if (!have) {
      os << "  bbmm_direct = 0;\n";
      continue;
    }
    std::vector<std::string> lo, hi;
    for (int d = 0; d < rank; ++d) {
      lo.push_back(rename_isl_macros(box.lo[d]));
      hi.push_back(rename_isl_macros(box.hi[d]));
    }
    os << "  if (" << (box.guard == "1" ? "1" : rename_isl_macros(box.guard)) << ") {\n";
    os << "    const int64_t bbmm_rlo[" << rank << "] = {" << join(lo, ", ") << "};\n";
    os << "    const int64_t bbmm_rhi[" << rank << "] = {" << join(hi, ", ") << "};\n";
    os << "    if (!bbmm_cl_ref(" << p << "_p, " << p << "_n, " << rank << ", bbmm_rlo, bbmm_rhi, bbmm_tab + "
       << p << "_t, bbmm_tab + " << ref.at << ")) bbmm_direct = 0;\n";
    os << "  } else {\n";
    os << "    bbmm_direct = 0;\n";
    os << "  }\n";
  }
  os << "  bbmm_tab[0] = bbmm_direct;\n";
  os << "  cl_mem bbmm_tabm = bbmm_cl_table(bbmm_ctx, bbmm_tab, bbmm_size);\n";
  os << "  cl_uint bbmm_i = 0;\n";
  scalar_args();
  os << "  bbmm_cl_arg(bbmm_k, &bbmm_i, sizeof bbmm_tabm, &bbmm_tabm);\n";
  for (int a : sig.arrays) {
    const std::string p = "bbmm_" + scop.arrays[a].c_name;
    os << "  for (int bbmm_j = 0; bbmm_j < " << piece_buffers(sig) << "; ++bbmm_j)\n";
    os << "    bbmm_cl_arg(bbmm_k, &bbmm_i, sizeof(cl_mem), &" << p << "_a.slot[bbmm_j]);\n";
    os << "  { cl_long bbmm_v = (cl_long)" << p << "_t; bbmm_cl_arg(bbmm_k, &bbmm_i, sizeof bbmm_v, &bbmm_v); }\n";
    os << "  { cl_long bbmm_v = " << p << "_n; bbmm_cl_arg(bbmm_k, &bbmm_i, sizeof bbmm_v, &bbmm_v); }\n";
  }
  os << "  bbmm_cl_check(clEnqueueNDRangeKernel(bbmm_q, bbmm_k, 1, NULL, &bbmm_global, NULL, 0, "
        "NULL, NULL), \"clEnqueueNDRangeKernel\");\n";
  for (int a : sig.arrays) {
    const ArrayInfo& arr = scop.arrays[a];
    const std::string p = "bbmm_" + arr.c_name;
    os << "  bbmm_cl_pieces_out(bbmm_q, " << p << "_p, " << p << "_n, " << rank_of(arr) << ", sizeof("
       << arr.elem_type << "), bbmm_tab + " << p << "_t, &" << p << "_a, "
       << (phase_writes(scop, scop.phases[phase], a) ? 1 : 0) << ");\n";
  }
  os << "  clReleaseMemObject(bbmm_tabm);  /* freed once the kernel has run */\n";
  os << "  free(bbmm_tab);\n";
  os << "}\n\n";
  return os.str();
}

}  // namespace bbmm::compiler
