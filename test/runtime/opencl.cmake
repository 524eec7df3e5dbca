# --- OpenCL backend (label "runtime"; runs on PoCL in CI) ---------------------
# opencl_backend_test: backend-level tests (allocation, rect copies vs a
# reference loop, ordering, errors, kernels from source) and the runtime end
# to end with OpenCL C stencil kernels. Skips, saying why, without an OpenCL
# device.
if(BBMM_HAVE_OPENCL)
  bbmm_add_test(opencl_backend_test LABELS runtime
    SOURCES opencl_backend_test.cpp
    LIBS bbmm_runtime_internal OpenCL::OpenCL)
endif()
# --- end of OpenCL backend ------------------------------------------------------
