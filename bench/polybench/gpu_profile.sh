#!/usr/bin/env bash
# Where the time of staged PolyBench programs goes on GPUs: runs each kernel staged by
# gpu_stage.sh on 1 GPU and on 2 with BBMM_STATS=json and prints, per run, PolyBench's time
# and libbbmm's figures inside it: the runtime's creation (and its phases on CUDA), pinning
# and unpinning the host arrays, and the calling thread's time in the tile calls. The
# array dumps are not checked here (gpu_run.sh does that).
#
#   bash .pb/gpu_profile.sh [STAGED_DIR] [KERNEL...]     (default: a few kernels)
#
# Environment: PB_PROFILE_ENV="VAR=value ..." is added to every run (e.g.
# CUDA_MODULE_LOADING=EAGER or BBMM_CUDA_HOST_COPIES=pinned|staged, to compare); PB_PROFILE_REPEAT runs
# each configuration that many times (default 1); OUT: where profile.tsv goes (default
# /tmp/pb-profile-out). Prints a Markdown table last.
set -uo pipefail
export LC_ALL=C

staged="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
shift || true
kernels=("$@")
[[ ${#kernels[@]} -gt 0 ]] || kernels=(gemm jacobi-2d atax heat-3d 2mm covariance lu)
out="${OUT:-/tmp/pb-profile-out}"
repeat="${PB_PROFILE_REPEAT:-1}"
die() { echo "gpu_profile.sh: $*" >&2; exit 2; }
[[ -f "$staged/oracle.tsv" ]] || die "no oracle.tsv in '$staged' (the folder gpu_stage.sh staged)"
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "PB_PROFILE_REPEAT must be a count, not '$repeat'"
command -v python3 >/dev/null || die "python3 is needed to read the statistics"
mkdir -p "$out" || die "cannot create '$out'"
target="$(awk -F'\t' '$1 == "# target" {print $2}' "$staged/oracle.tsv")"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pb-profile.XXXXXX")" || die "mktemp failed"
trap 'rm -rf "$tmp"' EXIT
if [[ -d "$staged/bin" ]]; then
  bin="$staged/bin"
else
  xz -dc "$staged/bin.tar.xz" | tar -C "$tmp" -xf - || die "unpacking bin.tar.xz failed"
  bin="$tmp/bin"
fi
export LD_LIBRARY_PATH="$staged/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
while read -r v; do unset "$v"; done < <(compgen -e | grep '^BBMM_' || true)
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
[[ $gpus -ge 1 ]] || gpus=1

tsv="$out/profile.tsv"
printf 'kernel\tgpus\tenv\tpolybench_s\twall_s\tcreate_s\tpin_s\tunpin_s\tmanager_s\ttiles\tcreated\n' >"$tsv"
for k in "${kernels[@]}"; do
  prog="$bin/${k}_$target"
  [[ -x "$prog" ]] || { echo "no program $prog" >&2; continue; }
  for n in 1 2; do
    [[ $n -le $gpus ]] || continue
    for ((r = 0; r < repeat; ++r)); do
      t0=$(date +%s.%N)
      # shellcheck disable=SC2086 # PB_PROFILE_ENV is a list of assignments
      env BBMM_BACKEND="$target" BBMM_STATS=json \
        CUDA_VISIBLE_DEVICES="$(seq -s, 0 $((n - 1)))" ${PB_PROFILE_ENV:-} \
        timeout -k 5 120 "$prog" >"$tmp/out" 2>/dev/null
      rc=$?
      t1=$(date +%s.%N)
      python3 - "$tmp/out" "$k" "$n" "${PB_PROFILE_ENV:--}" "$t0" "$t1" "$rc" >>"$tsv" <<'EOF'
import json, sys
path, k, n, env, t0, t1, rc = sys.argv[1:]
wall = float(t1) - float(t0)
lines = open(path).read().splitlines()
pb = next((l.strip() for l in lines if l.strip() and l.strip()[0].isdigit()), "?")
st = next((json.loads(l) for l in lines if l.startswith("{")), None)
if st is None or rc != "0":
    print(f"{k}\t{n}\t{env}\t{pb}\t{wall:.3f}\t?\t?\t?\t?\t?\trc {rc}")
else:
    t = st["total"]
    print(f"{k}\t{n}\t{env}\t{pb}\t{wall:.3f}\t{t['create_seconds']:.3f}\t"
          f"{t['host_pin_seconds']:.3f}\t{t['host_unpin_seconds']:.3f}\t"
          f"{t['manager_seconds']:.3f}\t{t['tiles']}\t{st.get('created', '')}")
EOF
    done
  done
done
echo "| kernel | GPUs | env | PolyBench s | wall s | create s | pin s | unpin s | manager s | tiles | creation by phase |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"
tail -n +2 "$tsv" | awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11}'
