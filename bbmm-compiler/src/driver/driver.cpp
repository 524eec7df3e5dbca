#include "driver/driver.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "codegen/generate.h"
#include "driver/pipeline.h"
#include "poly/boxes.h"
#include "poly/budget.h"
#include "poly/print.h"

namespace bbmm::compiler {

const char* const kBbmmcVersion = "0.1.0";

namespace {

// The --emit kinds, in the order --help lists them: the usage text and the option check
// are both made from this table, so they cannot disagree.
struct EmitKind {
  const char* name;
  const char* help;  // continuation lines start with '\n'
};
constexpr EmitKind kEmitKinds[] = {
    {"model", "print domains, schedules and accesses (isl notation)"},
    {"deps", "print dependences and the serial/parallel verdict per loop"},
    {"boxes", "print the partition, tile boxes, flow-out boxes and exactness"},
    {"host", "print only the host code replacing each scop"},
    {"kernel",
     "print only the generated definitions (kernels, per-phase host code;\ncuda: the CUDA "
     "file)"},
};
constexpr const char* kTargets[] = {"host", "cuda", "opencl"};

// "a|b|c" (sep "|") or "a, b, c" (sep ", ") of the names in "list".
template <typename List, typename Name>
std::string join_names(const List& list, const char* sep, Name name) {
  std::string r;
  for (const auto& x : list) r += (r.empty() ? "" : sep) + std::string(name(x));
  return r;
}
std::string emit_kind_list(const char* sep) {
  return join_names(kEmitKinds, sep, [](const EmitKind& k) { return k.name; });
}
std::string target_list(const char* sep) {
  return join_names(kTargets, sep, [](const char* t) { return t; });
}

// The options that take "=VALUE", and the others (without "-D", "-I", "-U").
constexpr const char* kValueOptions[] = {"--target", "--emit", "--block", "--march",
                                         "--partition", "--params", "--cpp",
                                         "--max-isl-operations", "--schedule", "--writes"};
constexpr const char* kFlagOptions[] = {"--help", "--version"};

// The error for option "opt" that bbmmc does not know: the value an option lacks ("--emit"),
// or the option a misspelling is closest to ("-emit=deps", "--taget=cuda").
std::string unknown_option_message(const std::string& opt) {
  const size_t eq = opt.find('=');
  const std::string name = opt.substr(0, eq);
  const std::string value = eq == std::string::npos ? "" : opt.substr(eq);
  for (const char* o : kValueOptions)
    if (name == o && value.empty()) {
      std::string example = name == "--emit" ? "=" + emit_kind_list("|")
                            : name == "--target" ? "=" + target_list("|")
                                                 : "=VALUE";
      return "option '" + name + "' needs a value, as in '" + name + example + "'";
    }
  std::string best;
  size_t best_d = 3;  // suggest only close spellings
  auto consider = [&](const std::string& o, const std::string& with) {
    const size_t d = edit_distance(name, o);
    if (d < best_d) {
      best_d = d;
      best = with;
    }
  };
  for (const char* o : kValueOptions) consider(o, o + (value.empty() ? std::string("=VALUE") : value));
  if (value.empty())
    for (const char* o : kFlagOptions) consider(o, o);
  return "unknown option '" + opt + "'" + (best.empty() ? "" : "; did you mean '" + best + "'?");
}

std::string usage() {
  std::ostringstream u;
  u << "usage: bbmmc FILE.c [-o OUT] [--target=" << target_list("|") << "] [--emit="
    << emit_kind_list("|") << "]\n"
    << "             [--partition=auto|1d|2d] [--writes=hull|rows] [--params NAME=V,...]\n"
    << "             [--block=X,Y,Z] [--march=R]\n"
    << "             [-DNAME[=VALUE]] [-IDIR] [-UNAME] [--cpp=COMMAND]\n"
    << "             [--max-isl-operations=N] [--schedule=isl|isl+wavefront|source]\n"
       "             [--reductions=keep|reassociate] [--reduction-block=B]\n"
    << "             [--wavefront-tiles=R,W|off] [--wavefront-steps=auto|launch|block]\n"
    << "             [--help] [--version]\n"
       "\n"
       "Reads sequential C with affine loop nests between '#pragma scop' and\n"
       "'#pragma endscop', builds their polyhedral model with isl, analyses them and\n"
       "generates code that runs them on the BBMM runtime.\n"
       "\n"
       "  -o OUT            write the output to OUT instead of standard output\n"
       "  --target=T        code generation target: host (default), cuda or opencl;\n"
       "                    cuda writes two files, STEM.c (the input with its scops replaced,\n"
       "                    C) and STEM.cu (the kernels, CUDA C++), for -o STEM.c or STEM.cu\n"
       "  --block=X,Y,Z     cuda: the default thread block (32,8,1; BBMM_CUDA_BLOCK at run\n"
       "                    time overrides it); a kernel over fewer grid dimensions folds the\n"
       "                    others into its last one\n"
       "  --march=R         cuda: each thread of a 2-D or 3-D kernel runs R consecutive values\n"
       "                    of the outermost mapped loop (default 32; BBMM_CUDA_MARCH at run\n"
       "                    time overrides it)\n";
  for (const EmitKind& k : kEmitKinds) {
    std::string name = std::string("  --emit=") + k.name;
    u << name << std::string(name.size() < 20 ? 20 - name.size() : 1, ' ');
    for (const char* c = k.help; *c; ++c) u << (*c == '\n' ? "\n                    " : std::string(1, *c));
    u << "\n";
  }
  u << "  (no --emit)       generate code: the input with each scop replaced\n"
       "  --partition=MODE  auto (default): split each phase's parallel loop, and a parallel loop\n"
       "                    nested in it too where one iteration of the first accesses a whole\n"
       "                    array (gemm's B), so that tiles can shrink to fit any device;\n"
       "                    1d: the parallel loop only; 2d: two nested parallel loops wherever\n"
       "                    possible, the devices as a grid (blocked, e.g. gemm)\n"
       "  --writes=W        a tile's write set that is rows of intervals (a triangle): hull\n"
       "                    (default) declares the hull READ_WRITE where no other tile of the\n"
       "                    phase touches it and it is at most twice the rows; rows declares\n"
       "                    each row\n"
       "  --params N=64,... parameter values for the box choice and the exactness report\n"
       "  -D, -I, -U        passed to the C preprocessor\n"
       "  --cpp=COMMAND     the preprocessor (default: $BBMM_CPP, else 'cc -E')\n"
       "  --max-isl-operations=N\n"
       "                    isl operations allowed per scop and pass (default "
    << PipelineOptions().max_isl_operations
    << "; 0: no\n"
       "                    limit); a scop that needs more is reported as too complex\n"
       "  --schedule=S      isl (default): reorder loop nests whose source order hides a\n"
       "                    parallel loop (interchange, distribution, wavefronts:\n"
       "                    nussinov's diagonals, seidel-2d's 2i + j inside each time\n"
       "                    step; see docs/bbmmc.md); isl+wavefront: also skew a\n"
       "                    one-statement nest by a hyperplane over all its loops\n"
       "                    (seidel-2d: 4t + 2i + j; experimental: slow to compile);\n"
       "                    source: keep the order of the source\n"
       "  --reductions=R    keep (default): a loop that only a reduction (s += e) keeps\n"
       "                    serial runs in order; reassociate: sum it in blocks of\n"
       "                    partial sums, in parallel (floating-point results may\n"
       "                    change in their last bits; see docs/bbmmc.md)\n"
       "  --reduction-block=B\n"
       "                    iterations per partial sum with --reductions=reassociate\n"
       "                    (default 4)\n"
       "  --wavefront-tiles=R,W\n"
       "                    opt-in: a wavefront inside time steps (seidel-2d) runs in\n"
       "                    blocks of R rows and W wavefront steps, a block row per\n"
       "                    phase (R = 0: from the array's extent, at most "
    << WavefrontTiles::kMaxRows
    << ");\n"
       "                    off (default): one phase per wavefront step\n"
       "  --wavefront-steps=S\n"
       "                    launch: the host launches one kernel per step of a\n"
       "                    wavefront (seidel-2d's h, nussinov's diagonal), its tiles\n"
       "                    spread over the devices; block: one kernel per step of the\n"
       "                    loops outside it runs all its steps, in one CUDA thread\n"
       "                    block with a barrier between steps, on one device;\n"
       "                    auto (default): block where a step's instances hold no\n"
       "                    loop (seidel-2d), launch elsewhere (nussinov)\n"
       "  --help, --version\n"
       "\n"
       "Exit status: 0 success, 1 error in the input or the options, 2 internal error.\n";
  return u.str();
}

// "bbmm_<input file name as an identifier>": the CUDA target's launch functions are
// external symbols, so two generated files of one program must not share names.
std::string symbol_prefix_for(const std::string& input) {
  std::string base = input.substr(input.find_last_of('/') + 1);
  const size_t dot = base.find_last_of('.');
  if (dot != std::string::npos && dot > 0) base.resize(dot);
  std::string r = "bbmm_";
  for (char c : base) r += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return r;
}

}  // namespace

int run_bbmmc(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    PipelineOptions opts;
    if (const char* e = std::getenv("BBMM_CPP"); e && *e) opts.cpp = e;
    std::string input, output, emit, target = "host";
    BoxOptions box_opts;
    int block[3] = {0, 0, 0};
    int march = 0;
    bool reassociate = false;
    int reduction_block = 0;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      auto value = [&](const std::string& opt) -> std::optional<std::string> {
        if (a.size() > opt.size() && a.compare(0, opt.size(), opt) == 0) return a.substr(opt.size());
        if (a == opt && i + 1 < args.size()) return args[++i];
        return std::nullopt;
      };
      if (a == "--help" || a == "-h") {
        out << usage();
        return 0;
      }
      if (a == "--version") {
        out << "bbmmc " << kBbmmcVersion << "\n";
        return 0;
      }
      if (a.rfind("--emit=", 0) == 0) {
        emit = a.substr(7);
        if (std::none_of(std::begin(kEmitKinds), std::end(kEmitKinds),
                         [&](const EmitKind& k) { return emit == k.name; })) {
          err << "bbmmc: error: unknown --emit kind '" << emit << "' (use one of: "
              << emit_kind_list(", ") << ")\n"
              << "run 'bbmmc --help' for what each prints\n";
          return 1;
        }
      } else if (a.rfind("--target=", 0) == 0) {
        target = a.substr(9);
        if (std::none_of(std::begin(kTargets), std::end(kTargets),
                         [&](const char* t) { return target == t; })) {
          err << "bbmmc: error: unknown target '" << target << "' (use one of: "
              << target_list(", ") << ")\n";
          return 1;
        }
      } else if (a.rfind("--block=", 0) == 0) {
        int x = 0, y = 0, z = 1, used = -1, used_z = -1;
        const char* v = a.c_str() + 8;
        bool ok = std::sscanf(v, "%d,%d%n", &x, &y, &used) == 2 && used >= 0;
        if (ok && v[used] == ',') {
          ok = std::sscanf(v + used + 1, "%d%n", &z, &used_z) == 1 && used_z >= 0;
          used += 1 + used_z;
        }
        if (!ok || v[used] != '\0' || x < 1 || y < 1 || z < 1 ||
            static_cast<long>(x) * y * z > 1024) {
          err << "bbmmc: error: --block expects X,Y[,Z] with X*Y*Z in [1, 1024] (got '"
              << a.substr(8) << "')\n";
          return 1;
        }
        block[0] = x;
        block[1] = y;
        block[2] = z;
      } else if (a.rfind("--march=", 0) == 0) {
        char* end = nullptr;
        const long r = std::strtol(a.c_str() + 8, &end, 10);
        if (a.size() == 8 || *end || r < 1 || r > 65536) {
          err << "bbmmc: error: --march expects an integer in [1, 65536] (got '" << a.substr(8)
              << "')\n";
          return 1;
        }
        march = static_cast<int>(r);
      } else if (a.rfind("--writes=", 0) == 0) {
        const std::string w = a.substr(9);
        if (w != "hull" && w != "rows") {
          err << "bbmmc: error: unknown --writes '" << w << "' (use hull or rows)\n";
          return 1;
        }
        box_opts.widen_writes = w == "hull";
      } else if (a.rfind("--partition=", 0) == 0) {
        std::string p = a.substr(12);
        if (p != "1d" && p != "2d" && p != "auto") {
          err << "bbmmc: error: unknown partition '" << p << "' (use auto, 1d or 2d)\n";
          return 1;
        }
        box_opts.partition = p == "2d" ? PartitionMode::kTwoD
                             : p == "1d" ? PartitionMode::kOneD
                                         : PartitionMode::kAuto;
      } else if (a.rfind("--params", 0) == 0) {
        auto pv = value("--params");
        std::string list = pv ? (!pv->empty() && (*pv)[0] == '=' ? pv->substr(1) : *pv) : "";
        if (list.empty()) {
          err << "bbmmc: error: --params expects NAME=INTEGER,...\n";
          return 1;
        }
        std::istringstream ls(list);
        for (std::string item; std::getline(ls, item, ',');) {
          size_t eq = item.find('=');
          char* end = nullptr;
          long long v = eq == std::string::npos ? 0 : std::strtoll(item.c_str() + eq + 1, &end, 10);
          if (eq == std::string::npos || eq == 0 || !end || *end || end == item.c_str() + eq + 1) {
            err << "bbmmc: error: --params expects NAME=INTEGER,... (got '" << item << "')\n";
            return 1;
          }
          box_opts.params[item.substr(0, eq)] = v;
        }
      } else if (a.rfind("--max-isl-operations=", 0) == 0) {
        const std::string v = a.substr(21);
        char* end = nullptr;
        const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
        if (v.empty() || *end || v[0] == '-') {
          err << "bbmmc: error: --max-isl-operations expects a non-negative integer (got '" << v
              << "')\n";
          return 1;
        }
        opts.max_isl_operations = n;
      } else if (a.rfind("--schedule=", 0) == 0) {
        const std::string v = a.substr(11);
        if (v != "isl" && v != "source" && v != "isl+wavefront") {
          err << "bbmmc: error: unknown --schedule '" << v
              << "' (use one of: isl, isl+wavefront, source)\n";
          return 1;
        }
        opts.reschedule = v != "source";
        opts.wavefront = v == "isl+wavefront";
      } else if (a.rfind("--reductions=", 0) == 0) {
        const std::string v = a.substr(13);
        if (v != "keep" && v != "reassociate") {
          err << "bbmmc: error: unknown --reductions '" << v << "' (use one of: keep, reassociate)\n";
          return 1;
        }
        reassociate = v == "reassociate";
      } else if (a.rfind("--reduction-block=", 0) == 0) {
        const std::string v = a.substr(18);
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end || n < 1 || n > 1'000'000) {
          err << "bbmmc: error: --reduction-block expects an integer from 1 to 1000000 (got '" << v
              << "')\n";
          return 1;
        }
        reduction_block = static_cast<int>(n);
      } else if (a.rfind("--wavefront-tiles=", 0) == 0) {
        const std::string v = a.substr(18);
        if (v == "off") {
          opts.wavefront_tiles.steps = 0;
        } else {
          char* end = nullptr;
          const long r = std::strtol(v.c_str(), &end, 10);
          const bool comma = end && *end == ',' && end != v.c_str();
          const long w = comma ? std::strtol(end + 1, &end, 10) : 0;
          if (!comma || *end || r < 0 || r > 4096 || w < 1 || w > 4096) {
            err << "bbmmc: error: --wavefront-tiles expects R,W (rows 0 to 4096, 0 for the "
                   "default; steps 1 to 4096) or off (got '"
                << v << "')\n";
            return 1;
          }
          opts.wavefront_tiles.rows = static_cast<int>(r);
          opts.wavefront_tiles.steps = static_cast<int>(w);
        }
      } else if (a.rfind("--wavefront-steps=", 0) == 0) {
        const std::string v = a.substr(18);
        if (v == "auto") {
          opts.wavefront_steps = WavefrontSteps::kAuto;
        } else if (v == "launch") {
          opts.wavefront_steps = WavefrontSteps::kLaunch;
        } else if (v == "block") {
          opts.wavefront_steps = WavefrontSteps::kBlock;
        } else {
          err << "bbmmc: error: unknown --wavefront-steps '" << v
              << "' (use one of: auto, launch, block)\n";
          return 1;
        }
      } else if (a.rfind("--cpp=", 0) == 0) {
        opts.cpp = a.substr(6);
      } else if (a == "-o") {
        if (i + 1 >= args.size()) {
          err << "bbmmc: error: -o needs a file name\n";
          return 1;
        }
        output = args[++i];
      } else if (a.size() >= 2 && a[0] == '-' && (a[1] == 'D' || a[1] == 'I' || a[1] == 'U')) {
        std::string opt = a.substr(0, 2);
        auto v = value(opt);
        if (!v || v->empty()) {
          err << "bbmmc: error: " << opt << " needs an argument\n";
          return 1;
        }
        opts.cpp_args.push_back(opt + *v);
      } else if (!a.empty() && a[0] == '-') {
        err << "bbmmc: error: " << unknown_option_message(a) << "\n"
            << "run 'bbmmc --help' for the options\n";
        return 1;
      } else if (input.empty()) {
        input = a;
      } else {
        err << "bbmmc: error: more than one input file ('" << input << "' and '" << a << "')\n";
        return 1;
      }
    }
    if (input.empty()) {
      err << "bbmmc: error: no input file\n" << usage();
      return 1;
    }

    Diagnostics diag;
    if (reduction_block > 0 && !reassociate) {
      err << "bbmmc: error: --reduction-block=" << reduction_block
          << " needs --reductions=reassociate (reductions keep their order by default)\n";
      return 1;
    }
    if (reassociate) opts.reduction_block = reduction_block > 0 ? reduction_block : 4;
    std::unique_ptr<Program> prog = analyze_file(input, opts, diag);
    diag.render(err, prog->sm.get());
    if (diag.has_internal_error()) return 2;
    if (diag.has_errors()) return 1;

    std::ostringstream text;
    std::string cuda_stem;  // --target=cuda: the two files STEM.c and STEM.cu
    if (emit.empty() || emit == "host" || emit == "kernel") {
      CodegenOptions copts;
      copts.target = target == "opencl" ? Target::kOpenCL
                     : target == "cuda" ? Target::kCuda
                                        : Target::kHost;
      std::copy(block, block + 3, copts.block);
      copts.march = march;
      copts.boxes = box_opts;
      if (copts.target == Target::kCuda) {
        if (emit.empty()) {
          if (output.empty()) {
            err << "bbmmc: error: --target=cuda writes two files (STEM.c and STEM.cu): name them "
                   "with -o STEM.c\n";
            return 1;
          }
          cuda_stem = output;
          for (const char* ext : {".cu", ".c"}) {
            const std::string e = ext;
            if (cuda_stem.size() > e.size() &&
                cuda_stem.compare(cuda_stem.size() - e.size(), e.size(), e) == 0) {
              cuda_stem.resize(cuda_stem.size() - e.size());
              break;
            }
          }
          output = cuda_stem + ".c";
        }
        copts.symbol_prefix = symbol_prefix_for(input);
      }
      std::string generated, device;
      Diagnostics cdiag;
      bool ok = generate_code(*prog, copts,
                              emit.empty() ? GenerateWhat::kFile
                              : emit == "host" ? GenerateWhat::kHost
                                               : GenerateWhat::kKernels,
                              cdiag, generated, &device);
      cdiag.render(err, prog->sm.get());
      if (cdiag.has_internal_error()) return 2;
      if (!ok || cdiag.has_errors()) return 1;
      text << generated;
      if (!cuda_stem.empty()) {
        std::ofstream f(cuda_stem + ".cu", std::ios::binary);
        f << device;
        if (!f) {
          err << "bbmmc: error: cannot write '" << cuda_stem << ".cu'\n";
          return 1;
        }
      }
    }
    for (const Scop& s : prog->scops) {
      if (emit == "boxes") {
        // Computed within the budget, printed outside it.
        std::optional<ScopBoxes> boxes;
        if (!run_within_isl_budget(*prog->isl, [&] { boxes.emplace(compute_boxes(s, box_opts)); })) {
          Diagnostics bdiag;
          report_scop_too_complex(bdiag, s.begin_loc, s.end_loc, s.function,
                                  "computing its tiles' boxes", prog->isl->budget());
          bdiag.render(err, prog->sm.get());
          return 1;
        }
        print_boxes(text, s, *boxes);
      } else if (emit == "model") {
        print_model(text, s);
      } else if (emit == "deps") {
        print_deps(text, s);
      }
    }
    if (output.empty()) {
      out << text.str();
    } else {
      std::ofstream f(output, std::ios::binary);
      f << text.str();
      if (!f) {
        err << "bbmmc: error: cannot write '" << output << "'\n";
        return 1;
      }
    }
    return 0;
  } catch (const std::exception& e) {
    err << "bbmmc: internal error: " << e.what() << "\n";
    return 2;
  } catch (...) {
    err << "bbmmc: internal error: unknown exception\n";
    return 2;
  }
}

}  // namespace bbmm::compiler
