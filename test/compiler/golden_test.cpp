// Golden tests: every test/compiler/golden/<case>.c has the expected `--emit=model`
// output in <case>.model and `--emit=deps` in <case>.deps. BBMM_UPDATE_GOLDEN=1
// rewrites the expected files; a mismatch prints a diff.

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "driver/driver.h"
#include "test_util.h"

namespace bbmm::compiler {
namespace {

using testing::files_in;
using testing::line_diff;
using testing::read_file;

class GoldenTest : public ::testing::TestWithParam<std::filesystem::path> {};

std::string run(const std::filesystem::path& input, const std::string& emit, int* rc) {
  std::ostringstream out, err;
  *rc = run_bbmmc({input.string(), "--emit=" + emit}, out, err);
  return out.str() + (err.str().empty() ? "" : "--- stderr ---\n" + err.str());
}

void check(const std::filesystem::path& input, const std::string& emit) {
  // Run from the golden directory so paths in the output do not depend on the build.
  std::filesystem::path expected_path = input;
  expected_path.replace_extension("." + emit);
  int rc = 0;
  std::string actual = run(input.filename(), emit, &rc);
  EXPECT_EQ(rc, 0) << actual;
  int rc2 = 0;
  EXPECT_EQ(actual, run(input.filename(), emit, &rc2)) << "output is not deterministic";
  const char* update = std::getenv("BBMM_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(expected_path, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(expected_path))
      << expected_path << " is missing; run with BBMM_UPDATE_GOLDEN=1 to create it";
  std::string expected = read_file(expected_path);
  EXPECT_TRUE(expected == actual) << "--emit=" << emit << " of " << input.filename()
                                  << " differs from " << expected_path.filename()
                                  << " (- expected, + actual):\n"
                                  << line_diff(expected, actual);
}

struct InGoldenDir {
  std::filesystem::path saved = std::filesystem::current_path();
  InGoldenDir() { std::filesystem::current_path(BBMM_GOLDEN_DIR); }
  ~InGoldenDir() { std::filesystem::current_path(saved); }
};

TEST_P(GoldenTest, Model) {
  InGoldenDir d;
  check(GetParam(), "model");
}

TEST_P(GoldenTest, Deps) {
  InGoldenDir d;
  check(GetParam(), "deps");
}

TEST_P(GoldenTest, StartsWithAComment) {
  std::string text = read_file(GetParam());
  EXPECT_TRUE(text.rfind("/*", 0) == 0 || text.rfind("//", 0) == 0)
      << GetParam() << " must begin with a comment that says why it exists";
}

INSTANTIATE_TEST_SUITE_P(Inputs, GoldenTest,
                         ::testing::ValuesIn(files_in(BBMM_GOLDEN_DIR, ".c")),
                         [](const auto& info) { return testing::test_name(info.param); });

TEST(GoldenSet, HasTheRequiredKernels) {
  for (const char* name : {"floyd_warshall", "jacobi_1d", "jacobi_2d", "fdtd_2d", "heat_3d", "lu", "adi",
                           "mvt", "gemm", "triangular", "decreasing", "minmax_bound", "outside_loops",
                           "polybench_macros"})
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(BBMM_GOLDEN_DIR) / (std::string(name) + ".c")))
        << name;
}

}  // namespace
}  // namespace bbmm::compiler
