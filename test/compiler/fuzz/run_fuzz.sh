#!/usr/bin/env bash
# Builds the bbmmc libFuzzer target with clang-14 (ASan + UBSan + libFuzzer) and runs it.
# usage: test/compiler/fuzz/run_fuzz.sh [SECONDS] [extra libFuzzer flags...]
# The working corpus grows in build-compiler-fuzz/corpus (seeded from the golden inputs,
# the diagnostics inputs and test/compiler/fuzz_corpus); crashers land in
# build-compiler-fuzz/artifacts. Copy each crasher into test/compiler/fuzz_corpus/ once
# fixed: CI replays that directory (bbmmc_fuzz_corpus_test).
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
secs=${1:-60}
shift || true
build=$root/build-compiler-fuzz
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DBBMM_BUILD_FUZZERS=ON -DBBMM_SANITIZER=address -DBBMM_BUILD_BENCH=OFF -DBBMM_BUILD_TESTS=OFF \
  -DBBMM_BUILD_SAMPLES=OFF -DBBMM_ENABLE_CUDA=OFF -DBBMM_ENABLE_OPENCL=OFF >/dev/null
cmake --build "$build" -j2 --target bbmmc_fuzz
mkdir -p "$build/corpus" "$build/artifacts"
cp -n "$root"/test/compiler/golden/*.c "$root"/test/compiler/diagnostics/*.c "$build/corpus/" 2>/dev/null || true
cp -n "$root"/test/compiler/fuzz_corpus/* "$build/corpus/" 2>/dev/null || true
cd "$build"
exec ./bbmm-compiler/bbmmc_fuzz corpus -max_total_time="$secs" -timeout=25 -rss_limit_mb=2048 \
  -max_len=4096 -artifact_prefix=artifacts/ -print_final_stats=1 "$@"
