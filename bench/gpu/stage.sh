#!/usr/bin/env bash
# Builds the GPU binaries here (nvcc, sm_90, Release) and stages them in .gpu/ with the
# shared libraries the GPU machine lacks (Abseil, GoogleTest, Google Benchmark) and the
# scripts run there, for the device tool:
#   bash bench/gpu/stage.sh          # then, on the GPU machine, with carry [".gpu"]:
#   bash .gpu/run_all.sh .gpu [tests|sanitize|perf|bench|trace|all]
# Staged: bin/ (cuda_backend_test, cuda_conformance_test, cuda_fuzz_test, jacobi2d_cuda,
# heat3d_cuda, ceilings, gpu_bench; stripped when the folder would exceed 40 MiB),
# lib/, run_all.sh, summarize.py, plot_trace.py. Fails if .gpu/ ends up over 60 MiB.
# BBMM_STAGE_JOBS (default 2) sets the build's parallelism.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$root/build-gpu"
stage="$root/.gpu"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBBMM_ENABLE_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DBBMM_BUILD_COMPILER=OFF -DBBMM_ENABLE_OPENCL=OFF >/dev/null
targets=(cuda_backend_test jacobi2d_cuda heat3d_cuda ceilings gpu_bench)
# (The target list is captured first: `ninja ... | grep -q` under pipefail
# fails at random when grep closes the pipe early.)
all_targets=$(ninja -C "$build" -t targets all 2>/dev/null)
for t in cuda_conformance_test cuda_fuzz_test; do
  if grep -q "^$t:" <<<"$all_targets"; then targets+=("$t"); fi
done
cmake --build "$build" -j"${BBMM_STAGE_JOBS:-2}" --target "${targets[@]}"
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib"
for t in "${targets[@]}"; do
  f=$(find "$build" -type f -name "$t" -perm -u+x | head -1)
  [[ -n "$f" ]] || { echo "stage.sh: built target $t not found under $build" >&2; exit 1; }
  cp "$f" "$stage/bin/"
  ldd "$f" | awk '/libabsl|libgtest|libgmock|libbenchmark/ {print $3}' |
    xargs -r -I{} cp -L {} "$stage/lib/"
done
for s in run_all.sh summarize.py plot_trace.py; do
  cp "$root/bench/gpu/$s" "$stage/"
done
# Symbols help compute-sanitizer's backtraces: strip only when the folder is large.
if (( $(du -sm "$stage" | cut -f1) > 40 )); then
  strip --strip-unneeded "$stage"/bin/* "$stage"/lib/*
fi
size=$(du -sm "$stage" | cut -f1)
du -sh "$stage"
ls -l "$stage/bin"
if (( size > 60 )); then
  echo "stage.sh: .gpu is $size MiB, over the 60 MiB limit" >&2
  exit 1
fi
