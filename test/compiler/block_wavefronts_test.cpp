// Wavefronts run inside one kernel (poly/block_wavefronts.h, --wavefront-steps=block): which
// phases become regions with a block loop, that the barrier order is the dataflow's (isl:
// no dependence joins two instances of one step with different values of the block loop),
// the note, and the driver's option. The generated programs are checked end to end
// (test/e2e/block_wavefronts; PolyBench's seidel-2d and nussinov in bench/polybench/run.sh
// and on GPUs), the CUDA kernel's text by the codegen golden wavefront_block.c.
#include <gtest/gtest.h>

#include <isl/map.h>
#include <isl/union_map.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "driver/driver.h"
#include "driver/pipeline.h"
#include "poly/block_wavefronts.h"

namespace bbmm::compiler {
namespace {

struct Analysed {
  std::unique_ptr<Program> prog;
  std::string notes;
};

Analysed analyze(const std::string& body, WavefrontSteps mode, const std::string& params) {
  const std::string text = "void f(" + params + ") {\n#pragma scop\n" + body + "#pragma endscop\n}\n";
  Diagnostics diag;
  PipelineOptions opts;
  opts.wavefront_steps = mode;
  Analysed a;
  a.prog = analyze_text(text, "wf.c", opts, diag);
  std::ostringstream os;
  diag.render(os, a.prog->sm.get());
  a.notes = os.str();
  EXPECT_FALSE(diag.has_errors()) << text << a.notes;
  return a;
}

const std::string kSeidelParams = "int steps, int n, double A[n][n]";
const std::string kSeidel =
    "  for (int t = 0; t < steps; t++)\n    for (int i = 1; i < n - 1; i++)\n"
    "      for (int j = 1; j < n - 1; j++)\n"
    "        A[i][j] = (A[i-1][j] + A[i][j-1] + A[i][j] + A[i][j+1] + A[i+1][j]) / 5.0;\n";
const std::string kIntervalsParams = "int n, int W[n], long T[n][n]";
const std::string kIntervals =
    "  for (int i = n - 1; i >= 0; i--)\n    for (int j = i + 1; j < n; j++) {\n"
    "      T[i][j] = T[i][j] > T[i + 1][j] + W[i] ? T[i][j] : T[i + 1][j] + W[i];\n"
    "      for (int k = i + 1; k < j; k++)\n"
    "        T[i][j] = T[i][j] > T[i][k] + T[k + 1][j] ? T[i][j] : T[i][k] + T[k + 1][j];\n"
    "    }\n";

// The untagged S -> T pairs of the tagged dependences "d".
isl::union_map untagged(const isl::union_map& d) {
  return isl::manage(isl_union_map_range_factor_domain(
      isl_union_map_domain_factor_domain(d.copy())));
}

// Every dependence between two instances of statement "st" of block phase "ph" at the same
// values of the region's loops outside the block loop (its serial loops and the loops of
// the region above it) has equal block-loop values: the barriers order the rest.
void expect_barrier_order(const Scop& s, const Phase& ph) {
  ASSERT_GE(ph.block_loop, 0);
  const isl::union_map deps =
      untagged(s.deps.raw).unite(untagged(s.deps.war)).unite(untagged(s.deps.waw));
  for (int st : ph.statements) {
    const Statement& x = s.statements[st];
    int pos = -1;
    for (size_t d = 0; d < x.loops.size(); ++d)
      if (x.loops[d] == ph.block_loop) pos = static_cast<int>(d);
    ASSERT_GE(pos, 0);
    for (int st2 : ph.statements) {
      const Statement& y = s.statements[st2];
      isl_space* sp = isl_space_map_from_domain_and_range(
          isl_set_get_space(x.domain.get()), isl_set_get_space(y.domain.get()));
      isl_map* same = isl_map_universe(sp);
      for (int d = 0; d < pos; ++d) same = isl_map_equate(same, isl_dim_in, d, isl_dim_out, d);
      isl::map pairs = isl::manage(isl_map_intersect(
          isl_union_map_extract_map(deps.get(), isl_map_get_space(same)), same));
      isl::map apart = isl::manage(isl_map_copy(pairs.get()));
      isl_map* diff = isl_map_universe(isl_map_get_space(pairs.get()));
      diff = isl_map_order_lt(diff, isl_dim_in, pos, isl_dim_out, pos);
      isl_map* diff2 = isl_map_universe(isl_map_get_space(pairs.get()));
      diff2 = isl_map_order_gt(diff2, isl_dim_in, pos, isl_dim_out, pos);
      isl::map bad = isl::manage(isl_map_intersect(apart.release(), isl_map_union(diff, diff2)));
      char* text = isl_map_to_str(bad.get());
      EXPECT_TRUE(bad.is_empty()) << x.name << " -> " << y.name << ": " << text;
      free(text);
    }
  }
}

TEST(BlockWavefronts, TimeStepsOfASweepBecomeOneRegionPerStep) {
  Analysed a = analyze(kSeidel, WavefrontSteps::kBlock, kSeidelParams);
  ASSERT_EQ(a.prog->scops.size(), 1u);
  const Scop& s = a.prog->scops[0];
  ASSERT_EQ(s.phases.size(), 1u);
  const Phase& ph = s.phases[0];
  EXPECT_EQ(ph.parallel_loop, -1);
  ASSERT_EQ(ph.serial_loops.size(), 1u);
  EXPECT_EQ(s.loops[ph.serial_loops[0]].c_name, "t");
  ASSERT_GE(ph.block_loop, 0);
  EXPECT_EQ(s.loops[ph.block_loop].c_name, "i");
  // The region: the wavefront loop, then i inside it.
  const Statement& st = s.statements[ph.statements[0]];
  ASSERT_EQ(st.loops.size(), 3u);
  EXPECT_EQ(st.loops[2], ph.block_loop);
  expect_barrier_order(s, ph);
  EXPECT_NE(a.notes.find("runs its steps inside one kernel per step of its enclosing serial loops"),
            std::string::npos)
      << a.notes;
  EXPECT_NE(a.notes.find("sharing loop 'i'"), std::string::npos) << a.notes;
}

TEST(BlockWavefronts, ADiagonalOutsideEveryLoopIsOneRegion) {
  Analysed a = analyze(kIntervals, WavefrontSteps::kBlock, kIntervalsParams);
  const Scop& s = a.prog->scops[0];
  int blocks = 0;
  for (const Phase& ph : s.phases) {
    if (ph.block_loop < 0) continue;
    ++blocks;
    EXPECT_TRUE(ph.serial_loops.empty());
    expect_barrier_order(s, ph);
  }
  EXPECT_EQ(blocks, 1) << a.notes;
}

int block_phases(const Analysed& a) {
  int n = 0;
  for (const Phase& ph : a.prog->scops[0].phases) n += ph.block_loop >= 0;
  return n;
}

TEST(BlockWavefronts, AutoTakesFlatStepsOnly) {
  // The default: seidel-2d's steps are one statement instance each, so they run in blocks
  // (the same phases as kBlock); the interval DP's instances hold the loop k, so its
  // diagonals stay launched one by one.
  PipelineOptions defaults;
  EXPECT_EQ(defaults.wavefront_steps, WavefrontSteps::kAuto);
  Analysed seidel = analyze(kSeidel, WavefrontSteps::kAuto, kSeidelParams);
  EXPECT_EQ(block_phases(seidel), 1) << seidel.notes;
  expect_barrier_order(seidel.prog->scops[0], seidel.prog->scops[0].phases[0]);
  Analysed intervals = analyze(kIntervals, WavefrontSteps::kAuto, kIntervalsParams);
  EXPECT_EQ(block_phases(intervals), 0) << intervals.notes;
  EXPECT_EQ(block_phases(analyze(kIntervals, WavefrontSteps::kBlock, kIntervalsParams)), 1);
}

TEST(BlockWavefronts, LaunchKeepsStepPhasesAndOnlyWavefrontsChange) {
  // --wavefront-steps=launch: one phase per wavefront step, i its parallel loop.
  Analysed a = analyze(kSeidel, WavefrontSteps::kLaunch, kSeidelParams);
  const Phase& ph = a.prog->scops[0].phases[0];
  EXPECT_EQ(ph.block_loop, -1);
  ASSERT_GE(ph.parallel_loop, 0);
  EXPECT_EQ(ph.serial_loops.size(), 2u);
  // A time loop around one parallel loop that no pass skewed (jacobi-1d's shape) keeps its
  // phases: each step is a whole array, far too much for one thread block.
  Analysed b = analyze(
      "  for (int t = 0; t < steps; t++)\n    for (int i = 1; i < n - 1; i++)\n"
      "      B[i] = A[i - 1] + A[i + 1];\n",
      WavefrontSteps::kBlock, "int steps, int n, double A[n], double B[n]");
  for (const Phase& p : b.prog->scops[0].phases) {
    EXPECT_EQ(p.block_loop, -1);
    EXPECT_GE(p.parallel_loop, 0);
  }
  EXPECT_EQ(b.notes.find("inside one kernel"), std::string::npos) << b.notes;
  // The pass itself leaves the phases of an unskewed scop alone.
  Scop copy = b.prog->scops[0];
  EXPECT_EQ(block_wavefronts(copy, WavefrontSteps::kBlock), 0);
}

TEST(BlockWavefronts, DriverChecksTheOption) {
  std::ostringstream out, err;
  EXPECT_EQ(run_bbmmc({"x.c", "--wavefront-steps=blocks"}, out, err), 1);
  EXPECT_NE(err.str().find("unknown --wavefront-steps 'blocks' (use one of: auto, launch, block)"),
            std::string::npos)
      << err.str();
}

}  // namespace
}  // namespace bbmm::compiler
