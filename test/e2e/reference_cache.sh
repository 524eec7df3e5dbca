#!/usr/bin/env bash
# The samples' reference cache (samples/common/sample.h, BBMM_SAMPLE_CACHE), which
# bench/gpu/study.sh uses: BBMM_SAMPLE_REFERENCE=only stores the sequential result and exits
# without running the generated program; a later run of the same command line loads it and
# verifies against it (PASSED); after 8 bytes of the stored result are changed, the same run
# must report FAILED (what was loaded is really what the generated program is compared
# with). With BBMM_SAMPLE_WARMUP=1 (a tiny run of the generated function first).
#   reference_cache.sh SCRATCH_DIR SAMPLE_EXE ARGS...
set -uo pipefail
dir="$1" exe="$2"
shift 2
rm -rf "$dir" && mkdir -p "$dir" || exit 1
export BBMM_BACKEND=host BBMM_DEVICES=2 BBMM_SAMPLE_CACHE="$dir" BBMM_SAMPLE_WARMUP=1 BBMM_STATS=
# The samples leave their arrays to the end of the process (they never free them), which
# LeakSanitizer reports in the sanitizer builds; this test checks exit statuses.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fail() { echo "reference_cache.sh: $1"; echo "$out"; exit 1; }

out=$(BBMM_SAMPLE_REFERENCE=only "$exe" "$@" 2>&1) || fail "the reference-only run failed"
grep -q "sequential result .*\.ref" <<<"$out" || fail "the reference-only run stored nothing"
grep -q "verification" <<<"$out" && fail "the reference-only run ran the generated program"
refs=("$dir"/*.ref)
[[ ${#refs[@]} -eq 1 && -s "${refs[0]}" ]] || fail "expected one cached result in $dir"

out=$("$exe" "$@" 2>&1) || fail "the run against the cached result failed"
grep -q "loaded from" <<<"$out" || fail "the cached result was not loaded"
grep -q "sequential program: PASSED" <<<"$out" || fail "no PASSED against the cached result"

size=$(stat -c %s "${refs[0]}")
printf '\x00\x00\x00\x00\x00\x00\xf0\x3f' |
  dd of="${refs[0]}" bs=1 seek=$(( size / 16 * 8 )) conv=notrunc status=none
out=$("$exe" "$@" 2>&1)
grep -q "sequential program: FAILED" <<<"$out" || fail "a changed cached result still PASSED"
rm -rf "$dir"
echo "reference_cache.sh: stored, loaded and PASSED; a changed result FAILED"
