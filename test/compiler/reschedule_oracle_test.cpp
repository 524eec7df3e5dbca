// The rescheduling pass (poly/reschedule.h) checked against brute-force executions. For
// small concrete parameter values, each input runs in its source order (bbmmc with
// --schedule=source) and in the order of the rewritten model (brute_force.h: every instance
// in schedule order with its reads, then its write); instances of the rewritten model are
// mapped back to source iterators through Statement::to_source. The two runs must agree on
// the set of instances, on the instance whose write each read sees (or none: a value from
// before the scop), and on the last writer of every element. Nothing here looks at isl's
// dependences or at the pass's own legality check.
//
// Inputs: the golden inputs (rescheduled where bbmmc accepts it), PolyBench kernels that
// the pass reschedules (read from BBMM_POLYBENCH_DIR when present), and random nests,
// where every nest is rewritten after isl's schedule without the acceptance rule on serial
// depths, so that the rewriting itself is exercised far more often than bbmmc accepts it.

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <tuple>

#include "brute_force.h"
#include "driver/pipeline.h"
#include "poly/reschedule.h"
#include "test_util.h"

namespace bbmm::compiler {
namespace {

using testing::Event;
using testing::Execution;
using testing::execute;
using testing::fix_params;
using testing::random_program;

using InstanceKey = std::pair<int, std::vector<long>>;  // statement, source iterators
using ElementKey = std::pair<int, std::vector<long>>;   // array, element

struct Dataflow {
  std::set<InstanceKey> instances;
  // (reader, array, element) -> writer instance ({-1, {}}: a value from before the scop).
  std::map<std::tuple<InstanceKey, int, std::vector<long>>, InstanceKey> reads;
  std::map<ElementKey, InstanceKey> last_writer;
};

// The dataflow of "scop" run in its schedule order, in source iterators.
Dataflow dataflow(const Scop& scop, const isl::set& fixed) {
  Execution run = execute(scop, fixed);
  Dataflow df;
  std::vector<InstanceKey> keys;
  for (const testing::Instance& in : run.inst) {
    const Statement& st = scop.statements[in.stmt];
    std::vector<long> src(st.source_rows.empty() ? in.it.size() : st.source_rows.size());
    if (!st.source_rows.empty()) {
      // Skewed (a wavefront, maybe tiled): source iterator k = source_rows[k] . it.
      for (size_t k = 0; k < src.size(); ++k)
        for (size_t d = 0; d < in.it.size(); ++d) src[k] += st.source_rows[k][d] * in.it[d];
    } else {
      for (size_t d = 0; d < in.it.size(); ++d) src[st.to_source.empty() ? d : st.to_source[d]] = in.it[d];
    }
    keys.push_back({in.stmt, src});
    df.instances.insert(keys.back());
  }
  std::map<ElementKey, InstanceKey> current;
  for (const Event& e : run.ev) {
    ElementKey el{e.array, e.elem};
    if (e.write) {
      current[el] = keys[e.inst];
      continue;
    }
    auto it = current.find(el);
    df.reads[{keys[e.inst], e.array, e.elem}] = it == current.end() ? InstanceKey{-1, {}} : it->second;
  }
  df.last_writer = current;
  return df;
}

std::string show(const InstanceKey& k) {
  if (k.first < 0) return "(before the scop)";
  std::ostringstream os;
  os << "S" << k.first + 1 << "[";
  for (size_t d = 0; d < k.second.size(); ++d) os << (d ? ", " : "") << k.second[d];
  return os.str() + "]";
}

// Whether "after" (rewritten) computes what "before" (source order) does; failures name the
// first differences.
void expect_same_dataflow(const Scop& before, const Scop& after, const std::vector<long>& values,
                          const std::string& what) {
  isl::set fixed_b = fix_params(before, values);
  isl::set fixed_a = fix_params(after, values);
  Dataflow b = dataflow(before, fixed_b);
  Dataflow a = dataflow(after, fixed_a);
  EXPECT_EQ(b.instances, a.instances) << what << ": not the same statement instances";
  EXPECT_EQ(b.reads.size(), a.reads.size()) << what;
  int shown = 0;
  for (const auto& [read, writer] : b.reads) {
    auto it = a.reads.find(read);
    const std::string got = it == a.reads.end() ? "(no such read)" : show(it->second);
    if (got != show(writer) && shown++ < 5) {
      ADD_FAILURE() << what << ": the read of array " << std::get<1>(read) << " by "
                    << show(std::get<0>(read)) << " sees " << got << ", in source order "
                    << show(writer);
    }
  }
  for (const auto& [el, writer] : b.last_writer) {
    auto it = a.last_writer.find(el);
    const std::string got = it == a.last_writer.end() ? "(none)" : show(it->second);
    if (got != show(writer) && shown++ < 10) {
      ADD_FAILURE() << what << ": the last write of an element of array " << el.first << " is "
                    << got << ", in source order " << show(writer);
    }
  }
  EXPECT_EQ(b.last_writer.size(), a.last_writer.size()) << what;
}

// Whether "after" orders the statements of "before" differently.
bool rescheduled(const Scop& before, const Scop& after) {
  if (before.loops.size() != after.loops.size()) return true;
  for (size_t k = 0; k < before.statements.size(); ++k) {
    const Statement& b = before.statements[k];
    const Statement& a = after.statements[k];
    if (!a.to_source.empty() || !a.source_rows.empty() || b.position != a.position ||
        b.loops != a.loops)
      return true;
  }
  return false;
}

std::unique_ptr<Program> analyze(const std::string& path, const std::vector<std::string>& cpp_args,
                                 bool reschedule, bool wavefront = false,
                                 const WavefrontTiles& tiles = WavefrontTiles()) {
  Diagnostics diag;
  PipelineOptions opts;
  opts.cpp_args = cpp_args;
  opts.reschedule = reschedule;
  opts.wavefront = wavefront;
  opts.wavefront_tiles = tiles;
  // The rescheduling pass's own phases, one per wavefront step (poly/block_wavefronts.h
  // turns some into regions afterwards; its own tests check that).
  opts.wavefront_steps = WavefrontSteps::kLaunch;
  auto prog = analyze_file(path, opts, diag);
  EXPECT_FALSE(diag.has_errors()) << path;
  return prog;
}

// Every scop of "path", source order against bbmmc's schedule; returns how many scops the
// pass rewrote.
int check_file(const std::string& path, const std::vector<std::string>& cpp_args,
               const std::vector<std::vector<long>>& settings, bool wavefront = false) {
  auto src = analyze(path, cpp_args, false);
  auto got = analyze(path, cpp_args, true, wavefront);
  if (!src || !got) return 0;
  EXPECT_EQ(src->scops.size(), got->scops.size());
  int changed = 0;
  for (size_t k = 0; k < src->scops.size() && k < got->scops.size(); ++k) {
    for (const Statement& st : src->scops[k].statements)
      EXPECT_TRUE(st.to_source.empty()) << "--schedule=source rescheduled " << path;
    if (!rescheduled(src->scops[k], got->scops[k])) continue;
    ++changed;
    for (const std::vector<long>& v : settings) expect_same_dataflow(src->scops[k], got->scops[k], v, path);
  }
  return changed;
}

class RescheduleOracleTest : public ::testing::TestWithParam<std::filesystem::path> {};

TEST_P(RescheduleOracleTest, SameDataflowAsSourceOrder) {
  check_file(GetParam().string(), {},
             {{5}, {4, 6, 3, 7}, {3, 2}, {1}, {0}});
}

INSTANTIATE_TEST_SUITE_P(Golden, RescheduleOracleTest,
                         ::testing::ValuesIn(testing::files_in(BBMM_GOLDEN_DIR, ".c")),
                         [](const auto& info) { return testing::test_name(info.param); });

// The golden inputs that the pass must reschedule (so that the test above is not vacuous).
TEST(RescheduleOracle, GoldenInputsAreRescheduled) {
  for (const char* name : {"atax", "bicg", "trisolv", "cholesky", "lu", "decreasing"}) {
    const std::string path = std::string(BBMM_GOLDEN_DIR) + "/" + name + ".c";
    EXPECT_EQ(check_file(path, {}, {{4}}), 1) << name;
  }
}

// PolyBench kernels from the shared copy (never part of the repository), at parameter values
// small enough to enumerate; the MINI dataset's macros are only needed to preprocess them.
TEST(RescheduleOracle, PolyBenchKernels) {
  const std::string dir = BBMM_POLYBENCH_DIR;
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no PolyBench at " << dir;
  int changed = 0;
  for (const char* k : {"linear-algebra/kernels/atax", "linear-algebra/kernels/bicg",
                        "linear-algebra/solvers/trisolv", "linear-algebra/solvers/cholesky",
                        "linear-algebra/solvers/lu", "linear-algebra/solvers/ludcmp",
                        "linear-algebra/blas/symm", "linear-algebra/blas/trmm",
                        "linear-algebra/solvers/durbin", "linear-algebra/kernels/mvt"}) {
    const std::filesystem::path p = std::filesystem::path(dir) / k;
    const std::string file = (p / (p.filename().string() + ".c")).string();
    changed += check_file(file, {"-DMINI_DATASET", "-I" + dir + "/utilities", "-I" + p.string()},
                          {{4, 5, 3}, {5, 3, 4}});
  }
  EXPECT_GE(changed, 5);
}

using Input = std::pair<std::string, std::vector<std::string>>;  // file, preprocessor args

// A C file named after "stem" and this process in the temporary directory.
std::filesystem::path temp_c(const std::string& stem) {
  return std::filesystem::temp_directory_path() / (stem + "_" + std::to_string(getpid()) + ".c");
}

// The input "text" written to "tmp", then PolyBench's kernel "kernel" (e.g.
// "medley/nussinov") at MINI when the shared tree is there.
std::vector<Input> with_polybench(const std::filesystem::path& tmp, const std::string& text,
                                  const std::string& kernel) {
  std::ofstream(tmp) << text;
  std::vector<Input> inputs = {{tmp.string(), {}}};
  const std::string dir = BBMM_POLYBENCH_DIR;
  if (std::filesystem::is_directory(dir)) {
    const std::filesystem::path p = std::filesystem::path(dir) / kernel;
    inputs.push_back({(p / (p.filename().string() + ".c")).string(),
                      {"-DMINI_DATASET", "-I" + dir + "/utilities", "-I" + p.string()}});
  }
  return inputs;
}

// Wavefronts (--schedule=isl+wavefront): seidel-2d from PolyBench and a 2-D Gauss-Seidel
// sweep skewed over the whole nest, with a parallel loop each, and the same dataflow as in
// source order (seidel-2d has a parallel loop by default too, inside its time steps: the
// next test).
TEST(RescheduleOracle, WavefrontsKeepTheDataflow) {
  const std::filesystem::path tmp = temp_c("bbmm_wavefront");
  const std::vector<Input> inputs = with_polybench(
      tmp,
      "void sweep(int n, int m, double A[n][m]) {\n#pragma scop\n"
      "  for (int i = 1; i < n; i++)\n    for (int j = 1; j < m - 1; j++)\n"
      "      A[i][j] = 0.25 * (A[i - 1][j - 1] + A[i - 1][j + 1] + A[i][j - 1] + A[i][j]);\n"
      "#pragma endscop\n}\n",
      "stencils/seidel-2d");
  for (const auto& [file, args] : inputs) {
    EXPECT_EQ(check_file(file, args, {{3, 6}, {2, 5}, {4, 4}, {1, 3}}, /*wavefront=*/true), 1) << file;
    auto plain = analyze(file, args, true);
    auto skewed = analyze(file, args, true, true);
    ASSERT_TRUE(plain && skewed && !plain->scops.empty() && !skewed->scops.empty());
    const Scop& a = plain->scops[0];
    const Scop& b = skewed->scops[0];
    if (file == tmp.string()) {
      EXPECT_LT(a.phases[a.statements[0].phase].parallel_loop, 0) << file << ": parallel without a wavefront";
    }
    EXPECT_GE(b.phases[b.statements[0].phase].parallel_loop, 0) << file << ": no parallel loop";
    EXPECT_FALSE(b.statements[0].source_rows.empty()) << file;
    // The whole nest's hyperplane (4t + 2i + j for seidel-2d): one serial loop left.
    EXPECT_EQ(b.phases[b.statements[0].phase].serial_loops.size(), 1u) << file;
  }
  std::filesystem::remove(tmp);
}

// Wavefronts inside time steps (the default schedule): a nest of one statement whose inner
// loops carry only uniform dependences within one iteration of the outer loop gets isl's
// hyperplane over them (seidel-2d: 2i + j inside each t; a 3-D Gauss-Seidel over time steps:
// a plane over i, j and k), the outer loop kept outermost: a parallel loop inside, none in
// source order, and the same dataflow as in source order. Floyd-Warshall's
// dependences inside a step k are not uniform (row and column k at every distance): its
// nest keeps the source order (its note asks for '#pragma bbmm parallel').
// A 3-D Gauss-Seidel sweep over time steps (the inner-wavefront tests' own input).
const char kGaussSeidel3d[] =
    "void gs3(int T, int n, double A[n][n][n]) {\n#pragma scop\n"
    "  for (int t = 0; t < T; t++)\n    for (int i = 1; i < n - 1; i++)\n"
    "      for (int j = 1; j < n - 1; j++)\n        for (int k = 1; k < n - 1; k++)\n"
    "          A[i][j][k] = 0.2 * (A[i - 1][j][k] + A[i][j - 1][k] + A[i][j][k - 1] +\n"
    "                              A[i + 1][j][k] + A[i][j + 1][k + 1]);\n"
    "#pragma endscop\n}\n";

TEST(RescheduleOracle, InnerWavefrontsKeepTheDataflow) {
  const std::filesystem::path tmp = temp_c("bbmm_inner_wavefront");
  const std::vector<Input> inputs = with_polybench(
      tmp,
      kGaussSeidel3d,
      "stencils/seidel-2d");
  for (const auto& [file, args] : inputs) {
    EXPECT_EQ(check_file(file, args, {{3, 6}, {2, 5}, {1, 4}}), 1) << file;
    auto src = analyze(file, args, false);
    auto got = analyze(file, args, true);
    ASSERT_TRUE(src && got && !src->scops.empty() && !got->scops.empty());
    const Scop& a = src->scops[0];
    const Scop& b = got->scops[0];
    const Statement& st = b.statements[0];
    EXPECT_LT(a.phases[a.statements[0].phase].parallel_loop, 0) << file << ": parallel in source order";
    EXPECT_GE(b.phases[st.phase].parallel_loop, 0) << file << ": no parallel loop";
    ASSERT_FALSE(st.source_rows.empty()) << file << ": not skewed";
    // The time loop stays outermost and serial: the first new loop runs t alone.
    std::vector<long> t_only(st.source_rows[0].size(), 0);
    t_only[0] = 1;
    EXPECT_EQ(st.source_rows[0], t_only) << file;
    EXPECT_EQ(b.phases[st.phase].serial_loops.size(), 2u) << file;
  }
  // Floyd-Warshall: legal to sweep by i + j inside k, but not uniform: left alone.
  std::ofstream(tmp) << "void fw(int n, double p[n][n]) {\n#pragma scop\n"
                        "  for (int k = 0; k < n; k++)\n    for (int i = 0; i < n; i++)\n"
                        "      for (int j = 0; j < n; j++)\n"
                        "        p[i][j] = p[i][j] < p[i][k] + p[k][j] ? p[i][j] : p[i][k] + p[k][j];\n"
                        "#pragma endscop\n}\n";
  EXPECT_EQ(check_file(tmp.string(), {}, {{4}}), 0) << "floyd-warshall rescheduled";
  std::filesystem::remove(tmp);
}

// Tiled wavefronts inside time steps (--wavefront-tiles=R,W): seidel-2d and the 3-D sweep
// above in blocks of R rows and W wavefront steps: two more loops (T and r) between the
// time loop and the wavefront, the block row r parallel inside the serial t and T, and the
// same dataflow as in source order for every block shape tried. Block rows T = b - r
// instead of b + r fail it (the legality check refuses the rewrite: tried).
TEST(RescheduleOracle, TiledWavefrontsKeepTheDataflow) {
  const std::filesystem::path tmp = temp_c("bbmm_tiled_wavefront");
  const std::vector<Input> inputs = with_polybench(
      tmp,
      kGaussSeidel3d,
      "stencils/seidel-2d");
  for (const auto& [file, args] : inputs) {
    auto src = analyze(file, args, false);
    for (auto [rows, steps] : {std::pair{1, 4}, std::pair{2, 3}, std::pair{3, 2}, std::pair{4, 16}}) {
      WavefrontTiles tiles;
      tiles.rows = rows;
      tiles.steps = steps;
      auto got = analyze(file, args, true, false, tiles);
      ASSERT_TRUE(src && got && !src->scops.empty() && !got->scops.empty());
      const Scop& a = src->scops[0];
      const Scop& b = got->scops[0];
      const Statement& st = b.statements[0];
      const std::string what = file + " R=" + std::to_string(rows) + " W=" + std::to_string(steps);
      ASSERT_EQ(st.loops.size(), a.statements[0].loops.size() + 2) << what << ": not tiled";
      const Phase& ph = b.phases[st.phase];
      EXPECT_EQ(ph.serial_loops, std::vector<int>({st.loops[0], st.loops[1]})) << what;
      EXPECT_EQ(ph.parallel_loop, st.loops[2]) << what << ": the block row is not the parallel loop";
      for (const std::vector<long>& v : {std::vector<long>{3, 7}, {2, 6}, {1, 5}})
        expect_same_dataflow(a, b, v, what);
    }
  }
  std::filesystem::remove(tmp);
}

// Wavefronts of several statements (the default schedule, unit coefficients): a
// dynamic-programming table filled one diagonal j - i at a time, as nussinov does (an
// element from its left and lower neighbours, then a max over a split point k), and
// nussinov itself from PolyBench: each gets a wavefront loop with a parallel loop inside
// (none in source order) and the same dataflow as in source order.
TEST(RescheduleOracle, NestWavefrontsKeepTheDataflow) {
  const std::filesystem::path tmp = temp_c("bbmm_nest_wavefront");
  const std::vector<Input> inputs = with_polybench(
      tmp,
      "void dp(int n, double T[n][n]) {\n#pragma scop\n"
      "  for (int i = n - 1; i >= 0; i--)\n    for (int j = i + 1; j < n; j++) {\n"
      "      T[i][j] = T[i][j - 1] + T[i + 1][j] * 0.5;\n"
      "      for (int k = i + 1; k < j; k++)\n"
      "        T[i][j] = T[i][j] > T[i][k] + T[k + 1][j] ? T[i][j] : T[i][k] + T[k + 1][j];\n"
      "    }\n#pragma endscop\n}\n",
      "medley/nussinov");
  for (const auto& [file, args] : inputs) {
    EXPECT_EQ(check_file(file, args, {{6}, {5}, {3}, {2}, {1}}), 1) << file;
    auto src = analyze(file, args, false);
    auto got = analyze(file, args, true);
    ASSERT_TRUE(src && got && !src->scops.empty() && !got->scops.empty());
    const Scop& a = src->scops[0];
    const Scop& b = got->scops[0];
    EXPECT_LT(a.phases[a.statements[0].phase].parallel_loop, 0) << file << ": parallel in source order";
    for (const Statement& st : b.statements) {
      EXPECT_GE(b.phases[st.phase].parallel_loop, 0) << file << ": " << st.name << " has no parallel loop";
      EXPECT_FALSE(st.source_rows.empty()) << file << ": " << st.name << " not skewed";
    }
  }
  std::filesystem::remove(tmp);
}

// Random nests, each rewritten after isl's schedule whatever the serial depths.
TEST(RescheduleOracle, RandomNestsRewritten) {
  std::mt19937 rng(20261127);
  int rewritten = 0, programs = 0;
  for (int n = 0; n < 200; ++n) {
    const std::string text = random_program(rng, n % 3 == 0, n % 4 == 1);
    Diagnostics diag;
    PipelineOptions opts;
    opts.reschedule = false;
    auto prog = analyze_text(text, "random.c", opts, diag);
    if (diag.has_errors()) {
      std::ostringstream os;
      diag.render(os, prog->sm.get());
      ADD_FAILURE() << text << os.str();
      continue;
    }
    for (const Scop& s : prog->scops) {
      ++programs;
      std::vector<int> nests;
      for (size_t t = 0; t < s.body.size(); ++t)
        if (s.body[t].is_loop) nests.push_back(static_cast<int>(t));
      Scop out = s;
      if (!reschedule_nests_unchecked(s, nests, out)) continue;
      if (!rescheduled(s, out)) continue;
      ++rewritten;
      const bool before = ::testing::Test::HasFailure();
      for (const std::vector<long>& v : {std::vector<long>{4, 5}, std::vector<long>{5, 3}})
        expect_same_dataflow(s, out, v, "random program");
      if (!before && ::testing::Test::HasFailure()) {
        ADD_FAILURE() << "program:\n" << text;
        return;
      }
    }
  }
  EXPECT_GT(programs, 150);
  EXPECT_GT(rewritten, 30);
}

}  // namespace
}  // namespace bbmm::compiler
