# Helpers of run.sh and gpu_stage.sh (sourced, not run): the kernels of a PolyBench tree,
# bounded background jobs, the array dump of a program's stderr, and the first error of a
# target in a build log. (gpu_run.sh runs on a machine with only its staged folder and
# keeps its own copy of the dump filter.)
# shellcheck shell=bash

# Sets `kernels` (names, sorted) and `kdir` (name -> directory relative to PB_DIR) to the
# kernels of PolyBench tree PB_DIR: <category>/<name>/<name>.c (medley/nussinov/Nussinov.orig.c
# is not one), only those in ONLY (comma-separated) when it is given. Warns (as TOOL) of names
# in ONLY that are not there; exits 2 when no kernel is left.
pb_find_kernels() {
  local tool=$1 dir=$2 only=$3 f d k
  kernels=()
  declare -gA kdir=()
  while read -r f; do
    d="$(dirname "$f")"
    k="$(basename "$d")"
    [[ "$(basename "$f" .c)" == "$k" ]] || continue
    if [[ -n "$only" && ",$only," != *",$k,"* ]]; then continue; fi
    kernels+=("$k")
    kdir[$k]="$d"
  done < <(cd "$dir" && find datamining linear-algebra/blas linear-algebra/kernels \
             linear-algebra/solvers medley stencils -mindepth 2 -maxdepth 2 -name '*.c' \
             2>/dev/null | LC_ALL=C sort)
  for k in ${only//,/ }; do
    [[ -n "${kdir[$k]:-}" ]] || echo "$tool: warning: no kernel '$k' in '$dir'" >&2
  done
  if [[ ${#kernels[@]} -eq 0 ]]; then
    echo "$tool: no kernel found in '$dir'${only:+ named $only}" >&2
    exit 2
  fi
}

# Runs "$@" in the background, at most $jobs at a time (`wait` waits for the rest).
spawn() {
  while (( $(jobs -rp | wc -l) >= jobs )); do wait -n; done
  "$@" &
}

# The array dump (POLYBENCH_DUMP_ARRAYS): the lines from ==BEGIN DUMP_ARRAYS== to
# ==END   DUMP_ARRAYS== of the files given, or of standard input.
pb_dump() {
  awk '/^==BEGIN DUMP_ARRAYS==$/ {on = 1} on {print} /^==END   DUMP_ARRAYS==$/ {on = 0}' "$@"
}

# The first error line of target TARGET in build log LOG (Ninja or Make), or where to look.
pb_build_error() {
  local e
  e="$(awk -v t="$1" '/^FAILED: / {on = index($0, "/" t ".dir/") || index($0, "/" t "/") || $0 ~ (" " t "$")}
                     on && /error/ {print; exit}' "$2")"
  echo "${e:-see $2}"
}
