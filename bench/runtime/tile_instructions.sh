#!/usr/bin/env bash
# Instructions the calling thread executes per tile on the CUDA tile path, by API call,
# counted by callgrind over cuda_fake_tile_bench (the fake CUDA runtime: no GPU needed).
# Only the benchmark's timed steps are counted (not its warm-up), per tile it ran in them.
# On the GPU machines the calling thread's time per tile mostly follows this count (0.23-0.27
# us per 1,000 instructions on the H200 host, twenty-first session), and unlike a timing on a
# shared machine the count moves little from run to run (two devices: about 1%; one: up to
# 5%): a yardstick for changes to the tile path (issue 10). What it does not see is the cost
# of cache lines moving between the calling thread and the issue workers (the enqueue's main
# cost on an H200 host, twenty-third session): BBMM_CALL_PROFILE measures that. Needs
# valgrind (a developer tool, not a dependency).
#
#   bash bench/runtime/tile_instructions.sh [BUILD_DIR] [GPUS]   (default build/default, 2)
set -euo pipefail
build="${1:-build/default}"
gpus="${2:-2}"
bench="$build/bench/runtime/cuda_fake_tile_bench"
[[ -x "$bench" ]] || { echo "tile_instructions.sh: $bench not built (CUDA toolkit needed)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "tile_instructions.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Only the calls of the timed steps (timed_step, not the warm-up) are counted.
valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" --collect-atstart=no \
  '--toggle-collect=*timed_step*' "$bench" "--benchmark_filter=gpus:$gpus/lag_us:0" \
  --benchmark_min_time=0.1 >/dev/null 2>"$tmp/err"
callgrind_annotate --inclusive=yes --tree=calling "$tmp/cg.out" >"$tmp/tree" 2>/dev/null
python3 - "$tmp/tree" "$gpus" "$tmp/err" <<'PY'
import re
import sys
text = open(sys.argv[1]).read()
total = int(re.search(r"^\s*([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", text, re.M).group(1).replace(",", ""))
# The tiles of the timed steps, as the benchmark counted them.
tiles = int(re.search(r"timed tiles (\d+)", open(sys.argv[3]).read()).group(1))
calls = {}
# Each call appears under its caller once per spelling of its file: keep the largest.
for m in re.finditer(r"^\s*([\d,]+) \([ \d.]+%\)\s+>\s+\S*c_api\.cpp:(bbmm_tile_\w+) \(([\d,]+)x\)", text, re.M):
    ir, n = int(m.group(1).replace(",", "")), int(m.group(3).replace(",", ""))
    if ir > calls.get(m.group(2), (0, 0))[0]:
        calls[m.group(2)] = (ir, n)
print(f"cuda_fake_tile_bench, {sys.argv[2]} device(s): {tiles} timed tiles, {total // tiles} instructions per tile")
# (callgrind counts the calls outside the collected steps too: only the instructions are
# per timed tile.)
print("| call | instructions per tile |")
print("|---|---|")
try:
    for name, (ir, n) in sorted(calls.items(), key=lambda kv: -kv[1][0]):
        print(f"| {name[10:]} | {ir // tiles} |")
except BrokenPipeError:  # (piped into head)
    pass
PY
