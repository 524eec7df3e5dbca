#!/usr/bin/env bash
# PolyBench/C through bbmmc and libbbmm, as a new user would do it (README.md beside this
# file): installs the BBMM build into a scratch prefix, compiles every PolyBench kernel,
# unmodified, with the installed bbmmc through bbmm_add_executable in one CMake project that
# finds the package with find_package(bbmm), builds the original program with plain cc as
# the oracle, runs the compiled program in several configurations and compares its array
# dump (POLYBENCH_DUMP_ARRAYS, on stderr) with the oracle's byte for byte. Prints a table
# last. Usage: bench/polybench/run.sh --help.
set -uo pipefail
# shellcheck disable=SC2317 # the functions run through spawn

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=bench/polybench/common.sh
source "$root/bench/polybench/common.sh"

usage() {
  cat <<EOF
usage: bench/polybench/run.sh [options] [POLYBENCH_DIR]

POLYBENCH_DIR: PolyBench/C 4.2.1 (default: ../shared/polybench-4.2.1 from the repository root)

  --dataset=SIZE     MINI (default), SMALL, MEDIUM, LARGE or EXTRALARGE (env BBMM_PB_DATASET)
  --build-dir=DIR    the BBMM build tree to install (default: build/default); its bbmmc and
                     libbbmm are brought up to date first (cmake --build --target ...)
  --no-build         install the build tree as it is (the ctest: the tree is built already)
  --workdir=DIR      keep every file there (kept afterwards; a re-run rebuilds only what
                     changed); default: a temporary directory, removed on success
  --keep             keep the temporary directory on success too
  --kernels=A,B,...  only these kernels (PolyBench names: gemm,2mm,floyd-warshall,...)
  --bbmmc-args=ARGS  more bbmmc options for every kernel, blank-separated (e.g.
                     --bbmmc-args=--reductions=reassociate)
  --timeout=S        limit of each run of a program, in seconds (default 60)
  -j N, --jobs=N     parallel builds and runs (default 2)
  --cflags="..."     C flags of the oracles and the generated programs alike (default -O1)
  --strict           a kernel bbmmc rejects, or an XPASS, is a failure too
  --expected-failures=FILE
                     known failures, "<kernel> <configuration> <part of the reason>" per line:
                     a matching failure is shown as XFAIL and does not fail the run; a listed
                     run that passes is shown as XPASS (bench/polybench/expected_failures.txt)
  --markdown         print the table in Markdown
  --max-balance=R    a kernel whose busiest of 4 devices runs more than R times a fair share
                     of the statement instances fails (configuration "balance" in the
                     expected failures, reason "statement instances"; issue 13's target is
                     1.3)
  --corrupt-oracle=K change one byte of kernel K's oracle dump (a self-test: K must FAIL)

Configurations (each run gets BBMM_BACKEND=<its target> and the variables below; inherited
BBMM_* variables are unset):
  1dev 2dev 3dev 4dev  host backend, 1-4 simulated devices, 1 tile per device (4dev gives the
                       statistics: balance and time in libbbmm)
  4dev.2t              4 devices, 2 tiles per device (BBMM_TILES_PER_DEVICE=2)
  16KiB.1dev           1 device of 16 KiB (BBMM_DEVICE_MEMORY), 2 tiles per device
  4KiB.4dev            4 devices of 4 KiB, 2 tiles per device: instances are boxed out
                       (e=N: evictions); skip(tile NB): the program said that a tile one
                       iteration wide needs N bytes, more than a device holds
  check                4 devices, 2 tiles per device, checking mode (BBMM_CHECK=1: two
                       devices writing overlapping boxes between synchronisations is an error)
  serial.host          2 devices, 2 tiles per device, checking mode, every phase without a
                       parallel loop as a host tile (BBMM_SERIAL=host; by default only whole
                       serial loop nests and tiles that do not fit a device)
  split.step           4 devices, 2 tiles per device, checking mode, ranges that move with
                       the serial loops split anew at every iteration (BBMM_SPLIT=step)
  opencl               --target=opencl on the OpenCL backend (PoCL), 2 tiles per device
  cuda                 --target=cuda (kernels built with -fmad=false), default tiles
A run passes when it exits 0 and its dump equals the oracle's byte for byte; a crash, a
timeout, an error exit or a different dump is a FAIL, with the reason above the table.

Exit status: 0 every compiled kernel passed every configuration that could run; 1 a kernel
that compiled failed (wrong dump, crash, timeout, error exit, build failure, bbmmc internal
error), or with --strict a kernel did not compile; 2 a setup error; 77 POLYBENCH_DIR missing.
EOF
}

dataset="${BBMM_PB_DATASET:-MINI}"
build_dir="$root/build/default"
workdir=""
keep=0
build=1
kernels_only=""
bbmmc_args=()
timeout_s=60
jobs=2
cflags=(-O1)
strict=0
markdown=0
max_balance=""
corrupt=""
expected_file=""
pb_dir=""
while [[ $# -gt 0 ]]; do
  arg="$1"
  shift
  case "$arg" in
    --dataset=*) dataset="${arg#*=}" ;;
    --build-dir=*) build_dir="${arg#*=}" ;;
    --workdir=*) workdir="${arg#*=}" ;;
    --keep) keep=1 ;;
    --no-build) build=0 ;;
    --kernels=*) kernels_only="${arg#*=}" ;;
    --bbmmc-args=*) read -r -a bbmmc_args <<<"${arg#*=}" ;;
    --timeout=*) timeout_s="${arg#*=}" ;;
    --jobs=*) jobs="${arg#*=}" ;;
    -j) jobs="${1:-}"; shift ;;
    -j[0-9]*) jobs="${arg#-j}" ;;
    --strict) strict=1 ;;
    --markdown) markdown=1 ;;
    --max-balance=*) max_balance="${arg#*=}" ;;
    --corrupt-oracle=*) corrupt="${arg#*=}" ;;
    --expected-failures=*) expected_file="${arg#*=}" ;;
    --cflags=*) read -r -a cflags <<<"${arg#*=}" ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "run.sh: unknown option '$arg' (see --help)" >&2; exit 2 ;;
    *)
      if [[ -n "$pb_dir" ]]; then
        echo "run.sh: more than one POLYBENCH_DIR ('$pb_dir', '$arg')" >&2
        exit 2
      fi
      pb_dir="$arg" ;;
  esac
done
case "$dataset" in
  MINI | SMALL | MEDIUM | LARGE | EXTRALARGE) ;;
  *) echo "run.sh: --dataset must be MINI, SMALL, MEDIUM, LARGE or EXTRALARGE, not '$dataset'" >&2
     exit 2 ;;
esac
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --jobs needs a positive integer" >&2; exit 2; }
[[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --timeout needs seconds" >&2; exit 2; }

# Only the settings of each configuration reach the programs.
while read -r v; do unset "$v"; done < <(compgen -e | grep '^BBMM_' || true)

pb_dir="${pb_dir:-$root/../shared/polybench-4.2.1}"
if [[ ! -f "$pb_dir/utilities/polybench.h" || ! -f "$pb_dir/utilities/polybench.c" ]]; then
  echo "SKIP: PolyBench/C not found at '$pb_dir' (no utilities/polybench.h); pass its" \
       "directory: bench/polybench/run.sh /path/to/polybench-4.2.1"
  exit 77
fi
pb_dir="$(cd "$pb_dir" && pwd)"
build_dir="$(cd "$build_dir" 2>/dev/null && pwd)" || {
  echo "run.sh: no BBMM build tree at '$build_dir' (cmake --preset default first)" >&2
  exit 2
}
cc="${CC:-cc}"
defs=(-D"${dataset}_DATASET" -DPOLYBENCH_DUMP_ARRAYS -DPOLYBENCH_TIME)

# --- The kernels (common.sh) ---
pb_find_kernels run.sh "$pb_dir" "$kernels_only"
nk=${#kernels[@]}
if [[ -n "$expected_file" ]]; then
  [[ -f "$expected_file" ]] || { echo "run.sh: no file '$expected_file'" >&2; exit 2; }
  expected_file="$(cd "$(dirname "$expected_file")" && pwd)/$(basename "$expected_file")"
fi
if [[ -n "$corrupt" && -z "${kdir[$corrupt]:-}" ]]; then
  echo "run.sh: --corrupt-oracle=$corrupt: no such kernel among those run" >&2
  exit 2
fi

# --- Work directory ---
if [[ -n "$workdir" ]]; then
  mkdir -p "$workdir" && work="$(cd "$workdir" && pwd)" || exit 2
  keep=1
else
  work="$(mktemp -d "${TMPDIR:-/tmp}/bbmm-polybench.XXXXXX")" || exit 2
fi
rm -rf "$work/runs" "$work/oracle" "$work/bbmmc" "$work/build.log"
mkdir -p "$work/runs" "$work/oracle" "$work/bbmmc" "$work/project"
finish() {
  local rc=$1
  if [[ $rc -eq 0 && $keep -eq 0 ]]; then
    rm -rf "$work"
  else
    echo "files: $work"
  fi
  exit "$rc"
}
t_start=$SECONDS
log() { printf '== [%3ds] %s\n' $((SECONDS - t_start)) "$*"; }

# --- 1. Install the build (what a user of the package has) ---
log "BBMM build $build_dir: $([[ $build -eq 1 ]] && echo "bringing bbmmc and libbbmm up to date, ")installing into $work/prefix"
if [[ $build -eq 1 ]] && ! cmake --build "$build_dir" -j "$jobs" --target bbmm_runtime bbmmc >"$work/bbmm-build.log" 2>&1; then
  tail -n 20 "$work/bbmm-build.log"
  echo "run.sh: building bbmmc and libbbmm failed (needs BBMM_BUILD_COMPILER=ON): $work/bbmm-build.log" >&2
  finish 2
fi
if ! cmake --install "$build_dir" --prefix "$work/prefix" >"$work/install.log" 2>&1; then
  tail -n 20 "$work/install.log"
  echo "run.sh: cmake --install failed" >&2
  finish 2
fi
bbmmc="$work/prefix/bin/bbmmc"
[[ -x "$bbmmc" ]] || { echo "run.sh: the installed package has no bin/bbmmc" >&2; finish 2; }

# --- 2. bbmmc on every kernel (the 'compiled' column: its first diagnostic line) ---
log "bbmmc --target=host on $nk kernels (-D${dataset}_DATASET)"
bbmmc_one() {
  local k=$1 d=${kdir[$1]}
  (cd "$pb_dir" && timeout -k 5 "$timeout_s" "$bbmmc" "$d/$k.c" --target=host "${defs[@]}" "${bbmmc_args[@]}" \
     -I utilities -I "$d" -o "$work/bbmmc/$k.bbmm.c") >/dev/null 2>"$work/bbmmc/$k.err"
  echo $? >"$work/bbmmc/$k.rc"
}
for k in "${kernels[@]}"; do spawn bbmmc_one "$k"; done
wait
declare -A compiled=() diag=() fail_reason=()
failures=0
for k in "${kernels[@]}"; do
  rc=$(cat "$work/bbmmc/$k.rc")
  first="$(grep -m1 -v '^[[:space:]]*$' "$work/bbmmc/$k.err")"
  case $rc in
    0) compiled[$k]=yes ;;
    1) compiled[$k]=no; diag[$k]="${first:-bbmmc exit status 1 without a message}" ;;
    *) # exit 2 is an internal error (a bbmmc bug), 124 a timeout, >128 a crash
      compiled[$k]=no
      case $rc in
        2) diag[$k]="bbmmc internal error: $first" ;;
        124 | 137) diag[$k]="bbmmc timed out after ${timeout_s}s" ;;
        *) diag[$k]="bbmmc failed (exit status $rc): $first" ;;
      esac
      fail_reason[$k.compile]="${diag[$k]}"
      failures=$((failures + 1)) ;;
  esac
done
ok_kernels=()
for k in "${kernels[@]}"; do [[ ${compiled[$k]} == yes ]] && ok_kernels+=("$k"); done

# --- 3. The oracles: the original programs, plain cc, run once ---
log "oracles: cc ${cflags[*]}, ${#ok_kernels[@]} programs"
if ! "$cc" "${cflags[@]}" "${defs[@]}" -I "$pb_dir/utilities" -c "$pb_dir/utilities/polybench.c" \
     -o "$work/oracle/polybench.o" 2>"$work/oracle/polybench.err"; then
  cat "$work/oracle/polybench.err"; echo "run.sh: cc failed on polybench.c" >&2; finish 2
fi

oracle_one() {
  local k=$1 d="$pb_dir/${kdir[$1]}" o="$work/oracle/$1"
  if ! "$cc" "${cflags[@]}" "${defs[@]}" -I "$pb_dir/utilities" -I "$d" "$d/$k.c" \
       "$work/oracle/polybench.o" -lm -o "$o" 2>"$o.build.err"; then
    echo "cc failed: $(grep -m1 error "$o.build.err")" >"$o.fail"; return
  fi
  timeout -k 5 "$timeout_s" "$o" >"$o.out" 2>"$o.err"
  local rc=$?
  [[ $rc -eq 0 ]] || { echo "the original program failed (exit status $rc)" >"$o.fail"; return; }
  pb_dump "$o.err" >"$o.dump"
  [[ -s "$o.dump" ]] || echo "the original program printed no dump" >"$o.fail"
  if [[ "$k" == "$corrupt" ]]; then
    # Self-test: one byte of the first value changes, so every run of K must FAIL.
    sed -i '3s/[0-9]/X/' "$o.dump"
  fi
}
for k in "${ok_kernels[@]}"; do spawn oracle_one "$k"; done
wait

# --- 4. One CMake project of the installed package: every compiled kernel, every target ---
proj="$work/project"
{
  cat <<'EOF'
# Generated by bench/polybench/run.sh: the PolyBench kernels through the installed bbmmc.
cmake_minimum_required(VERSION 3.25)
project(bbmm_polybench LANGUAGES C CXX)
find_package(bbmm CONFIG REQUIRED)
option(PB_OPENCL "build the --target=opencl programs" OFF)
option(PB_CUDA "build the --target=cuda programs" OFF)
if(PB_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES native)
    endif()
    enable_language(CUDA)
  else()
    set(PB_CUDA OFF)
    file(WRITE ${CMAKE_BINARY_DIR}/no_nvcc "nvcc not found")
  endif()
endif()
# Which backends the installed libbbmm can run here (the runtime's own answer).
add_executable(bbmm_probe probe.c)
target_link_libraries(bbmm_probe PRIVATE bbmm::runtime)
add_library(pb_util OBJECT ${PB_DIR}/utilities/polybench.c)
target_compile_definitions(pb_util PRIVATE ${PB_DEFS})
target_include_directories(pb_util PRIVATE ${PB_DIR}/utilities)
function(pb_kernel name dir)
  set(kinds host)
  if(PB_OPENCL)
    list(APPEND kinds opencl)
  endif()
  if(PB_CUDA)
    list(APPEND kinds cuda)
  endif()
  foreach(kind IN LISTS kinds)
    set(defs)
    foreach(d IN LISTS PB_DEFS)
      list(APPEND defs -D${d})
    endforeach()
    bbmm_add_executable(${name}_${kind} SOURCES ${PB_DIR}/${dir}/${name}.c TARGET ${kind}
                        BBMMC_ARGS ${defs} ${PB_BBMMC_ARGS} -I${PB_DIR}/utilities -I${PB_DIR}/${dir}
                        CUDA_OPTIONS -fmad=false)
    target_sources(${name}_${kind} PRIVATE $<TARGET_OBJECTS:pb_util>)
    # The host kernels count their statement instances per device (the balance column).
    target_compile_definitions(${name}_${kind} PRIVATE ${PB_DEFS} BBMM_GEN_COUNT_INSTANCES)
    target_include_directories(${name}_${kind} PRIVATE ${PB_DIR}/utilities ${PB_DIR}/${dir})
  endforeach()
endfunction()
include(${CMAKE_CURRENT_SOURCE_DIR}/kernels.cmake)
EOF
} >"$proj/CMakeLists.txt.new"
cat >"$proj/probe.c.new" <<'EOF'
/* Exits 0 when the installed libbbmm creates a runtime on the backend named by argv[1]
 * (opencl, cuda), else prints the runtime's reason and exits 1. */
#include <stdio.h>
#include <string.h>
#include "bbmm/bbmm.h"
int main(int argc, char** argv) {
  bbmm_options o;
  bbmm_runtime* rt;
  if (argc != 2 || bbmm_options_init(&o) != BBMM_OK) return 2;
  o.backend = strcmp(argv[1], "cuda") == 0 ? BBMM_BACKEND_CUDA : BBMM_BACKEND_OPENCL;
  if (bbmm_runtime_create(&o, &rt) != BBMM_OK) {
    printf("%s\n", bbmm_last_error_message());
    return 1;
  }
  printf("%d device(s)\n", bbmm_device_count(rt));
  bbmm_runtime_destroy(rt);
  return 0;
}
EOF
for k in "${ok_kernels[@]}"; do echo "pb_kernel($k ${kdir[$k]})"; done >"$proj/kernels.cmake.new"
# Rewritten only when they change, so that a --workdir re-run rebuilds nothing new.
for f in CMakeLists.txt probe.c kernels.cmake; do
  if cmp -s "$proj/$f.new" "$proj/$f"; then rm "$proj/$f.new"; else mv "$proj/$f.new" "$proj/$f"; fi
done
# Linking without libbbmm.a's debug information takes a quarter of the time.
ldflags=""
[[ "$(uname -s)" == Linux ]] && ldflags="-Wl,--strip-debug"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
[[ -f "$work/build/CMakeCache.txt" ]] && generator=()
configure() {
  cmake -S "$proj" -B "$work/build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$work/prefix" \
    -DCMAKE_BUILD_TYPE= -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="${cflags[*]}" \
    -DCMAKE_EXE_LINKER_FLAGS="$ldflags" \
    -DPB_DIR="$pb_dir" -DPB_DEFS="$(IFS=';'; echo "${defs[*]#-D}")" \
    -DPB_BBMMC_ARGS="$(IFS=';'; echo "${bbmmc_args[*]}")" "$@" >>"$work/build.log" 2>&1
}
log "CMake project with find_package(bbmm) from the prefix: probing the OpenCL and CUDA backends"
# A build tree of another compiler (CC changed in a --workdir) is started afresh.
if [[ -f "$work/build/CMakeCache.txt" ]] &&
   ! grep -qxF "CMAKE_C_COMPILER:UNINITIALIZED=$cc" "$work/build/CMakeCache.txt" &&
   ! grep -qxF "CMAKE_C_COMPILER:FILEPATH=$(command -v "$cc")" "$work/build/CMakeCache.txt"; then
  rm -rf "$work/build"
  command -v ninja >/dev/null && generator=(-G Ninja)
fi
if ! configure -DPB_OPENCL=OFF -DPB_CUDA=OFF ||
   ! cmake --build "$work/build" --target bbmm_probe >>"$work/build.log" 2>&1; then
  tail -n 30 "$work/build.log"
  echo "run.sh: the CMake project against the installed package failed: $work/build.log" >&2
  finish 2
fi
# A backend is skipped, with the reason, when the runtime cannot create it here.
declare -A skip=()
probe() {
  local out
  out="$(timeout -k 5 60 "$work/build/bbmm_probe" "$1" 2>&1)" && return 0
  skip[$1]="$(head -n1 <<<"$out")"
  [[ -n "${skip[$1]}" ]] || skip[$1]="the probe failed"
}
probe opencl
probe cuda
declare -A short_skip=()
[[ -n "${skip[opencl]:-}" ]] && short_skip[opencl]="skip(no OpenCL)"
if [[ -n "${skip[cuda]:-}" ]]; then
  short_skip[cuda]="skip(no GPU)"
  grep -q "built without the CUDA backend" <<<"${skip[cuda]}" &&
    short_skip[cuda]="skip(no CUDA backend)"
fi
pb_opencl=OFF; [[ -z "${skip[opencl]:-}" ]] && pb_opencl=ON
pb_cuda=OFF; [[ -z "${skip[cuda]:-}" ]] && pb_cuda=ON
rm -f "$work/build/no_nvcc"
configure -DPB_OPENCL=$pb_opencl -DPB_CUDA=$pb_cuda || { tail -n 30 "$work/build.log"; finish 2; }
if [[ -f "$work/build/no_nvcc" ]]; then
  skip[cuda]="a GPU is usable but CMake found no CUDA compiler (put nvcc on PATH or set CUDACXX)"
  short_skip[cuda]="skip(no nvcc)"; pb_cuda=OFF
fi
kinds=(host)
[[ $pb_opencl == ON ]] && kinds+=(opencl)
[[ $pb_cuda == ON ]] && kinds+=(cuda)
log "building ${#ok_kernels[@]} kernels x (${kinds[*]}) (-j$jobs; log $work/build.log)"
# A program whose build fails now must not be run from an earlier build (--workdir).
for k in "${ok_kernels[@]}"; do
  for kind in "${kinds[@]}"; do rm -f "$work/build/${k}_$kind"; done
done
keep_going=(-k 0)
[[ "$(grep -c '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$work/build/CMakeCache.txt")" == 1 ]] || keep_going=(-k)
cmake --build "$work/build" -j "$jobs" -- "${keep_going[@]}" >>"$work/build.log" 2>&1

# --- 5. Runs ---
# name | kind (the program's --target) | environment (BBMM_BACKEND=kind is added)
configs=(
  "1dev|host|BBMM_DEVICES=1"
  "2dev|host|BBMM_DEVICES=2"
  "3dev|host|BBMM_DEVICES=3"
  "4dev|host|BBMM_DEVICES=4"
  "4dev.2t|host|BBMM_DEVICES=4 BBMM_TILES_PER_DEVICE=2"
  "16KiB.1dev|host|BBMM_DEVICES=1 BBMM_TILES_PER_DEVICE=2 BBMM_DEVICE_MEMORY=16KiB"
  "4KiB.4dev|host|BBMM_DEVICES=4 BBMM_TILES_PER_DEVICE=2 BBMM_DEVICE_MEMORY=4KiB"
  "check|host|BBMM_DEVICES=4 BBMM_TILES_PER_DEVICE=2 BBMM_CHECK=1"
  "serial.host|host|BBMM_DEVICES=2 BBMM_TILES_PER_DEVICE=2 BBMM_CHECK=1 BBMM_SERIAL=host"
  "split.step|host|BBMM_DEVICES=4 BBMM_TILES_PER_DEVICE=2 BBMM_CHECK=1 BBMM_SPLIT=step"
  "opencl|opencl|BBMM_TILES_PER_DEVICE=2"
  "cuda|cuda|"
)
cfg_names=()
for c in "${configs[@]}"; do cfg_names+=("${c%%|*}"); done
run_one() {
  local k=$1 name=$2 kind=$3 env=$4 r="$work/runs/$1.$2" t0=$EPOCHREALTIME rc
  # The subshell (kept by the 'exit') reports a crash, "Segmentation fault", on its stderr,
  # which is dropped: the table gives the reason.
  # shellcheck disable=SC2086 # env is a list of NAME=VALUE words
  (timeout -k 5 "$timeout_s" env BBMM_BACKEND="$kind" $env BBMM_STATS=json \
     "$work/build/${k}_$kind" >"$r.out" 2>"$r.err"; exit $?) 2>/dev/null
  rc=$?
  echo "$rc" >"$r.rc"
  awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f\n", b - a }' >"$r.time"
}
runnable() {  # kernel, kind: whether its program exists and its backend is usable here
  [[ ! -f "$work/oracle/$1.fail" && -z "${short_skip[$2]:-}" && -x "$work/build/${1}_$2" ]]
}
# The 4dev runs give the statistics (balance, time in libbbmm): one at a time, so that two
# programs do not share the 2 cores of a CI machine while they are timed.
log "running 4dev (statistics), one program at a time"
for k in "${ok_kernels[@]}"; do
  runnable "$k" host && run_one "$k" 4dev host "BBMM_DEVICES=4"
done
others=()
for n in "${cfg_names[@]}"; do [[ $n == 4dev ]] || others+=("$n"); done
log "running ${others[*]} (-j$jobs, timeout ${timeout_s}s per run)"
for k in "${ok_kernels[@]}"; do
  for c in "${configs[@]}"; do
    IFS='|' read -r name kind env <<<"$c"
    [[ $name == 4dev ]] && continue
    runnable "$k" "$kind" && spawn run_one "$k" "$name" "$kind" "$env"
  done
done
wait

# --- 6. Verdicts ---
# Known failures (--expected-failures=FILE): "<kernel> <configuration> <text>" per line, the
# text being part of the failure's reason; '#' starts a comment.
declare -A expected=()
if [[ -n "$expected_file" ]]; then
  while read -r ek ec etext; do
    [[ -z "$ek" || "$ek" == \#* ]] && continue
    expected[$ek.$ec]="$etext"
  done <"$expected_file"
fi
signal_name() { local s; s="$(kill -l $(($1 - 128)) 2>/dev/null)"; echo "SIG${s:-$(($1 - 128))}"; }
declare -A cell=() note=() xfail=()
# JSON statistics (one line, "devices":[{...}, ...],"total":{...}): the values of "key".
json_values() { grep -o "\"$2\":[0-9.e+-]*" "$1" | cut -d: -f2; }
# Sets cell[k.name] (and fail_reason/note) from the run's exit status, stderr and dump.
# shellcheck disable=SC2034 # note and xfail are read through print_map
judge() {
  local k=$1 name=$2 kind=$3 r="$work/runs/$1.$2" rc line arr ev msg need cap
  if [[ -n "${short_skip[$kind]:-}" ]]; then cell[$k.$name]="${short_skip[$kind]}"; return; fi
  if [[ -f "$work/oracle/$k.fail" ]]; then
    cell[$k.$name]="FAIL(oracle)"; fail_reason[$k.$name]="$(cat "$work/oracle/$k.fail")"; return
  fi
  if [[ ! -x "$work/build/${k}_$kind" ]]; then
    cell[$k.$name]="FAIL(build)"; fail_reason[$k.$name]="$(pb_build_error "${k}_$kind" "$work/build.log")"; return
  fi
  rc=$(cat "$r.rc")
  # The first line of stderr that is not part of the dump.
  msg="$(awk '/^==BEGIN DUMP_ARRAYS==$/ {on = 1} !on && NF {print; exit}
              /^==END   DUMP_ARRAYS==$/ {on = 0}' "$r.err")"
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    cell[$k.$name]="FAIL(timeout)"; fail_reason[$k.$name]="no result after ${timeout_s}s"; return
  elif [[ $rc -gt 128 ]]; then
    cell[$k.$name]="FAIL($(signal_name "$rc"))"
    fail_reason[$k.$name]="crashed ($(signal_name "$rc"))${msg:+ after printing: $msg}"; return
  elif [[ $rc -ne 0 ]]; then
    # The generated program's own verdict that a tile cannot fit (docs/codegen.md: a 1-D
    # partition cannot make a tile smaller than one iteration of its loop), followed by the
    # runtime's out-of-memory error: a limit, said by the program, not a wrong result.
    need="$(sed -n 's/.*requires boxes of up to \([0-9]*\) bytes; a device holds \([0-9]*\) bytes.*/\1 \2/p' "$r.err" | head -n1)"
    cap="${need#* }"; need="${need% *}"
    if [[ $rc -eq 1 && -n "$need" && "$need" -gt "$cap" ]] &&
       grep -q '^bbmm: bbmm_tile_acquire failed: device [0-9]*: cannot fit' "$r.err"; then
      cell[$k.$name]="skip(tile ${need}B)"
      note[$k.$name]="a tile one iteration wide requires up to $need bytes, a device holds $cap (the program says so and stops)"
      return
    fi
    cell[$k.$name]="FAIL(exit $rc)"; fail_reason[$k.$name]="${msg:-exit status $rc}"; return
  fi
  pb_dump "$r.err" >"$r.dump"
  if ! cmp -s "$r.dump" "$work/oracle/$k.dump"; then
    line="$(cmp "$r.dump" "$work/oracle/$k.dump" 2>&1 | grep -o 'line [0-9]*' | cut -d' ' -f2)"
    [[ -n "$line" ]] || line=$(( $(wc -l <"$r.dump") + 1 ))  # one is a prefix of the other
    arr="$(head -n "$line" "$work/oracle/$k.dump" | grep '^begin dump: ' | tail -n1 | cut -d' ' -f3)"
    cell[$k.$name]="FAIL(dump)"
    fail_reason[$k.$name]="the dump differs from the original program's from line $line${arr:+ (array $arr)}"
    [[ -s "$r.dump" ]] || fail_reason[$k.$name]="no dump${msg:+; stderr: $msg}"
    return
  fi
  cell[$k.$name]=PASS
  if [[ $name == *KiB* ]]; then
    ev="$(json_values "$r.out" evictions | tail -n1)"
    cell[$k.$name]="PASS e=${ev:-?}"
  fi
}
# shellcheck disable=SC2034 # note and xfail are read through print_map
verdict() {
  local k=$1 name=$2 e
  judge "$@"
  e="${expected[$k.$name]:-}"
  [[ -n "$e" ]] || return 0
  case "${cell[$k.$name]}" in
    FAIL*)
      if [[ "${fail_reason[$k.$name]}" == *"$e"* ]]; then
        cell[$k.$name]="X${cell[$k.$name]}"
        xfail[$k.$name]="${fail_reason[$k.$name]}"
        unset "fail_reason[$k.$name]"
      fi ;;
    PASS*) cell[$k.$name]="XPASS"
      note[$k.$name]="passes, but is listed in $(basename "$expected_file"): remove the line" ;;
  esac
}
declare -A balance=() ibalance=() libpct=()
for k in "${ok_kernels[@]}"; do
  all=1
  for c in "${configs[@]}"; do
    IFS='|' read -r name kind env <<<"$c"
    verdict "$k" "$name" "$kind"
    case "${cell[$k.$name]}" in
      FAIL*) all=0 ;;
      XPASS) [[ $strict -eq 1 ]] && all=0 ;;
    esac
  done
  [[ $all -eq 1 ]] || failures=$((failures + 1))
  # Balance on 4 devices: the busiest device's tiles over a fair share (total / 4).
  r="$work/runs/$k.4dev"
  balance[$k]="-"; ibalance[$k]="-"; libpct[$k]="-"
  if [[ ${cell[$k.4dev]} == PASS && -f "$r.out" ]]; then
    # The statement instances each device ran (the programs count them, BBMM_GEN_COUNT_
    # INSTANCES: host tiles first, then devices 0-3) over a fair share of the devices' total.
    inst="$(grep -o '"bbmm_instances":\[[0-9,]*\]' "$r.out" | tr -dc '0-9,\n' | tail -n1)"
    if [[ -n "$inst" ]]; then
      ibalance[$k]="$(awk -v l="$inst" 'BEGIN { n = split(l, v, ","); if (n != 5) { print "-"; exit }
        t = v[2] + v[3] + v[4] + v[5]; m = v[2]; for (i = 3; i <= 5; ++i) if (v[i] > m) m = v[i];
        if (t > 0) printf "%.2f (%d/%d/%d/%d)", m / (t / 4), v[2], v[3], v[4], v[5]; else print "-" }')"
    fi
    # The balance target (--max-balance): a failure of the kernel unless listed as expected
    # ("<kernel> balance statement instances").
    b="${ibalance[$k]%% *}"
    if [[ -n "$max_balance" && "$b" != "-" ]] &&
       awk -v b="$b" -v m="$max_balance" 'BEGIN { exit !(b > m) }'; then
      why="the busiest of 4 devices runs $b times a fair share of the statement instances (--max-balance=$max_balance)"
      if [[ "${expected[$k.balance]:-}" != "" && "$why" == *"${expected[$k.balance]}"* ]]; then
        xfail[$k.balance]="$why"
        ibalance[$k]="X${ibalance[$k]}"
      else
        fail_reason[$k.balance]="$why"
        ibalance[$k]="FAIL ${ibalance[$k]}"
        failures=$((failures + 1))
      fi
    elif [[ -n "$max_balance" && -n "${expected[$k.balance]:-}" ]]; then
      note[$k.balance]="balanced within --max-balance=$max_balance, but listed in $(basename "$expected_file"): remove the line"
    fi
    mapfile -t tiles < <(json_values "$r.out" tiles)
    if [[ ${#tiles[@]} -eq 5 && ${tiles[4]} -gt 0 ]]; then
      balance[$k]="$(awk -v a="${tiles[0]}" -v b="${tiles[1]}" -v c="${tiles[2]}" -v d="${tiles[3]}" \
        -v t="${tiles[4]}" 'BEGIN { m = a; if (b > m) m = b; if (c > m) m = c; if (d > m) m = d;
                                   printf "%.2f (%d/%d/%d/%d)", m / (t / 4), a, b, c, d }')"
    fi
    # Time in libbbmm (the calling thread in acquire, launch, flow_out, release, reserve)
    # over the kernel's time (PolyBench's timer: from runtime creation to the last unregister).
    mgr="$(json_values "$r.out" manager_seconds | tail -n1)"
    total="$(grep -m1 -E '^[0-9]+\.[0-9]+$' "$r.out")"
    if [[ -n "$mgr" && -n "$total" ]]; then
      libpct[$k]="$(awk -v m="$mgr" -v t="$total" 'BEGIN { if (t > 0) printf "%.0f%% of %.1f ms", 100 * m / t, 1000 * t; else print "-" }')"
    fi
  fi
done

# --- 7. Report: reasons, then the table, then the summary ---
echo
for kind in opencl cuda; do
  [[ -n "${skip[$kind]:-}" ]] && echo "$kind: skipped: ${skip[$kind]}"
done
print_map() {  # title, then the entries of the associative array named $2, sorted
  local -n map=$2
  [[ ${#map[@]} -gt 0 ]] || return 0
  echo "$1"
  for key in $(printf '%s\n' "${!map[@]}" | LC_ALL=C sort); do echo "  $key: ${map[$key]}"; done
}
print_map "Failures:" fail_reason
print_map "Expected failures (--expected-failures):" xfail
print_map "Notes:" note
slowest="$(for f in "$work"/runs/*.time; do [[ -f "$f" ]] || continue
  b="$(basename "$f" .time)"; echo "$(cat "$f") $b"; done | sort -rn | head -n 5 |
  awk '{ printf "%s%s %ss", (NR > 1 ? ", " : ""), $2, $1 }')"
[[ -z "$slowest" ]] || echo "Slowest runs: $slowest"
echo
n_compiled=${#ok_kernels[@]}
n_verified=0
for k in "${ok_kernels[@]}"; do
  v=1
  for n in "${cfg_names[@]}"; do
    case "${cell[$k.$n]}" in PASS* | "skip(no "*) ;; *) v=0 ;; esac
  done
  [[ $v -eq 1 ]] && n_verified=$((n_verified + 1))
done
header=(kernel compiled "${cfg_names[@]}" "balance 4dev (tiles)" "balance 4dev (statement instances)" "libbbmm 4dev")
{
  (IFS=$'\t'; echo "${header[*]}")
  for k in "${kernels[@]}"; do
    if [[ ${compiled[$k]} == yes ]]; then
      printf '%s\tyes\t' "$k"
      for n in "${cfg_names[@]}"; do printf '%s\t' "${cell[$k.$n]}"; done
      printf '%s\t%s\t%s\n' "${balance[$k]}" "${ibalance[$k]}" "${libpct[$k]}"
    else
      printf '%s\tno: %s\n' "$k" "${diag[$k]}"
    fi
  done
} >"$work/table.tsv"
if [[ $markdown -eq 1 ]]; then
  awk -F'\t' -v ncol=${#header[@]} '
    { printf "|"; for (i = 1; i <= ncol; ++i) printf " %s |", (i <= NF ? $i : ""); print "" }
    NR == 1 { printf "|"; for (i = 1; i <= ncol; ++i) printf "---|"; print "" }' "$work/table.tsv"
else
  # Columns as wide as their widest cell; a kernel bbmmc rejects has its diagnostic on the
  # rest of its line.
  awk -F'\t' '
    NR == FNR { if (NF > 2) for (i = 1; i <= NF; ++i) if (length($i) > w[i]) w[i] = length($i); next }
    { line = ""; for (i = 1; i <= NF; ++i) line = line sprintf(i < NF ? "%-" w[i] "s  " : "%s", $i)
      print line }' "$work/table.tsv" "$work/table.tsv"
fi
echo "$n_compiled/$nk compiled, $n_verified/$nk verified in all configurations" \
     "(${dataset}_DATASET; $((SECONDS - t_start)) s)"
rc=0
[[ $failures -gt 0 ]] && rc=1
[[ $strict -eq 1 && $n_compiled -lt $nk ]] && rc=1
finish $rc
