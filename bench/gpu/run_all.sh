#!/usr/bin/env bash
# Runs the GPU tests, sanitizers, ceilings and stencil performance runs from a staged
# folder (bench/gpu/stage.sh); builds nothing. One device call (10 minutes at most):
#   bash bench/gpu/run_all.sh .gpu [SUBSET...]
# SUBSET (default all; several allowed, run in this order):
#   tests     GPU unit tests (cuda_backend_test, cuda_conformance_test, cuda_fuzz_test with
#             BBMM_FUZZ_TRACES=2000) on all GPUs and with CUDA_VISIBLE_DEVICES=0, the
#             random traces (4,000) with the other copy paths (engine only, one copy
#             stream, peer copy kernel, copies pulled by the destination GPU), 500 with the
#             host copies staged (the suites pin by default), conformance pulled and staged,
#             ranks in one process whose transports read GPU memory as a CUDA-aware MPI
#             does (cuda_rank_sends_test, cuda_global_tiles_fuzz_test, also staged),
#             and the small sample runs of the test suite (reserve and box-out)
#                                  ~5.5 min on 2 H200s (s22run2: 328 s; <= 405 s)
#   samples   every staged bbmmc sample <name>_bbmmc_cuda at a medium size (table below),
#             verified against its sequential original: 1 GPU and 2 GPUs (2 logical
#             devices of GPU 0 when one GPU is visible; checking mode) and 4 GPUs where
#             there are 4 (checking mode), each with 1 and 4 tiles per device, and a box-out run (1 GPU, 8 tiles, BBMM_DEVICE_MEMORY at
#             ~60% of the arrays, evictions counted)                    ~1 min (<= 160 s)
#   sanitize  compute-sanitizer memcheck and racecheck on cuda_backend_test, on the
#             1-GPU small runs of jacobi2d_cuda and heat3d_cuda (reserve and box-out) and
#             of every bbmmc sample (e2e test sizes, 4 tiles), where there are 2 GPUs the
#             backend tests, jacobi2d_cuda and bbmmc heat2d/heat3d on both, memcheck on the
#             copy-kernel conformance cases                             ~2.5 min (<= 300 s)
#   perf      ceilings, then jacobi2d_cuda n=16386 100 steps and heat3d_cuda n=768 100
#             steps on 1, 2 and (where there are 4) 4 GPUs (2 tiles per GPU, reserve on),
#             on 2 GPUs without
#             reserve, on 1 and 2 GPUs with the arrays pinned (BBMM_CUDA_HOST_COPIES=pinned;
#             the default stages them), and a box-out run on 1 GPU (smaller n)
#                                                                       ~2 min (<= 190 s)
#   bench     gpu_bench (box copies, flow-out, box-out, acquire/release, halo hops, staged
#             vs pinned host copies on 1, 2, 4... GPUs), copy_batch_api (1 MiB box
#             batches through cudaMemcpy3DBatchAsync vs one call per box), pinned_alloc
#             (cudaHostAlloc one after another, from threads, as one)   ~50 s (<= 75 s)
#   tune      heat3d_cuda n=768 on 1 GPU with 5 kernel shapes (BBMM_HEAT3D_KERNEL)  ~1 min
#   mpi       heat2d and floyd over 2 MPI ranks x 1 GPU, and over 4 where there are 4 GPUs
#             (mpi_ranks.sh: <name>_bbmmc_cuda_mpi, the generated code unchanged, rank 0
#             verifies) against 1 process on those GPUs (BBMM_SAMPLE_WARMUP=1); weak
#             scaling over 1-4 ranks on the host's CPUs (weak_scaling.sh, host backend);
#             needs mpirun (not in all); on one GPU the 2 ranks share it   ~1.5 min (<= 150 s)
#   trace     jacobi2d_cuda n=16386, 5 steps, 2 GPUs with BBMM_TRACE, plotted by
#             plot_trace.py (whole run and a window around one kernel)     ~15 s (<= 32 s)
#   all       tests samples sanitize perf bench trace                  ~12 min (<= 1150 s)
# Expected times on 2 x H200; in brackets the sum of the step estimates (upper bounds),
# which are printed per step; a step that would end past the budget
# (BBMM_BUDGET_S, default 570 s) is skipped and reported, and every step runs under
# `timeout`, so the summary is always printed.
#
# Writes under $OUT (default /tmp/bbmm-gpu-out), at most 8 files, none in a subfolder:
#   logs.txt          every command and its whole output
#   results.txt       one RUN line per step (tab-separated) + its RESULT/CEILING lines,
#                     and a SAMPLE line after each bbmmc sample step (verdict, evictions)
#   summary.md        the tables printed last (bench/gpu/summarize.py)
#   gpu_bench.md      gpu_bench's tables (bench)
#   trace_jacobi_2gpu.json, trace_jacobi_2gpu.png, trace_jacobi_2gpu_step.png   (trace)
set -uo pipefail

G="$(cd "${1:-.gpu}" && pwd)" || { echo "run_all.sh: no staged folder '${1:-.gpu}'" >&2; exit 1; }
shift || true
OUT="${OUT:-/tmp/bbmm-gpu-out}"
BUDGET_S="${BBMM_BUDGET_S:-570}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$G/lib:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0

subsets=("$@")
[[ ${#subsets[@]} -eq 0 ]] && subsets=(all)
want=" "
for s in "${subsets[@]}"; do
  case "$s" in
    all) want+="tests samples sanitize perf bench trace " ;;
    tests|samples|sanitize|perf|bench|trace|tune|mpi) want+="$s " ;;
    *) echo "run_all.sh: unknown subset '$s' (tests, samples, sanitize, perf, bench, trace," \
            "tune, all)" >&2
       exit 1 ;;
  esac
done
wants() { [[ "$want" == *" $1 "* ]]; }

LOG="$OUT/logs.txt"
RES="$OUT/results.txt"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
: > "$LOG"
: > "$RES"
rm -f "$OUT/summary.md"
start=$SECONDS
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[[ -n "${CUDA_VISIBLE_DEVICES:-}" ]] && ngpu=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
{
  echo "== $(date -u) on $(hostname); subsets:$want; budget ${BUDGET_S} s"
  nvidia-smi -L; nvidia-smi topo -m; nvidia-smi --query-gpu=index,name,memory.total,clocks.max.sm --format=csv
  nproc; free -g
} >> "$LOG" 2>&1
# Estimated seconds per subset on 2 x H200 (the sums of the step estimates below).
est_total=0
for s in $want; do
  case "$s" in tests) e=405 ;; samples) e=160 ;; sanitize) e=300 ;; perf) e=190 ;; bench) e=60 ;;
    trace) e=32 ;; tune) e=60 ;; mpi) e=150 ;; esac
  est_total=$((est_total + e))
done
echo "run_all.sh: $ngpu GPU(s); subsets:$want; estimated <= $est_total s (budget ${BUDGET_S} s); output in $OUT"

SAN=""
for c in compute-sanitizer /usr/local/cuda/bin/compute-sanitizer \
         /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  if command -v "$c" >/dev/null 2>&1; then SAN="$(command -v "$c")"; break; fi
done

have() { [[ -x "$G/bin/$1" ]]; }

# step SUBSET NAME EST_S CMD...: runs CMD under timeout, logs its output, records a RUN
# line and the RESULT/CEILING lines it printed. Skipped when it would end past the budget.
nstep=0
step() {
  local subset="$1" name="$2" est="$3"; shift 3
  nstep=$((nstep + 1))
  : > "$TMP/cur"
  local elapsed=$((SECONDS - start)) left
  left=$((BUDGET_S - elapsed))
  if (( elapsed + est > BUDGET_S )); then
    printf '[%2d] %-28s SKIPPED (est. %d s, %d s left of the budget)\n' "$nstep" "$name" "$est" "$left"
    printf 'RUN\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$subset" "skip" "0" "$est" \
      "time budget" >> "$RES"
    echo "== $name: SKIPPED (time budget)" >> "$LOG"
    return 0
  fi
  local limit=$((est * 4 > 60 ? est * 4 : 60))
  (( limit > left - 10 )) && limit=$((left - 10))
  (( limit < 5 )) && limit=5
  printf '[%2d] %-28s est. %3d s, at %3d s ... ' "$nstep" "$name" "$est" "$elapsed"
  echo "== $name (est. $est s, limit $limit s): $*" >> "$LOG"
  local t0=$SECONDS
  timeout -k 10 "$limit" "$@" > "$TMP/cur" 2>&1
  local rc=$?
  local wall=$((SECONDS - t0))
  cat "$TMP/cur" >> "$LOG"
  echo "== $name: rc=$rc in $wall s" >> "$LOG"
  local note
  note=$(grep -E "^\[  SKIPPED \] [0-9]+ test|^\[  (PASSED|FAILED)  \]|ERROR SUMMARY|RACECHECK SUMMARY|^SKIP|verification against|RESERVE CHECK FAILED|CHECK FAILED|^[a-z0-9_]+: .*(error|Error|failed)" \
           "$TMP/cur" | tail -3 | sed -E 's/^verification against the CUDA reference[^:]*: max relative error /ref err /;
             s/^verification against the sequential CPU loop: max relative error /cpu err /;
             s/ -> / /; s/^RESERVE CHECK FAILED: (bytes_d2d = [0-9]+).*/RESERVE CHECK FAILED: \1/;
             s/ hazards displayed.*/ hazards/; s/========= //' | tr '\t' ' ' | paste -sd';' - | cut -c1-100)
  (( rc == 124 || rc == 137 )) && note="TIMEOUT after $limit s; $note"
  printf 'RUN\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$subset" "$rc" "$wall" "$est" "$note" >> "$RES"
  grep -E '^(RESULT|CEILING|CEILING_CONCURRENT) ' "$TMP/cur" >> "$RES"
  echo "rc=$rc, $wall s"
}

# sample_step SUBSET NAME SAMPLE CONFIG EST CMD...: step, then a SAMPLE line with the
# bbmmc sample's verdict (its 'verification against the sequential program' line; none
# when the step did not run or did not get there) and the evictions of all devices
# together when it printed BBMM_STATS=json (summarize.py's samples table).
sample_step() {
  local subset="$1" name="$2" sample="$3" config="$4"; shift 4
  step "$subset" "$name" "$@"
  local verdict evictions
  verdict=$(sed -n 's/.*verification against the sequential program: \([A-Z]*\).*/\1/p' \
              "$TMP/cur" | tail -1)
  evictions=$(grep -o '"total":{[^}]*}' "$TMP/cur" | grep -o '"evictions":[0-9]*' | tail -1 |
                cut -d: -f2)
  printf 'SAMPLE sample=%s config=%s verdict=%s evictions=%s\n' "$sample" "$config" \
    "${verdict:-none}" "${evictions:--}" >> "$RES"
}

# The bbmmc samples (samples/<name>/, staged as <name>_bbmmc_cuda; heat2d_2d and heat3d_2d
# are heat2d and heat3d compiled with bbmmc --partition=2d):
# name | medium arguments | small arguments (the e2e tests') | box-out capacity in bytes for
# the medium size (~60% of its arrays; each of 8 tiles needs at most ~45%: gemm's whole B
# and an eighth of A and C). A medium run should take a second or two (CUDA start-up and
# the sequential original included); a staged sample missing here runs with its default
# arguments, without box-out.
bbmmc_samples=(
  "floyd|300|40|216000"
  "heat2d|512 20|48 6|2500000"
  "fdtd2d|400 400 10|40 44 5|2300000"
  "heat3d|64 10|16 3|2500000"
  "lu|300|40|432000"
  "adi|200 5|32 3|768000"
  "mvt|2000|96|19200000"
  "bscholes|500000|2000|19200000"
  "gemm|300 300 300|36 40 28|1300000"
  "jacobi1d|200000 20|400 8|1920000"
  "heat2d_2d|512 20|48 6|2500000"
  "heat3d_2d|64 10|16 3|2500000")
# bbmmc_sample NAME: sets bin, medium, small and capacity for the staged sample NAME.
bbmmc_sample() {
  local row
  bin="$1_bbmmc_cuda"; medium=""; small=""; capacity=""
  for row in "${bbmmc_samples[@]}"; do
    if [[ "${row%%|*}" == "$1" ]]; then
      IFS='|' read -r _ medium small capacity <<<"$row"
    fi
  done
}
staged_samples=()
for f in "$G"/bin/*_bbmmc_cuda; do
  [[ -x "$f" ]] && staged_samples+=("$(basename "$f" _bbmmc_cuda)")
done

B="$G/bin"
if wants tests; then
  for t in cuda_backend_test cuda_conformance_test cuda_fuzz_test; do
    have "$t" || { echo "($t not staged)"; continue; }
    # 2 x H200 (s22run2): the backend suite 37-42 s (a runtime per test, each starting
    # the GPUs), the conformance suite 1 s, the random traces 8-12 s.
    est=45; [[ $t == cuda_conformance_test ]] && est=5; [[ $t == cuda_fuzz_test ]] && est=15
    step tests "${t%_test}_all" "$est" env BBMM_FUZZ_TRACES=2000 "$B/$t"
    step tests "${t%_test}_gpu0" "$est" env CUDA_VISIBLE_DEVICES=0 BBMM_FUZZ_TRACES=2000 "$B/$t"
  done
  # The random traces with the copy engines instead of the copy kernel, with one copy
  # stream per direction, with the copy kernel between GPUs too, and with copies between
  # GPUs issued by the destination GPU's worker (pulled; the default pushes): the other
  # copy paths (docs/gpu-validation.md); the conformance suite pulled too.
  if have cuda_fuzz_test; then
    step tests cuda_fuzz_all_engine 25 env BBMM_FUZZ_TRACES=4000 BBMM_CUDA_COPY_KERNEL=0 \
      "$B/cuda_fuzz_test"
    step tests cuda_fuzz_all_1stream 25 env BBMM_FUZZ_TRACES=4000 BBMM_CUDA_COPY_STREAMS=1 \
      "$B/cuda_fuzz_test"
    step tests cuda_fuzz_all_peer_kernel 25 env BBMM_FUZZ_TRACES=4000 \
      BBMM_CUDA_PEER_COPY_KERNEL=1 "$B/cuda_fuzz_test"
    step tests cuda_fuzz_all_peer_pull 25 env BBMM_FUZZ_TRACES=4000 BBMM_CUDA_PEER_PUSH=0 \
      "$B/cuda_fuzz_test"
    step tests cuda_fuzz_all_pageable 120 env BBMM_FUZZ_TRACES=500 BBMM_CUDA_HOST_COPIES=staged \
      "$B/cuda_fuzz_test"
  fi
  have cuda_conformance_test &&
    step tests cuda_conformance_all_peer_pull 5 env BBMM_CUDA_PEER_PUSH=0 \
      "$B/cuda_conformance_test"
  # Ranks in one process on loopback transports that read GPU memory as a CUDA-aware
  # MPI does (cudaMemcpyDefault): a box sent from the GPU after its kernel, and random
  # tile programs over 2-3 ranks of 1-2 logical devices vs the sequential program, then
  # with every box staged through the host copies (an MPI that is not CUDA-aware).
  have cuda_rank_sends_test && step tests cuda_rank_sends 5 "$B/cuda_rank_sends_test"
  if have cuda_global_tiles_fuzz_test; then
    step tests cuda_global_tiles_fuzz 60 env BBMM_GLOBAL_FUZZ_TRACES=150 \
      "$B/cuda_global_tiles_fuzz_test"
    step tests cuda_global_tiles_fuzz_staged 30 env BBMM_GLOBAL_FUZZ_TRACES=60 \
      BBMM_RANK_SENDS=staged "$B/cuda_global_tiles_fuzz_test"
  fi
  # The suites register their arrays pinned unless told otherwise: staged here (the
  # random traces staged above). A staged backend allocates its staging buffers when it
  # starts (128 MiB per GPU), which makes each random trace slower: 500 traces; and each
  # conformance test 0.1-1 s instead of ~10 ms (more than 11 s for the 84 on 2 x H200).
  have cuda_conformance_test &&
    step tests cuda_conformance_all_staged 30 env BBMM_CUDA_HOST_COPIES=staged \
      "$B/cuda_conformance_test"
  # The sample tests of test/runtime/cuda.cmake, on all GPUs.
  step tests jacobi2d_small 5 "$B/jacobi2d_cuda" --n 258 --steps 4
  step tests jacobi2d_small_boxout 5 "$B/jacobi2d_cuda" --n 258 --steps 4 --capacity auto
  step tests heat3d_small 5 "$B/heat3d_cuda" --n 34 --steps 4
  step tests heat3d_small_boxout 5 "$B/heat3d_cuda" --n 34 --steps 4 --capacity auto
fi

if wants samples; then
  (( ${#staged_samples[@]} == 0 )) && echo "(no bbmmc samples staged)"
  # 2 GPUs, or 2 logical devices of GPU 0 on a 1-GPU machine; checking mode (BBMM_CHECK=1:
  # overlapping writes by two devices between synchronisations are an error).
  two=(BBMM_DEVICES=2 BBMM_CHECK=1); twoname=2gpu
  if (( ngpu < 2 )); then two+=(BBMM_CUDA_DEVICES_PER_GPU=2); twoname=2logical; fi
  for s in "${staged_samples[@]}"; do
    bbmmc_sample "$s"
    for t in 1 4; do
      # shellcheck disable=SC2086  # the arguments are words
      # (With 4 tiles, each thread of a 2-D/3-D kernel marches 3 values: partial chunks.)
      march=32; (( t == 4 )) && march=3
      sample_step samples "bbmmc_${s}_1gpu_${t}t" "$s" "1gpu_${t}t" 3 env BBMM_BACKEND=cuda \
        BBMM_DEVICES=1 BBMM_TILES_PER_DEVICE=$t BBMM_CUDA_MARCH=$march BBMM_STATS=table \
        "$B/$bin" $medium
      # shellcheck disable=SC2086
      sample_step samples "bbmmc_${s}_${twoname}_${t}t" "$s" "${twoname}_${t}t" 3 env \
        BBMM_BACKEND=cuda "${two[@]}" BBMM_TILES_PER_DEVICE=$t BBMM_STATS=table "$B/$bin" $medium
      if (( ngpu >= 4 )); then
        # shellcheck disable=SC2086
        sample_step samples "bbmmc_${s}_4gpu_${t}t" "$s" "4gpu_${t}t" 3 env BBMM_BACKEND=cuda \
          BBMM_DEVICES=4 BBMM_CHECK=1 BBMM_TILES_PER_DEVICE=$t BBMM_STATS=table "$B/$bin" $medium
      fi
    done
    if [[ -n "$capacity" ]]; then
      # shellcheck disable=SC2086
      # (Grids capped at 3 blocks per dimension: every kernel loops grid-stride.)
      sample_step samples "bbmmc_${s}_boxout" "$s" boxout 4 env BBMM_BACKEND=cuda \
        BBMM_DEVICES=1 BBMM_TILES_PER_DEVICE=8 BBMM_DEVICE_MEMORY="$capacity" \
        BBMM_CUDA_GRID_CAP=3 BBMM_STATS=json "$B/$bin" $medium
    fi
  done
fi

if wants sanitize; then
  if [[ -z "$SAN" ]]; then
    echo "compute-sanitizer not found: sanitize skipped"
    printf 'RUN\t%s\t%s\t%s\t%s\t%s\t%s\n' sanitizer sanitize skip 0 0 \
      "compute-sanitizer not found" >> "$RES"
  else
    for tool in memcheck racecheck; do
      san=(env CUDA_VISIBLE_DEVICES=0 "$SAN" --tool "$tool" --error-exitcode 1 --print-limit 50)
      # Without the tests whose kernels spin on a host flag (they never see it change under
      # the sanitizer), the one that makes a launch fail on purpose (the sanitizer counts
      # its API error) and the timing-shaped ones (enqueue cost,
      # multi-GiB pinning): under the sanitizer they only take long (80 s timeouts on
      # an H100, 2026-11-23).
      step sanitize "${tool}_backend_test" 30 "${san[@]}" "$B/cuda_backend_test" \
        --gtest_filter='-*NoCallBlocks*:*EnqueueCost*:*Pinning*:*ReusedPoolMemory*:*RecordCoversEveryStream*:*HeldBackStreams*:*KernelLaunchError*'

      if [[ $tool == memcheck ]] && have cuda_conformance_test; then
        step sanitize memcheck_conformance_kernel 20 "${san[@]}" "$B/cuda_conformance_test" \
          --gtest_filter='*cuda_kernel*'
      fi
      step sanitize "${tool}_jacobi2d" 15 "${san[@]}" "$B/jacobi2d_cuda" --n 258 --steps 3
      step sanitize "${tool}_jacobi2d_boxout" 15 "${san[@]}" "$B/jacobi2d_cuda" --n 258 --steps 3 \
        --capacity auto
      step sanitize "${tool}_heat3d" 15 "${san[@]}" "$B/heat3d_cuda" --n 34 --steps 3
      step sanitize "${tool}_heat3d_boxout" 15 "${san[@]}" "$B/heat3d_cuda" --n 34 --steps 3 \
        --capacity auto
      # The bbmmc samples' small runs (sizes of their e2e tests), 1 GPU, 4 tiles.
      for s in "${staged_samples[@]}"; do
        bbmmc_sample "$s"
        # shellcheck disable=SC2086  # the arguments are words
        sample_step sanitize "${tool}_bbmmc_$s" "$s" "$tool" 6 env CUDA_VISIBLE_DEVICES=0 \
          BBMM_BACKEND=cuda BBMM_DEVICES=1 BBMM_TILES_PER_DEVICE=4 \
          "$SAN" --tool "$tool" --error-exitcode 1 --print-limit 50 "$B/$bin" $small
      done
      # The same tools across GPUs (peer copies, cross-GPU events, one pool per GPU): the
      # backend tests, jacobi2d_cuda and two bbmmc samples on 2 GPUs.
      if (( ngpu >= 2 )); then
        san2=(env CUDA_VISIBLE_DEVICES=0,1 "$SAN" --tool "$tool" --error-exitcode 1 --print-limit 50)
        step sanitize "${tool}_backend_test_2gpu" 30 "${san2[@]}" "$B/cuda_backend_test" \
          --gtest_filter='-*NoCallBlocks*:*EnqueueCost*:*Pinning*:*ReusedPoolMemory*:*RecordCoversEveryStream*:*HeldBackStreams*:*KernelLaunchError*'
        step sanitize "${tool}_jacobi2d_2gpu" 15 "${san2[@]}" "$B/jacobi2d_cuda" --n 258 \
          --steps 3 --devices 2
        for s in heat2d heat3d; do
          [[ " ${staged_samples[*]} " == *" $s "* ]] || continue
          bbmmc_sample "$s"
          # shellcheck disable=SC2086  # the arguments are words
          sample_step sanitize "${tool}_bbmmc_${s}_2gpu" "$s" "$tool" 6 env CUDA_VISIBLE_DEVICES=0,1 \
            BBMM_BACKEND=cuda BBMM_DEVICES=2 BBMM_TILES_PER_DEVICE=2 \
            "$SAN" --tool "$tool" --error-exitcode 1 --print-limit 50 "$B/$bin" $small
        done
      fi
    done
  fi
fi

if wants perf; then
  step perf ceilings 10 "$B/ceilings"
  # name sample est args...
  perf_run() {
    local name="$1" bin="$2" est="$3"; shift 3
    step perf "$name" "$est" "$B/$bin" "$@"
  }
  J=(--n 16386 --steps 100 --tiles-per-device 2)
  H=(--n 768 --steps 100 --tiles-per-device 2)
  perf_run jacobi2d_1gpu jacobi2d_cuda 12 --devices 1 "${J[@]}"
  if (( ngpu >= 2 )); then
    perf_run jacobi2d_2gpu jacobi2d_cuda 12 --devices 2 "${J[@]}"
    perf_run jacobi2d_2gpu_noreserve jacobi2d_cuda 12 --devices 2 "${J[@]}" --no-reserve
  fi
  (( ngpu >= 4 )) && perf_run jacobi2d_4gpu jacobi2d_cuda 12 --devices 4 "${J[@]}"
  if (( ngpu < 2 )); then
    # The multi-device path on one GPU: 2 logical devices (halo copies between them on
    # copy streams); the same GPU does all the work, so no speed-up is expected.
    step perf jacobi2d_2logical 12 env BBMM_CUDA_DEVICES_PER_GPU=2 "$B/jacobi2d_cuda" \
      --devices 2 "${J[@]}"
  fi
  # The same with the arrays pinned (BBMM_CUDA_HOST_COPIES=pinned): these samples time the
  # run after registering, so the default (auto: staged in core, since the fourteenth
  # session) pays its copies inside the timed part and pinned pays them outside.
  step perf jacobi2d_1gpu_pinned 12 env BBMM_CUDA_HOST_COPIES=pinned "$B/jacobi2d_cuda" \
    --devices 1 "${J[@]}"
  if (( ngpu >= 2 )); then
    step perf jacobi2d_2gpu_pinned 12 env BBMM_CUDA_HOST_COPIES=pinned "$B/jacobi2d_cuda" \
      --devices 2 "${J[@]}"
  fi
  perf_run jacobi2d_1gpu_boxout jacobi2d_cuda 10 --devices 1 --n 8194 --steps 20 --capacity auto
  perf_run heat3d_1gpu heat3d_cuda 20 --devices 1 "${H[@]}"
  if (( ngpu >= 2 )); then
    perf_run heat3d_2gpu heat3d_cuda 20 --devices 2 "${H[@]}"
    perf_run heat3d_2gpu_noreserve heat3d_cuda 20 --devices 2 "${H[@]}" --no-reserve
  fi
  (( ngpu >= 4 )) && perf_run heat3d_4gpu heat3d_cuda 20 --devices 4 "${H[@]}"
  step perf heat3d_1gpu_pinned 20 env BBMM_CUDA_HOST_COPIES=pinned "$B/heat3d_cuda" \
    --devices 1 "${H[@]}"
  if (( ngpu >= 2 )); then
    step perf heat3d_2gpu_pinned 20 env BBMM_CUDA_HOST_COPIES=pinned "$B/heat3d_cuda" \
      --devices 2 "${H[@]}"
  fi
  perf_run heat3d_1gpu_boxout heat3d_cuda 12 --devices 1 --n 384 --steps 10 --capacity auto
fi

if wants tune; then
  # jacobi2d's single-piece kernel: the grid-stride kernel, then marching shapes
  # (BBMM_JACOBI_KERNEL=BXxBYxROWS; default 64x4x32), 1 GPU.
  step tune "jacobi2d_1gpu_grid" 8 env BBMM_JACOBI_KERNEL=grid "$B/jacobi2d_cuda" \
    --devices 1 --n 16386 --steps 100 --tiles-per-device 2
  for shape in 32x8x32 64x4x32 128x2x64 64x4x128; do
    step tune "jacobi2d_1gpu_$shape" 8 env BBMM_JACOBI_KERNEL="$shape" "$B/jacobi2d_cuda" \
      --devices 1 --n 16386 --steps 100 --tiles-per-device 2
  done
  # heat3d's single-piece kernel shapes (BBMM_HEAT3D_KERNEL=BXxBYxPLANES), 1 GPU.
  for shape in 64x4x32 32x8x32; do
    step tune "heat3d_1gpu_$shape" 15 env BBMM_HEAT3D_KERNEL="$shape" "$B/heat3d_cuda" \
      --devices 1 --n 768 --steps 100 --tiles-per-device 2
  done
fi

if wants bench; then
  if have gpu_bench; then
    step bench gpu_bench 60 sh -c "'$B/gpu_bench' > '$OUT/gpu_bench.md'; rc=\$?; cat '$OUT/gpu_bench.md'; exit \$rc"
  else
    echo "(gpu_bench not staged)"
  fi
  if have copy_batch_api; then
    step bench copy_batch_api 10 "$B/copy_batch_api"
  fi
  if have pinned_alloc; then
    step bench pinned_alloc 5 "$B/pinned_alloc"
  fi
fi

if wants mpi; then
  # One GPU: the ranks share it (mpi_ranks.sh), which runs the path between ranks.
  if (( ngpu >= 1 )) && command -v mpirun >/dev/null && have heat2d_bbmmc_cuda_mpi; then
    step mpi mpi_ranks 60 env BBMM_SAMPLE_WARMUP=1 MPI_RANKS_NP=2 bash "$G/mpi_ranks.sh" "$G"
    if (( ngpu >= 4 )); then
      step mpi mpi_ranks_4 60 env BBMM_SAMPLE_WARMUP=1 MPI_RANKS_NP=4 bash "$G/mpi_ranks.sh" "$G"
    fi
    if have heat2d_mpi && have jacobi1d_mpi; then
      step mpi mpi_weak_cpu 40 env BBMM_DEVICES=1 bash "$G/weak_scaling.sh" "$G/bin" 4
    fi
  else
    echo "(mpi: needs a GPU, mpirun and the staged <name>_bbmmc_cuda_mpi)"
  fi
fi

if wants trace; then
  # 2 GPUs; on a 1-GPU machine, 2 logical devices on the one GPU (each with its own
  # streams), so that the halo copies between devices still show.
  tenv=(); what="2 GPUs"
  if (( ngpu < 2 )); then tenv=(BBMM_CUDA_DEVICES_PER_GPU=2); what="2 logical devices on 1 GPU"; fi
  rm -f "$OUT/trace_jacobi_2gpu.json"
  step trace jacobi2d_trace 12 env "${tenv[@]}" BBMM_TRACE="$OUT/trace_jacobi_2gpu.json" \
    "$B/jacobi2d_cuda" --devices 2 --n 16386 --steps 5 --tiles-per-device 2
  if [[ -s "$OUT/trace_jacobi_2gpu.json" ]]; then
    step trace plot_trace_full 10 python3 "$G/plot_trace.py" "$OUT/trace_jacobi_2gpu.json" \
      -o "$OUT/trace_jacobi_2gpu.png" --title "jacobi2d_cuda n=16386, 5 steps, $what"
    # Kernel 9 of device 0 is in step 2 (2 tiles x 2 phases per step).
    step trace plot_trace_step 10 python3 "$G/plot_trace.py" "$OUT/trace_jacobi_2gpu.json" \
      -o "$OUT/trace_jacobi_2gpu_step.png" --step 9 \
      --title "jacobi2d_cuda n=16386, $what: around kernel 9 of device 0"
  fi
fi

# Logs over the 16 MiB a returned file may have: keep the head and the tail.
if [[ $(stat -c %s "$LOG") -gt $((15 * 1024 * 1024)) ]]; then
  { head -c $((2 * 1024 * 1024)) "$LOG"; echo; echo "[... logs.txt cut to 15 MiB ...]";
    tail -c $((12 * 1024 * 1024)) "$LOG"; } > "$TMP/log" && mv "$TMP/log" "$LOG"
fi

echo "run_all.sh: done in $((SECONDS - start)) s"
echo
if python3 "$G/summarize.py" "$RES" > "$OUT/summary.md" 2> "$TMP/sumerr"; then
  cat "$OUT/summary.md"
else
  echo "summarize.py failed:"; cat "$TMP/sumerr"
  echo "raw results:"; cat "$RES"
fi
