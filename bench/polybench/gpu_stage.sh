#!/usr/bin/env bash
# Builds the 30 PolyBench/C kernels for CUDA here (bbmmc --target=cuda, nvcc sm_90, no GPU
# needed) and stages them, with the oracles' results, for a GPU machine that cannot build:
# installs a BBMM build tree (build-gpu) into a prefix, compiles every kernel, unmodified,
# with the installed bbmmc through bbmm_add_executable in one CMake project (as run.sh does),
# builds and runs the original programs with plain cc as the oracles and keeps the md5 of
# their array dumps and their times, and stages the stripped binaries, the shared libraries
# the GPU machine lacks and gpu_run.sh, which runs and checks them there (README.md beside
# this file). Usage: bench/polybench/gpu_stage.sh --help.
# shellcheck disable=SC2317 # the functions run through spawn
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=bench/polybench/common.sh
source "$root/bench/polybench/common.sh"

usage() {
  cat <<EOF
usage: bench/polybench/gpu_stage.sh [options] [POLYBENCH_DIR]

POLYBENCH_DIR: PolyBench/C 4.2.1 (default: ../shared/polybench-4.2.1 from the repository root)

  --dataset=SIZE     MINI, SMALL, MEDIUM, LARGE (default) or EXTRALARGE
  --build-dir=DIR    the BBMM build tree (Release, CUDA, BBMM_BUILD_COMPILER=ON) to install
                     as it is: this script builds nothing in it (default: build-gpu)
  --out=DIR          the staged folder, replaced (default: .pb)
  --workdir=DIR      persistent work files, <SIZE>.<target>/ in it, so that a re-run rebuilds
                     and re-runs only what changed (default: build-pb)
  --kernels=A,B,...  only these kernels (PolyBench names: gemm,2mm,floyd-warshall,...)
  --target=T         cuda (default) or host: host-target programs, for a dry run of gpu_run.sh
                     here (PB_GPU_BACKEND=host)
  -j N, --jobs=N     parallel bbmmc runs, builds and oracle runs (default 2)
  --bbmmc-args=ARGS  more bbmmc options for every kernel, blank-separated (e.g.
                     --bbmmc-args=--schedule=source, to compare with the source order)
  --oracle-timeout=S limit of each oracle run, in seconds (default 600)
  --rerun-oracles    run the oracles again even when their programs did not change
  --pack             pack bin/ as bin.tar.xz even when the folder would be small enough
  --wait-log=FILE    while FILE exists without a line starting with 'rc=', the build tree is
                     being rebuilt: wait for that line (every 30 s, at most 40 minutes)
                     before installing (default: /tmp/stage.log; --wait-log= waits for nothing)

Steps: cmake --install of the build tree into <workdir>/<SIZE>.<target>/prefix; the installed
bbmmc --target=<T> on every kernel (-D<SIZE>_DATASET -DPOLYBENCH_DUMP_ARRAYS -DPOLYBENCH_TIME);
a CMake project with find_package(bbmm) and bbmm_add_executable(<kernel>_<T> ... TARGET <T>
CUDA_OPTIONS -fmad=false), C at -O2, CMAKE_CUDA_ARCHITECTURES=90; the oracles (cc -O2, the
same -D flags), run here, --jobs at a time: the md5 of the dump (stderr from
==BEGIN DUMP_ARRAYS== to ==END   DUMP_ARRAYS==) and PolyBench's time (stdout).

Staged: bin/<kernel>_<T> (stripped; bin.tar.xz instead when the folder would exceed 16 MiB),
lib/ (the shared libraries the binaries need beyond libc, libm, libstdc++, libgcc_s and the
CUDA driver: Abseil), oracle.tsv (kernel, md5, seconds, status), build.tsv (kernel, built:
yes or the reason, serial: bbmmc's note that a loop nest runs serially, as one tile on one
device, or -), gpu_run.sh. On the GPU machine (device tool, carry [".pb"]):
  bash .pb/gpu_run.sh .pb

Exit status: 0 every kernel staged with its oracle; 1 a kernel was not (bbmmc rejected it,
its build failed, its oracle failed), staged anyway; 2 a setup error (nothing staged);
77 POLYBENCH_DIR missing.
EOF
}

dataset=LARGE
build_dir="$root/build-gpu"
out_dir="$root/.pb"
workdir="$root/build-pb"
kernels_only=""
target=cuda
jobs=2
oracle_timeout=600
rerun_oracles=0
pack=0
wait_log=/tmp/stage.log
pb_dir=""
bbmmc_args=()
while [[ $# -gt 0 ]]; do
  arg="$1"
  shift
  case "$arg" in
    --dataset=*) dataset="${arg#*=}" ;;
    --build-dir=*) build_dir="${arg#*=}" ;;
    --out=*) out_dir="${arg#*=}" ;;
    --workdir=*) workdir="${arg#*=}" ;;
    --kernels=*) kernels_only="${arg#*=}" ;;
    --target=*) target="${arg#*=}" ;;
    --jobs=*) jobs="${arg#*=}" ;;
    -j) jobs="${1:-}"; shift ;;
    -j[0-9]*) jobs="${arg#-j}" ;;
    --bbmmc-args=*) read -r -a bbmmc_args <<<"${arg#*=}" ;;
    --oracle-timeout=*) oracle_timeout="${arg#*=}" ;;
    --rerun-oracles) rerun_oracles=1 ;;
    --pack) pack=1 ;;
    --wait-log=*) wait_log="${arg#*=}" ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "gpu_stage.sh: unknown option '$arg' (see --help)" >&2; exit 2 ;;
    *)
      if [[ -n "$pb_dir" ]]; then
        echo "gpu_stage.sh: more than one POLYBENCH_DIR ('$pb_dir', '$arg')" >&2
        exit 2
      fi
      pb_dir="$arg" ;;
  esac
done
case "$dataset" in
  MINI | SMALL | MEDIUM | LARGE | EXTRALARGE) ;;
  *) echo "gpu_stage.sh: --dataset must be MINI, SMALL, MEDIUM, LARGE or EXTRALARGE, not '$dataset'" >&2
     exit 2 ;;
esac
case "$target" in
  cuda | host) ;;
  *) echo "gpu_stage.sh: --target must be cuda or host, not '$target'" >&2; exit 2 ;;
esac
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "gpu_stage.sh: --jobs needs a positive integer" >&2; exit 2; }
[[ "$oracle_timeout" =~ ^[1-9][0-9]*$ ]] || {
  echo "gpu_stage.sh: --oracle-timeout needs seconds" >&2; exit 2; }

pb_dir="${pb_dir:-$root/../shared/polybench-4.2.1}"
if [[ ! -f "$pb_dir/utilities/polybench.h" || ! -f "$pb_dir/utilities/polybench.c" ]]; then
  echo "SKIP: PolyBench/C not found at '$pb_dir' (no utilities/polybench.h); pass its" \
       "directory: bench/polybench/gpu_stage.sh /path/to/polybench-4.2.1"
  exit 77
fi
pb_dir="$(cd "$pb_dir" && pwd)"
cc="${CC:-cc}"
cflags=(-O2)
defs=(-D"${dataset}_DATASET" -DPOLYBENCH_DUMP_ARRAYS -DPOLYBENCH_TIME)
t_start=$SECONDS
log() { printf '== [%3ds] %s\n' $((SECONDS - t_start)) "$*"; }

# --- The kernels (common.sh) ---
pb_find_kernels gpu_stage.sh "$pb_dir" "$kernels_only"
nk=${#kernels[@]}

# --- Directories: the work files persist; both are kept out of git (.git/info/exclude) ---
mkdir -p "$workdir" "$out_dir" || exit 2
workdir="$(cd "$workdir" && pwd)"
out_dir="$(cd "$out_dir" && pwd)"
if [[ "$out_dir" == "$root" || "$out_dir" == "$workdir" || "$workdir" == "$out_dir"/* ]]; then
  echo "gpu_stage.sh: --out=$out_dir would remove the repository or the work files" >&2
  exit 2
fi
exclude="$(git -C "$root" rev-parse --path-format=absolute --git-path info/exclude 2>/dev/null)"
for d in "$workdir" "$out_dir"; do
  [[ -n "$exclude" && "$d" == "$root"/* ]] || continue
  rel="${d#"$root"/}"
  if ! git -C "$root" check-ignore -q "$rel/" 2>/dev/null; then
    mkdir -p "$(dirname "$exclude")" && echo "/$rel/" >>"$exclude"
    log "added /$rel/ to $exclude"
  fi
done
work="$workdir/$dataset.$target"
oracles="$workdir/$dataset.oracle"  # shared by the targets
mkdir -p "$work/bbmmc" "$work/project" "$workdir/$dataset.oracle" || exit 2

# --- 1. Wait for a rebuild of the build tree that is under way, then install it ---
if [[ -n "$wait_log" && -f "$wait_log" ]] && ! grep -q '^rc=' "$wait_log"; then
  log "$wait_log has no 'rc=' line yet: the build tree is being rebuilt; waiting (30 s polls, 40 min at most)"
  deadline=$((SECONDS + 2400))
  until grep -q '^rc=' "$wait_log"; do
    if (( SECONDS >= deadline )); then
      echo "gpu_stage.sh: gave up after 40 minutes: $wait_log still has no 'rc=' line" >&2
      exit 2
    fi
    sleep 30
  done
fi
if [[ -n "$wait_log" && -f "$wait_log" ]]; then
  line="$(grep -m1 '^rc=' "$wait_log")"
  log "$wait_log: $line"
  [[ "$line" == rc=0 ]] ||
    echo "gpu_stage.sh: warning: the rebuild of the build tree ended with '$line' (see $wait_log); installing what is there" >&2
fi
build_dir="$(cd "$build_dir" 2>/dev/null && pwd)" || {
  echo "gpu_stage.sh: no BBMM build tree at '$build_dir'" >&2
  exit 2
}
cache="$build_dir/CMakeCache.txt"
if [[ $target == cuda ]] && ! grep -qE '^BBMM_ENABLE_CUDA:[A-Z]+=(ON|TRUE|1)$' "$cache"; then
  echo "gpu_stage.sh: $build_dir is not configured with BBMM_ENABLE_CUDA=ON" >&2
  exit 2
fi
grep -qE '^CMAKE_BUILD_TYPE:STRING=Release$' "$cache" ||
  echo "gpu_stage.sh: warning: $build_dir is not a Release build" >&2
log "installing $build_dir into $work/prefix (cmake --install, no build)"
if ! cmake --install "$build_dir" --prefix "$work/prefix" >"$work/install.log" 2>&1; then
  tail -n 20 "$work/install.log"
  echo "gpu_stage.sh: cmake --install failed: $work/install.log" >&2
  exit 2
fi
bbmmc="$work/prefix/bin/bbmmc"
[[ -x "$bbmmc" ]] || {
  echo "gpu_stage.sh: the installed package has no bin/bbmmc (BBMM_BUILD_COMPILER=ON?)" >&2; exit 2; }
[[ -n "$(find "$work/prefix" -name bbmmConfig.cmake -print -quit)" ]] || {
  echo "gpu_stage.sh: the installed package has no bbmmConfig.cmake" >&2; exit 2; }


# --- 2. bbmmc on every kernel: its diagnostics (the build runs it again) ---
log "bbmmc --target=$target on $nk kernels (-D${dataset}_DATASET)"
bbmmc_one() {
  local k=$1 d=${kdir[$1]}
  (cd "$pb_dir" && timeout -k 5 120 "$bbmmc" "$d/$k.c" --target="$target" "${defs[@]}" "${bbmmc_args[@]}" \
     -I utilities -I "$d" -o "$work/bbmmc/$k.bbmm.c") >/dev/null 2>"$work/bbmmc/$k.err"
  echo $? >"$work/bbmmc/$k.rc"
}
for k in "${kernels[@]}"; do spawn bbmmc_one "$k"; done
wait
declare -A built=() serial=()
ok_kernels=()
for k in "${kernels[@]}"; do
  rc=$(cat "$work/bbmmc/$k.rc")
  # bbmmc's notes that a loop nest runs serially, as one tile on one device (one GPU thread):
  # gpu_run.sh runs these kernels last.
  serial[$k]="$(grep 'note: the loop nest of .* runs serially' "$work/bbmmc/$k.err" |
    sed 's|^[^:]*/\([^/:]*:[0-9]*\):[0-9]*: note: |\1: |; s|: no loop in it is parallel$||' |
    awk '{ a[NR] = $0 } END { if (NR) print a[1] (NR > 1 ? " (and " NR - 1 " more)" : "") }')"
  if [[ $rc -eq 0 ]]; then ok_kernels+=("$k"); continue; fi
  first="$(grep -m1 -v '^[[:space:]]*$' "$work/bbmmc/$k.err")"
  case $rc in
    1) built[$k]="bbmmc rejected it: ${first:-exit status 1 without a message}" ;;
    2) built[$k]="bbmmc internal error: $first" ;;
    124 | 137) built[$k]="bbmmc timed out after 120 s" ;;
    *) built[$k]="bbmmc failed (exit status $rc): $first" ;;
  esac
  log "$k: ${built[$k]}"
done

# --- 3. One CMake project of the installed package: every kernel bbmmc compiled ---
proj="$work/project"
cat >"$proj/CMakeLists.txt.new" <<'EOF'
# Generated by bench/polybench/gpu_stage.sh: the PolyBench kernels through the installed bbmmc.
cmake_minimum_required(VERSION 3.25)
project(bbmm_polybench_gpu LANGUAGES C CXX)
if(PB_TARGET STREQUAL "cuda")
  # CMAKE_CUDA_ARCHITECTURES is given (90): nothing probes a GPU.
  enable_language(CUDA)
endif()
find_package(bbmm CONFIG REQUIRED)
add_library(pb_util OBJECT ${PB_DIR}/utilities/polybench.c)
target_compile_definitions(pb_util PRIVATE ${PB_DEFS})
target_include_directories(pb_util PRIVATE ${PB_DIR}/utilities)
function(pb_kernel name dir)
  set(defs)
  foreach(d IN LISTS PB_DEFS)
    list(APPEND defs -D${d})
  endforeach()
  bbmm_add_executable(${name}_${PB_TARGET} SOURCES ${PB_DIR}/${dir}/${name}.c TARGET ${PB_TARGET}
                      BBMMC_ARGS ${defs} ${PB_BBMMC_ARGS} -I${PB_DIR}/utilities -I${PB_DIR}/${dir}
                      CUDA_OPTIONS -fmad=false)
  target_sources(${name}_${PB_TARGET} PRIVATE $<TARGET_OBJECTS:pb_util>)
  target_compile_definitions(${name}_${PB_TARGET} PRIVATE ${PB_DEFS})
  target_include_directories(${name}_${PB_TARGET} PRIVATE ${PB_DIR}/utilities ${PB_DIR}/${dir})
endfunction()
include(${CMAKE_CURRENT_SOURCE_DIR}/kernels.cmake)
EOF
for k in "${ok_kernels[@]}"; do echo "pb_kernel($k ${kdir[$k]})"; done >"$proj/kernels.cmake.new"
# Rewritten only when they change, so that a re-run rebuilds nothing new.
for f in CMakeLists.txt kernels.cmake; do
  if cmp -s "$proj/$f.new" "$proj/$f"; then rm "$proj/$f.new"; else mv "$proj/$f.new" "$proj/$f"; fi
done
generator=()
[[ ! -f "$work/build/CMakeCache.txt" ]] && command -v ninja >/dev/null && generator=(-G Ninja)
: >"$work/build.log"
cuda_args=()
cuda_note=""
if [[ $target == cuda ]]; then
  cuda_args=(-DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_FLAGS=-O2)
  cuda_note=", CUDA sm_90 -fmad=false"
fi
log "CMake project with find_package(bbmm): ${#ok_kernels[@]} kernels, --target=$target, C ${cflags[*]}$cuda_note (-j$jobs; log $work/build.log)"
if ! cmake -S "$proj" -B "$work/build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$work/prefix" \
     -DCMAKE_BUILD_TYPE= -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="${cflags[*]}" \
     -DCMAKE_EXE_LINKER_FLAGS=-Wl,--strip-debug "${cuda_args[@]}" -DPB_TARGET="$target" \
     -DPB_DIR="$pb_dir" -DPB_DEFS="$(IFS=';'; echo "${defs[*]#-D}")" -DPB_BBMMC_ARGS="$(IFS=';'; echo "${bbmmc_args[*]}")" >>"$work/build.log" 2>&1; then
  tail -n 30 "$work/build.log"
  echo "gpu_stage.sh: configuring the CMake project against the installed package failed: $work/build.log" >&2
  exit 2
fi
# A program whose build fails now must not be staged from an earlier build.
for k in "${ok_kernels[@]}"; do rm -f "$work/build/${k}_$target"; done
keep_going=(-k 0)
grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$work/build/CMakeCache.txt" || keep_going=(-k)
cmake --build "$work/build" -j "$jobs" -- "${keep_going[@]}" >>"$work/build.log" 2>&1
for k in "${ok_kernels[@]}"; do
  if [[ -x "$work/build/${k}_$target" ]]; then
    built[$k]=yes
  else
    built[$k]="build failed: $(pb_build_error "${k}_$target" "$work/build.log")"
    log "$k: ${built[$k]}"
  fi
done

# --- 4. The oracles: the original programs, cc -O2, run here ---
log "oracles: $cc ${cflags[*]} ${defs[*]}, $nk programs, $jobs at a time, timeout ${oracle_timeout}s"
if ! "$cc" "${cflags[@]}" "${defs[@]}" -I "$pb_dir/utilities" -c "$pb_dir/utilities/polybench.c" \
     -o "$oracles/polybench.o" 2>"$oracles/polybench.err"; then
  cat "$oracles/polybench.err"; echo "gpu_stage.sh: $cc failed on polybench.c" >&2; exit 2
fi
# The md5 of the dump on standard input (pb_dump), streamed: at LARGE it is tens of MB.
# gpu_run.sh does the same.
dump_md5() { pb_dump | md5sum | cut -d' ' -f1; }
empty_md5="$(printf '' | md5sum | cut -d' ' -f1)"
# Writes $oracles/<k>.result: md5, seconds, status (ok or why not). Kept, and not run
# again, while the program is the same (cmp) and its last run was ok.
oracle_one() {
  local k=$1 d="$pb_dir/${kdir[$1]}" o="$oracles/$1" rc md5 secs
  if ! "$cc" "${cflags[@]}" "${defs[@]}" -I "$pb_dir/utilities" -I "$d" "$d/$k.c" \
       "$oracles/polybench.o" -lm -o "$o.new" 2>"$o.build.err"; then
    rm -f "$o" "$o.new"
    printf -- '-\t-\tcc failed: %s\n' "$(grep -m1 error "$o.build.err")" >"$o.result"; return
  fi
  if cmp -s "$o.new" "$o" && [[ $rerun_oracles -eq 0 ]] &&
     [[ "$(cut -f3 "$o.result" 2>/dev/null)" == ok ]]; then
    rm -f "$o.new"; return
  fi
  mv "$o.new" "$o"
  md5="$( (timeout -k 5 "$oracle_timeout" "$o" 2>&1 >"$o.out"; echo $? >"$o.rc") 2>/dev/null | dump_md5)"
  rc="$(cat "$o.rc")"
  secs="$(grep -m1 -E '^[0-9]+\.[0-9]+$' "$o.out")"
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    printf -- '-\t-\ttimeout after %ss\n' "$oracle_timeout" >"$o.result"
  elif [[ $rc -ne 0 ]]; then
    printf -- '-\t-\terror: exit status %s\n' "$rc" >"$o.result"
  elif [[ "$md5" == "$empty_md5" ]]; then
    printf -- '-\t%s\tno dump on stderr\n' "${secs:--}" >"$o.result"
  else
    printf '%s\t%s\tok\n' "$md5" "${secs:--}" >"$o.result"
  fi
}
for k in "${kernels[@]}"; do spawn oracle_one "$k"; done
wait
failures=0
for k in "${kernels[@]}"; do
  status="$(cut -f3 "$oracles/$k.result")"
  [[ $status == ok ]] || log "$k: oracle: $status"
  [[ $status == ok && ${built[$k]} == yes ]] || failures=$((failures + 1))
done

# --- 5. Stage ---
log "staging into $out_dir"
rm -rf "$out_dir"
mkdir -p "$out_dir/bin" "$out_dir/lib" || exit 2
{
  printf '# PolyBench/C oracles: %s %s %s; run on %s (%s, %s cores), %s at a time\n' \
    "$cc" "${cflags[*]}" "${defs[*]}" "$(hostname)" \
    "$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ *//')" \
    "$(nproc)" "$jobs"
  printf '# staged %s from %s (%s)\n' "$(date -u +%Y-%m-%dT%H:%MZ)" \
    "$(git -C "$root" describe --always --dirty 2>/dev/null)" "$build_dir"
  printf '# dataset\t%s\n# target\t%s\n' "$dataset" "$target"
  printf 'kernel\tmd5\tseconds\tstatus\n'
  for k in "${kernels[@]}"; do printf '%s\t%s\n' "$k" "$(cat "$oracles/$k.result")"; done
} >"$out_dir/oracle.tsv"
{
  printf 'kernel\tbuilt\tserial\n'
  for k in "${kernels[@]}"; do printf '%s\t%s\t%s\n' "$k" "${built[$k]}" "${serial[$k]:--}"; done
} >"$out_dir/build.tsv"
cp "$root/bench/polybench/gpu_run.sh" "$root/bench/polybench/gpu_profile.sh" "$out_dir/"
# Libraries a GPU machine (Ubuntu 24.04, CUDA 13) has: the C and C++ runtimes, the driver.
system_libs='^(linux-vdso|linux-gate|ld-linux.*|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcuda|libnvidia-.*)\.so'
missing=0
for k in "${kernels[@]}"; do
  [[ ${built[$k]} == yes ]] || continue
  b="$work/build/${k}_$target"
  cp "$b" "$out_dir/bin/" && strip --strip-unneeded "$out_dir/bin/${k}_$target"
  while read -r name arrow path _; do
    [[ "$name" =~ $system_libs || "$arrow" != "=>" ]] && continue
    if [[ "$path" == not ]]; then
      echo "gpu_stage.sh: ${k}_$target needs $name, which is not found here" >&2
      missing=1; continue
    fi
    [[ -f "$out_dir/lib/$name" ]] || cp -L "$path" "$out_dir/lib/$name"
  done < <(ldd "$b")
done
[[ $missing -eq 0 ]] || exit 2
strip --strip-unneeded "$out_dir"/lib/* 2>/dev/null
# The device tool carries 64 MiB with the working tree (~9 MiB): bin/ is packed (xz, one
# solid stream: the binaries share libbbmm and the CUDA runtime; 30 CUDA programs, 43 MiB,
# become 3 MiB) when the folder exceeds 16 MiB.
size_kib=$(du -sk "$out_dir" | cut -f1)
if [[ $pack -eq 1 ]] || (( size_kib > 16 * 1024 )); then
  log "packing bin/ ($((size_kib / 1024)) MiB in all) as bin.tar.xz"
  if ! tar -C "$out_dir" -cf - bin | xz -9e -T1 >"$out_dir/bin.tar.xz"; then
    echo "gpu_stage.sh: packing bin/ failed" >&2
    exit 2
  fi
  rm -rf "${out_dir:?}/bin"
fi
size_kib=$(du -sk "$out_dir" | cut -f1)

# --- 6. Report ---
echo
if (( ${#built[@]} > 0 )); then
  for k in "${kernels[@]}"; do
    [[ ${built[$k]} == yes ]] || echo "not staged: $k: ${built[$k]}"
  done
fi
for k in "${kernels[@]}"; do
  [[ -z "${serial[$k]}" ]] || echo "serial: $k: ${serial[$k]}"
done
echo "oracles ($dataset, $cc ${cflags[*]}, seconds of PolyBench's timer):"
awk -F'\t' '!/^#/ && $1 != "kernel" { printf "  %-16s %10s  %s\n", $1, $3, $4 }' "$out_dir/oracle.tsv"
echo "lib/: $(cd "$out_dir/lib" && find . -maxdepth 1 -type f | wc -l) libraries ($(du -sh "$out_dir/lib" | cut -f1))"
staged=$(awk -F'\t' '$2 == "yes"' "$out_dir/build.tsv" | wc -l)
echo "staged $staged/$nk kernels (--target=$target, ${dataset}_DATASET) in $out_dir:" \
     "$(du -sh "$out_dir" | cut -f1) ($size_kib KiB)$([[ -f "$out_dir/bin.tar.xz" ]] && echo ", bin/ packed as bin.tar.xz")"
if (( size_kib >= 50 * 1024 )); then
  echo "gpu_stage.sh: $out_dir is over 50 MiB: the device tool cannot carry it" >&2
  exit 2
fi
rel="$out_dir"
[[ "$out_dir" == "$root"/* ]] && rel="${out_dir#"$root"/}"
echo "on the GPU machine (device tool, carry [\"$rel\"]): bash $rel/gpu_run.sh $rel"
log "done"
[[ $failures -eq 0 ]] || exit 1
exit 0
