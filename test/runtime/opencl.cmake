# --- OpenCL backend (label "runtime"; runs on PoCL in CI) ---------------------
# opencl_backend_test: backend-level tests (allocation, rect copies vs a
# reference loop, ordering, errors, kernels from source) and the runtime end
# to end with OpenCL C stencil kernels. opencl_conformance_test: the runtime
# conformance suite with OpenCL backend factories (host kernels reach device
# memory by mapping the buffers). Both skip, saying why, without an OpenCL
# device.
if(BBMM_HAVE_OPENCL)
  bbmm_add_test(opencl_backend_test LABELS runtime
    SOURCES opencl_backend_test.cpp
    LIBS bbmm_runtime_internal OpenCL::OpenCL)
  bbmm_add_test(opencl_conformance_test LABELS runtime
    SOURCES opencl_conformance_test.cpp runtime_conformance_suite.cpp
    LIBS bbmm_runtime_internal OpenCL::OpenCL)
  # The random-trace suite (runtime_fuzz_test.cpp) on the OpenCL backend.
  bbmm_add_test(opencl_fuzz_test LABELS runtime
    SOURCES runtime_fuzz_test.cpp opencl_fuzz_setup.cpp
    LIBS bbmm_runtime_internal OpenCL::OpenCL)
  if(BBMM_SANITIZER)
    target_compile_definitions(opencl_fuzz_test PRIVATE BBMM_TEST_SANITIZER=1)
  endif()
  if(BBMM_SANITIZER STREQUAL "thread")
    # TSan reports lock-order cycles among PoCL's own internal mutexes:
    # suppressed for stacks inside libpocl only (see the file). The discovered
    # tests exist only at ctest time, so the property is set from a file ctest
    # includes after the one gtest_discover_tests registered (which defines
    # <target>_TESTS).
    set(_bbmm_ocl_props ${CMAKE_CURRENT_BINARY_DIR}/opencl_backend_test_props.cmake)
    file(WRITE ${_bbmm_ocl_props} "")
    foreach(_t opencl_backend_test opencl_conformance_test opencl_fuzz_test)
      file(APPEND ${_bbmm_ocl_props}
        "if(${_t}_TESTS)\n"
        "  set_tests_properties(\${${_t}_TESTS} PROPERTIES ENVIRONMENT_MODIFICATION\n"
        "    \"TSAN_OPTIONS=string_append: suppressions=${CMAKE_CURRENT_SOURCE_DIR}/opencl_tsan.supp\")\n"
        "endif()\n")
    endforeach()
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${_bbmm_ocl_props})
  endif()
endif()
# --- end of OpenCL backend ------------------------------------------------------
