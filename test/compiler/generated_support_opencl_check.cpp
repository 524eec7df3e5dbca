// generated_support_opencl_check.c as C++.
#include "generated_support_opencl_check.c"
