# GPU tests (label gpu): they skip with a printed reason when no GPU is
# present; bench/gpu/run_all.sh runs them on the GPU machine.
if(BBMM_HAVE_CUDA)
  bbmm_add_test(cuda_backend_test LABELS gpu SOURCES cuda_backend_test.cpp
    LIBS bbmm_runtime_internal CUDA::cudart_static)
  if(TARGET jacobi2d_cuda)
    add_test(NAME jacobi2d_cuda_sample
      COMMAND jacobi2d_cuda --n 258 --steps 4 --capacity auto)
    set_tests_properties(jacobi2d_cuda_sample PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
  endif()
endif()
