#!/usr/bin/env bash
# Weak scaling over MPI ranks on the CPU (issue 14): the bbmmc samples' <name>_mpi builds
# (host backend, BBMM_DEVICES host devices per rank) under mpirun with 1..R ranks, the
# data growing with the rank count (heat2d: n^2 ~ ranks; jacobi1d: n ~ ranks), every run
# verified by rank 0 against the sequential program (computed once beforehand and cached;
# the timed call follows a warm-up call that creates the runtime). Prints a markdown table: the
# generated function's seconds, the weak-scaling efficiency t(1) / t(R), and the bytes
# rank 0 sent and received (its statistics).
#   bash bench/mpi/weak_scaling.sh [BIN_DIR] [MAX_RANKS]   (default build/default/samples, 4)
# BIN_DIR holds <name> and <name>_mpi for heat2d and jacobi1d (bench/gpu/stage.sh stages
# them in .gpu/bin for the GPU machine's CPUs).
# On a machine with fewer cores than ranks x (1 + devices) threads the ranks share cores:
# say so next to the numbers.
set -euo pipefail
bin_dir="${1:-build/default/samples}"
max="${2:-4}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export BBMM_BACKEND=host BBMM_DEVICES="${BBMM_DEVICES:-1}" BBMM_STATS=json BBMM_HOST_POISON=0
# The sequential results are computed once, before the timed runs (so that no rank is
# still running its reference while another times the generated function): the runs
# verify against the cache.
cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT
export BBMM_SAMPLE_CACHE="$cache" BBMM_SAMPLE_WARMUP=1
mpiexec="${MPIEXEC:-mpirun}"
echo "| sample | ranks x devices | size | bbmmc s | efficiency t(1)/t(R) | rank 0 sent MiB | rank 0 received MiB | verified |"
echo "|---|---|---|---|---|---|---|---|"
for sample in heat2d jacobi1d; do
  bin="$bin_dir/${sample}_mpi"
  [[ -x "$bin" ]] || { echo "weak_scaling.sh: no $bin (build with BBMM_ENABLE_MPI)" >&2; exit 1; }
  t1=""
  for ((r = 1; r <= max; ++r)); do
    case "$sample" in
      heat2d) args="$(python3 -c "import math; print(round(1024 * math.sqrt($r)), 20)")" ;;
      jacobi1d) args="$((1000000 * r)) 50" ;;
    esac
    BBMM_SAMPLE_REFERENCE=only "$bin_dir/$sample" $args >/dev/null
    out="$("$mpiexec" --oversubscribe -np "$r" "$bin" $args 2>&1)" || true
    t="$(sed -n 's/.*: sequential [0-9.]* s, bbmmc \([0-9.]*\) s.*/\1/p' <<<"$out" | head -1)"
    verdict="$(sed -n 's/.*verification against the sequential program: \([A-Z]*\).*/\1/p' <<<"$out" | head -1)"
    stats="$(grep -o '"total":{[^}]*}' <<<"$out" | head -1)"
    sent="$(sed -n 's/.*"bytes_sent_ranks":\([0-9]*\).*/\1/p' <<<"$stats")"
    recv="$(sed -n 's/.*"bytes_received_ranks":\([0-9]*\).*/\1/p' <<<"$stats")"
    [[ -n "$t1" ]] || t1="$t"
    python3 - "$sample" "$r" "$BBMM_DEVICES" "$args" "$t" "$t1" "${sent:-0}" "${recv:-0}" "${verdict:-FAILED}" <<'PY'
import sys
s, r, d, args, t, t1, sent, recv, v = sys.argv[1:]
eff = float(t1) / float(t) if t and t1 else 0
print(f"| {s} | {r} x {d} | {args} | {float(t or 0):.4f} | {eff:.2f} | {int(sent) / 2**20:.2f} | {int(recv) / 2**20:.2f} | {v} |")
PY
  done
done
