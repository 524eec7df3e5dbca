# --- Runtime core (label "runtime") -------------------------------------------
# runtime_conformance_test: the conformance suite (runtime_conformance_suite.cpp)
# instantiated for every host backend factory; other backends instantiate the
# same suite in their own binaries. runtime_fuzz_test: random traces against a
# dense host shadow (BBMM_FUZZ_TRACES / _SEED / _ONLY, see the file).
# runtime_fault_test: a backend wrapper failing the k-th operation.
# c_api_test: the C API, options from the environment, statistics output.
# directory_test: the coherency directory against a dense per-element oracle.
bbmm_add_test(runtime_conformance_test LABELS runtime
  SOURCES runtime_conformance_test.cpp runtime_conformance_suite.cpp
  LIBS bbmm_runtime_internal)
bbmm_add_test(runtime_fuzz_test LABELS runtime
  SOURCES runtime_fuzz_test.cpp
  LIBS bbmm_runtime_internal)
bbmm_add_test(runtime_fault_test LABELS runtime
  SOURCES runtime_fault_test.cpp
  LIBS bbmm_runtime_internal)
bbmm_add_test(directory_test LABELS runtime
  SOURCES directory_test.cpp
  LIBS bbmm_runtime_internal)
# call_profile_test: the call profile's per-thread tables merged by scope.
bbmm_add_test(call_profile_test LABELS runtime
  SOURCES call_profile_test.cpp
  LIBS bbmm_runtime_internal)
# copy_merge_test: merged copy batches against the batch run as given (random grids).
bbmm_add_test(copy_merge_test LABELS runtime
  SOURCES copy_merge_test.cpp
  LIBS bbmm_runtime_internal)
# hazards_test: per-box hazards (with the in-flight lists merged) against a plain list.
bbmm_add_test(hazards_test LABELS runtime
  SOURCES hazards_test.cpp
  LIBS bbmm_runtime_internal)
# instance_list_test: a device's instances of an array (blocked hulls) against a plain list.
bbmm_add_test(instance_list_test LABELS runtime
  SOURCES instance_list_test.cpp
  LIBS bbmm_runtime_internal)
# no_blocking_test: the tile path returns while no device work has run (a
# gated backend adaptor holds every operation until the test opens it).
bbmm_add_test(no_blocking_test LABELS runtime
  SOURCES no_blocking_test.cpp
  LIBS bbmm_runtime_internal)
# read_in_source_test: where a read-in takes a box from (host or a peer still
# reading it in), with the devices' work held behind the gate (gated_backend.h).
bbmm_add_test(read_in_source_test LABELS runtime
  SOURCES read_in_source_test.cpp
  LIBS bbmm_runtime_internal)
# runtime_alloc_test: the hit path allocates nothing (replaces global operator
# new, so it has a binary of its own).
bbmm_add_test(runtime_alloc_test LABELS runtime
  SOURCES runtime_alloc_test.cpp
  LIBS bbmm_runtime_internal)
# box_pairs_test: the overlapping pairs of two box lists (sweep) against every pair.
bbmm_add_test(box_pairs_test LABELS runtime
  SOURCES box_pairs_test.cpp
  LIBS bbmm_runtime_internal)
bbmm_add_test(c_api_test LABELS runtime
  SOURCES c_api_test.cpp c_api_test_caller.c
  LIBS bbmm_runtime_internal)
if(BBMM_SANITIZER)
  # Sanitized runs use fewer random traces (the test says so in its output).
  target_compile_definitions(runtime_fuzz_test PRIVATE BBMM_TEST_SANITIZER=1)
  target_compile_definitions(runtime_fault_test PRIVATE BBMM_TEST_SANITIZER=1)
endif()
# --- end of runtime core --------------------------------------------------------
