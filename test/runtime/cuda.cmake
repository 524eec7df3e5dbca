# GPU tests (label gpu): they skip with a printed reason when no GPU is
# present; bench/gpu/run_all.sh runs them on the GPU machine.
# cuda_conformance_test and cuda_fuzz_test run the shared runtime suites
# (conformance, random traces vs a host shadow) on the CUDA backend.
if(BBMM_HAVE_CUDA)
  bbmm_add_test(cuda_backend_test LABELS gpu SOURCES cuda_backend_test.cpp cuda_test_kernels.cu
    LIBS bbmm_runtime_internal CUDA::cudart_static)
  # The same tests against a host-only fake of the CUDA runtime
  # (cuda_fake_runtime.cpp), so that the backend's own logic (workers,
  # events, stream ordering, teardown, copy splitting) is checked in CI too,
  # which has no GPU. Not a substitute for the GPU run.
  set(cuda_src ${PROJECT_SOURCE_DIR}/bbmm-runtime/src)
  bbmm_add_test(cuda_backend_fake_test LABELS cuda_fake
    SOURCES cuda_backend_test.cpp cuda_fake_runtime.cpp
      ${cuda_src}/cuda/cuda_backend.cpp ${cuda_src}/cuda/cuda_copy.cpp
      ${cuda_src}/cuda/cuda_events.cpp ${cuda_src}/cuda/cuda_pinning.cpp
      ${cuda_src}/cuda/cuda_staging.cpp
      ${cuda_src}/cuda/cuda_pool_grower.cpp
      ${cuda_src}/cuda/cuda_status.cpp ${cuda_src}/cuda/cuda_streams.cpp
      ${cuda_src}/cuda/cuda_topology.cpp ${cuda_src}/cuda/cuda_trace.cpp
      ${cuda_src}/cuda/cuda_worker.cpp ${cuda_src}/core/trace.cpp ${cuda_src}/core/backend.cpp
      ${cuda_src}/core/slow_calls.cpp
      ${cuda_src}/core/call_profile.cpp
    LIBS absl::status absl::statusor absl::strings absl::inlined_vector Threads::Threads)
  target_include_directories(cuda_backend_fake_test PRIVATE ${cuda_src}
    ${PROJECT_SOURCE_DIR}/include ${CUDAToolkit_INCLUDE_DIRS})
  # Staged copies of pageable host memory (plan and host-side copies; no CUDA).
  bbmm_add_test(cuda_staging_test LABELS cuda_fake
    SOURCES cuda_staging_test.cpp ${cuda_src}/cuda/cuda_staging.cpp
    LIBS absl::status absl::inlined_vector Threads::Threads)
  target_include_directories(cuda_staging_test PRIVATE ${cuda_src} ${PROJECT_SOURCE_DIR}/include)
  # The random traces (runtime_fuzz_test.cpp) on the CUDA backend over the same fake: the
  # whole runtime compiled against it, every stream a thread with random delays, so that
  # an ordering the backend misses shows on any machine (the fake has no caches and no
  # copy engines: it cannot show what only hardware does). It found, 2026-11-26, what made
  # cuda_fuzz_test fail 1-2 traces in 2,000 on 4 H200s: the suites' host-staged kernels
  # (cuda_test_support.h) copied back bytes they had not written.
  # The runtime's sources over the fake, compiled once for both (position-independent
  # like the library, whose flags they share).
  file(GLOB fake_rt_src ${cuda_src}/core/*.cpp ${cuda_src}/api/*.cpp ${cuda_src}/host/*.cpp
    ${cuda_src}/cuda/*.cpp)
  add_library(bbmm_runtime_cuda_fake OBJECT ${fake_rt_src} cuda_fake_runtime.cpp)
  set_target_properties(bbmm_runtime_cuda_fake PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(bbmm_runtime_cuda_fake PUBLIC ${cuda_src}
    ${PROJECT_SOURCE_DIR}/include ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_definitions(bbmm_runtime_cuda_fake PUBLIC BBMM_HAVE_CUDA=1)
  target_compile_options(bbmm_runtime_cuda_fake PRIVATE -Wall -Wextra)
  target_link_libraries(bbmm_runtime_cuda_fake PUBLIC absl::status absl::statusor absl::strings
    absl::str_format absl::inlined_vector Threads::Threads)
  bbmm_add_test(cuda_fuzz_fake_test LABELS cuda_fake
    SOURCES runtime_fuzz_test.cpp cuda_fuzz_setup.cpp LIBS bbmm_runtime_cuda_fake)
  if(BBMM_SANITIZER)
    target_compile_definitions(cuda_fuzz_fake_test PRIVATE BBMM_TEST_SANITIZER=1)
  endif()
  # The two-GPU tile path allocates nothing on the calling thread (own binary: it
  # replaces operator new).
  bbmm_add_test(cuda_alloc_fake_test LABELS cuda_fake
    SOURCES cuda_alloc_fake_test.cpp LIBS bbmm_runtime_cuda_fake)
  # A tile's boxes of one array take one instance on CUDA (placement rule).
  bbmm_add_test(cuda_placement_fake_test LABELS cuda_fake
    SOURCES cuda_placement_fake_test.cpp LIBS bbmm_runtime_cuda_fake)
  # Sends between ranks from CUDA memory (as with a CUDA-aware MPI) and staged; and
  # global_tiles_fuzz_test's random programs over loopback ranks of CUDA devices whose
  # transports read device memory (cuda_ranks_setup.cpp), and with every box staged
  # (BBMM_RANK_SENDS=staged). The GPU builds of both are below.
  bbmm_add_test(cuda_rank_sends_fake_test LABELS cuda_fake
    SOURCES cuda_rank_sends_test.cpp LIBS bbmm_runtime_cuda_fake)
  bbmm_add_test(cuda_global_tiles_fuzz_fake_test LABELS cuda_fake
    SOURCES global_tiles_fuzz_test.cpp cuda_ranks_setup.cpp LIBS bbmm_runtime_cuda_fake)
  add_test(NAME cuda_global_tiles_fuzz_fake_test.staged COMMAND cuda_global_tiles_fuzz_fake_test)
  set_tests_properties(cuda_global_tiles_fuzz_fake_test.staged PROPERTIES LABELS cuda_fake
    TIMEOUT 600 ENVIRONMENT "BBMM_RANK_SENDS=staged;BBMM_GLOBAL_FUZZ_TRACES=60")
  # The conformance suite on the CUDA backend over the fake, likewise.
  bbmm_add_test(cuda_conformance_fake_test LABELS cuda_fake
    SOURCES cuda_conformance_test.cpp runtime_conformance_suite.cpp LIBS bbmm_runtime_cuda_fake)
  # Both again with the copies between devices issued by the destination device's
  # worker (BBMM_CUDA_PEER_PUSH=0; the default pushes).
  foreach(t cuda_fuzz_fake_test cuda_conformance_fake_test)
    add_test(NAME ${t}.peer_pull COMMAND ${t})
    set_tests_properties(${t}.peer_pull PROPERTIES LABELS cuda_fake TIMEOUT 600
      ENVIRONMENT "BBMM_CUDA_PEER_PUSH=0;TEST_TMPDIR=${CMAKE_CURRENT_BINARY_DIR}/tmp/")
    # And with the host arrays left pageable, their copies staged (BBMM_CUDA_HOST_COPIES=staged).
    add_test(NAME ${t}.pageable COMMAND ${t})
    set_tests_properties(${t}.pageable PROPERTIES LABELS cuda_fake TIMEOUT 600
      ENVIRONMENT "BBMM_CUDA_HOST_COPIES=staged;BBMM_FUZZ_TRACES=300;TEST_TMPDIR=${CMAKE_CURRENT_BINARY_DIR}/tmp/")
  endforeach()
  bbmm_add_test(cuda_conformance_test LABELS gpu
    SOURCES cuda_conformance_test.cpp runtime_conformance_suite.cpp
    LIBS bbmm_runtime_internal CUDA::cudart_static)
  bbmm_add_test(cuda_fuzz_test LABELS gpu
    SOURCES runtime_fuzz_test.cpp cuda_fuzz_setup.cpp
    LIBS bbmm_runtime_internal CUDA::cudart_static)
  bbmm_add_test(cuda_rank_sends_test LABELS gpu
    SOURCES cuda_rank_sends_test.cpp LIBS bbmm_runtime_internal CUDA::cudart_static)
  bbmm_add_test(cuda_global_tiles_fuzz_test LABELS gpu
    SOURCES global_tiles_fuzz_test.cpp cuda_ranks_setup.cpp
    LIBS bbmm_runtime_internal CUDA::cudart_static)
  # The hand-written CUDA samples on all visible GPUs, small sizes: with every GPU's
  # hull reserved (exit 3 if an instance grew anyway) and with a capacity that forces
  # box-out; each verifies against its own plain-CUDA reference and the CPU loop.
  foreach(sample jacobi2d_cuda heat3d_cuda)
    if(TARGET ${sample})
      if(sample STREQUAL "jacobi2d_cuda")
        set(size --n 258 --steps 4)
      else()
        set(size --n 34 --steps 4)
      endif()
      add_test(NAME ${sample}_sample COMMAND ${sample} ${size})
      add_test(NAME ${sample}_boxout_sample COMMAND ${sample} ${size} --capacity auto)
      set_tests_properties(${sample}_sample ${sample}_boxout_sample PROPERTIES
        LABELS gpu SKIP_RETURN_CODE 77)
    endif()
  endforeach()
endif()
