#!/usr/bin/env bash
# Stages the sample report (bbmm_sample_report, the host-backend samples and the
# shared libraries a machine without isl/Abseil lacks) in .report/ for a run on a
# machine with more cores (the device tool), where the devices' worker threads do
# not preempt the host thread and the time in libbbmm is measured cleanly:
#   bash bench/e2e/stage_report.sh [BUILD_DIR]    # default build/default
#   # there, from the repository root, with carry [".report"]:
#   LD_LIBRARY_PATH=.report/lib BBMM_SAMPLES_BIN_DIR=.report/bin .report/bin/bbmm_sample_report
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build/default}"
samples=(floyd heat2d fdtd2d heat3d lu adi mvt bscholes gemm jacobi1d)
cmake --build "$build" -j2 --target bbmm_sample_report "${samples[@]}"
rm -rf "$root/.report"
mkdir -p "$root/.report/bin" "$root/.report/lib"
for f in "$build/bench/e2e/bbmm_sample_report" "${samples[@]/#/$build/samples/}"; do
  cp "$f" "$root/.report/bin/"
  strip --strip-debug "$root/.report/bin/$(basename "$f")"
  ldd "$f" | awk '/libabsl|libisl|libgmp/ {print $3}' | xargs -r -I{} cp -L {} "$root/.report/lib/"
done
du -sh "$root/.report"
