#include "codegen/cuda_codegen.h"

#include <memory>
#include <set>
#include <sstream>

#include "codegen/c_printer.h"
#include "codegen/thread_mapping.h"

namespace bbmm::compiler {
namespace {

int rank_of(const ArrayInfo& a) { return static_cast<int>(a.extents.size()); }

// CUDA's double and float math functions a statement may call in device code.
const std::set<std::string>& device_functions() {
  static const std::set<std::string> names = [] {
    std::set<std::string> s;
    for (const char* f :
         {"sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "sin",
          "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh",
          "atanh", "erf", "erfc", "tgamma", "lgamma", "fabs", "floor", "ceil", "round", "trunc",
          "fmin", "fmax", "fmod", "hypot", "copysign", "fma", "rsqrt", "abs", "labs", "llabs",
          "min", "max"}) {
      s.insert(f);
      s.insert(std::string(f) + "f");
    }
    return s;
  }();
  return names;
}

void check_calls(const Expr& e, std::vector<std::string>& bad) {
  if (e.kind == Expr::Kind::kCall && !e.kids.empty()) {
    const Expr& callee = *e.kids[0];
    if (callee.kind != Expr::Kind::kIdent || !device_functions().count(callee.text)) {
      bad.push_back(callee.kind == Expr::Kind::kIdent ? callee.text : "(a function pointer)");
    }
  }
  for (const ExprPtr& k : e.kids) {
    if (k) check_calls(*k, bad);
  }
}

const char* const kAxis[] = {"x", "y", "z"};  // the grid dimension of mapped coordinate d

// "expr" (an int64_t expression) as a counter of type "type": converted unless int64_t.
std::string as_counter(const std::string& type, const std::string& expr) {
  return type == "int64_t" ? expr : "(" + type + ")(" + expr + ")";
}

// The C++ spelling of a kernel's loop over grid coordinate "d" (grid-stride), counting in
// "type": the start and the step are computed in 64 bits and converted (the launcher runs
// a 32-bit type only where every value fits, bbmm_cu_fits32).
std::string grid_loop(int d, const std::string& type, const std::string& ind) {
  const std::string a = kAxis[d], g = grid_param(d), i = std::to_string(d);
  return ind + "for (" + type + " " + g + " = " +
         as_counter(type, "bbmm_c.lo[" + i + "] + (int64_t)blockIdx." + a + " * blockDim." + a +
                              " + threadIdx." + a) +
         "; " + g + " < " + as_counter(type, "bbmm_c.hi[" + i + "]") + "; " + g +
         " += " + as_counter(type, "(int64_t)gridDim." + a + " * blockDim." + a) + ")\n";
}

// The kernel of "phase": "pieces" picks the multi-piece variant. "tile_loops_cache" keeps the
// intra-tile loops, the same in both variants (built by the first call).
std::string kernel(const Scop& scop, const ScopBoxes& boxes, int phase, const KernelSignature& sig,
                   const ThreadMapping& map, const std::string& name, bool pieces,
                   std::unique_ptr<TileLoops>& tile_loops_cache) {
  const Phase& ph = scop.phases[phase];
  std::ostringstream os;
  const std::string fn = name + (pieces ? "_kernel_pieces" : "_kernel");
  // The single-piece kernel indexes with I (int32_t where every piece holds fewer than
  // 2^31 elements and every value of its loop counters fits, else int64_t), in the
  // unsigned U (wrapping) so that partial sums out of I's range still give the exact
  // offset; its grid coordinates count in I too.
  // Its arrays' base pointers are __restrict__ parameters (the arrays of a scop are
  // distinct; instances of distinct arrays never overlap), const where the phase only
  // reads the array: values stay in registers across statements and reads may go through
  // the read-only data cache.
  // BBMM_GEN_CUDA_KERNEL_BOUND (generated_support_cuda.h): __launch_bounds__(1024) unless
  // the build sets BBMM_CUDA_MAX_REGISTERS; either way every block shape BBMM_CUDA_BLOCK
  // accepts (up to 1024 threads) can launch, as registers are capped at 64 per thread or
  // less; that cap also keeps heavy bodies at 50% occupancy or more (bscholes: 79
  // registers without it).
  if (!pieces) os << "template <typename I, typename U>\n";
  os << "__global__ void BBMM_GEN_CUDA_KERNEL_BOUND " << fn << "(const struct " << name << "_args bbmm_a, const struct "
     << name << "_cu bbmm_c";
  if (pieces) {
    os << ", const char* __restrict__ bbmm_blk";
  } else {
    for (int a : sig.arrays) {
      const ArrayInfo& arr = scop.arrays[a];
      os << ", " << (phase_writes(scop, ph, a) ? "" : "const ") << arr.elem_type
         << "* __restrict__ bbmm_" << arr.c_name << "_d";
    }
  }
  os << ") {\n";
  std::vector<std::string> locals;
  os << kernel_arg_locals(scop, sig, "bbmm_a.", true, locals);
  for (size_t k = 0; k < sig.arrays.size(); ++k) {
    const ArrayInfo& arr = scop.arrays[sig.arrays[k]];
    const std::string p = "bbmm_" + arr.c_name;
    if (pieces) {
      os << "  const bbmm_piece* const " << p << "_p = (const bbmm_piece*)(bbmm_blk + bbmm_a.offset["
         << k << "]);\n";
      os << "  const int " << p << "_n = (int)bbmm_a.npieces[" << k << "];\n";
      locals.push_back(p + "_p");
      locals.push_back(p + "_n");
    } else {
      os << "  const int64_t " << p << "_o = bbmm_c." << p << "_o;\n";
      locals.push_back(p + "_d");
      locals.push_back(p + "_o");
      for (int d = 0; d + 1 < rank_of(arr); ++d) {
        os << "  const int64_t " << p << "_s" << d << " = bbmm_c." << p << "_s" << d << ";\n";
        locals.push_back(p + "_s" + std::to_string(d));
      }
    }
  }
  if (pieces) os << ref_piece_lookups(scop, boxes, phase, "bbmm_cu_piece_of", "bbmm_c.per_element", "  ", locals);
  for (const std::string& l : locals) os << "  (void)" << l << ";\n";

  auto access = [&](const Access& acc, const std::vector<std::string>& subs) -> std::string {
    const ArrayInfo& arr = scop.arrays[acc.array];
    const std::string p = "bbmm_" + arr.c_name;
    const int rank = static_cast<int>(subs.size());
    if (pieces) {
      // A reference with its piece addressed in it; the others find each element's.
      const std::string r = ref_name(acc);
      return "(*(" + r + "_d ? &" + ref_direct_access(acc, subs) + " : bbmm_cu_at_from<" +
             arr.elem_type + ", " + std::to_string(rank) + ">(" + p + "_p, " + p + "_n, {" +
             join(subs, ", ") + "}, " + r + "_k)))";
    }
    std::string idx = "(U)" + p + "_o";
    for (int d = 0; d < rank; ++d) {
      idx += " + (U)(" + subs[d] + ")";
      if (d + 1 < rank) idx += " * (U)" + p + "_s" + std::to_string(d);
    }
    return p + "_d[(I)(" + idx + ")]";
  };

  // The loop nest over the tile with accesses spelled by "printer", indented by "base".
  auto loops = [&](const AccessPrinter& printer, const std::string& base) {
    TileLoopOptions opts;
    std::string ind = base;
    // 2-D and 3-D kernels: each thread marches through bbmm_c.march consecutive values of the
    // outermost coordinate, in its innermost loop (its other coordinates fixed), so that the
    // neighbours it loaded for one value are still in its SM's L1 for the next and each
    // element comes from memory about once (stencils). The march chunk's loop comes first,
    // then the grid-stride loops of the other coordinates, then the march itself: on an
    // H200 this order runs heat3d's step 1.46x and heat2d's 1.12x faster than marching
    // outside the other loops (bench/gpu/kernels/stencil_variants.cu, docs/performance.md).
    const int marched = map.dims >= 2 ? map.dims - 1 : -1;
    // The grid coordinates count in I in the single-piece kernel (int32_t where the
    // launcher found every value fits: heat3d's kernel 58 -> 44 registers, sm_90), in
    // int64_t in the multi-piece one. The statements still see their iterators as int64_t.
    const std::string ct = pieces ? "int64_t" : "I";
    if (marched >= 0) {
      const std::string a = kAxis[marched], i = std::to_string(marched);
      const std::string m = "bbmm_m" + i;
      os << ind << "for (" << ct << " " << m << " = "
         << as_counter(ct, "bbmm_c.lo[" + i + "] + ((int64_t)blockIdx." + a + " * blockDim." + a +
                               " + threadIdx." + a + ") * bbmm_c.march")
         << "; " << m << " < " << as_counter(ct, "bbmm_c.hi[" + i + "]") << "; " << m << " += "
         << as_counter(ct, "(int64_t)gridDim." + a + " * blockDim." + a + " * bbmm_c.march") << ")\n";
      ind += "  ";
    }
    for (int d = map.dims - 1; d >= 0; --d) {
      if (d != marched) {
        os << grid_loop(d, ct, ind);
        ind += "  ";
      }
      opts.extra_params.push_back(grid_param(d));
    }
    if (marched >= 0) {
      const std::string g = grid_param(marched), i = std::to_string(marched);
      // Not unrolled: nvcc unrolls it 4 times by default, which doubles the registers and
      // ran heat3d's step 1.4x slower (stencil_variants: inner against inner_u4).
      os << ind << "#pragma unroll 1\n";
      os << ind << "for (" << ct << " " << g << " = bbmm_m" << i << ", bbmm_e" << i << " = "
         << as_counter(ct, "bbmm_min(bbmm_c.hi[" + i + "], (int64_t)bbmm_m" + i + " + bbmm_c.march)")
         << "; " << g << " < bbmm_e" << i << "; ++" << g << ")\n";
      ind += "  ";
    }
    for (size_t i = 0; i < ph.statements.size(); ++i) {
      for (int d = 0; d < map.dims; ++d) {
        opts.fixed[ph.statements[i]].emplace_back(map.loops[i][d], grid_param(d));
      }
    }
    opts.known = map.known;
    opts.indent = static_cast<int>(ind.size()) + 2;
    os << ind << "{\n";
    if (!tile_loops_cache) tile_loops_cache = std::make_unique<TileLoops>(scop, boxes, phase, sig, opts);
    // A wavefront's region (Phase::block_loop): the block's threads share its loop, a
    // barrier after each of its runs (one step of the wavefront).
    const SharedLoop block_threads{"", "threadIdx.x", "blockDim.x", "threadIdx.x == 0",
                                   "__syncthreads();"};
    os << tile_loops_cache->print(
        [&](int s, const std::vector<std::string>& bind, std::vector<std::string>& lines) {
          statement_block(scop, s, bind, "int64_t", printer, lines, /*count=*/false,
                          /*operands_first=*/true);
        },
        opts.indent, block_threads);
    os << ind << "}\n";
  };
  if (pieces) {
    // Every reference in one piece: direct addressing (no test in the loops); else each
    // reference in its piece where it has one, per element where not.
    os << "  if (bbmm_direct) {\n";
    loops(ref_direct_access, "    ");
    os << "  } else {\n";
    loops(access, "    ");
    os << "  }\n";
  } else {
    loops(access, "  ");
  }
  os << "}\n\n";
  return os.str();
}

}  // namespace

std::string cuda_prelude(const CodegenOptions& opts) {
  std::ostringstream os;
  os << "/* The CUDA helpers (bbmm/generated_support_cuda.h) with this file's defaults. */\n";
  os << "#define BBMM_GEN_CUDA_BLOCK_X " << (opts.block[0] > 0 ? opts.block[0] : 32) << "\n";
  os << "#define BBMM_GEN_CUDA_BLOCK_Y " << (opts.block[1] > 0 ? opts.block[1] : 8) << "\n";
  os << "#define BBMM_GEN_CUDA_BLOCK_Z " << (opts.block[2] > 0 ? opts.block[2] : 1) << "\n";
  os << "#define BBMM_GEN_CUDA_MARCH " << (opts.march > 0 ? opts.march : 32) << "\n";
  os << "#include \"bbmm/generated_support_cuda.h\"\n\n";
  return os.str();
}

std::string cuda_launcher_declarations(const std::string& name) {
  std::ostringstream os;
  os << "/* In the CUDA file (STEM.cu): launch the phase's kernel on the tile's stream. */\n";
  os << "void " << name << "_launch(const bbmm_launch_info* bbmm_info, void* bbmm_argp);\n";
  os << "void " << name << "_launch_pieces(const bbmm_launch_info* bbmm_info, void* bbmm_argp);\n\n";
  return os.str();
}

std::string cuda_kernel_launcher(const Scop& scop, const ScopBoxes& boxes, int phase,
                                 const KernelSignature& sig, const std::string& name) {
  const ThreadMapping map = map_threads(scop, boxes, phase, sig);
  std::ostringstream os;
  // What the launcher computes on the host for the kernels: the single-piece addressing
  // and the grid ranges.
  os << "/* Thread mapping: " << map.note << ". */\n";
  os << "struct " << name << "_cu {\n";
  for (int a : sig.arrays) {
    const ArrayInfo& arr = scop.arrays[a];
    const std::string p = "bbmm_" + arr.c_name;
    os << "  " << arr.elem_type << "* " << p << "_d;\n";
    os << "  int64_t " << p << "_o";
    for (int d = 0; d + 1 < rank_of(arr); ++d) os << ", " << p << "_s" << d;
    os << ";\n";
  }
  os << "  int64_t lo[3], hi[3];\n";
  os << "  int64_t march;  /* values of the outermost coordinate per thread (2-D, 3-D) */\n";
  os << "  int64_t per_element;  /* BBMM_PIECE_LOOKUP=element (multi-piece kernel) */\n";
  os << "};\n\n";
  std::unique_ptr<TileLoops> loops;
  os << kernel(scop, boxes, phase, sig, map, name, false, loops);
  os << kernel(scop, boxes, phase, sig, map, name, true, loops);

  for (int variant = 0; variant < 2; ++variant) {
    const bool pieces = variant == 1;
    os << "extern \"C\" void " << name << "_launch" << (pieces ? "_pieces" : "")
       << "(const bbmm_launch_info* bbmm_info, void* bbmm_argp) {\n";
    os << "  const struct " << name << "_args* bbmm_a = (const struct " << name << "_args*)bbmm_argp;\n";
    os << "  cudaStream_t bbmm_stream = (cudaStream_t)bbmm_info->queue;\n";
    std::vector<std::string> names;
    os << kernel_arg_locals(scop, sig, "bbmm_a->", false, names);
    for (const std::string& n : names) os << "  (void)" << n << ";\n";
    if (map.nonempty != "1") {
      os << "  if (!(" << map.nonempty << ")) return;  /* no instance of the phase in this tile */\n";
    }
    os << "  struct " << name << "_cu bbmm_c;\n";
    os << "  memset(&bbmm_c, 0, sizeof bbmm_c);\n";
    if (!pieces) {
      os << "  int bbmm_small = 1;  /* every piece under 2^31 elements: 32-bit indexing */\n";
      for (size_t k = 0; k < sig.arrays.size(); ++k) {
        const ArrayInfo& arr = scop.arrays[sig.arrays[k]];
        const std::string p = "bbmm_" + arr.c_name;
        const int rank = rank_of(arr);
        os << "  {\n";
        os << "    const bbmm_piece* bbmm_p = (const bbmm_piece*)((const char*)bbmm_argp + "
              "bbmm_a->offset["
           << k << "]);\n";
        os << "    bbmm_c." << p << "_d = (" << arr.elem_type
           << "*)((char*)bbmm_p->data + bbmm_p->offset);\n";
        std::string off;
        for (int d = 0; d < rank; ++d) {
          if (d + 1 < rank) {
            os << "    bbmm_c." << p << "_s" << d << " = bbmm_p->stride[" << d << "];\n";
            off += (d ? " + " : "") + std::string("bbmm_p->lo[") + std::to_string(d) +
                   "] * bbmm_p->stride[" + std::to_string(d) + "]";
          } else {
            off += (d ? " + " : "") + std::string("bbmm_p->lo[") + std::to_string(d) + "]";
          }
        }
        os << "    bbmm_c." << p << "_o = -(" << off << ");\n";
        os << "    if ((bbmm_p->hi[0] - bbmm_p->lo[0]) * " << (rank > 1 ? "bbmm_p->stride[0]" : "1")
           << " > INT32_MAX) bbmm_small = 0;\n";
        os << "  }\n";
      }
    }
    for (int d = 0; d < map.dims; ++d) {
      os << "  bbmm_c.lo[" << d << "] = " << map.lo[d] << ";\n";
      os << "  bbmm_c.hi[" << d << "] = " << map.hi[d] << ";\n";
    }
    // 2-D and 3-D launches march (the default, then shaped); 1-D ones do not.
    const std::string march = map.dims >= 2 ? "bbmm_cu_march()" : "1";
    os << "  bbmm_c.march = " << march << ";\n";
    os << "  bbmm_c.per_element = bbmm_cu_per_element();\n";
    os << "  dim3 bbmm_grid, bbmm_block;\n";
    // The kernel this launch runs, for its occupancy (bbmm_cu_waves).
    const std::string kernel =
        pieces ? "(const void*)" + name + "_kernel_pieces"
               : "bbmm_small ? (const void*)" + name + "_kernel<int32_t, uint32_t> : (const void*)" +
                     name + "_kernel<int64_t, uint64_t>";
    os << "  if (!bbmm_cu_shape(" << kernel << ", " << map.dims
       << ", bbmm_c.lo, bbmm_c.hi, &bbmm_c.march, &bbmm_grid, &bbmm_block)) return;\n";
    if (!pieces) {
      // The 32-bit kernel also needs its loop counters to fit; else the 64-bit one, shaped
      // for its own occupancy.
      os << "  if (bbmm_small && !bbmm_cu_fits32(" << map.dims
         << ", bbmm_c.lo, bbmm_c.hi, bbmm_c.march, bbmm_grid, bbmm_block)) {\n";
      os << "    bbmm_small = 0;\n";
      os << "    bbmm_c.march = " << march << ";\n";
      os << "    if (!bbmm_cu_shape((const void*)" << name << "_kernel<int64_t, uint64_t>, "
         << map.dims << ", bbmm_c.lo, bbmm_c.hi, &bbmm_c.march, &bbmm_grid, &bbmm_block)) return;\n";
      os << "  }\n";
    }
    if (scop.phases[phase].block_loop >= 0) {
      os << "  bbmm_block = dim3(BBMM_GEN_CUDA_WAVEFRONT_THREADS);  /* one block runs the wavefront */\n";
    }
    if (pieces) {
      os << "  size_t bbmm_size = sizeof(struct " << name << "_args);\n";
      os << "  for (int bbmm_k = 0; bbmm_k < " << sig.arrays.size() << "; ++bbmm_k)\n";
      os << "    bbmm_size += (size_t)bbmm_a->npieces[bbmm_k] * sizeof(bbmm_piece);\n";
      os << "  char* bbmm_blk = bbmm_cu_block_copy(bbmm_argp, bbmm_size, bbmm_stream);\n";
      os << "  " << name << "_kernel_pieces<<<bbmm_grid, bbmm_block, 0, bbmm_stream>>>(*bbmm_a, bbmm_c, bbmm_blk);\n";
      os << "  bbmm_cu_check(cudaGetLastError(), \"launching " << name << "_kernel_pieces\");\n";
      os << "  bbmm_cu_check(cudaFreeAsync(bbmm_blk, bbmm_stream), \"cudaFreeAsync (the tile's pieces)\");\n";
    } else {
      std::string ptrs;
      for (int a : sig.arrays) ptrs += ", bbmm_c.bbmm_" + scop.arrays[a].c_name + "_d";
      os << "  if (bbmm_small)\n";
      os << "    " << name << "_kernel<int32_t, uint32_t><<<bbmm_grid, bbmm_block, 0, bbmm_stream>>>(*bbmm_a, bbmm_c"
         << ptrs << ");\n";
      os << "  else\n";
      os << "    " << name << "_kernel<int64_t, uint64_t><<<bbmm_grid, bbmm_block, 0, bbmm_stream>>>(*bbmm_a, bbmm_c"
         << ptrs << ");\n";
      os << "  bbmm_cu_check(cudaGetLastError(), \"launching " << name << "_kernel\");\n";
    }
    os << "}\n\n";
  }
  return os.str();
}

bool cuda_check_statements(const Scop& scop, Diagnostics& diag) {
  bool ok = true;
  for (const Statement& st : scop.statements) {
    const Expr* e = st.expr ? st.expr : (st.decl ? st.decl->init.get() : nullptr);
    if (!e) continue;
    std::vector<std::string> bad;
    check_calls(*e, bad);
    for (const std::string& f : bad) {
      diag.error(st.loc) << "--target=cuda: the statement calls '" << f
                         << "', which has no CUDA device version";
      diag.set_last_hint("only CUDA's math functions (sqrt, exp, log, erfc, fmin, ...) can be "
                         "called in a scop compiled for GPUs");
      ok = false;
    }
  }
  return ok;
}

}  // namespace bbmm::compiler
