// Operands first (codegen/kernel_codegen.h, rewrite_statement with "operand_loads"): a
// statement whose value calls a function loads the reads that C evaluates on every
// evaluation into locals before it, and only those. The expectations are C's rules, spelled
// out per statement: reads under a branch of ?: or the right of && and || may not be
// evaluated (loading them early could leave the array), the written element of an
// assignment is not a read, and a statement without a call is printed unchanged.

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "codegen/kernel_codegen.h"
#include "driver/pipeline.h"

namespace bbmm::compiler {
namespace {

struct Printed {
  std::vector<std::string> loads;
  std::string statement;
};

// Each statement of the one scop of "body" (inside `for (i = 1; i < n; i++)` over arrays
// A, B, C of n doubles), printed with operands first and accesses spelled as in the source.
std::vector<Printed> print(const std::string& body) {
  const std::string src =
      "double exp(double); double sqrt(double); double log(double);\n"
      "void f(int n, double A[n], double B[n], double C[n]) {\n"
      "  int i;\n"
      "#pragma scop\n"
      "  for (i = 1; i < n; i++) {\n" +
      body +
      "  }\n"
      "#pragma endscop\n"
      "}\n";
  Diagnostics diag;
  PipelineOptions opts;
  auto prog = analyze_text(src, "operands.c", opts, diag);
  std::ostringstream os;
  diag.render(os, prog->sm.get());
  EXPECT_FALSE(diag.has_errors()) << os.str();
  std::vector<Printed> out;
  if (diag.has_errors() || prog->scops.size() != 1) return out;
  const Scop& scop = prog->scops[0];
  const AccessPrinter spell = [&](const Access& acc, const std::vector<std::string>& subs) {
    std::string s = scop.arrays[acc.array].c_name;
    for (const std::string& x : subs) s += "[" + x + "]";
    return s;
  };
  for (size_t s = 0; s < scop.statements.size(); ++s) {
    Printed p;
    p.statement = rewrite_statement(scop, static_cast<int>(s), spell, &p.loads);
    out.push_back(p);
  }
  return out;
}

TEST(OperandLoads, ReadsOfACallingStatementComeFirstOncePerAccess) {
  const auto p = print("    B[i] = exp(A[i]) + A[i] * C[i - 1];\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].loads, (std::vector<std::string>{"const auto bbmm_v0 = A[i];",
                                                  "const auto bbmm_v1 = C[i - 1];"}));
  EXPECT_EQ(p[0].statement, "B[i] = exp(bbmm_v0) + bbmm_v0 * bbmm_v1;");
}

TEST(OperandLoads, StatementsWithoutCallsAreUnchanged) {
  const auto p = print("    B[i] = A[i] + A[i - 1] * C[i];\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_TRUE(p[0].loads.empty());
  EXPECT_EQ(p[0].statement, "B[i] = A[i] + A[i - 1] * C[i];");
}

TEST(OperandLoads, ConditionalReadsStayWhereTheyAre) {
  const auto p = print(
      "    B[i] = A[i] > 0 ? sqrt(A[i - 1]) : C[i];\n"
      "    C[i] = (A[i] > 1 && log(B[i - 1]) > 0) || sqrt(B[i]) > 2 ? 1.0 : 0.0;\n");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].loads, (std::vector<std::string>{"const auto bbmm_v0 = A[i];"}));
  EXPECT_EQ(p[0].statement, "B[i] = bbmm_v0 > 0 ? sqrt(A[i - 1]) : C[i];");
  EXPECT_EQ(p[1].loads, (std::vector<std::string>{"const auto bbmm_v0 = A[i];"}));
  EXPECT_EQ(p[1].statement,
            "C[i] = (bbmm_v0 > 1 && log(B[i - 1]) > 0) || sqrt(B[i]) > 2 ? 1.0 : 0.0;");
}

TEST(OperandLoads, TheWrittenElementIsNotLoadedButItsOtherReadsAre) {
  const auto p = print("    C[i] += sqrt(A[i]) * C[i];\n    A[i] = sqrt(A[i]);\n");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].loads, (std::vector<std::string>{"const auto bbmm_v0 = A[i];",
                                                  "const auto bbmm_v1 = C[i];"}));
  EXPECT_EQ(p[0].statement, "C[i] += sqrt(bbmm_v0) * bbmm_v1;");
  EXPECT_EQ(p[1].loads, (std::vector<std::string>{"const auto bbmm_v0 = A[i];"}));
  EXPECT_EQ(p[1].statement, "A[i] = sqrt(bbmm_v0);");
}

TEST(OperandLoads, WithoutTheOptionNothingIsLoaded) {
  Diagnostics diag;
  PipelineOptions opts;
  auto prog = analyze_text(
      "double exp(double);\nvoid f(int n, double A[n]) {\n  int i;\n#pragma scop\n"
      "  for (i = 0; i < n; i++) A[i] = exp(A[i]);\n#pragma endscop\n}\n",
      "plain.c", opts, diag);
  ASSERT_FALSE(diag.has_errors());
  ASSERT_EQ(prog->scops.size(), 1u);
  const Scop& scop = prog->scops[0];
  EXPECT_EQ(rewrite_statement(scop, 0,
                              [](const Access&, const std::vector<std::string>& subs) {
                                return "A[" + subs[0] + "]";
                              }),
            "A[i] = exp(A[i]);");
}

}  // namespace
}  // namespace bbmm::compiler
