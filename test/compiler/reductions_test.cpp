// Reductions summed in blocks (poly/reductions.h, --reductions=reassociate): which loops
// are reductions, what the rewrite makes of them (a parallel block loop, partial sums sized
// by their accesses), the note that offers the option, and the driver's checks of it. The
// results of blocked programs are checked end to end (test/e2e/reductions, PolyBench's
// durbin in bench/polybench/run.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "driver/driver.h"
#include "driver/pipeline.h"
#include "poly/reductions.h"

namespace bbmm::compiler {
namespace {

std::unique_ptr<Program> analyze(const std::string& body, int block = 0,
                                 const std::string& params = "int n, double x[n], double y[n]") {
  const std::string text = "void f(" + params + ") {\n  double s;\n#pragma scop\n" + body +
                           "#pragma endscop\n}\n";
  Diagnostics diag;
  PipelineOptions opts;
  opts.reduction_block = block;
  auto prog = analyze_text(text, "red.c", opts, diag);
  std::ostringstream os;
  diag.render(os, prog->sm.get());
  EXPECT_FALSE(diag.has_errors()) << text << os.str();
  return prog;
}

// durbin's shape: a serial step k, inside it a loop that only `s += e` orders.
const std::string kSteps =
    "  for (int k = 1; k < n; k++) {\n    s = 0;\n"
    "    for (int i = 0; i < k; i++)\n      s += x[k - i - 1] * y[i];\n"
    "    y[k] = s;\n  }\n";

TEST(Reductions, FindsTheLoopThatOnlyItsSumOrders) {
  auto prog = analyze(kSteps);
  ASSERT_EQ(prog->scops.size(), 1u);
  std::vector<Reduction> r = find_reductions(prog->scops[0]);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].var, "s");
  EXPECT_EQ(r[0].op, '+');
  EXPECT_EQ(r[0].elem_type, "double");
  // The shapes of the right-hand side: s = s * e, s = e + s and s = s - e are reductions.
  for (const char* st : {"s = s * y[i];", "s = y[i] + s;", "s = s - y[i];"}) {
    auto p = analyze("  for (int k = 1; k < n; k++) {\n    s = 0;\n    for (int i = 0; i < k; i++)\n      " +
                     std::string(st) + "\n    y[k] = s;\n  }\n");
    std::vector<Reduction> q = find_reductions(p->scops[0]);
    ASSERT_EQ(q.size(), 1u) << st;
    EXPECT_EQ(q[0].op, st[4] == 'y' ? '+' : st[6]) << st;
  }
}

TEST(Reductions, LeavesOtherLoopsAlone) {
  // e reads s; s = e - s is no reduction; the loop also carries a dependence on y.
  for (const char* st : {"s += s * x[i];", "s = x[i] - s;", "s += y[i - 1]; y[i] = x[i];"}) {
    auto p = analyze("  for (int k = 1; k < n; k++) {\n    s = 0;\n    for (int i = 1; i < k; i++) {\n      " +
                     std::string(st) + "\n    }\n    y[k] = s;\n  }\n");
    EXPECT_TRUE(find_reductions(p->scops[0]).empty()) << st;
  }
  // A sum private to each iteration of a parallel loop: nothing to gain (not a serial
  // region).
  auto p = analyze(
      "  for (int j = 0; j < n; j++) {\n    s = 0;\n    for (int i = 0; i < n; i++)\n"
      "      s += A[j][i];\n    y[j] = s;\n  }\n",
      0, "int n, double A[n][n], double y[n]");
  EXPECT_TRUE(find_reductions(p->scops[0]).empty());
}

TEST(Reductions, BlockedLoopIsParallelAndItsPartialsSizedByTheirAccesses) {
  auto prog = analyze(kSteps, 4);
  ASSERT_EQ(prog->scops.size(), 1u);
  const Scop& s = prog->scops[0];
  EXPECT_TRUE(find_reductions(s).empty());
  bool parallel = false;
  for (const Phase& ph : s.phases)
    if (ph.parallel_loop >= 0 && s.loops[ph.parallel_loop].c_name == "bbmm_rb0") parallel = true;
  EXPECT_TRUE(parallel) << "the block loop is not a phase's parallel loop";
  auto red = std::find_if(s.arrays.begin(), s.arrays.end(),
                          [](const ArrayInfo& a) { return a.c_name == "bbmm_red0"; });
  ASSERT_NE(red, s.arrays.end());
  EXPECT_FALSE(red->live_out);
  ASSERT_EQ(red->extents.size(), 1u);
  // k < n, i < k, blocks of 4: the last block is floor((n - 2) / 4); at n = 10, 3 partials.
  isl::pw_aff e = red->extents[0];
  isl::set at10 = isl::set(s.context.ctx(), "[n] -> { : n = 10 }");
  isl::pw_aff fixed = e.intersect_params(at10);
  isl_val* v = isl_pw_aff_max_val(fixed.copy());
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(isl_val_get_num_si(v), 3);
  isl_val_free(v);
}

TEST(Reductions, NoteOffersTheOptionAndDriverChecksIt) {
  Diagnostics diag;
  auto prog = analyze_text("void f(int n, double x[n], double y[n]) {\n  double s;\n#pragma scop\n" + kSteps +
                               "#pragma endscop\n}\n",
                           "red.c", PipelineOptions(), diag);
  std::ostringstream os;
  diag.render(os, prog->sm.get());
  EXPECT_NE(os.str().find("'i' sums into 's'"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("--reductions=reassociate"), std::string::npos) << os.str();
  std::ostringstream out, err;
  EXPECT_EQ(run_bbmmc({"x.c", "--reductions=fast"}, out, err), 1);
  EXPECT_NE(err.str().find("unknown --reductions 'fast'"), std::string::npos) << err.str();
  std::ostringstream out2, err2;
  EXPECT_EQ(run_bbmmc({"x.c", "--reduction-block=8"}, out2, err2), 1);
  EXPECT_NE(err2.str().find("needs --reductions=reassociate"), std::string::npos) << err2.str();
  std::ostringstream out3, err3;
  EXPECT_EQ(run_bbmmc({"x.c", "--reductions=reassociate", "--reduction-block=0"}, out3, err3), 1);
  EXPECT_NE(err3.str().find("--reduction-block expects"), std::string::npos) << err3.str();
}

}  // namespace
}  // namespace bbmm::compiler
