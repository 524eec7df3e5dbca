# GPU tests (label gpu): they skip with a printed reason when no GPU is
# present; bench/gpu/run_all.sh runs them on the GPU machine.
# cuda_conformance_test and cuda_fuzz_test run the shared runtime suites
# (conformance, random traces vs a host shadow) on the CUDA backend.
if(BBMM_HAVE_CUDA)
  bbmm_add_test(cuda_backend_test LABELS gpu SOURCES cuda_backend_test.cpp
    LIBS bbmm_runtime_internal CUDA::cudart_static)
  bbmm_add_test(cuda_conformance_test LABELS gpu
    SOURCES cuda_conformance_test.cpp runtime_conformance_suite.cpp
    LIBS bbmm_runtime_internal CUDA::cudart_static)
  bbmm_add_test(cuda_fuzz_test LABELS gpu
    SOURCES runtime_fuzz_test.cpp cuda_fuzz_setup.cpp
    LIBS bbmm_runtime_internal CUDA::cudart_static)
  if(TARGET jacobi2d_cuda)
    add_test(NAME jacobi2d_cuda_sample
      COMMAND jacobi2d_cuda --n 258 --steps 4 --capacity auto)
    set_tests_properties(jacobi2d_cuda_sample PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
  endif()
endif()
