# --- Host backend and trace writer (label "runtime") -------------------------
# host_backend_test: allocation/capacity, rectangular copies against a byte-wise
# oracle (element widths 1..16, 2-D/3-D, every pitch combination, peer and
# host-staged), event ordering across devices, error propagation, threads.
# trace_test: the Chrome trace JSON (read back by a strict parser) and the
# slices the host backend records.
bbmm_add_test(host_backend_test LABELS runtime
  SOURCES host_backend_test.cpp
  LIBS bbmm_runtime_internal)
bbmm_add_test(trace_test LABELS runtime
  SOURCES trace_test.cpp
  LIBS bbmm_runtime_internal)
# jacobi2d_host_sample: the hand-written sample on 4 simulated devices with every
# device's hull reserved (exits 3 if an instance grew, 2 if the result is wrong);
# jacobi2d_host_boxout_sample: the same under a capacity that forces box-out.
if(TARGET jacobi2d_host)
  add_test(NAME jacobi2d_host_sample COMMAND jacobi2d_host --n 130 --steps 4)
  add_test(NAME jacobi2d_host_boxout_sample
    COMMAND jacobi2d_host --n 130 --steps 4 --capacity auto)
  set_tests_properties(jacobi2d_host_sample jacobi2d_host_boxout_sample PROPERTIES
    LABELS runtime)
  # BBMM_SLOW_CALL_US: with a threshold of 1 us every acquire is slow enough to be
  # reported (core/slow_calls.h); the run still verifies.
  add_test(NAME jacobi2d_host_slow_calls COMMAND jacobi2d_host --n 130 --steps 2)
  set_tests_properties(jacobi2d_host_slow_calls PROPERTIES LABELS runtime
    ENVIRONMENT "BBMM_SLOW_CALL_US=1"
    PASS_REGULAR_EXPRESSION "bbmm: slow call: acquire took [0-9]+ us.*-> PASSED")
  # BBMM_CALL_PROFILE: the profile printed at the runtime's end counts every
  # acquire (4 devices x 2 tiles x 2 phases x 2 steps = 32).
  add_test(NAME jacobi2d_host_call_profile COMMAND jacobi2d_host --n 130 --steps 2)
  set_tests_properties(jacobi2d_host_call_profile PROPERTIES LABELS runtime
    ENVIRONMENT "BBMM_CALL_PROFILE=1"
    PASS_REGULAR_EXPRESSION "\\| acquire \\| 32 \\| [0-9.]+ \\| [0-9.]+ \\|"
    FAIL_REGULAR_EXPRESSION "-> FAILED")
endif()
# --- end of host backend ----------------------------------------------------------
