/* Compiles bbmm/generated_support_opencl.h (built by test/compiler/CMakeLists.txt as C11 and,
 * through generated_support_opencl_check.cpp, as C++; nothing runs: the OpenCL launch
 * functions are exercised by the e2e tests of the OpenCL samples). */
#define BBMM_GEN_TARGET BBMM_BACKEND_OPENCL
#include "bbmm/generated_support_opencl.h"
