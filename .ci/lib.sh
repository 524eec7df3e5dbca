# Shared by .ci/main, .ci/test and .ci/run. Source it; do not run it.
set -euo pipefail

BBMM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BBMM_PACKAGES=(cmake ninja-build g++ clang pkgconf libisl-dev libabsl-dev libgtest-dev
               libgmock-dev libbenchmark-dev opencl-headers ocl-icd-opencl-dev
               pocl-opencl-icd libopenmpi-dev openmpi-bin)

# Installs the Debian packages BBMM needs that are not installed yet (none on a
# machine that has them all, so a re-run costs nothing).
bbmm_install_deps() {
  local missing=()
  for p in "${BBMM_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  echo "== installing: ${missing[*]}"
  local sudo=()
  [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
}

# Configures and builds one CMake preset (incremental on re-runs).
bbmm_build() {
  local preset="$1"
  cd "$BBMM_ROOT"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
}
