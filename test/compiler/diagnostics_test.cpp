// Diagnostics tests: each test/compiler/diagnostics/<case>.c carries annotations
//   // expected-error@+N:COL {{message}}
// saying that line (annotation line + N) has an error at column COL whose message
// contains "message". Every annotation must be matched by exactly one error and every
// error by an annotation; bbmmc must exit with status 1 and print the source line and
// a caret under the column for each error.

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <sstream>

#include "driver/driver.h"
#include "driver/pipeline.h"
#include "test_util.h"

namespace bbmm::compiler {
namespace {

// A file name in the build tree's tmp/ (TEST_TMPDIR, test/CMakeLists.txt).
std::filesystem::path tmp_file(const std::string& name) {
  const char* d = std::getenv("TEST_TMPDIR");
  return std::filesystem::path(d ? d : ".") / name;
}

struct Expected {
  int line;
  int col;
  std::string message;
  bool matched = false;
};

std::vector<Expected> annotations(const std::string& text) {
  std::vector<Expected> out;
  std::regex re(R"(expected-error@([+-]\d+):(\d+) \{\{(.*)\}\})");
  std::vector<std::string> lines = testing::split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (std::regex_search(lines[i], m, re))
      out.push_back({static_cast<int>(i) + 1 + std::stoi(m[1]), std::stoi(m[2]), m[3]});
    else
      EXPECT_EQ(lines[i].find("expected-error"), std::string::npos)
          << "malformed annotation on line " << i + 1 << " (use expected-error@+N:COL {{...}})";
  }
  return out;
}

class DiagnosticsTest : public ::testing::TestWithParam<std::filesystem::path> {};

TEST_P(DiagnosticsTest, ErrorsMatchAnnotations) {
  const std::filesystem::path& input = GetParam();
  std::vector<Expected> want = annotations(testing::read_file(input));
  ASSERT_FALSE(want.empty()) << "no annotations in " << input;
  Diagnostics diag;
  auto prog = analyze_file(input.string(), PipelineOptions(), diag);
  EXPECT_FALSE(diag.has_internal_error());
  for (const Diagnostic& d : diag.all()) {
    if (d.severity != Severity::kError) continue;
    bool found = false;
    for (Expected& e : want)
      if (!e.matched && e.line == d.loc.line && e.col == d.loc.col &&
          d.message.find(e.message) != std::string::npos) {
        e.matched = found = true;
        break;
      }
    EXPECT_TRUE(found) << "unexpected error " << d.loc.line << ":" << d.loc.col << ": " << d.message;
  }
  for (const Expected& e : want)
    EXPECT_TRUE(e.matched) << "missing error " << e.line << ":" << e.col << " {{" << e.message << "}}";

  // The driver: exit status 1, and each error with its source line and a caret.
  std::ostringstream out, err;
  EXPECT_EQ(run_bbmmc({input.string(), "--emit=deps"}, out, err), 1);
  std::vector<std::string> lines = testing::split_lines(err.str());
  int carets = 0;
  for (size_t i = 0; i + 2 < lines.size(); ++i) {
    std::smatch m;
    static const std::regex head(R"(^.*:(\d+):(\d+): error: .*)");
    if (!std::regex_match(lines[i], m, head)) continue;
    size_t col = std::stoul(m[2]);
    const std::string& caret = lines[i + 2];
    EXPECT_EQ(caret.size(), col) << "caret of '" << lines[i] << "'";
    EXPECT_EQ(caret.back(), '^');
    ++carets;
  }
  EXPECT_EQ(carets, static_cast<int>(want.size())) << err.str();
  EXPECT_TRUE(out.str().empty());
}

INSTANTIATE_TEST_SUITE_P(Inputs, DiagnosticsTest,
                         ::testing::ValuesIn(testing::files_in(BBMM_DIAGNOSTICS_DIR, ".c")),
                         [](const auto& info) { return testing::test_name(info.param); });

TEST(Diagnostics, HintsSayWhatToDo) {
  Diagnostics diag;
  auto prog = analyze_file(std::string(BBMM_DIAGNOSTICS_DIR) + "/nonaffine_subscript.c", PipelineOptions(), diag);
  ASSERT_TRUE(diag.has_errors());
  std::ostringstream os;
  diag.render(os, prog->sm.get());
  EXPECT_NE(os.str().find("hint: subscripts must be affine"), std::string::npos) << os.str();
}

TEST(Driver, OptionsAndExitCodes) {
  std::ostringstream out, err;
  EXPECT_EQ(run_bbmmc({"--help"}, out, err), 0);
  EXPECT_NE(out.str().find("usage: bbmmc"), std::string::npos);
  EXPECT_EQ(run_bbmmc({"--version"}, out, err), 0);
  EXPECT_EQ(run_bbmmc({}, out, err), 1);
  EXPECT_EQ(run_bbmmc({"x.c", "--emit=nonsense"}, out, err), 1);
  EXPECT_EQ(run_bbmmc({"x.c", "--target=fpga"}, out, err), 1);
  EXPECT_EQ(run_bbmmc({"x.c", "--frobnicate"}, out, err), 1);
  EXPECT_EQ(run_bbmmc({"/nonexistent/file.c"}, out, err), 1);
  EXPECT_EQ(run_bbmmc({std::string(BBMM_GOLDEN_DIR) + "/gemm.c", "--cpp=/nonexistent/cpp"}, out, err), 1);
  std::ostringstream o2, e2;
  EXPECT_EQ(run_bbmmc({std::string(BBMM_GOLDEN_DIR) + "/gemm.c", "--emit=deps", "-DUNUSED=1", "-I", "/tmp",
                       "-UFOO"}, o2, e2), 0) << e2.str();
  EXPECT_NE(o2.str().find("parallel loop L0 i"), std::string::npos);
  // Without --emit bbmmc generates code (or says that it cannot yet): never silent.
  std::ostringstream o3, e3;
  EXPECT_EQ(run_bbmmc({std::string(BBMM_GOLDEN_DIR) + "/gemm.c"}, o3, e3), 0) << e3.str();
  EXPECT_FALSE(o3.str().empty() && e3.str().empty());
}

// The --emit kinds that --help lists: the error for an unknown kind must list exactly these,
// and each must be accepted (the two once drifted apart).
TEST(Driver, UnknownEmitKindListsTheKindsOfHelp) {
  std::ostringstream help, e0;
  ASSERT_EQ(run_bbmmc({"--help"}, help, e0), 0);
  std::vector<std::string> kinds;
  static const std::regex line(R"(^  --emit=([a-z]+) .*)");
  for (const std::string& l : testing::split_lines(help.str())) {
    std::smatch m;
    if (std::regex_match(l, m, line)) kinds.push_back(m[1]);
  }
  ASSERT_GE(kinds.size(), 5u) << help.str();
  std::string listed;
  for (const std::string& k : kinds) listed += (listed.empty() ? "" : ", ") + k;
  std::ostringstream out, err;
  EXPECT_EQ(run_bbmmc({std::string(BBMM_GOLDEN_DIR) + "/gemm.c", "--emit=bar"}, out, err), 1);
  EXPECT_EQ(testing::split_lines(err.str()).at(0),
            "bbmmc: error: unknown --emit kind 'bar' (use one of: " + listed + ")");
  for (const std::string& k : kinds) {
    std::ostringstream o, e;
    EXPECT_EQ(run_bbmmc({std::string(BBMM_GOLDEN_DIR) + "/gemm.c", "--emit=" + k}, o, e), 0)
        << k << ": " << e.str();
    EXPECT_FALSE(o.str().empty()) << k;
  }
}

TEST(Driver, UnknownOptionsSayWhatWasMeant) {
  auto first_line = [](std::vector<std::string> args) {
    std::ostringstream out, err;
    EXPECT_EQ(run_bbmmc(args, out, err), 1);
    return testing::split_lines(err.str()).at(0);
  };
  EXPECT_EQ(first_line({"x.c", "--emitt=deps"}),
            "bbmmc: error: unknown option '--emitt=deps'; did you mean '--emit=deps'?");
  EXPECT_EQ(first_line({"x.c", "-target=cuda"}),
            "bbmmc: error: unknown option '-target=cuda'; did you mean '--target=cuda'?");
  EXPECT_EQ(first_line({"x.c", "--hlep"}), "bbmmc: error: unknown option '--hlep'; did you mean '--help'?");
  EXPECT_EQ(first_line({"x.c", "--emit"}),
            "bbmmc: error: option '--emit' needs a value, as in '--emit=model|deps|boxes|host|kernel'");
  EXPECT_EQ(first_line({"x.c", "--frobnicate"}), "bbmmc: error: unknown option '--frobnicate'");
}

// --partition=2d reaches code generation: jacobi_2d's phases split i and j (the generated
// phase functions refine a two-dimensional tile grid), and so does gemm, whose j loops lie
// at different depths (directly under i, and under k); mvt, whose j carries a reduction,
// keeps one split loop and says why.
TEST(Driver, TwoDimensionalPartitionsReachCodeGeneration) {
  const std::string dir = BBMM_GOLDEN_DIR;
  std::ostringstream o1, e1, o2, e2, o3, e3, o4, e4;
  EXPECT_EQ(run_bbmmc({dir + "/jacobi_2d.c", "--partition=2d"}, o1, e1), 0)
      << e1.str();
  EXPECT_NE(o1.str().find("bbmm_span1"), std::string::npos);
  EXPECT_EQ(e1.str(), "");
  EXPECT_EQ(run_bbmmc({dir + "/jacobi_2d.c"}, o2, e2), 0) << e2.str();
  EXPECT_EQ(o2.str().find("bbmm_span1"), std::string::npos);
  EXPECT_EQ(run_bbmmc({dir + "/gemm.c", "--partition=2d"}, o3, e3), 0) << e3.str();
  EXPECT_NE(o3.str().find("bbmm_span1"), std::string::npos);
  EXPECT_EQ(e3.str(), "");
  EXPECT_EQ(run_bbmmc({dir + "/mvt.c", "--emit=host", "--partition=2d"}, o4, e4), 0) << e4.str();
  EXPECT_NE(e4.str().find("note: --partition=2d: phases 0, 1 of this scop split one loop: 2-D "
                          "asked, but S1 lies in no parallel loop nested in i"),
            std::string::npos)
      << e4.str();
}

// --partition=auto (the default) splits gemm in two, starting from the 1-D split (every
// device a block of rows: bbmm_d0 = devices), because one row of C reads all of B; it
// keeps jacobi_2d 1-D. --partition=1d keeps gemm 1-D. A 2-D split whose tiles would depend
// on each other is refused: here S2 reads B[i][j + 1], written by S1 in the next column
// block.
TEST(Driver, AutomaticPartitionSplitsInTwoWhereARowReadsAWholeArray) {
  const std::string dir = BBMM_GOLDEN_DIR;
  std::ostringstream o1, e1, o2, e2, o3, e3, o4, e4;
  EXPECT_EQ(run_bbmmc({dir + "/gemm.c"}, o1, e1), 0) << e1.str();
  EXPECT_NE(o1.str().find("const int bbmm_d0 = bbmm_x->devices;"), std::string::npos);
  EXPECT_NE(o1.str().find("bbmm_span1"), std::string::npos);
  EXPECT_EQ(run_bbmmc({dir + "/gemm.c", "--emit=boxes"}, o2, e2), 0) << e2.str();
  EXPECT_NE(o2.str().find("on L1 j/L3 j"), std::string::npos) << o2.str();
  EXPECT_NE(o2.str().find("a tile one iteration of i wide accesses all of B"), std::string::npos);
  EXPECT_EQ(run_bbmmc({dir + "/gemm.c", "--partition=1d"}, o3, e3), 0) << e3.str();
  EXPECT_EQ(o3.str().find("bbmm_span1"), std::string::npos);
  const std::filesystem::path p = tmp_file("bbmmc_dependent_columns.c");
  std::ofstream(p) << "void f(int n, double A[n][n], double B[n][n + 1], double C[n][n]) {\n"
                      "#pragma scop\n"
                      "  for (int i = 0; i < n; i++) {\n"
                      "    for (int j = 0; j < n; j++)\n      B[i][j] = A[i][j];\n"
                      "    for (int k = 0; k < n; k++)\n"
                      "      for (int j = 0; j < n; j++)\n        C[i][j] += B[i][j + 1] * A[k][j];\n"
                      "  }\n#pragma endscop\n}\n";
  EXPECT_EQ(run_bbmmc({p.string(), "--emit=boxes", "--partition=2d"}, o4, e4), 0) << e4.str();
  EXPECT_NE(o4.str().find("2-D asked, but a dependence joins different iterations of the loops "
                          "nested in i"),
            std::string::npos)
      << o4.str();
  EXPECT_EQ(o4.str().find("bbmm_lo1"), std::string::npos);
}

// Code generation needs the type of every scalar the scop reads: an unknown type is named
// where it is written, an undeclared scalar where it is used.
TEST(Driver, ScalarTypesForCodeGeneration) {
  const std::filesystem::path p = tmp_file("bbmmc_scalar_type_test.c");
  std::ofstream(p) << "void f(int n, double A[n], real alpha) {\n#pragma scop\n"
                      "  for (int i = 0; i < n; i++)\n    A[i] = alpha * A[i] + beta;\n"
                      "#pragma endscop\n}\n";
  std::ostringstream out, err;
  EXPECT_EQ(run_bbmmc({p.string(), "--emit=deps"}, out, err), 0) << err.str();
  std::ostringstream o2, e2;
  EXPECT_EQ(run_bbmmc({p.string()}, o2, e2), 1);
  const std::string name = p.string();
  EXPECT_NE(e2.str().find(name + ":1:28: error: unknown type name 'real'"), std::string::npos) << e2.str();
  EXPECT_NE(e2.str().find(name + ":4:27: error: code generation needs the type of 'beta'"), std::string::npos)
      << e2.str();
  std::filesystem::remove(p);
}

// A C file without the '.c' suffix: cc -E prints nothing for it; bbmmc says so (it said
// "no '#pragma scop' region in the file").
TEST(Driver, InputWithoutCSuffix) {
  const std::filesystem::path p = tmp_file("bbmmc_gemm_without_suffix");
  std::filesystem::copy_file(std::string(BBMM_GOLDEN_DIR) + "/gemm.c", p,
                             std::filesystem::copy_options::overwrite_existing);
  std::ostringstream out, err;
  EXPECT_EQ(run_bbmmc({p.string(), "--emit=deps"}, out, err), 1);
  EXPECT_EQ(testing::split_lines(err.str()).at(0).rfind(
                p.string() + ": error: the preprocessor 'cc -E' produced no output for '" + p.string() + "'", 0),
            0u)
      << err.str();
  EXPECT_NE(err.str().find("hint: bbmmc reads C: name the file with a '.c' suffix"), std::string::npos)
      << err.str();
  std::ostringstream o2, e2;
  EXPECT_EQ(run_bbmmc({p.string(), "--emit=deps", "--cpp=cc -E -x c"}, o2, e2), 0) << e2.str();
  std::filesystem::remove(p);
}

// A pointer from malloc: the hint says how to give bbmmc the extent.
TEST(Diagnostics, MallocPointerHint) {
  const std::filesystem::path p = tmp_file("bbmmc_malloc_test.c");
  std::ofstream(p) << "void *malloc(unsigned long);\nvoid f(int n) {\n"
                      "  double *A = (double *)malloc(n * sizeof(double));\n#pragma scop\n"
                      "  for (int i = 0; i < n; i++)\n    A[i] = 0.0;\n#pragma endscop\n}\n";
  std::ostringstream out, err;
  EXPECT_EQ(run_bbmmc({p.string(), "--emit=deps"}, out, err), 1);
  EXPECT_NE(err.str().find("hint: bbmmc cannot see the extent of memory from 'malloc': put the loop nest "
                           "in a function with a C99 array parameter, e.g. 'void kernel(int n, double A[n])'"),
            std::string::npos)
      << err.str();
  std::filesystem::remove(p);
}

// A loop nest with no parallel loop runs as one tile on one device: a note (not an
// error) says so, names each loop with the dependences it carries, down to the references
// (Floyd-Warshall's i loop: the write path[i][j] at i = k read as path[k][j]), and says
// that '#pragma bbmm parallel' asserts a loop parallel. Asserted loops, or a nest with a
// parallel loop, get no note.
TEST(Diagnostics, SerialRegionNoteNamesTheBlockingDependence) {
  auto notes = [](const std::string& body) {
    const std::string text =
        "void f(int n, int path[n][n]) {\n  int i, j, k;\n#pragma scop\n" + body +
        "#pragma endscop\n}\n";
    Diagnostics diag;
    auto prog = analyze_text(text, "fw.c", PipelineOptions(), diag);
    EXPECT_FALSE(diag.has_errors());
    std::vector<Diagnostic> out;
    for (const Diagnostic& d : diag.all())
      if (d.severity == Severity::kNote) out.push_back(d);
    return out;
  };
  const std::string update =
      "        path[i][j] = path[i][j] < path[i][k] + path[k][j] ? path[i][j] : path[i][k] + "
      "path[k][j];\n";
  std::vector<Diagnostic> n = notes("  for (k = 0; k < n; k++)\n    for (i = 0; i < n; i++)\n"
                                    "      for (j = 0; j < n; j++)\n" + update);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].loc.line, 4);
  EXPECT_NE(n[0].message.find("runs serially, as one tile on one device"), std::string::npos)
      << n[0].message;
  EXPECT_NE(n[0].message.find("loop 'i' (line 5) carries RAW on path: S1 -> S1 (path[i][j] -> "
                              "path[k][j])"),
            std::string::npos)
      << n[0].message;
  EXPECT_NE(n[0].message.find("loop 'j' (line 6) carries RAW on path: S1 -> S1 (path[i][j] -> "
                              "path[i][k])"),
            std::string::npos)
      << n[0].message;
  EXPECT_NE(n[0].hint.find("'#pragma bbmm parallel' right before it asserts it"), std::string::npos)
      << n[0].hint;
  // Asserted: i and j parallel inside the serial k loop, no note.
  EXPECT_TRUE(notes("  for (k = 0; k < n; k++)\n#pragma bbmm parallel\n    for (i = 0; i < n; i++)\n"
                    "#pragma bbmm parallel\n      for (j = 0; j < n; j++)\n" + update)
                  .empty());
  // A nest with a parallel loop: no note.
  EXPECT_TRUE(notes("  for (i = 0; i < n; i++)\n    for (j = 1; j < n; j++)\n"
                    "      path[i][j] = path[i][j - 1] + 1;\n")
                  .empty());
}

TEST(Driver, DefinesReachThePreprocessor) {
  // -D changes a bound macro: the model must see it.
  std::filesystem::path p = std::filesystem::temp_directory_path() / "bbmmc_define_test.c";
  std::ofstream(p) << "void f(double A[100]) {\n#pragma scop\n  for (int i = 0; i < LIMIT; i++)\n"
                      "    A[i] = 0.0;\n#pragma endscop\n}\n";
  std::ostringstream out, err;
  EXPECT_EQ(run_bbmmc({p.string(), "-DLIMIT=42", "--emit=model"}, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("i <= 41"), std::string::npos) << out.str();
  std::filesystem::remove(p);
}

}  // namespace
}  // namespace bbmm::compiler
