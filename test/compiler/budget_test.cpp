// Compile-time budget (issue 13). Every input of test/compiler/budget (loop nests that once
// took seconds or hung) goes through the whole of bbmmc, for every target: the ctest
// TIMEOUT is the hang guard; speed itself is measured by bench/polybench/compile_time.sh.
// And a scop past the isl operation budget is reported, for each pass that can run out,
// as one error naming the scop and the pass: never a hang, a crash or an internal error.

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>

#include "driver/driver.h"
#include "test_util.h"

namespace bbmm::compiler {
namespace {

class BudgetInputTest : public ::testing::TestWithParam<std::filesystem::path> {};

TEST_P(BudgetInputTest, CompilesForEveryTarget) {
  const std::string input = GetParam().string();
  const char* tmp = std::getenv("TEST_TMPDIR");  // the build tree's tmp/ (test/CMakeLists.txt)
  const std::filesystem::path dir =
      std::filesystem::path(tmp ? tmp : ".") / ("bbmmc_budget_" + GetParam().stem().string());
  std::filesystem::create_directories(dir);
  const std::string out_c = (dir / (GetParam().stem().string() + ".c")).string();
  for (const char* emit : {"--emit=model", "--emit=deps", "--emit=boxes"}) {
    std::ostringstream out, err;
    EXPECT_EQ(run_bbmmc({input, emit}, out, err), 0) << emit << "\n" << err.str();
  }
  for (const char* target : {"--target=host", "--target=cuda", "--target=opencl"}) {
    std::ostringstream out, err;
    EXPECT_EQ(run_bbmmc({input, target, "-o", out_c}, out, err), 0) << target << "\n" << err.str();
    EXPECT_NE(testing::read_file(out_c).find("bbmm"), std::string::npos) << target;
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Inputs, BudgetInputTest,
                         ::testing::ValuesIn(testing::files_in(BBMM_BUDGET_DIR, ".c")),
                         [](const auto& info) { return testing::test_name(info.param); });

// Raises the budget from 1000 operations by factors of 2 until the input compiles: on the way
// every pass runs out at some budget, and each time bbmmc must say which scop and which pass.
TEST(IslBudget, EveryPassReportsTheScopWhenItRunsOut) {
  const std::string input = std::string(BBMM_GOLDEN_DIR) + "/jacobi_2d.c";
  // The scop of jacobi_2d.c: function and pragma lines.
  const std::regex message(
      R"(^.*jacobi_2d\.c:(\d+):1: error: scop in function 'kernel_jacobi_2d' \(lines (\d+)-(\d+)\) )"
      R"(is too complex: (.*) needs more than (\d+) isl operations$)");
  const std::regex note(
      R"(^.*jacobi_2d\.c:\d+:1: note: scop in function 'kernel_jacobi_2d' keeps its source )"
      R"(schedule: finding a parallel one with isl's scheduler needs more than \d+ isl operations$)");
  std::set<std::string> passes;
  bool compiled = false;
  bool rescheduling_ran_out = false;
  for (unsigned long budget = 1000; budget <= 64'000'000 && !compiled; budget *= 2) {
    for (const char* emit : {"--emit=boxes", "--emit=host"}) {
      std::ostringstream out, err;
      const int rc = run_bbmmc({input, emit, "--max-isl-operations=" + std::to_string(budget)}, out, err);
      if (rc == 0) {
        compiled = compiled || std::string(emit) == "--emit=host";
        continue;
      }
      ASSERT_EQ(rc, 1) << "budget " << budget << ": " << err.str();
      std::vector<std::string> lines = testing::split_lines(err.str());
      // Rescheduling (poly/reschedule.h) past the budget keeps the source schedule with a
      // note (the note, the pragma line, the caret), and bbmmc goes on.
      if (!lines.empty() && std::regex_match(lines[0], note)) {
        ASSERT_GE(lines.size(), 3u) << err.str();
        EXPECT_EQ(lines[1], "#pragma scop");
        rescheduling_ran_out = true;
        lines.erase(lines.begin(), lines.begin() + 3);
      }
      ASSERT_GE(lines.size(), 4u) << err.str();
      std::smatch m;
      ASSERT_TRUE(std::regex_match(lines[0], m, message)) << err.str();
      EXPECT_EQ(m[1], m[2]);  // reported at the '#pragma scop' line
      EXPECT_LT(std::stoi(m[2]), std::stoi(m[3]));
      EXPECT_EQ(std::stoul(m[5]), budget);
      passes.insert(m[4]);
      EXPECT_EQ(lines[1], "#pragma scop");
      EXPECT_EQ(lines[3].rfind("hint: split the loop nest", 0), 0u) << err.str();
      // One error, nothing else.
      EXPECT_EQ(lines.size(), 4u) << err.str();
    }
  }
  EXPECT_TRUE(compiled);
  std::string seen;
  for (const std::string& p : passes) seen += "'" + p + "' ";
  EXPECT_TRUE(passes.count("building its polyhedral model")) << seen;
  EXPECT_TRUE(passes.count("computing its dependences")) << seen;
  EXPECT_TRUE(passes.count("computing its tiles' boxes")) << seen;
  EXPECT_TRUE(passes.count("generating its code")) << seen;
  (void)rescheduling_ran_out;  // jacobi_2d has no serial region: not rescheduled
}

// Rescheduling (poly/reschedule.h) past its budget keeps the source schedule with a note; with
// enough operations lu is rescheduled (its new serial loop is named bbmm_it0).
TEST(IslBudget, ReschedulingPastItsBudgetKeepsTheSourceSchedule) {
  const std::string input = std::string(BBMM_GOLDEN_DIR) + "/lu.c";
  bool noted = false, rescheduled = false;
  for (unsigned long budget = 1000; budget <= 64'000'000 && !rescheduled; budget *= 2) {
    std::ostringstream out, err;
    const int rc = run_bbmmc({input, "--emit=deps", "--max-isl-operations=" + std::to_string(budget)}, out, err);
    if (rc != 0) continue;  // an earlier pass ran out
    if (err.str().find("note: scop in function 'kernel_lu' keeps its source schedule: finding a "
                       "parallel one with isl's scheduler needs more than " +
                       std::to_string(budget) + " isl operations") != std::string::npos) {
      noted = true;
      EXPECT_EQ(out.str().find("bbmm_it0"), std::string::npos) << out.str();
    }
    rescheduled = out.str().find("L0 bbmm_it0") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  EXPECT_TRUE(rescheduled);
}

TEST(IslBudget, OptionIsChecked) {
  std::ostringstream out, err;
  EXPECT_EQ(run_bbmmc({"x.c", "--max-isl-operations=lots"}, out, err), 1);
  EXPECT_NE(err.str().find("--max-isl-operations expects a non-negative integer"), std::string::npos)
      << err.str();
}

}  // namespace
}  // namespace bbmm::compiler
