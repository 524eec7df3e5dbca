// The work functions of codegen/split_weights.h checked against brute-force executions. For
// every 1-D partition of an input and small concrete parameter values, the oracle runs the
// scop instance by instance (brute_force.h: isl lists each statement's domain points) and
// counts, per value of the partition's split iterator, the instances of the partition's
// phases. The generated C function is compiled with cc and run over the range and a margin
// around it; its counts must equal the oracle's for every row. Where bbmmc generates no
// function (it found the work uniform), the oracle's counts must be equal on every row
// where the partition has work. Inputs: triangular, moving, strided and decreasing
// nests, the codegen goldens' inputs, and random affine nests.

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "brute_force.h"
#include "codegen/split_weights.h"
#include "driver/pipeline.h"
#include "poly/boxes.h"
#include "test_util.h"

namespace bbmm::compiler {
namespace {

using testing::Execution;
using testing::execute;
using testing::Instance;
using testing::random_program;

// One partition at one set of parameter values: the oracle's count per row.
struct Case {
  std::string fn;  // the generated function ("" when bbmmc generated none)
  bool uniform = false;  // bbmmc found the work uniform (uniform_work)
  std::vector<long> params;
  std::map<long, long> rows;  // row -> instances (rows with none absent)
  std::string what;
  const Scop* scop = nullptr;
};

struct Tally {
  int functions = 0;  // cases with a generated function
  int uniform = 0;    // cases without: uniform work
  int withheld = 0;   // cases without: counting would enumerate more than one loop
  long rows = 0;      // rows compared
};

// The oracle: instances of "part"'s phases per value of its split iterator.
std::map<long, long> count_rows(const Scop& s, const Partition& part, const Execution& run) {
  std::map<long, long> rows;
  std::vector<int> phase_of(s.statements.size(), -1);
  for (size_t q = 0; q < s.phases.size(); ++q)
    for (int st : s.phases[q].statements) phase_of[st] = static_cast<int>(q);
  for (const Instance& in : run.inst) {
    const int p = phase_of[in.stmt];
    for (size_t slot = 0; slot < part.phases.size(); ++slot) {
      if (part.phases[slot] != p) continue;
      const Statement& st = s.statements[in.stmt];
      for (size_t d = 0; d < st.loops.size(); ++d) {
        if (st.loops[d] == part.dims[0].loops[slot][0]) ++rows[in.it[d]];
      }
    }
  }
  return rows;
}

std::string ctx_struct(const Scop& s) { return "struct t" + std::to_string(s.index) + "_ctx"; }

// Generates the functions of "prog"'s partitions into "code" and the oracle's cases.
void collect(const Program& prog, const std::vector<std::vector<long>>& value_sets,
             const std::string& what, std::string& code, std::vector<Case>& cases) {
  for (const Scop& s : prog.scops) {
    ScopBoxes bx = compute_boxes(s, BoxOptions{});
    code += ctx_struct(s) + " {\n  int64_t unused";
    for (const std::string& p : s.params) code += ", " + p;
    code += ";\n};\n";
    std::string locals;
    for (const std::string& p : s.params) {
      locals += "  const int64_t " + p + " = bbmm_x->" + p + ";\n  (void)" + p + ";\n";
    }
    for (const Partition& part : bx.partitions) {
      if (part.dims.size() != 1) continue;
      const std::string fn =
          "work_s" + std::to_string(s.index) + "_p" + std::to_string(part.id) + "_" +
          std::to_string(cases.size());
      const std::string text = row_work_function(s, part, fn, ctx_struct(s), locals);
      code += text;
      for (const std::vector<long>& vals : value_sets) {
        isl_set* f = s.context.copy();
        std::vector<long> pv;
        for (size_t k = 0; k < s.params.size(); ++k) {
          pv.push_back(vals[k % vals.size()]);
          f = isl_set_fix_si(f, isl_dim_param, static_cast<unsigned>(k), static_cast<int>(pv.back()));
        }
        if (isl_set_is_empty(f) == isl_bool_true) {
          isl_set_free(f);
          continue;
        }
        const Execution run = execute(s, isl::manage(f));
        cases.push_back({text.empty() ? "" : fn, uniform_work(s, part), pv, count_rows(s, part, run),
                         what + ", scop " + std::to_string(s.index) + ", partition " +
                             std::to_string(part.id),
                         &s});
      }
    }
  }
}

// Compiles "code" with a main printing every function case's counts over its rows and a
// margin of 2 on each side, runs it and compares; checks the uniform cases directly.
void check(const std::string& code, const std::vector<Case>& cases, Tally& t) {
  std::ostringstream c;
  c << "#include <stdint.h>\n#include <stdio.h>\n"
       "static inline int64_t bbmm_min(int64_t a, int64_t b) { return a < b ? a : b; }\n"
       "static inline int64_t bbmm_max(int64_t a, int64_t b) { return a > b ? a : b; }\n"
       "static inline int64_t bbmm_floord(int64_t n, int64_t d) {\n"
       "  int64_t q = n / d;\n"
       "  return (n % d != 0 && ((n < 0) != (d < 0))) ? q - 1 : q;\n}\n";
  c << code;
  c << "int main(void) {\n";
  std::vector<std::pair<size_t, long>> order;  // (case, row) of each printed line
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& x = cases[k];
    if (x.fn.empty() && !x.uniform) {
      ++t.withheld;
      continue;
    }
    if (x.fn.empty()) {
      long first = -1;
      for (const auto& [row, n] : x.rows) {
        if (first < 0) first = n;
        EXPECT_EQ(n, first) << x.what << ": no work function, but row " << row << " has " << n
                            << " instances and the first " << first;
      }
      ++t.uniform;
      continue;
    }
    ++t.functions;
    const Scop& s = *x.scop;
    c << "  {\n    " << ctx_struct(s) << " x = {0";
    for (long v : x.params) c << ", " << v;
    c << "};\n";
    const long lo = x.rows.empty() ? 0 : x.rows.begin()->first - 2;
    const long hi = x.rows.empty() ? 0 : x.rows.rbegin()->first + 2;
    c << "    for (int64_t r = " << lo << "; r <= " << hi << "; ++r) printf(\"%lld\\n\", (long long)"
      << x.fn << "(&x, r));\n  }\n";
    for (long r = lo; r <= hi; ++r) order.emplace_back(k, r);
  }
  c << "  return 0;\n}\n";
  if (order.empty()) return;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("bbmm_split_weights_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path src = dir / "w.c", exe = dir / "w";
  std::ofstream(src) << c.str();
  const std::string cmd = "cc -std=c11 -O0 -Wall -Werror -o " + exe.string() +
                          " " + src.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "the work functions do not compile:\n" << c.str();
  FILE* p = popen(exe.string().c_str(), "r");
  ASSERT_NE(p, nullptr);
  size_t line = 0;
  long long got;
  while (std::fscanf(p, "%lld", &got) == 1) {
    ASSERT_LT(line, order.size());
    const Case& x = cases[order[line].first];
    const long row = order[line].second;
    auto it = x.rows.find(row);
    const long want = it == x.rows.end() ? 0 : it->second;
    EXPECT_EQ(got, want) << x.what << ": row " << row << " (" << x.fn << ")";
    ++line;
    ++t.rows;
  }
  pclose(p);
  EXPECT_EQ(line, order.size());
  std::filesystem::remove_all(dir);
}

void check_program_text(const std::string& text, const std::string& what,
                        const std::vector<std::vector<long>>& value_sets, Tally& t) {
  Diagnostics diag;
  auto prog = analyze_text(text, what, PipelineOptions{}, diag);
  ASSERT_FALSE(diag.has_errors()) << what;
  std::string code;
  std::vector<Case> cases;
  collect(*prog, value_sets, what, code, cases);
  check(code, cases, t);
}

const char* const kPrograms[] = {
    // syrk: a triangular inner loop.
    "void f(int N, int M, double C[N][N], double A[N][M]) {\n#pragma scop\n"
    "for (int i = 0; i < N; i++) {\n for (int j = 0; j <= i; j++) C[i][j] *= 2.0;\n"
    " for (int k = 0; k < M; k++)\n  for (int j = 0; j <= i; j++) C[i][j] += A[i][k] * A[j][k];\n}\n"
    "#pragma endscop\n}\n",
    // lu: rows below the pivot, moving with the serial loop.
    "void f(int N, double A[N][N]) {\n#pragma scop\n"
    "for (int k = 0; k < N; k++) {\n for (int j = k + 1; j < N; j++) A[k][j] = A[k][j] / A[k][k];\n"
    " for (int i = k + 1; i < N; i++)\n  for (int j = k + 1; j < N; j++) A[i][j] -= A[i][k] * A[k][j];\n}\n"
    "#pragma endscop\n}\n",
    // A strided inner loop and a decreasing outer one.
    "void f(int N, double A[N][N], double B[N]) {\n#pragma scop\n"
    "for (int i = N - 1; i >= 0; i--)\n for (int j = i; j < N; j += 2) B[i] = B[i] + A[i][j];\n"
    "#pragma endscop\n}\n",
    // A split loop stepping by 3.
    "void f(int N, double A[N][N], double B[N][N]) {\n#pragma scop\n"
    "for (int i = 1; i < N; i += 3)\n for (int j = 0; j <= i; j++) A[i][j] = B[i][j] * 2.0;\n"
    "#pragma endscop\n}\n",
    // correlation's pattern: j from i + 1, a reduction inside.
    "void f(int M, int N, double C[M][M], double D[N][M]) {\n#pragma scop\n"
    "for (int i = 0; i < M - 1; i++)\n for (int j = i + 1; j < M; j++) {\n  C[i][j] = 0.0;\n"
    "  for (int k = 0; k < N; k++) C[i][j] += D[k][i] * D[k][j];\n }\n"
    "#pragma endscop\n}\n",
    // Counting an iteration would enumerate two loops (t and j): no function, even split.
    "void f(int T, int N, double A[N][N], double B[N][N]) {\n#pragma scop\n"
    "for (int t = 0; t < T; t++)\n for (int i = 0; i < N; i++)\n  for (int j = 0; j <= i; j++)\n"
    "   for (int k = 0; k <= j; k++) A[i][j] += B[j][k];\n"
    "#pragma endscop\n}\n",
    // Uniform work: a stencil in a time loop (no function).
    "void f(int T, int N, double A[N][N], double B[N][N]) {\n#pragma scop\n"
    "for (int t = 0; t < T; t++) {\n for (int i = 1; i < N - 1; i++)\n  for (int j = 1; j < N - 1; j++)"
    " B[i][j] = A[i][j - 1] + A[i][j + 1];\n for (int i = 1; i < N - 1; i++)\n"
    "  for (int j = 1; j < N - 1; j++) A[i][j] = B[i][j];\n}\n"
    "#pragma endscop\n}\n",
};

TEST(SplitWeightsOracle, HandWrittenNests) {
  Tally t;
  int k = 0;
  for (const char* p : kPrograms) {
    check_program_text(p, "program " + std::to_string(k++), {{9, 6}, {5, 11}, {1, 3}}, t);
  }
  EXPECT_GE(t.functions, 8);
  EXPECT_GE(t.uniform, 1);
  EXPECT_GE(t.withheld, 1);
  std::cout << t.functions << " cases with a work function (" << t.rows << " rows compared), "
            << t.uniform << " uniform, " << t.withheld << " withheld (deeper counting)\n";
}

TEST(SplitWeightsOracle, CodegenInputs) {
  Tally t;
  for (const std::filesystem::path& f : testing::files_in(BBMM_CODEGEN_DIR, ".c")) {
    check_program_text(testing::read_file(f), f.filename().string(), {{7, 5}, {10, 4}}, t);
  }
  EXPECT_GE(t.functions, 4);
  std::cout << t.functions << " cases with a work function (" << t.rows << " rows compared), "
            << t.uniform << " uniform, " << t.withheld << " withheld (deeper counting)\n";
}

TEST(SplitWeightsOracle, RandomNests) {
  std::mt19937 rng(20261127);
  Tally t;
  for (int n = 0; n < 40; ++n) {
    const std::string src = random_program(rng, n % 2 == 1, n % 4 >= 2);
    Diagnostics diag;
    auto prog = analyze_text(src, "random.c", PipelineOptions{}, diag);
    if (diag.has_errors() || prog->scops.empty()) continue;
    check_program_text(src, "random program " + std::to_string(n), {{4, 5}, {6, 3}}, t);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "program:\n" << src;
      break;
    }
  }
  EXPECT_GE(t.functions, 5);
  std::cout << t.functions << " cases with a work function (" << t.rows << " rows compared), "
            << t.uniform << " uniform, " << t.withheld << " withheld (deeper counting)\n";
}

}  // namespace
}  // namespace bbmm::compiler
