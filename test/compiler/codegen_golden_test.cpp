// Golden tests of code generation: every test/compiler/codegen/<case>.c has the expected
// output of `bbmmc <case>.c --target=host` in <case>.host (the whole generated file), and of
// --target=opencl in <case>.opencl.
// BBMM_UPDATE_GOLDEN=1 rewrites the expected files; a mismatch prints a diff. Each
// generated file must also compile as C11 against the public headers (cc -fsyntax-only).

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "driver/driver.h"
#include "test_util.h"

namespace bbmm::compiler {
namespace {

using testing::files_in;
using testing::line_diff;
using testing::read_file;

class CodegenGoldenTest : public ::testing::TestWithParam<std::filesystem::path> {};

struct InDir {
  std::filesystem::path saved = std::filesystem::current_path();
  explicit InDir(const char* dir) { std::filesystem::current_path(dir); }
  ~InDir() { std::filesystem::current_path(saved); }
};

std::string generate(const std::string& input, const std::string& target, int* rc) {
  std::ostringstream out, err;
  *rc = run_bbmmc({input, "--target=" + target}, out, err);
  return out.str() + (err.str().empty() ? "" : "--- stderr ---\n" + err.str());
}

void check(const std::filesystem::path& input, const std::string& target) {
  std::filesystem::path expected_path = input;
  expected_path.replace_extension("." + target);
  int rc = 0;
  const std::string actual = generate(input.string(), target, &rc);
  ASSERT_EQ(rc, 0) << actual;
  int rc2 = 0;
  EXPECT_EQ(actual, generate(input.string(), target, &rc2)) << "generated code is not deterministic";

  // The generated file compiles (syntax and types) against the public headers.
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() /
      ("bbmm_codegen_" + input.stem().string() + "_" + target + ".c");
  std::ofstream(tmp, std::ios::binary) << actual;
  const std::string cmd = "cc -std=c11 -fsyntax-only -Werror=implicit-function-declaration -I" +
                          std::string(BBMM_INCLUDE_DIR) + " " + tmp.string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "the generated code of " << input
                                          << " does not compile: " << cmd;
  std::filesystem::remove(tmp);

  const char* update = std::getenv("BBMM_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(expected_path, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(expected_path))
      << expected_path << " is missing; run with BBMM_UPDATE_GOLDEN=1 to create it";
  const std::string expected = read_file(expected_path);
  EXPECT_TRUE(expected == actual) << "generated code of " << input << " differs from "
                                  << expected_path << " (- expected, + actual):\n"
                                  << line_diff(expected, actual);
}

TEST_P(CodegenGoldenTest, Host) {
  InDir d(BBMM_CODEGEN_DIR);
  check(GetParam().filename(), "host");
}

TEST_P(CodegenGoldenTest, OpenCL) {
  InDir d(BBMM_CODEGEN_DIR);
  check(GetParam().filename(), "opencl");
}

std::vector<std::filesystem::path> inputs() { return files_in(BBMM_CODEGEN_DIR, ".c"); }

INSTANTIATE_TEST_SUITE_P(Inputs, CodegenGoldenTest, ::testing::ValuesIn(inputs()),
                         [](const auto& info) { return testing::test_name(info.param); });

TEST(CodegenGoldenInputs, Exist) { EXPECT_GE(inputs().size(), 5u); }

}  // namespace
}  // namespace bbmm::compiler
