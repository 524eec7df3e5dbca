// generated_support_test.c compiled as C++: bbmm/generated_support.h must be valid C++ too
// (a user may compile a generated file with a C++ compiler).
#include "generated_support_test.c"
