#include "codegen/opencl_codegen.h"

#include <algorithm>
#include <sstream>

#include "codegen/c_printer.h"

namespace bbmm::compiler {
namespace {

// Pieces per array the multi-piece kernel accepts (each piece may be its own buffer).
constexpr int kMaxPieces = 8;

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

// The OpenCL C source of the kernel "<name>" (one piece per array) or "<name>_pieces".
std::string kernel_source(const Scop& scop, const ScopBoxes& boxes, int phase,
                          const KernelSignature& sig, const std::string& name, bool pieces) {
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
    const int np = pieces ? kMaxPieces : 1;
    for (int k = 0; k < np; ++k) {
      const std::string p = "bbmm_" + arr.c_name + std::to_string(k);
      params.push_back("__global " + cl_type(arr.elem_type) + "* " + p);
      params.push_back("long " + p + "_o");
      for (int d = 0; d < rank_of(arr); ++d) {
        params.push_back("long " + p + "_l" + std::to_string(d));
        if (pieces) params.push_back("long " + p + "_h" + std::to_string(d));
        if (d + 1 < rank_of(arr)) params.push_back("long " + p + "_s" + std::to_string(d));
      }
    }
  }
  os << "__kernel void " << name << (pieces ? "_pieces" : "") << "(" << join(params, ", ")
     << ") {\n";
  if (partitioned) {
    os << "  const long bbmm_x = " << boxes.partitions[pb.partition].dims[0].lo_param
       << " + (long)get_global_id(0);\n";
  }
  auto elem = [&](const ArrayInfo& arr, int k, const std::vector<std::string>& subs) {
    const std::string p = "bbmm_" + arr.c_name + std::to_string(k);
    std::string idx = p + "_o";
    for (size_t d = 0; d < subs.size(); ++d) {
      idx += " + ((" + subs[d] + ") - " + p + "_l" + std::to_string(d) + ")";
      if (d + 1 < subs.size()) idx += " * " + p + "_s" + std::to_string(d);
    }
    return p + " + (" + idx + ")";
  };
  auto access = [&](const Access& acc, const std::vector<std::string>& subs) -> std::string {
    const ArrayInfo& arr = scop.arrays[acc.array];
    if (!pieces) return "(*(" + elem(arr, 0, subs) + "))";
    // Pick the piece holding the element (the last one when no other does).
    std::string r = "(*(";
    for (int k = 0; k + 1 < kMaxPieces; ++k) {
      const std::string p = "bbmm_" + arr.c_name + std::to_string(k);
      std::vector<std::string> in;
      for (size_t d = 0; d < subs.size(); ++d) {
        in.push_back("(" + subs[d] + ") >= " + p + "_l" + std::to_string(d) + " && (" + subs[d] +
                     ") < " + p + "_h" + std::to_string(d));
      }
      r += "(" + join(in, " && ") + ") ? " + elem(arr, k, subs) + " : ";
    }
    r += elem(arr, kMaxPieces - 1, subs) + "))";
    return r;
  };
  TileLoopOptions opts;
  opts.one_iteration_per_item = partitioned;
  opts.indent = 2;
  std::vector<std::string> sig_for_loops;
  KernelSignature s2 = sig;
  if (partitioned) {
    // The work-item's iterator value is one more parameter of the loops.
  }
  os << tile_loops(scop, boxes, phase, s2, opts,
                   [&](int s, const std::vector<std::string>& bind, std::vector<std::string>& lines) {
                     statement_block(scop, s, bind, "long", access, lines);
                   });
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
  src += kernel_source(scop, boxes, phase, sig, name, false);
  src += kernel_source(scop, boxes, phase, sig, name, true);
  os << "/* The OpenCL C source of phase " << phase << "'s kernels (built at run time). */\n";
  os << "static bbmm_cl_program " << name << "_cl = {\n" << c_string_lines(src, "    ")
     << "    , NULL, NULL, {NULL, NULL}};\n\n";
  for (int variant = 0; variant < 2; ++variant) {
    const bool pieces = variant == 1;
    const std::string fn = name + "_launch" + (pieces ? "_pieces" : "");
    os << "static void " << fn << "(const bbmm_launch_info* bbmm_info, void* bbmm_argp) {\n";
    os << "  const struct " << name << "_args* bbmm_a = (const struct " << name
       << "_args*)bbmm_argp;\n";
    os << "  cl_command_queue bbmm_q = (cl_command_queue)bbmm_info->queue;\n";
    os << "  cl_kernel bbmm_k = bbmm_cl_kernel(&" << name << "_cl, bbmm_q, " << variant << ", \""
       << name << (pieces ? "_pieces" : "") << "\");\n";
    os << "  cl_uint bbmm_i = 0;\n";
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
    for (size_t k = 0; k < sig.arrays.size(); ++k) {
      const ArrayInfo& arr = scop.arrays[sig.arrays[k]];
      os << "  {\n";
      os << "    const bbmm_piece* bbmm_p = (const bbmm_piece*)((const char*)bbmm_argp + "
            "bbmm_a->offset["
         << k << "]);\n";
      os << "    const int bbmm_n = (int)bbmm_a->npieces[" << k << "];\n";
      if (pieces) {
        os << "    if (bbmm_n > " << kMaxPieces << ") {\n";
        os << "      fprintf(stderr, \"bbmm: the tile's view of '" << arr.c_name
           << "' has %d pieces; the generated OpenCL kernel takes at most " << kMaxPieces
           << "\\n\", bbmm_n);\n";
        os << "      exit(1);\n";
        os << "    }\n";
        os << "    if (bbmm_n == 0) {\n";
        os << "      /* Not accessed by this tile: bind the first argument's placeholders. */\n";
        os << "      bbmm_piece bbmm_none;\n";
        os << "      memset(&bbmm_none, 0, sizeof bbmm_none);\n";
        os << "      bbmm_none.data = NULL;\n";
        os << "      for (int bbmm_j = 0; bbmm_j < " << kMaxPieces << "; ++bbmm_j)\n";
        os << "        bbmm_cl_piece(bbmm_k, &bbmm_i, &bbmm_none, 1, 0, " << rank_of(arr) << ", sizeof("
           << arr.elem_type << "), 1);\n";
        os << "    } else {\n";
        os << "      for (int bbmm_j = 0; bbmm_j < " << kMaxPieces << "; ++bbmm_j)\n";
        os << "        bbmm_cl_piece(bbmm_k, &bbmm_i, bbmm_p, bbmm_n, bbmm_j, " << rank_of(arr)
           << ", sizeof(" << arr.elem_type << "), 1);\n";
        os << "    }\n";
      } else {
        os << "    bbmm_cl_piece(bbmm_k, &bbmm_i, bbmm_p, bbmm_n, 0, " << rank_of(arr) << ", sizeof("
           << arr.elem_type << "), 0);\n";
      }
      os << "  }\n";
    }
    if (partitioned) {
      os << "  const size_t bbmm_global = (size_t)(bbmm_a->" << part.dims[0].hi_param << " - bbmm_a->"
         << part.dims[0].lo_param << ");\n";
    } else {
      os << "  const size_t bbmm_global = 1;\n";
    }
    os << "  if (bbmm_global > 0)\n";
    os << "    bbmm_cl_check(clEnqueueNDRangeKernel(bbmm_q, bbmm_k, 1, NULL, &bbmm_global, NULL, 0, "
          "NULL, NULL), \"clEnqueueNDRangeKernel\");\n";
    os << "}\n\n";
  }
  return os.str();
}

}  // namespace bbmm::compiler
