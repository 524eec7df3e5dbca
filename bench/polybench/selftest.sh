#!/usr/bin/env bash
# Shows that bench/polybench/run.sh can fail: it runs one kernel (jacobi-1d) with one byte of
# its oracle's dump changed (--corrupt-oracle) and checks that every configuration that ran
# reports FAIL(dump) and that run.sh exits 1. Arguments are passed to run.sh (POLYBENCH_DIR,
# --build-dir, --workdir, ...). Exit status: 0 the failure was detected, 1 it was not, 77
# PolyBench is missing (as run.sh).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kernel=jacobi-1d
# run.sh keeps its files when it fails, as it must here: in a directory removed at exit
# (a --workdir among the arguments wins and is kept).
tmp="$(mktemp -d "${TMPDIR:-/tmp}/bbmm-polybench-selftest.XXXXXX")" || exit 1
trap 'rm -rf "$tmp"' EXIT
out="$(bash "$here/run.sh" --kernels=$kernel --corrupt-oracle=$kernel --workdir="$tmp" "$@" 2>&1)"
rc=$?
echo "$out"
[[ $rc -eq 77 ]] && exit 77
fail() { echo "selftest: $*"; exit 1; }
[[ $rc -eq 1 ]] || fail "run.sh exited with $rc, not 1, on a corrupted oracle"
row="$(grep "^$kernel " <<<"$out")" || fail "no table row for $kernel"
# Every host configuration runs everywhere; each must have seen the wrong byte.
for config in 1dev 2dev 3dev 4dev 4dev.2t 16KiB.1dev 4KiB.4dev check; do
  grep -q "^  $kernel\.$config: the dump differs from the original program's" <<<"$out" ||
    fail "$kernel.$config did not report the changed byte"
done
[[ "$(grep -o 'FAIL(dump)' <<<"$row" | wc -l)" -ge 8 ]] || fail "fewer than 8 FAIL(dump) cells: $row"
grep -q "PASS" <<<"$row" && fail "a configuration passed against a corrupted oracle: $row"
echo "selftest: PASSED (the corrupted oracle was detected in every configuration)"
