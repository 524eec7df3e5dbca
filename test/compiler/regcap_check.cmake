# Compiles generated_support_cuda_regcap.cu with -DBBMM_CUDA_MAX_REGISTERS=${CAP} (or
# without it when CAP is empty) and checks ptxas's register report: at most CAP registers
# (at most 64 without a cap: __launch_bounds__(1024)).
#   cmake -DNVCC=... -DSRC=... -DINC=... -DCAP=N -P regcap_check.cmake
set(def)
set(limit 64)
if(CAP)
  set(def -DBBMM_CUDA_MAX_REGISTERS=${CAP})
  set(limit ${CAP})
endif()
execute_process(
  COMMAND ${NVCC} -arch=sm_90 -c ${SRC} -I${INC} ${def} -Xptxas -v -o /dev/null
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc failed (${rc}):\n${out}${err}")
endif()
string(REGEX MATCH "Used ([0-9]+) registers" m "${err}${out}")
if(NOT m)
  message(FATAL_ERROR "no register report from ptxas:\n${out}${err}")
endif()
set(used ${CMAKE_MATCH_1})
if(used GREATER limit)
  message(FATAL_ERROR "regcap_probe uses ${used} registers, over the cap ${limit}")
endif()
message(STATUS "regcap_probe: ${used} registers (cap ${limit})")
