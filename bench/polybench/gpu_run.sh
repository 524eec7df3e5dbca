#!/usr/bin/env bash
# Runs the PolyBench kernels staged by gpu_stage.sh on a GPU machine, which builds nothing:
# each kernel's program with BBMM_BACKEND=cuda on 1 GPU (CUDA_VISIBLE_DEVICES=0) and, when
# there are 2, on 2 GPUs (CUDA_VISIBLE_DEVICES=0,1), the cheapest kernels (the oracle's time)
# first, each under timeout; its array dump (stderr) streamed into md5sum and compared with
# the oracle's md5, its time taken from stdout (POLYBENCH_TIME). Prints a Markdown table last.
#
#   bash .pb/gpu_run.sh [STAGED_DIR]      (default: the folder of this script)
#
# Environment:
#   PB_GPU_TIMEOUT   seconds per run (default 120)
#   PB_GPU_BUDGET_S  seconds for everything (default 500); the runs left when it is spent are
#                    reported as skipped, and no run is given more than what is left of it.
#                    Kernels with a loop nest that bbmmc runs serially (build.tsv) run last,
#                    and not on 2 GPUs once they timed out on 1.
#   PB_GPU_KERNELS   only these kernels, comma-separated (default: every staged kernel)
#   PB_GPU_ENV       "VAR=value ..." added to every run (e.g. BBMM_SPLIT=step), after the
#                    BBMM_* variables are unset
#   PB_GPU_BACKEND   cuda (default), or host for a dry run without a GPU (binaries staged with
#                    gpu_stage.sh --target=host; BBMM_DEVICES=1 and 2 instead of
#                    CUDA_VISIBLE_DEVICES)
#   OUT              where the results go (default /tmp/pb-gpu-out): pb_gpu.log (every command,
#                    the first lines of stderr of any run that fails), pb_gpu.tsv, pb_gpu.md
# Inherited BBMM_* variables are unset: only what this script sets reaches the programs.
# Exit status: 0 every run verified; 1 a run did not (wrong, timeout, error, skipped, no
# binary or no oracle); 2 a setup error.
set -uo pipefail
export LC_ALL=C  # the decimal point of the times

staged="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
timeout_s="${PB_GPU_TIMEOUT:-120}"
budget_s="${PB_GPU_BUDGET_S:-500}"
backend="${PB_GPU_BACKEND:-cuda}"
out="${OUT:-/tmp/pb-gpu-out}"
start=$SECONDS
die() { echo "gpu_run.sh: $*" >&2; exit 2; }
[[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || die "PB_GPU_TIMEOUT must be seconds, not '$timeout_s'"
[[ "$budget_s" =~ ^[1-9][0-9]*$ ]] || die "PB_GPU_BUDGET_S must be seconds, not '$budget_s'"
[[ $backend == cuda || $backend == host ]] || die "PB_GPU_BACKEND must be cuda or host, not '$backend'"
[[ -f "$staged/oracle.tsv" ]] || die "no oracle.tsv in '$staged' (the folder gpu_stage.sh staged)"
staged="$(cd "$staged" && pwd)"
mkdir -p "$out" || die "cannot create '$out'"
log_f="$out/pb_gpu.log"
tsv_f="$out/pb_gpu.tsv"
md_f="$out/pb_gpu.md"
: >"$log_f"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pb-gpu.XXXXXX")" || die "mktemp failed"
trap 'rm -rf "$tmp"' EXIT
while read -r v; do unset "$v"; done < <(compgen -e | grep '^BBMM_' || true)
logln() { printf '%s\n' "$*" >>"$log_f"; }

# --- The oracle table: "# dataset<TAB>SIZE", "# target<TAB>T", then kernel md5 seconds status ---
dataset="$(awk -F'\t' '$1 == "# dataset" {print $2}' "$staged/oracle.tsv")"
target="$(awk -F'\t' '$1 == "# target" {print $2}' "$staged/oracle.tsv")"
[[ -n "$target" ]] || die "oracle.tsv names no target"
if [[ $backend == host && $target != host ]]; then
  die "PB_GPU_BACKEND=host needs programs staged with gpu_stage.sh --target=host (these are --target=$target)"
fi
# build.tsv: kernel, built, serial (bbmmc's note that a loop nest runs serially, as one tile
# on one device, i.e. one GPU thread, or -).
declare -A serial=()
if [[ -f "$staged/build.tsv" ]]; then
  while IFS=$'\t' read -r k _ note; do
    [[ -n "$note" && "$note" != - ]] && serial[$k]="$note"
  done < <(tail -n +2 "$staged/build.tsv")
fi
declare -A o_md5=() o_secs=() o_status=()
kernels=()
later=()
# The cheap kernels first: by the oracle's time, those without one last; the kernels with a
# serial loop nest after all the others (at LARGE, some run for hours on one GPU thread).
only="${PB_GPU_KERNELS:-}"
while IFS=$'\t' read -r k md5 secs status; do
  [[ -z "$only" || ",$only," == *",$k,"* ]] || continue
  if [[ -n "${serial[$k]:-}" ]]; then later+=("$k"); else kernels+=("$k"); fi
  o_md5[$k]="$md5"; o_secs[$k]="$secs"; o_status[$k]="$status"
done < <(awk -F'\t' '!/^#/ && $1 != "kernel" && NF >= 4' "$staged/oracle.tsv" |
           sort -t$'\t' -k3,3g -k1,1 | awk -F'\t' '$3 != "-"'
         awk -F'\t' '!/^#/ && $1 != "kernel" && NF >= 4 && $3 == "-"' "$staged/oracle.tsv")
kernels+=("${later[@]}")
nk=${#kernels[@]}
(( nk > 0 )) || die "oracle.tsv lists no kernel"

# --- The programs: bin/, or bin.tar.xz unpacked into a temporary folder ---
bin="$staged/bin"
if [[ ! -d "$bin" && -f "$staged/bin.tar.xz" ]]; then
  if command -v xz >/dev/null; then
    xz -dc "$staged/bin.tar.xz" | tar -C "$tmp" -xf - || die "unpacking bin.tar.xz failed"
  else
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' \
      "$staged/bin.tar.xz" "$tmp" || die "unpacking bin.tar.xz failed (no xz, python3 failed)"
  fi
  bin="$tmp/bin"
fi
[[ -d "$bin" ]] || die "no bin/ or bin.tar.xz in '$staged'"
export LD_LIBRARY_PATH="$staged/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# --- GPUs ---
if [[ $backend == cuda ]]; then
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  if [[ $ngpu -eq 0 ]]; then
    ngpu=$(find /dev -maxdepth 1 -name 'nvidia[0-9]*' 2>/dev/null | wc -l)
  fi
  (( ngpu > 0 )) || die "no GPU found (nvidia-smi -L lists none, no /dev/nvidia<N>)"
else
  ngpu=2  # simulated devices of the host backend
fi
configs=(1)
(( ngpu >= 2 )) && configs+=(2)
{
  echo "== $(date -u) on $(hostname); staged: $staged ($dataset, --target=$target)"
  head -n 2 "$staged/oracle.tsv"
  echo "backend $backend; $ngpu $([[ $backend == cuda ]] && echo GPU || echo "simulated device")(s); timeout ${timeout_s}s per run; budget ${budget_s}s; $(nproc) CPUs"
  [[ $backend == cuda ]] && nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv 2>&1
  first="$(find "$bin" -maxdepth 1 -type f | head -n1)"
  if [[ -n "$first" ]] && ldd "$first" | grep -q 'not found'; then
    echo "WARNING: $(basename "$first") lacks libraries:"; ldd "$first" | grep 'not found'
  fi
} >>"$log_f" 2>&1
echo "gpu_run.sh: $nk kernels, ${dataset:-?} dataset, backend $backend on ${configs[*]} $([[ $backend == cuda ]] && echo GPU || echo device)(s), timeout ${timeout_s}s, budget ${budget_s}s; output in $out"

# --- Runs ---
# verdict[k.n]: yes, WRONG, timeout, error <rc>, skipped, no binary, no oracle;
# secs[k.n]: PolyBench's time on stdout, when the run exited 0.
declare -A verdict=() secs=()
printf 'kernel\tgpus\tverdict\tseconds\twall_s\trc\tlimit_s\tmd5\toracle_md5\toracle_s\n' >"$tsv_f"
# The dump (stderr from ==BEGIN DUMP_ARRAYS== to ==END   DUMP_ARRAYS==, as the oracle's) goes to
# stdout; the first 20 other lines of stderr to the file $1.
split_dump() {
  awk -v errf="$1" '/^==BEGIN DUMP_ARRAYS==$/ {on = 1}
                    on {print; if ($0 ~ /^==END   DUMP_ARRAYS==$/) on = 0; next}
                    n < 20 {print > errf; ++n}'
}
run_one() {
  local k=$1 n=$2 prog="$bin/${1}_$target" left limit md5 rc t0 wall s v env_run
  left=$((budget_s - (SECONDS - start)))
  if [[ ! -x "$prog" ]]; then
    verdict[$k.$n]="no binary"
    logln "== $k on $n: no binary ${k}_$target$([[ -f "$staged/build.tsv" ]] && awk -F'\t' -v k="$k" '$1 == k {print ": " $2}' "$staged/build.tsv")"
    printf '%s\t%s\tno binary\t-\t-\t-\t-\t-\t%s\t%s\n' "$k" "$n" "${o_md5[$k]}" "${o_secs[$k]}" >>"$tsv_f"
    return
  fi
  if (( left < 2 )); then
    verdict[$k.$n]=skipped
    logln "== $k on $n: skipped, the budget of ${budget_s}s is spent"
    printf '%s\t%s\tskipped\t-\t-\t-\t-\t-\t%s\t%s\n' "$k" "$n" "${o_md5[$k]}" "${o_secs[$k]}" >>"$tsv_f"
    return
  fi
  limit=$(( left < timeout_s ? left : timeout_s ))
  if [[ $backend == cuda ]]; then
    env_run="CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1)))"
  else
    env_run="BBMM_DEVICES=$n"
  fi
  logln "== $k on $n: env BBMM_BACKEND=$backend $env_run ${PB_GPU_ENV:+$PB_GPU_ENV }timeout -k 5 $limit $prog"
  rm -f "$tmp/err" "$tmp/out"
  t0=$EPOCHREALTIME
  # (The subshell's own stderr, where bash reports a crash, is dropped: the verdict says it.)
  # shellcheck disable=SC2086 # PB_GPU_ENV is a list of assignments
  md5="$( (env BBMM_BACKEND="$backend" "$env_run" ${PB_GPU_ENV:-} timeout -k 5 "$limit" "$prog" 2>&1 >"$tmp/out"
           echo $? >"$tmp/rc") 2>/dev/null | split_dump "$tmp/err" | md5sum | cut -d' ' -f1)"
  wall="$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')"
  rc="$(cat "$tmp/rc")"
  s="$(grep -m1 -E '^[0-9]+\.[0-9]+$' "$tmp/out")"
  if [[ ($rc -eq 124 || $rc -eq 137) && $limit -lt $timeout_s ]]; then
    v="cut (budget)"  # stopped at what was left of the budget, not at PB_GPU_TIMEOUT
  elif [[ $rc -eq 124 || $rc -eq 137 ]]; then
    v=timeout
  elif [[ $rc -ne 0 ]]; then
    v="error $rc"
    (( rc > 128 )) && v="error $rc ($(kill -l $((rc - 128)) 2>/dev/null || echo signal))"
  elif [[ ${o_status[$k]} != ok ]]; then
    v="no oracle"
  elif [[ "$md5" == "${o_md5[$k]}" ]]; then
    v=yes
  else
    v=WRONG
  fi
  verdict[$k.$n]="$v"
  [[ $rc -eq 0 && -n "$s" ]] && secs[$k.$n]="$s"
  logln "   rc $rc, ${s:-no} seconds (PolyBench), wall ${wall}s, md5 $md5 (oracle ${o_md5[$k]}): $v"
  if [[ $v != yes ]]; then
    [[ $v == WRONG && "$md5" == d41d8cd98f00b204e9800998ecf8427e ]] && logln "   no dump on stderr"
    [[ $v == "no oracle" ]] && logln "   the oracle: ${o_status[$k]}"
    if [[ -s "$tmp/err" ]]; then
      logln "   stderr, first lines outside the dump:"
      sed 's/^/     /' "$tmp/err" >>"$log_f"
    fi
    if [[ -s "$tmp/out" ]]; then
      logln "   stdout, first lines:"
      head -n 10 "$tmp/out" | sed 's/^/     /' >>"$log_f"
    fi
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$k" "$n" "$v" "${s:--}" "$wall" "$rc" "$limit" \
    "$md5" "${o_md5[$k]}" "${o_secs[$k]}" >>"$tsv_f"
  printf '  [%3ds] %-16s %d %s: %-8s %s s\n' $((SECONDS - start)) "$k" "$n" \
    "$([[ $backend == cuda ]] && echo GPU || echo dev)" "$v" "${s:--}"
}
serial_skips=0
for k in "${kernels[@]}"; do
  for n in "${configs[@]}"; do
    # Two GPUs cannot shorten a serial nest that timed out on one (it runs on one device).
    if [[ $n -gt 1 && "${verdict[$k.1]:-}" == timeout && -n "${serial[$k]:-}" ]]; then
      verdict[$k.$n]=skipped
      serial_skips=$((serial_skips + 1))
      logln "== $k on $n: skipped: it timed out on 1, and ${serial[$k]}"
      printf '%s\t%s\tskipped\t-\t-\t-\t-\t-\t%s\t%s\n' "$k" "$n" "${o_md5[$k]}" "${o_secs[$k]}" >>"$tsv_f"
      continue
    fi
    run_one "$k" "$n"
  done
done

# --- Table ---
# Seconds: 3 decimals, 2 significant digits below 0.01 s.
fmt() {
  awk -v v="${1:--}" 'BEGIN { if (v == "-" || v == "") print "-"; else if (v < 0.01) printf "%.2g\n", v;
                              else printf "%.3f\n", v }'
}
ok1=0; ok2=0; skipped=0; all=1
{
  if [[ $backend == cuda ]]; then
    echo "| kernel | oracle s (CPU, staging machine) | 1 GPU s | 2 GPUs s | 2-GPU speed-up | verified (1 GPU, 2 GPUs) |"
  else
    echo "| kernel | oracle s (CPU, staging machine) | 1 device s | 2 devices s | 2-device speed-up | verified (1 device, 2 devices; host backend) |"
  fi
  echo "|---|---:|---:|---:|---:|---|"
  for k in "${kernels[@]}"; do
    v1="${verdict[$k.1]:-skipped}"
    v2="${verdict[$k.2]:--}"
    [[ $v1 == yes ]] && ok1=$((ok1 + 1))
    [[ $v2 == yes ]] && ok2=$((ok2 + 1))
    [[ $v1 == skipped ]] && skipped=$((skipped + 1))
    [[ $v2 == skipped ]] && skipped=$((skipped + 1))
    [[ $v1 == yes && ( $v2 == yes || ${#configs[@]} -eq 1 ) ]] || all=0
    up=-
    if [[ -n "${secs[$k.1]:-}" && -n "${secs[$k.2]:-}" ]]; then
      up="$(awk -v a="${secs[$k.1]}" -v b="${secs[$k.2]}" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')"
    fi
    printf '| %s%s | %s | %s | %s | %s | %s, %s |\n' "$k" "${serial[$k]:+ (serial)}" "$(fmt "${o_secs[$k]}")" \
      "$(fmt "${secs[$k.1]:-}")" "$(fmt "${secs[$k.2]:-}")" "$up" "$v1" "$v2"
  done
  echo
  if (( ${#later[@]} > 0 )); then
    echo "(serial): bbmmc runs a loop nest of the kernel serially, as one tile (its note in"
    echo "build.tsv): on the host when it is a whole nest, else on device 0 (docs/codegen.md); these"
    echo "run last, and not on 2 after a timeout on 1. cut (budget): stopped at what was left of"
    echo "PB_GPU_BUDGET_S, before PB_GPU_TIMEOUT."
    echo
  fi
  unit=GPU; [[ $backend == host ]] && unit=device
  printf 'verified %d/%d on 1 %s, ' "$ok1" "$nk" "$unit"
  if (( ${#configs[@]} > 1 )); then printf '%d/%d on 2 %ss' "$ok2" "$nk" "$unit"; else printf 'none on 2 (one GPU here)'; fi
  printf ' (%s_DATASET, backend %s; skipped: %d run(s) for the %d s budget, %d serial after a timeout; %d s)\n' \
    "${dataset:-?}" "$backend" $((skipped - serial_skips)) "$budget_s" "$serial_skips" $((SECONDS - start))
} >"$md_f"
echo "== table" >>"$log_f"
cat "$md_f" >>"$log_f"
echo
cat "$md_f"
[[ $all -eq 1 ]] || exit 1
exit 0
