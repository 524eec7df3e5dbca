#!/usr/bin/env bash
# The multi-GPU study (issue 12) in one device call, from a staged folder (bench/gpu/stage.sh);
# builds nothing:
#   bash .gpu/study.sh .gpu [SECTION...]
# SECTION (default all; run in this order):
#   refs       the sequential originals of every size below, run in parallel on the host's
#              cores (BBMM_SAMPLE_REFERENCE=only) into a cache (BBMM_SAMPLE_CACHE), so that
#              every GPU run is verified against the sequential program without running it
#              again                                                         ~1 min
#   scaling    every bbmmc sample (<name>_bbmmc_cuda: the verification build, -fmad=false)
#              at its size on 1, 2, 4, ... GPUs (strong scaling: the powers of two up to the
#              machine's GPU count, or STUDY_COUNTS="1 2 4") and the data-scaling series
#              (the data doubles with the GPU count: 1 GPU at half the work, 2 GPUs at the
#              strong size (that run), 4 GPUs at twice the work); BBMM_STATS=json; the
#              timed part excludes creating the runtime (BBMM_SAMPLE_WARMUP=1)
#   breakdown  the strong runs again with BBMM_TRACE at every GPU count: the run proper
#              (first acquire to the last write-back) and the time breakdown (compute,
#              read-in, flow-out, write-back, inside libbbmm, idle) from the trace
#   long       the stencils with 4 times the steps (compute weighs 4 times more against
#              reading in and writing back, which the GPUs' shared host bandwidth bounds)
#              on every GPU count, untimed-setup and traced runs (config long, trace:long)
#   variants   the long stencil runs again, traced, on every GPU count, once per variant
#              of STUDY_VARIANTS="NAME:VAR=VALUE[,VAR=VALUE...] ..." (e.g.
#              "push:BBMM_CUDA_PEER_PUSH=1 waves:BBMM_CUDA_WAVES=1"), config variant:NAME,
#              compared in the report with the default's traced long runs (section long)
#   staged     the stencils on the most GPUs with BBMM_PEER_ACCESS=0 (flow-out through
#              the host)
#   baselines  baseline_stencils (bench/gpu/baselines) for heat2d and heat3d at the study's
#              sizes: hand-written multi-GPU CUDA at every GPU count, unified memory at
#              every count from 2, whole-array copies on 1 GPU; and bbmm traced with the
#              host arrays pinned at registration (config trace:pinned), which like the
#              baselines leaves pinning out of the timed run
#   all        refs scaling breakdown long staged baselines (variants: only when named)
# Every run is under `timeout`; a section that would end past the budget (STUDY_BUDGET_S,
# default 540 s) is skipped and reported. Writes under $OUT (at most 8 files):
#   study_logs.txt     every command and its whole output
#   study_results.txt  one STUDY / BASELINE line per run (bench/gpu/study_report.py parse)
#   study.md           the tables (study_report.py report), printed last
#   study_scaling.png, study_breakdown.png, study_baselines.png   (python3-matplotlib there)
set -uo pipefail

G="$(cd "${1:-.gpu}" && pwd)" || { echo "study.sh: no staged folder '${1:-.gpu}'" >&2; exit 1; }
shift || true
OUT="${OUT:-/tmp/bbmm-gpu-out}"
BUDGET_S="${STUDY_BUDGET_S:-540}"
CACHE="${STUDY_CACHE:-/tmp/bbmm-study-cache}"
mkdir -p "$OUT" "$CACHE"
export LD_LIBRARY_PATH="$G/lib:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
B="${STUDY_BIN_DIR:-$G/bin}"
SUFFIX="${STUDY_BIN_SUFFIX-_bbmmc_cuda}"
REPORT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/study_report.py"
LOG="$OUT/study_logs.txt"
RES="$OUT/study_results.txt"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
: > "$LOG"
: > "$RES"
start=$SECONDS

sections=("$@")
[[ ${#sections[@]} -eq 0 ]] && sections=(all)
want=" "
for s in "${sections[@]}"; do
  case "$s" in
    all) want+="refs scaling breakdown long staged baselines " ;;
    refs|scaling|breakdown|long|variants|staged|baselines) want+="$s " ;;
    *) echo "study.sh: unknown section '$s'" >&2; exit 1 ;;
  esac
done
wants() { [[ "$want" == *" $1 "* ]]; }

# The samples: name | half | strong | double | work(half)/work(strong) |
# work(double)/work(strong). Strong scaling runs the strong size on every GPU count; the
# data-scaling series runs half on 1 GPU, strong on 2 (the strong run) and double on 4
# (the data doubles for the stencils, adi, mvt and bscholes; n grows by 2^(1/3) for the
# O(n^3) kernels floyd, lu and gemm). Work: interior points x steps, n^3, ni nj nk, n^2, n.
# Sizes are chosen so that the sequential original (the oracle) of the strong size takes
# about 5-40 s on one core.
study_samples=(
  "heat2d|5793 100|8192 100|11586 100|0.500|2.001"
  "fdtd2d|4345 4345 50|6144 6144 50|8689 8689 50|0.500|2.000"
  "heat3d|305 50|384 50|483 50|0.499|1.996"
  "jacobi1d|33554432 50|67108864 50|134217728 50|0.500|2.000"
  "floyd|2381|3000|3780|0.500|2.000"
  "lu|3175|4000|5040|0.500|2.000"
  "adi|1415 50|2000 50|2828 50|0.500|2.001"
  "mvt|11585|16384|23170|0.500|2.000"
  "gemm|3175 3175 3175|4000 4000 4000|5040 5040 5040|0.500|2.000"
  "bscholes|8388608|16777216|33554432|0.500|2.000")
stencils=(heat2d fdtd2d heat3d jacobi1d)
# The long runs: the stencils' strong sizes with 4 times the steps.
long_samples=("heat2d|8192 400" "fdtd2d|6144 6144 200" "heat3d|384 200" "jacobi1d|67108864 200")
# A self-test of this script without a GPU (bench/gpu/CMakeLists.txt: study.selftest):
# STUDY_SMALL=1 takes the e2e tests' sizes, STUDY_BACKEND=host runs the samples on the host
# backend's simulated devices and STUDY_GPUS sets the device count.
if [[ "${STUDY_SMALL:-0}" == 1 ]]; then
  study_samples=(
    "heat2d|34 6|48 6|66 6|0.484|1.936" "fdtd2d|28 31 5|40 44 5|56 62 5|0.493|1.973"
    "heat3d|13 3|16 3|20 3|0.485|2.125" "jacobi1d|200 8|400 8|800 8|0.497|2.005"
    "floyd|32|40|50|0.512|1.953" "lu|32|40|50|0.512|1.953" "adi|23 3|32 3|45 3|0.490|2.054"
    "mvt|68|96|136|0.502|2.007" "gemm|29 32 22|36 40 28|45 50 35|0.506|1.953"
    "bscholes|1000|2000|4000|0.500|2.000")
  long_samples=("heat2d|48 24" "fdtd2d|40 44 20" "heat3d|16 12" "jacobi1d|400 32")
fi
BACKEND="${STUDY_BACKEND:-cuda}"
# STUDY_SAMPLES="heat2d lu ...": only these samples; STUDY_DATA=0: no data-scaling runs (nor
# their sequential oracles).
if [[ -n "${STUDY_SAMPLES:-}" ]]; then
  kept=()
  for row in "${study_samples[@]}"; do
    [[ " $STUDY_SAMPLES " == *" ${row%%|*} "* ]] && kept+=("$row")
  done
  study_samples=("${kept[@]}")
  kept=()
  for row in "${long_samples[@]}"; do
    [[ " $STUDY_SAMPLES " == *" ${row%%|*} "* ]] && kept+=("$row")
  done
  long_samples=("${kept[@]}")
fi
DATA="${STUDY_DATA:-1}"

ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[[ -n "${CUDA_VISIBLE_DEVICES:-}" ]] && ngpu=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
[[ -n "${STUDY_GPUS:-}" ]] && ngpu="$STUDY_GPUS"
# The GPU counts: the powers of two up to the machine's count (STUDY_COUNTS overrides).
if [[ -n "${STUDY_COUNTS:-}" ]]; then
  read -r -a counts <<<"$STUDY_COUNTS"
else
  counts=()
  for ((g = 1; g <= ngpu; g *= 2)); do counts+=("$g"); done
fi
most="${counts[-1]}"
{
  echo "== $(date -u) on $(hostname); sections:$want; budget ${BUDGET_S} s; $ngpu GPU(s)"
  nvidia-smi -L; nvidia-smi topo -m; nproc; free -g; df -h "$CACHE"
} >> "$LOG" 2>&1
echo "study.sh: $ngpu GPU(s), counts ${counts[*]}; sections:$want; budget $BUDGET_S s; output in $OUT"
printf 'STUDY_MACHINE gpus=%s counts=%s date=%s gpu_name=%s\n' "$ngpu" "$(IFS=,; echo "${counts[*]}")" \
  "$(date -u +%Y-%m-%d)" \
  "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' ' '_')" >> "$RES"

# study_run LABEL SAMPLE CONFIG GPUS ARGS [ENV=V...]: one run of the staged sample, verified
# against the cached sequential result, its output in the log and its STUDY line in RES.
study_run() {
  local label="$1" sample="$2" config="$3" gpus="$4" args="$5"; shift 5
  local bin="$B/${sample}${SUFFIX}"
  [[ -x "$bin" ]] || { echo "  $label: ${sample}${SUFFIX} not staged"; return; }
  local left=$((BUDGET_S - (SECONDS - start)))
  if (( left < 20 )); then
    echo "  $label: SKIPPED (budget)"
    printf 'STUDY sample=%s config=%s gpus=%s args=%s skipped=budget\n' "$sample" "$config" \
      "$gpus" "${args// /,}" >> "$RES"
    return
  fi
  local limit=$(( left - 10 < 150 ? left - 10 : 150 ))
  echo "== $label: BBMM_DEVICES=$gpus $* ${sample}${SUFFIX} $args" >> "$LOG"
  local t0=$SECONDS
  # shellcheck disable=SC2086  # the arguments are words
  env BBMM_BACKEND="$BACKEND" BBMM_DEVICES="$gpus" BBMM_SAMPLE_WARMUP=1 BBMM_SAMPLE_CACHE="$CACHE" \
    BBMM_STATS=json "$@" timeout -k 5 "$limit" "$bin" $args > "$TMP/run" 2>&1
  local rc=$?
  cat "$TMP/run" >> "$LOG"
  echo "== $label: rc=$rc in $((SECONDS - t0)) s" >> "$LOG"
  python3 "$REPORT" parse --sample "$sample" --config "$config" --gpus "$gpus" \
    --args "$args" --rc "$rc" ${trace:+--trace "$trace"} < "$TMP/run" >> "$RES" 2>> "$LOG"
  printf '  %-34s rc=%s %3d s  %s\n' "$label" "$rc" "$((SECONDS - t0))" \
    "$(grep -o 'verification against the sequential program: [A-Z]*\|bbmmc [0-9.]* s' "$TMP/run" |
       tr '\n' ' ')"
}

# data_point ROW G: the data-scaling series' size for G GPUs ("" past double) and its
# config (data:WORK, the work relative to the strong size).
data_point() {
  local _n half strong double whalf wdouble
  IFS='|' read -r _n half strong double whalf wdouble <<<"$1"
  case "$2" in
    1) echo "data:$whalf|$half" ;;
    2) echo "strong|$strong" ;;
    4) echo "data:$wdouble|$double" ;;
    *) echo "" ;;
  esac
}

if wants refs; then
  echo "[refs] sequential originals into $CACHE (in parallel, $(nproc) cores)"
  : > "$TMP/refs"
  for row in "${study_samples[@]}"; do
    IFS='|' read -r name _ strong _ <<<"$row"
    [[ -x "$B/${name}${SUFFIX}" ]] || continue
    echo "$name|$strong" >> "$TMP/refs"
    if wants long || wants variants; then
      for lrow in "${long_samples[@]}"; do
        [[ "${lrow%%|*}" == "$name" ]] && echo "$name|${lrow#*|}" >> "$TMP/refs"
      done
    fi
    if [[ "$DATA" == 1 ]]; then
      for g in "${counts[@]}"; do
        p="$(data_point "$row" "$g")"
        [[ -n "$p" && "$g" != 2 ]] && echo "$name|${p#*|}" >> "$TMP/refs"
      done
    fi
  done
  left=$((BUDGET_S - (SECONDS - start) - 60))
  export B CACHE LOG SUFFIX
  # The largest first (they take longest).
  t0=$SECONDS
  tac "$TMP/refs" | xargs -P "$(nproc)" -I{} bash -c '
    IFS="|" read -r name args <<<"{}"
    s=$SECONDS
    # shellcheck disable=SC2086
    out=$(BBMM_SAMPLE_REFERENCE=only BBMM_SAMPLE_CACHE="$CACHE" timeout -k 5 '"$left"' \
          "$B/${name}${SUFFIX}" $args 2>&1)
    echo "== ref $name $args: rc=$? in $((SECONDS - s)) s: $(tail -1 <<<"$out")"' >> "$LOG" 2>&1
  echo "  done in $((SECONDS - t0)) s: $(grep -c '^== ref .*rc=0' "$LOG") of $(wc -l < "$TMP/refs") stored"
  du -sh "$CACHE" >> "$LOG" 2>&1
fi

if wants scaling; then
  echo "[scaling] every sample on ${counts[*]} GPU(s) (strong), and the data-scaling series"
  for row in "${study_samples[@]}"; do
    IFS='|' read -r name _ strong _ <<<"$row"
    for g in "${counts[@]}"; do
      study_run "${name}_${g}gpu" "$name" strong "$g" "$strong"
    done
    [[ "$DATA" == 1 ]] || continue
    for g in "${counts[@]}"; do
      p="$(data_point "$row" "$g")"
      [[ -z "$p" || "$g" == 2 ]] && continue
      study_run "${name}_${g}gpu_data" "$name" "${p%%|*}" "$g" "${p#*|}"
    done
  done
fi

if wants breakdown; then
  echo "[breakdown] the strong runs with BBMM_TRACE on ${counts[*]} GPU(s)"
  for row in "${study_samples[@]}"; do
    IFS='|' read -r name _ strong _ <<<"$row"
    trace="$TMP/trace_$name.json"
    # No warm-up: the trace then holds the timed run only. 1 GPU too: the traced run
    # (first acquire to the last write-back) is the time the baselines measure.
    for g in "${counts[@]}"; do
      study_run "${name}_${g}gpu_trace" "$name" trace "$g" "$strong" BBMM_TRACE="$trace" \
        BBMM_SAMPLE_WARMUP=0
    done
    rm -f "$trace"
    unset trace
  done
fi

if wants long; then
  echo "[long] the stencils with 4 times the steps on ${counts[*]} GPU(s), untraced and traced"
  for row in "${long_samples[@]}"; do
    IFS='|' read -r name args <<<"$row"
    trace="$TMP/trace_long_$name.json"
    for g in "${counts[@]}"; do
      study_run "${name}_${g}gpu_long" "$name" long "$g" "$args"
    done
    for g in "${counts[@]}"; do
      study_run "${name}_${g}gpu_long_trace" "$name" trace:long "$g" "$args" BBMM_TRACE="$trace" \
        BBMM_SAMPLE_WARMUP=0
    done
    rm -f "$trace"
    unset trace
  done
fi

if wants variants; then
  read -r -a variants <<<"${STUDY_VARIANTS:-}"
  (( ${#variants[@]} == 0 )) && echo "[variants] none: set STUDY_VARIANTS"
  for v in "${variants[@]}"; do
    vname="${v%%:*}"
    IFS=',' read -r -a venv <<<"${v#*:}"
    if [[ -z "$vname" || "$v" != *:* || ${#venv[@]} -eq 0 ]]; then
      echo "study.sh: STUDY_VARIANTS entry '$v' is not NAME:VAR=VALUE[,VAR=VALUE...]" >&2
      exit 1
    fi
    echo "[variants] $vname (${venv[*]}): the long stencil runs on ${counts[*]} GPU(s), traced"
    for row in "${long_samples[@]}"; do
      IFS='|' read -r name args <<<"$row"
      trace="$TMP/trace_variant_$name.json"
      for g in "${counts[@]}"; do
        study_run "${name}_${g}gpu_$vname" "$name" "variant:$vname" "$g" "$args" \
          BBMM_TRACE="$trace" BBMM_SAMPLE_WARMUP=0 "${venv[@]}"
      done
      rm -f "$trace"
      unset trace
    done
  done
fi

if wants staged && (( most >= 2 )); then
  echo "[staged] the stencils on $most GPUs with the flow-out staged through the host"
  for name in "${stencils[@]}"; do
    for row in "${study_samples[@]}"; do
      [[ "${row%%|*}" == "$name" ]] || continue
      IFS='|' read -r _ _ strong _ <<<"$row"
      study_run "${name}_${most}gpu_staged" "$name" staged "$most" "$strong" BBMM_PEER_ACCESS=0
    done
  done
fi

if wants baselines; then
  if [[ -x "$B/baseline_stencils" ]]; then
    echo "[baselines] hand-written multi-GPU, unified memory, whole-array copies"
    for row in "${study_samples[@]}"; do
      IFS='|' read -r name _ strong _ <<<"$row"
      [[ "$name" == heat2d || "$name" == heat3d ]] || continue
      # bbmm with the host arrays pinned at registration (BBMM_CUDA_HOST_COPIES=pinned),
      # traced: the pinning then falls before the traced run, as the baselines pin before
      # their timer, so the two time the same work (the default stages the copies inside it).
      trace="$TMP/trace_pinned_$name.json"
      for g in "${counts[@]}"; do
        study_run "${name}_${g}gpu_pinned_trace" "$name" trace:pinned "$g" "$strong" \
          BBMM_TRACE="$trace" BBMM_SAMPLE_WARMUP=0 BBMM_CUDA_HOST_COPIES=pinned
      done
      rm -f "$trace"
      unset trace
      runs=("wholecopy 1")
      for g in "${counts[@]}"; do
        runs+=("handwritten $g")
        (( g >= 2 )) && runs+=("managed $g")
      done
      for r in "${runs[@]}"; do
        read -r impl gpus <<<"$r"
        left=$((BUDGET_S - (SECONDS - start)))
        (( left < 20 )) && { echo "  $name $impl $gpus: SKIPPED (budget)"; continue; }
        echo "== baseline $name $strong $impl $gpus" >> "$LOG"
        t0=$SECONDS
        # shellcheck disable=SC2086
        timeout -k 5 $(( left - 10 < 150 ? left - 10 : 150 )) "$B/baseline_stencils" "$name" \
          $strong --impl "$impl" --gpus "$gpus" \
          --oracle-file "$CACHE/${name}_${strong// /_}.ref" \
          > "$TMP/run" 2>&1
        rc=$?
        cat "$TMP/run" >> "$LOG"
        grep '^BASELINE ' "$TMP/run" | sed "s/\$/ rc=$rc/" >> "$RES"
        printf '  %-34s rc=%s %3d s  %s\n' "${name}_${impl}_${gpus}gpu" "$rc" "$((SECONDS - t0))" \
          "$(grep -o 'seconds=[0-9.]*\|verified=[0-9]' "$TMP/run" | head -2 | tr '\n' ' ')"
      done
    done
  else
    echo "(baseline_stencils not staged)"
  fi
fi

echo "study.sh: done in $((SECONDS - start)) s"
echo
if python3 "$REPORT" report "$RES" --out "$OUT" > "$OUT/study.md" 2> "$TMP/err"; then
  cat "$OUT/study.md"
else
  echo "study_report.py failed:"; cat "$TMP/err"; echo "raw:"; cat "$RES"
fi
