# --- Transport between ranks (issue 14; labels "runtime", "mpi") --------------
# transport_loopback_test: the checks of transport_checks.cpp on the in-process
# loopback, one thread per rank (also in the TSan preset: label runtime).
bbmm_add_test(transport_loopback_test LABELS runtime
  SOURCES transport_loopback_test.cpp transport_checks.cpp rank_stencil.cpp
  LIBS bbmm_runtime_internal)
# global_tiles_fuzz_test: random tile programs with global tiles over 2-3 loopback ranks
# against the sequential program on dense arrays.
bbmm_add_test(global_tiles_fuzz_test LABELS runtime
  SOURCES global_tiles_fuzz_test.cpp
  LIBS bbmm_runtime_internal)
# mpi_transport_test: the same checks over MPI, one process per rank, under
# mpirun with 2 and 3 processes (as root too, oversubscribing CI's 2 cores).
if(BBMM_HAVE_MPI)
  add_executable(mpi_transport_test mpi_transport_test.cpp transport_checks.cpp rank_stencil.cpp)
  target_link_libraries(mpi_transport_test PRIVATE bbmm_mpi bbmm_runtime_internal GTest::gtest)
  target_compile_options(mpi_transport_test PRIVATE -Wall -Wextra)
  # A transfer that never completes aborts the job at shutdown instead of hanging it.
  add_executable(mpi_abort_test mpi_abort_test.cpp)
  target_link_libraries(mpi_abort_test PRIVATE bbmm_mpi bbmm_runtime_internal)
  add_test(NAME mpi_transport.abort
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 --oversubscribe
            $<TARGET_FILE:mpi_abort_test>)
  set_tests_properties(mpi_transport.abort PROPERTIES LABELS mpi TIMEOUT 60
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;BBMM_MPI_SHUTDOWN_TIMEOUT_S=1"
    PASS_REGULAR_EXPRESSION "still pending when the runtime is destroyed.*receive of array 'A'")
  # A rank failing mid-run (bbmm_fatal) stops the job with its message, never a hang.
  add_executable(mpi_rank_failure_test mpi_rank_failure_test.cpp)
  target_link_libraries(mpi_rank_failure_test PRIVATE bbmm_mpi)
  add_test(NAME mpi_transport.rank_fails
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 --oversubscribe
            $<TARGET_FILE:mpi_rank_failure_test>)
  set_tests_properties(mpi_transport.rank_fails PROPERTIES LABELS mpi TIMEOUT 60
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
    PASS_REGULAR_EXPRESSION "bbmm: rank 1 of 2: injected failure on rank 1, before its tile\nbbmm: rank 1 stops every rank of the job \\(MPI_Abort, code 7\\)"
    FAIL_REGULAR_EXPRESSION "did not stop it")
  foreach(np 2 3)
    add_test(NAME mpi_transport.np${np}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} --oversubscribe
              ${MPIEXEC_PREFLAGS} $<TARGET_FILE:mpi_transport_test> ${MPIEXEC_POSTFLAGS})
    set_tests_properties(mpi_transport.np${np} PROPERTIES LABELS mpi TIMEOUT 120
      ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1")
  endforeach()
endif()
