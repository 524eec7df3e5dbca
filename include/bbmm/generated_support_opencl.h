/* The OpenCL part of the helpers of bbmmc's generated C files (docs/codegen.md): the
 * program cache, argument binding and error checks of the launch functions of
 * --target=opencl. Includes CL/cl.h (OpenCL 1.2 API unless CL_TARGET_OPENCL_VERSION is
 * already defined) and bbmm/generated_support.h:
 *
 *   #define BBMM_GEN_TARGET BBMM_BACKEND_OPENCL
 *   #include "bbmm/generated_support_opencl.h"
 *
 * Plain C (also valid C++). Thread-safety: the launch functions of one program run on the
 * thread that drives the tiles, one at a time; bbmm_cl_kernel is not thread-safe. */
#ifndef BBMM_GENERATED_SUPPORT_OPENCL_H_
#define BBMM_GENERATED_SUPPORT_OPENCL_H_

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "bbmm/generated_support.h"

/* An OpenCL program built once per context from a source string (for every device of the
   context); its kernels are created on first use and kept. Launch functions run on the
   thread that drives the tiles (one at a time). */
typedef struct bbmm_cl_program {
  const char* source;
  cl_context context;
  cl_program program;
  cl_kernel kernels[2];
} bbmm_cl_program;

/* Ends the program when "e" is not CL_SUCCESS, printing "what" and the error code. */
static inline void bbmm_cl_check(cl_int e, const char* what) {
  if (e != CL_SUCCESS) {
    fprintf(stderr, "bbmm: %s failed with OpenCL error %d\n", what, (int)e);
    exit(1);
  }
}

/* Kernel "which" (0 or 1), named "name", of program "p" in the context of queue "q": builds
 * the program for that context on first use (ends the program, printing the build log, when
 * the build fails) and creates the kernel once. */
static inline cl_kernel bbmm_cl_kernel(bbmm_cl_program* p, cl_command_queue q, int which,
                                       const char* name) {
  cl_context ctx;
  bbmm_cl_check(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL),
                "clGetCommandQueueInfo");
  if (p->program && p->context != ctx) {
    for (int k = 0; k < 2; ++k) {
      if (p->kernels[k]) clReleaseKernel(p->kernels[k]);
      p->kernels[k] = NULL;
    }
    clReleaseProgram(p->program);
    p->program = NULL;
  }
  if (!p->program) {
    cl_int e;
    p->program = clCreateProgramWithSource(ctx, 1, &p->source, NULL, &e);
    bbmm_cl_check(e, "clCreateProgramWithSource");
    e = clBuildProgram(p->program, 0, NULL, "", NULL, NULL);
    if (e != CL_SUCCESS) {
      cl_device_id dev;
      size_t size = 0;
      clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
      clGetProgramBuildInfo(p->program, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
      char* log = (char*)bbmm_gen_calloc(size + 1);
      clGetProgramBuildInfo(p->program, dev, CL_PROGRAM_BUILD_LOG, size, log, NULL);
      fprintf(stderr, "bbmm: building the generated OpenCL kernels failed:\n%s\n", log);
      exit(1);
    }
    p->context = ctx;
  }
  if (!p->kernels[which]) {
    cl_int e;
    p->kernels[which] = clCreateKernel(p->program, name, &e);
    bbmm_cl_check(e, "clCreateKernel");
  }
  return p->kernels[which];
}

/* Sets argument "*i" of "k" and moves "*i" to the next one. */
static inline void bbmm_cl_arg(cl_kernel k, cl_uint* i, size_t size, const void* value) {
  bbmm_cl_check(clSetKernelArg(k, (*i)++, size, value), "clSetKernelArg");
}

/* Binds piece "which" of the "n" pieces "pieces" as the arguments of one piece (buffer,
 * offset in elements, then per dimension lo, hi when "with_hi", and the stride except the
 * last); an empty piece on the first buffer when which >= n. */
static inline void bbmm_cl_piece(cl_kernel k, cl_uint* i, const bbmm_piece* pieces, int n,
                                 int which, int rank, size_t elem_size, int with_hi) {
  bbmm_piece empty;
  const bbmm_piece* p = which < n ? &pieces[which] : &empty;
  if (which >= n) {
    memset(&empty, 0, sizeof empty);
    empty.data = pieces[0].data;
  }
  cl_mem m = (cl_mem)p->data;
  cl_long off = (cl_long)(p->offset / elem_size);
  bbmm_cl_arg(k, i, sizeof m, &m);
  bbmm_cl_arg(k, i, sizeof off, &off);
  for (int d = 0; d < rank; ++d) {
    cl_long lo = p->lo[d], hi = p->hi[d], st = p->stride[d];
    bbmm_cl_arg(k, i, sizeof lo, &lo);
    if (with_hi) bbmm_cl_arg(k, i, sizeof hi, &hi);
    if (d + 1 < rank) bbmm_cl_arg(k, i, sizeof st, &st);
  }
}

#endif /* BBMM_GENERATED_SUPPORT_OPENCL_H_ */
