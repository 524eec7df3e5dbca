# Finds BBMM's dependencies. Each required one that is missing stops the
# configure with the name of the Debian package that provides it.

function(bbmm_missing what package)
  message(FATAL_ERROR
    "BBMM needs ${what}, which was not found.\n"
    "On Debian/Ubuntu install it with:  apt-get install ${package}\n"
    "(or run `bash .ci/main`, which installs everything BBMM needs).")
endfunction()

find_package(Threads REQUIRED)

find_package(absl CONFIG QUIET)
if(NOT absl_FOUND)
  bbmm_missing("Abseil (find_package(absl))" "libabsl-dev")
endif()

if(BBMM_BUILD_COMPILER OR BBMM_BUILD_TESTS)
  find_package(PkgConfig QUIET)
  if(NOT PKG_CONFIG_FOUND)
    bbmm_missing("pkg-config" "pkgconf")
  endif()
  pkg_check_modules(ISL QUIET IMPORTED_TARGET isl)
  if(NOT ISL_FOUND)
    bbmm_missing("isl (pkg-config module 'isl')" "libisl-dev")
  endif()
  add_library(bbmm_isl INTERFACE)
  target_link_libraries(bbmm_isl INTERFACE PkgConfig::ISL)
endif()

if(BBMM_BUILD_TESTS)
  find_package(GTest CONFIG QUIET)
  if(NOT GTest_FOUND)
    bbmm_missing("GoogleTest (find_package(GTest))" "libgtest-dev libgmock-dev")
  endif()
  include(GoogleTest)
endif()

if(BBMM_BUILD_BENCH)
  find_package(benchmark CONFIG QUIET)
  if(NOT benchmark_FOUND)
    bbmm_missing("Google Benchmark (find_package(benchmark))" "libbenchmark-dev")
  endif()
endif()

# Optional backends: AUTO enables them when found, ON insists.
set(BBMM_HAVE_OPENCL OFF)
if(NOT BBMM_ENABLE_OPENCL STREQUAL "OFF")
  find_package(OpenCL QUIET)
  if(OpenCL_FOUND)
    set(BBMM_HAVE_OPENCL ON)
  elseif(BBMM_ENABLE_OPENCL STREQUAL "ON")
    bbmm_missing("OpenCL headers and ICD loader" "opencl-headers ocl-icd-opencl-dev pocl-opencl-icd")
  endif()
endif()

# The MPI transport (issue 14): Debian's libopenmpi-dev + openmpi-bin.
set(BBMM_HAVE_MPI OFF)
if(NOT BBMM_ENABLE_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS C QUIET)
  if(MPI_C_FOUND)
    set(BBMM_HAVE_MPI ON)
  elseif(BBMM_ENABLE_MPI STREQUAL "ON")
    bbmm_missing("MPI (Open MPI)" "libopenmpi-dev openmpi-bin")
  endif()
endif()

set(BBMM_HAVE_CUDA OFF)
if(NOT BBMM_ENABLE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Hopper (H100/H200) by default; override with -DCMAKE_CUDA_ARCHITECTURES.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    if(NOT DEFINED CMAKE_CUDA_STANDARD)
      set(CMAKE_CUDA_STANDARD 17)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND)
      set(BBMM_HAVE_CUDA ON)
    endif()
  endif()
  if(NOT BBMM_HAVE_CUDA AND BBMM_ENABLE_CUDA STREQUAL "ON")
    bbmm_missing("the CUDA toolkit (nvcc)" "nvidia-cuda-toolkit (or NVIDIA's cuda-toolkit)")
  endif()
endif()

message(STATUS "BBMM: OpenCL backend ${BBMM_HAVE_OPENCL}, CUDA backend ${BBMM_HAVE_CUDA}, "
               "MPI transport ${BBMM_HAVE_MPI}, "
               "sanitizer '${BBMM_SANITIZER}'")
