# cmake -DREF=<program> -DGEN=<program> -DWORK=<dir> [-DARGS=<a;b>] -P compare_outputs.cmake
#
# Runs the original program REF and the bbmmc-generated program GEN (both with ARGS, in
# the test's environment) and compares what they write to standard error (PolyBench's
# POLYBENCH_DUMP_ARRAYS dump) byte for byte. Prints "standard error identical" and then
# GEN's standard output (the runtime's statistics with BBMM_STATS) when they match, fails
# otherwise (with both exit statuses and the first differing lines).
foreach(v REF GEN WORK)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "compare_outputs.cmake: ${v} is not set")
  endif()
endforeach()
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${REF} ${ARGS} RESULT_VARIABLE ref_rc OUTPUT_QUIET
                ERROR_FILE ${WORK}/ref.stderr)
execute_process(COMMAND ${GEN} ${ARGS} RESULT_VARIABLE gen_rc OUTPUT_VARIABLE gen_out
                ERROR_FILE ${WORK}/gen.stderr)
if(NOT ref_rc EQUAL 0)
  message(FATAL_ERROR "the original program ${REF} failed (${ref_rc})")
endif()
if(NOT gen_rc EQUAL 0)
  # The runtime's message comes last, after the array dump: show the end.
  file(SIZE ${WORK}/gen.stderr size)
  set(offset 0)
  if(size GREATER 2000)
    math(EXPR offset "${size} - 2000")
  endif()
  file(READ ${WORK}/gen.stderr err OFFSET ${offset})
  message(FATAL_ERROR "the generated program ${GEN} failed (${gen_rc}); its "
                      "standard error from byte ${offset} of ${size}:\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${WORK}/ref.stderr ${WORK}/gen.stderr
                RESULT_VARIABLE same)
if(NOT same EQUAL 0)
  file(STRINGS ${WORK}/ref.stderr ref_lines)
  file(STRINGS ${WORK}/gen.stderr gen_lines)
  list(LENGTH ref_lines n)
  set(shown 0)
  foreach(i RANGE ${n})
    list(LENGTH gen_lines m)
    if(i LESS n)
      list(GET ref_lines ${i} a)
    else()
      set(a "<end>")
    endif()
    if(i LESS m)
      list(GET gen_lines ${i} b)
    else()
      set(b "<end>")
    endif()
    if(NOT a STREQUAL b AND shown LESS 5)
      message("line ${i}:\n  original:  ${a}\n  generated: ${b}")
      math(EXPR shown "${shown} + 1")
    endif()
  endforeach()
  message(FATAL_ERROR "standard error differs: ${WORK}/ref.stderr vs ${WORK}/gen.stderr")
endif()
message("standard error identical (${WORK}/gen.stderr)")
message("${gen_out}")
