// Golden tests of code generation: every test/compiler/codegen/<case>.c has the expected
// output of `bbmmc <case>.c --target=host` in <case>.host (the whole generated file), of
// --target=opencl in <case>.opencl, and of --target=cuda in <case>.cuda (the C file, then
// the CUDA file after a "--- STEM.cu ---" line). A line of the input with "bbmmc-args:" gives
// more options (up to "*/").
// BBMM_UPDATE_GOLDEN=1 rewrites the expected files; a mismatch prints a diff. Each
// generated C file must also compile as C11 against the public headers (cc -fsyntax-only),
// and each CUDA file with nvcc when the build found one (skipped otherwise, saying so).

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
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

const char kCudaSeparator[] = "--- STEM.cu ---\n";

// Temporary files: under TEST_TMPDIR (the build tree, set by ctest) when set, named per
// process so that parallel test processes never share one.
std::filesystem::path temp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::filesystem::path base =
      dir && *dir ? std::filesystem::path(dir) : std::filesystem::temp_directory_path();
  return base / (name + "_" + std::to_string(static_cast<long>(getpid())));
}

// The options after "bbmmc-args:" on a line of the input (its comment), if any.
std::vector<std::string> input_args(const std::string& input) {
  std::istringstream in(read_file(input));
  std::vector<std::string> args;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("bbmmc-args:");
    if (at == std::string::npos) continue;
    std::istringstream words(line.substr(at + 11));
    for (std::string w; words >> w && w != "*/";) args.push_back(w);
    break;
  }
  return args;
}

std::string generate(const std::string& input, const std::string& target, int* rc) {
  std::ostringstream out, err;
  const std::vector<std::string> extra = input_args(input);
  if (target != "cuda") {
    std::vector<std::string> args{input, "--target=" + target};
    args.insert(args.end(), extra.begin(), extra.end());
    *rc = run_bbmmc(args, out, err);
    return out.str() + (err.str().empty() ? "" : "--- stderr ---\n" + err.str());
  }
  // The CUDA target writes two files.
  const std::filesystem::path stem =
      temp_path("bbmm_codegen_" + std::filesystem::path(input).stem().string() + "_cudagen");
  std::vector<std::string> args{input, "--target=cuda", "-o", stem.string() + ".c"};
  args.insert(args.end(), extra.begin(), extra.end());
  *rc = run_bbmmc(args, out, err);
  std::string text = read_file(stem.string() + ".c") + kCudaSeparator +
                     read_file(stem.string() + ".cu");
  std::filesystem::remove(stem.string() + ".c");
  std::filesystem::remove(stem.string() + ".cu");
  return text + out.str() + (err.str().empty() ? "" : "--- stderr ---\n" + err.str());
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
  std::filesystem::path tmp = temp_path("bbmm_codegen_" + input.stem().string() + "_" + target);
  tmp += ".c";
  // (Without bbmmc's notes, appended after "--- stderr ---".)
  const size_t sep = std::min(actual.find(kCudaSeparator), actual.find("--- stderr ---\n"));
  std::ofstream(tmp, std::ios::binary) << actual.substr(0, sep);
  const std::string cmd = "cc -std=c11 -fsyntax-only -Werror=implicit-function-declaration -I" +
                          std::string(BBMM_INCLUDE_DIR) + " " + tmp.string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "the generated code of " << input
                                          << " does not compile: " << cmd;
  std::filesystem::remove(tmp);
  if (target == "cuda") {
    ASSERT_NE(sep, std::string::npos);
    const std::string nvcc = BBMM_NVCC;
    if (nvcc.empty()) {
      std::printf("(no nvcc in this build: the CUDA file of %s is not compiled)\n",
                  input.string().c_str());
    } else {
      std::filesystem::path cu = tmp;
      cu.replace_extension(".cu");
      const size_t from = sep + sizeof kCudaSeparator - 1;
      const size_t notes = actual.find("--- stderr ---\n", from);
      std::ofstream(cu, std::ios::binary)
          << actual.substr(from, notes == std::string::npos ? std::string::npos : notes - from);
      std::filesystem::path obj = tmp;
      obj.replace_extension(".o");
      const std::string ncmd = nvcc + " -c -Werror all-warnings -I" + std::string(BBMM_INCLUDE_DIR) +
                               " " + cu.string() + " -o " + obj.string() + " 2>&1";
      EXPECT_EQ(std::system(ncmd.c_str()), 0) << "the CUDA file of " << input
                                               << " does not compile: " << ncmd;
      std::filesystem::remove(cu);
      std::filesystem::remove(obj);
    }
  }

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

TEST_P(CodegenGoldenTest, Cuda) {
  InDir d(BBMM_CODEGEN_DIR);
  check(GetParam().filename(), "cuda");
}

std::vector<std::filesystem::path> inputs() { return files_in(BBMM_CODEGEN_DIR, ".c"); }

INSTANTIATE_TEST_SUITE_P(Inputs, CodegenGoldenTest, ::testing::ValuesIn(inputs()),
                         [](const auto& info) { return testing::test_name(info.param); });

TEST(CodegenGoldenInputs, Exist) { EXPECT_GE(inputs().size(), 5u); }

}  // namespace
}  // namespace bbmm::compiler
