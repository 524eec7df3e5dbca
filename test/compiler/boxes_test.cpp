// Golden tests for `--emit=boxes`: every test/compiler/boxes/<case>.c has the expected
// output in <case>.boxes. A first comment line "bbmmc-args: ..." adds options (e.g.
// --partition=2d). BBMM_UPDATE_GOLDEN=1 rewrites the expected files; a mismatch prints a
// diff. Plus checks of the worked example (ARCHITECTURE.md, Appendix) on the structures.

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "driver/driver.h"
#include "driver/pipeline.h"
#include "poly/box_util.h"
#include "poly/boxes.h"
#include "poly/isl_util.h"
#include "test_util.h"

namespace bbmm::compiler {
namespace {

using testing::extra_args;
using testing::files_in;
using testing::line_diff;
using testing::read_file;

struct InBoxesDir {
  std::filesystem::path saved = std::filesystem::current_path();
  InBoxesDir() { std::filesystem::current_path(BBMM_BOXES_DIR); }
  ~InBoxesDir() { std::filesystem::current_path(saved); }
};

class BoxesGoldenTest : public ::testing::TestWithParam<std::filesystem::path> {};

TEST_P(BoxesGoldenTest, EmitBoxes) {
  InBoxesDir d;
  std::filesystem::path input = GetParam().filename();
  std::vector<std::string> args{input.string(), "--emit=boxes"};
  for (std::string& a : extra_args(read_file(input))) args.push_back(a);
  auto run = [&](int* rc) {
    std::ostringstream out, err;
    *rc = run_bbmmc(args, out, err);
    return out.str() + (err.str().empty() ? "" : "--- stderr ---\n" + err.str());
  };
  int rc = 0, rc2 = 0;
  std::string actual = run(&rc);
  EXPECT_EQ(rc, 0) << actual;
  EXPECT_EQ(actual, run(&rc2)) << "output is not deterministic";
  std::filesystem::path expected_path = input;
  expected_path.replace_extension(".boxes");
  const char* update = std::getenv("BBMM_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(expected_path, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(expected_path))
      << expected_path << " is missing; run with BBMM_UPDATE_GOLDEN=1 to create it";
  std::string expected = read_file(expected_path);
  EXPECT_TRUE(expected == actual) << "--emit=boxes of " << input << " differs (- expected, + actual):\n"
                                  << line_diff(expected, actual);
}

std::string case_name(const ::testing::TestParamInfo<std::filesystem::path>& info) {
  std::string n = info.param.stem().string();
  for (char& c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Boxes, BoxesGoldenTest, ::testing::ValuesIn(files_in(BBMM_BOXES_DIR, ".c")),
                         case_name);

// The worked example, checked on the structures (independently of the golden text):
// S1 writes B exactly [lo, hi) x [1, N-1); its flow-out is row lo when lo >= 2 and row
// hi-1 when hi <= N-2, evaluated at concrete tiles against the expected rows.
TEST(BoxesJacobi2d, WorkedExample) {
  Diagnostics diag;
  auto prog = analyze_file(std::string(BBMM_BOXES_DIR) + "/jacobi_2d.c", PipelineOptions{}, diag);
  ASSERT_FALSE(diag.has_errors());
  ASSERT_EQ(prog->scops.size(), 1u);
  const Scop& s = prog->scops[0];
  ScopBoxes bx = compute_boxes(s, BoxOptions{});
  ASSERT_EQ(bx.partitions.size(), 1u);
  EXPECT_EQ(bx.partitions[0].phases, (std::vector<int>{0, 1}));
  const PhaseBoxes& p0 = bx.phases[0];
  const ArrayBoxes* b = nullptr;
  for (const ArrayBoxes& ab : p0.arrays)
    if (s.arrays[ab.array].c_name == "B") b = &ab;
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->write_strategy, WriteStrategy::kExactBoxes);
  ASSERT_EQ(b->required.size(), 1u);
  EXPECT_EQ(b->required_mode[0], BoxAccess::kWrite);
  const int64_t N = 20;
  for (int64_t lo = 1; lo < N - 1; ++lo)
    for (int64_t hi = lo + 1; hi <= N - 1; ++hi) {
      Values v{{"T", 3}, {"N", N}, {"t", 1}, {"bbmm_lo", lo}, {"bbmm_hi", hi}};
      std::vector<CBox> want;
      if (lo >= 2) want.push_back(CBox{{lo, 1}, {lo + 1, N - 1}});
      if (hi <= N - 2 && hi - 1 != lo) want.push_back(CBox{{hi - 1, 1}, {hi, N - 1}});
      if (hi <= N - 2 && hi - 1 == lo && lo < 2) want.push_back(CBox{{hi - 1, 1}, {hi, N - 1}});
      std::vector<CBox> got;
      for (const TileBox& f : b->flow_out)
        if (auto c = eval_box(f, v)) got.push_back(*c);
      EXPECT_EQ(union_volume(got), union_volume(want)) << "lo=" << lo << " hi=" << hi;
      std::vector<CBox> both = got;
      both.insert(both.end(), want.begin(), want.end());
      EXPECT_EQ(union_volume(both), union_volume(want)) << "lo=" << lo << " hi=" << hi;
      auto w = eval_box(b->write_boxes.at(0), v);
      ASSERT_TRUE(w.has_value());
      EXPECT_EQ(w->lo, (std::vector<int64_t>{lo, 1}));
      EXPECT_EQ(w->hi, (std::vector<int64_t>{hi, N - 1}));
    }
}

// make_box under a MakeBoxMemo gives what it gives without one (bounds, guard, exact set),
// with the context of each call, also for a set met before under another context; and a
// different set (one constraint apart) is not taken for a remembered one.
TEST(MakeBoxMemo, GivesTheSameBoxesWithTheCallsContext) {
  IslContext isl;
  isl::ctx ctx = isl.ctx();
  const isl::set a(ctx, "[n, t] -> { [i, j] : t <= i < t + 4 and 0 <= j < n and i < n }");
  const isl::set b(ctx, "[n, t] -> { [i, j] : t <= i < t + 4 and 0 <= j < n - 1 and i < n }");
  const isl::set c1(ctx, "[n, t] -> { : n >= 8 and 0 <= t }");
  const isl::set c2(ctx, "[n, t] -> { : n >= 16 and 0 <= t < n }");
  auto same = [](const TileBox& x, const TileBox& y) {
    if (x.dims.size() != y.dims.size()) return false;
    for (size_t d = 0; d < x.dims.size(); ++d) {
      if (!isl_pw_aff_is_equal(x.dims[d].min.get(), y.dims[d].min.get()) ||
          !isl_pw_aff_is_equal(x.dims[d].max.get(), y.dims[d].max.get()))
        return false;
    }
    return x.guard.is_equal(y.guard) && x.set.is_equal(y.set) && x.context.is_equal(y.context);
  };
  const TileBox plain_a1 = make_box(a, c1), plain_a2 = make_box(a, c2), plain_b = make_box(b, c1);
  ASSERT_FALSE(plain_a1.set.is_equal(plain_b.set));
  {
    MakeBoxMemo memo;
    EXPECT_EQ(MakeBoxMemo::active(), &memo);
    EXPECT_TRUE(same(make_box(a, c1), plain_a1));
    EXPECT_TRUE(same(make_box(a, c2), plain_a2));  // remembered, with this call's context
    EXPECT_TRUE(same(make_box(b, c1), plain_b));   // not taken for a's
    {
      MakeBoxMemo inner;  // shares the outer memo
      EXPECT_EQ(MakeBoxMemo::active(), &memo);
    }
    EXPECT_EQ(MakeBoxMemo::active(), &memo);
  }
  EXPECT_EQ(MakeBoxMemo::active(), nullptr);
}

}  // namespace
}  // namespace bbmm::compiler
