#!/usr/bin/env bash
# bbmmc samples over MPI ranks on GPUs (issue 14): <name>_bbmmc_cuda_mpi (the generated code
# unchanged, global tiles: every rank runs the program over the GPUs of all ranks, rank 0
# verifies) under mpirun with one rank per GPU (CUDA_VISIBLE_DEVICES from Open MPI's local
# rank), against the same sample on those GPUs in one process. Builds nothing:
#   bash .gpu/mpi_ranks.sh .gpu            (MPI_RANKS_SAMPLES="heat2d|4096 50;floyd|2048")
# MPI_RANKS_NP=N (default 2): N ranks x 1 GPU against 1 process x N GPUs. With fewer GPUs
# than ranks (a 1-GPU machine) every rank uses GPU 0, against 1 process x N logical
# devices of it (BBMM_CUDA_DEVICES_PER_GPU=N): the path between ranks runs for real, the
# times say nothing of scaling.
# Prints, per sample: verdicts, seconds, bytes sent/received between ranks (rank 0), and a
# table last; exits 1 when a run failed or was not verified. Needs mpirun (Open MPI) on the
# GPU machine (run_all.sh mpi runs it).
set -uo pipefail
G="$(cd "${1:-.gpu}" && pwd)"
export LD_LIBRARY_PATH="$G/lib:${LD_LIBRARY_PATH:-}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
IFS=';' read -r -a rows <<<"${MPI_RANKS_SAMPLES:-heat2d|4096 50;floyd|2048}"
command -v mpirun >/dev/null || { echo "mpi_ranks.sh: no mpirun on this machine"; exit 1; }
np="${MPI_RANKS_NP:-2}"
(( np >= 2 && ngpu >= 1 )) || { echo "mpi_ranks.sh: needs MPI_RANKS_NP >= 2 (got $np) and a GPU ($ngpu visible)"; exit 1; }
if (( ngpu >= np )); then
  what="$np ranks x 1 GPU" ref="1 process x $np GPUs"
  gpu_of_rank='$OMPI_COMM_WORLD_LOCAL_RANK'
  ref_env=(BBMM_DEVICES="$np")
else
  what="$np ranks sharing GPU 0" ref="1 process x $np logical devices of GPU 0"
  gpu_of_rank=0
  ref_env=(BBMM_DEVICES="$np" BBMM_CUDA_DEVICES_PER_GPU="$np")
fi
table=()
fail=0
for row in "${rows[@]}"; do
  IFS='|' read -r name args <<<"$row"
  bin="$G/bin/${name}_bbmmc_cuda_mpi"
  one="$G/bin/${name}_bbmmc_cuda"
  [[ -x "$bin" ]] || { echo "mpi_ranks.sh: no $bin"; continue; }
  echo "== $name $args: $what"
  out=$(BBMM_DEVICES=1 BBMM_STATS=json timeout 300 mpirun -np "$np" --oversubscribe \
    bash -c "CUDA_VISIBLE_DEVICES=$gpu_of_rank"' exec "$0" "$@"' "$bin" $args 2>&1)
  rc=$?
  echo "$out" | tail -5
  verdict=$(grep -o 'sequential program: [A-Z]*' <<<"$out" | head -1)
  grep -m1 '^mpi: ' <<<"$out"
  secs=$(grep -o 'bbmmc [0-9.]* s' <<<"$out" | head -1)
  sent=$(grep -o '"bytes_sent_ranks":[0-9]*' <<<"$out" | tail -1 | cut -d: -f2)
  recv=$(grep -o '"bytes_received_ranks":[0-9]*' <<<"$out" | tail -1 | cut -d: -f2)
  echo "== $name $args: $ref (reference)"
  out1=$(env "${ref_env[@]}" timeout 300 "$one" $args 2>&1)
  echo "$out1" | tail -3
  secs1=$(grep -o 'bbmmc [0-9.]* s' <<<"$out1" | head -1)
  verdict1=$(grep -o 'sequential program: [A-Z]*' <<<"$out1" | head -1)
  [[ $rc -eq 0 && "$verdict" == *PASSED ]] || fail=1
  table+=("| $name $args | $rc | ${verdict#sequential program: } | ${secs#bbmmc } | ${sent:-?} | ${recv:-?} | ${verdict1#sequential program: } | ${secs1#bbmmc } |")
done
echo
echo "| sample | mpirun rc | verified ($what) | seconds | bytes sent (rank 0) | bytes received (rank 0) | verified ($ref) | seconds |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${table[@]}"
exit $fail
