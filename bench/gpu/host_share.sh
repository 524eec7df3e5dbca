#!/usr/bin/env bash
# libbbmm's share of jacobi2d_cuda's run (manager_seconds / seconds) and the calling thread's
# time per tile, for several builds of the sample side by side, or one build under several
# settings, interleaved so that they see the same machine: the A/B of a change to the tile
# path (issue 10). Every run is verified by the sample itself.
#
#   bash .gpu/host_share.sh STAGE BIN [BIN...]     (on the GPU machine; BIN in STAGE/bin)
#   HOST_SHARE_ENVS="BBMM_TILE_PLANS=1 BBMM_TILE_PLANS=0" bash .gpu/host_share.sh .gpu jacobi2d_cuda
#
# HOST_SHARE_REPS  runs of each build and device count (default 6)
# HOST_SHARE_DEVS  the device counts (default "1 2"); with one GPU, the counts above 1 are
#                  logical devices of it (BBMM_CUDA_DEVICES_PER_GPU), which exercise the
#                  same flow-outs between devices
# HOST_SHARE_ARGS  the sample's arguments (default: n=16386, 100 steps, 2 tiles per device)
# HOST_SHARE_ENVS  settings to compare, space-separated, each VAR=VALUE[,VAR=VALUE...] set for
#                  the run ("-": none; default "-")
# Writes $OUT/host_share.txt (the RESULT lines) and prints a table of medians last.
set -uo pipefail
stage="$(cd "${1:?usage: host_share.sh STAGE BIN [BIN...]}" && pwd)"
shift
(( $# > 0 )) || { echo "host_share.sh: name at least one build in $stage/bin" >&2; exit 2; }
export LD_LIBRARY_PATH="$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out="${OUT:-/tmp}"
reps="${HOST_SHARE_REPS:-6}"
read -r -a devs <<<"${HOST_SHARE_DEVS:-1 2}"
read -r -a args <<<"${HOST_SHARE_ARGS:---n 16386 --steps 100 --tiles-per-device 2}"
read -r -a envs <<<"${HOST_SHARE_ENVS:--}"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
(( ngpu > 0 )) || ngpu=1
log="$out/host_share.txt"
: > "$log"
for ((r = 1; r <= reps; r++)); do
  for b in "$@"; do
    for e in "${envs[@]}"; do
      set_env=()
      [[ "$e" == - ]] || IFS=',' read -r -a set_env <<<"$e"
      for g in "${devs[@]}"; do
        per=1
        (( g > ngpu )) && per=$(( (g + ngpu - 1) / ngpu ))
        line=$(env "${set_env[@]}" BBMM_CUDA_DEVICES_PER_GPU=$per timeout 120 "$stage/bin/$b" \
               --devices "$g" "${args[@]}" 2>&1 | grep '^RESULT')
        echo "bin=$b env=$e per_gpu=$per ${line:-RESULT missing}" | tee -a "$log"
      done
    done
  done
done
python3 - "$log" <<'PY'
import statistics as st
import sys
rows = {}
for line in open(sys.argv[1]):
    kv = dict(t.split('=', 1) for t in line.split() if '=' in t)
    if 'seconds' not in kv:
        continue
    tiles = 2 * int(kv['steps']) * int(kv['gpus']) * int(kv['tiles_per_gpu'])
    rows.setdefault((kv['bin'], kv.get('env', '-'), int(kv['gpus']), kv['per_gpu']), []).append(
        (float(kv['manager_seconds']), float(kv['seconds']), tiles, kv['verified'] == '1'))
print("\n| build | setting | devices (per GPU) | runs | libbbmm % median (min-max) | us per tile median (min-max) | run s median | verified |")
print("|---|---|---|---|---|---|---|---|")
for (b, e, g, per), v in sorted(rows.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1])):
    share = [100 * m / s for m, s, _, _ in v]
    us = [1e6 * m / t for m, _, t, _ in v]
    print(f"| {b} | {e} | {g} ({per}) | {len(v)} | {st.median(share):.2f} ({min(share):.2f}-{max(share):.2f}) "
          f"| {st.median(us):.2f} ({min(us):.2f}-{max(us):.2f}) | {st.median([s for _, s, _, _ in v]):.3f} "
          f"| {sum(ok for *_, ok in v)}/{len(v)} |")
PY
