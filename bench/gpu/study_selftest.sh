#!/usr/bin/env bash
# study.selftest (CTest, no GPU): bench/gpu/study.sh end to end on the host backend's
# simulated devices at the e2e tests' sizes (STUDY_SMALL=1), from the host samples of a
# build tree, on 4 simulated devices (GPU counts 1, 2, 4). Every sample must have its
# strong runs on 1, 2 and 4 devices, its data-scaling runs (half the work on 1 device,
# twice it on 4), its traced runs on 1, 2 and 4 devices and (stencils) long and staged runs, each
# verified (PASSED), the traced ones with a time breakdown, the long runs again under two
# variants (STUDY_VARIANTS), and the report must print all its tables with a 4-device column.
#   study_selftest.sh BUILD_SAMPLES_DIR SCRATCH_DIR
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bins="$1" scratch="$2"
rm -rf "$scratch" && mkdir -p "$scratch/out" || exit 1
STUDY_SMALL=1 STUDY_BACKEND=host STUDY_GPUS=4 STUDY_BIN_DIR="$bins" STUDY_BIN_SUFFIX= \
  STUDY_CACHE="$scratch/cache" OUT="$scratch/out" \
  STUDY_VARIANTS="alt:BBMM_TILE_ORDER=alternate edges:BBMM_TILES_PER_DEVICE=3,BBMM_EDGE_TILES=4" \
  bash "$here/study.sh" "$here" refs scaling breakdown long variants staged > "$scratch/stdout" 2>&1
rc=$?
res="$scratch/out/study_results.txt"
fail() { echo "study_selftest: $1"; cat "$scratch/stdout"; exit 1; }
(( rc == 0 )) || fail "study.sh exited with $rc"
for s in heat2d fdtd2d heat3d jacobi1d floyd lu adi mvt gemm bscholes; do
  for c in "config=strong gpus=1" "config=strong gpus=2" "config=strong gpus=4" \
           "config=data:0.[0-9]* gpus=1" "config=data:[12].[0-9]* gpus=4" \
           "config=trace gpus=1" "config=trace gpus=2" "config=trace gpus=4"; do
    grep -q "^STUDY sample=$s $c .*verdict=PASSED" "$res" || fail "$s: no PASSED run with '$c'"
  done
  grep "^STUDY sample=$s config=trace" "$res" | grep -q "bd_compute=" ||
    fail "$s: the traced run has no time breakdown"
done
for s in heat2d fdtd2d heat3d jacobi1d; do
  for c in "config=long gpus=1" "config=long gpus=4" "config=trace:long gpus=4"; do
    grep -q "^STUDY sample=$s $c .*verdict=PASSED" "$res" || fail "$s: no PASSED run with '$c'"
  done
  grep "^STUDY sample=$s config=staged gpus=4" "$res" | grep -q "verdict=PASSED.* bytes_peer=0 " ||
    fail "$s: the staged run did not verify or copied between devices directly"
  for c in "config=variant:alt gpus=4" "config=variant:edges gpus=4" "config=variant:edges gpus=1"; do
    grep "^STUDY sample=$s $c " "$res" | grep -q "verdict=PASSED.* bd_run=" ||
      fail "$s: no verified, traced run with '$c'"
  done
done
grep -q "^| heat2d | 4 | [0-9.]* | [0-9.]* | [0-9.]* | .* | PASSED | [0-9.]* | [0-9.]* |" \
  "$scratch/out/study.md" || fail "the variants table has no heat2d row on 4 devices"
grep -q "verdict=FAILED\|verdict=none" "$res" && fail "a run did not verify"
for t in "Strong scaling" "Data scaling" "Time breakdown" "Variants" "Allocation per GPU" "Peer flow-out" \
         "Baselines"; do
  grep -q "### $t" "$scratch/out/study.md" || fail "the report has no '$t' table"
done
grep -q "speed-up 1 -> 4" "$scratch/out/study.md" || fail "the report has no 1 -> 4 speed-up"
grep -q "### Strong scaling with 4 times the steps" "$scratch/out/study.md" ||
  fail "the report has no long-run table"
grep -q "^| heat2d (long) | 4 | " "$scratch/out/study.md" || fail "no breakdown of the long runs"
grep -q "^| heat2d | 34 6 | .* | 48 6 | .* | 66 6 | " "$scratch/out/study.md" ||
  fail "the data-scaling table has no heat2d series 34 -> 48 -> 66"
rm -rf "$scratch"
echo "study_selftest: every sample verified in every configuration; report complete"
