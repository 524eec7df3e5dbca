#!/usr/bin/env bash
# Builds the GPU binaries here (nvcc, sm_90) and stages them in .gpu/ with the
# shared libraries the GPU machine lacks (Abseil), for the device tool:
#   bash bench/gpu/stage.sh          # then run with carry [".gpu"]:
#   bash bench/gpu/run_all.sh .gpu
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$root/build-gpu"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBBMM_ENABLE_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DBBMM_BUILD_COMPILER=OFF -DBBMM_ENABLE_OPENCL=OFF >/dev/null
targets=(cuda_backend_test jacobi2d_cuda jacobi2d_host gpu_bench)
# (The target list is captured first: `ninja ... | grep -q` under pipefail
# fails at random when grep closes the pipe early.)
all_targets=$(ninja -C "$build" -t targets all 2>/dev/null)
for t in cuda_conformance_test cuda_fuzz_test; do
  if grep -q "^$t:" <<<"$all_targets"; then targets+=("$t"); fi
done
cmake --build "$build" -j2 --target "${targets[@]}"
rm -rf "$root/.gpu"
mkdir -p "$root/.gpu/bin" "$root/.gpu/lib"
for t in "${targets[@]}"; do
  f=$(find "$build" -type f -name "$t" -perm -u+x | head -1)
  cp "$f" "$root/.gpu/bin/"
  ldd "$f" | awk '/libabsl|libgtest|libbenchmark/ {print $3}' | xargs -r -I{} cp -L {} "$root/.gpu/lib/"
done
cp "$root/bench/gpu/run_all.sh" "$root/.gpu/"
du -sh "$root/.gpu"
