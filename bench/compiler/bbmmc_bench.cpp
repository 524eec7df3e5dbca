// Parse + model + dependences for each golden input (the preprocessor runs once,
// outside the timed region). Target: well under 1 s per input.
//   build-compiler/bench/compiler/bbmmc_bench [--benchmark_filter=adi]

#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "driver/pipeline.h"

namespace {

using bbmm::compiler::Diagnostics;
using bbmm::compiler::PipelineOptions;

void BM_Analyze(benchmark::State& state, std::string file, std::string pp) {
  size_t statements = 0, loops = 0;
  for (auto _ : state) {
    Diagnostics diag;
    auto prog = bbmm::compiler::analyze_text(pp, file, PipelineOptions(), diag);
    if (diag.has_errors()) {
      state.SkipWithError("input has errors");
      break;
    }
    statements = loops = 0;
    for (const auto& s : prog->scops) {
      statements += s.statements.size();
      loops += s.loops.size();
    }
    benchmark::DoNotOptimize(prog);
  }
  state.counters["statements"] = static_cast<double>(statements);
  state.counters["loops"] = static_cast<double>(loops);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> inputs;
  for (const auto& e : std::filesystem::directory_iterator(BBMM_GOLDEN_DIR))
    if (e.path().extension() == ".c") inputs.push_back(e.path());
  std::sort(inputs.begin(), inputs.end());
  for (const auto& p : inputs) {
    std::string out, err;
    if (!bbmm::compiler::run_preprocessor("cc -E", {}, p.string(), out, err)) continue;
    benchmark::RegisterBenchmark(("analyze/" + p.stem().string()).c_str(), BM_Analyze, p.string(), out)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
