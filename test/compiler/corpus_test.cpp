// Replays the fuzz corpus (test/compiler/fuzz_corpus: crashers, hangs and slow inputs
// found by libFuzzer, kept as regressions) through the front end exactly as the fuzz
// target does: every input ends in a model or in clean diagnostics.

#include <gtest/gtest.h>

#include <sstream>

#include "driver/pipeline.h"
#include "poly/print.h"
#include "test_util.h"

namespace bbmm::compiler {
namespace {

class CorpusTest : public ::testing::TestWithParam<std::filesystem::path> {};

TEST_P(CorpusTest, CleanResult) {
  std::string text = testing::read_file(GetParam());
  Diagnostics diag;
  PipelineOptions opts;
  opts.max_isl_operations = 300'000;  // as in fuzz/fuzz_frontend.cpp
  auto prog = analyze_text(text, "fuzz.c", opts, diag);
  std::ostringstream os;
  diag.render(os, prog->sm.get());
  EXPECT_FALSE(diag.has_internal_error()) << os.str();
  if (!diag.has_errors()) {
    EXPECT_FALSE(prog->scops.empty());
    for (const Scop& s : prog->scops) {
      print_model(os, s);
      print_deps(os, s);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusTest,
                         ::testing::ValuesIn(testing::files_in(BBMM_CORPUS_DIR, "")),
                         [](const auto& info) { return testing::test_name(info.param.filename()); });

}  // namespace
}  // namespace bbmm::compiler
