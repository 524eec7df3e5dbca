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
    bbmm_fatal(1, "%s failed with OpenCL error %d", what, (int)e);
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
      fprintf(stderr, "%s\n", log);
      bbmm_fatal(1, "building the generated OpenCL kernels failed (the build log is above)");
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

/* Binds the single piece "p" of an array (rank "rank", elements of "elem_size" bytes) as the
 * single-piece kernel's arguments: buffer, offset in elements, then per dimension lo and
 * the stride except the last. */
static inline void bbmm_cl_piece(cl_kernel k, cl_uint* i, const bbmm_piece* p, int rank,
                                 size_t elem_size) {
  cl_mem m = (cl_mem)p->data;
  cl_long off = (cl_long)(p->offset / elem_size);
  bbmm_cl_arg(k, i, sizeof m, &m);
  bbmm_cl_arg(k, i, sizeof off, &off);
  for (int d = 0; d < rank; ++d) {
    cl_long lo = p->lo[d], st = p->stride[d];
    bbmm_cl_arg(k, i, sizeof lo, &lo);
    if (d + 1 < rank) bbmm_cl_arg(k, i, sizeof st, &st);
  }
}

/* --- Multi-piece kernels (docs/codegen.md, "OpenCL multi-piece kernels") ---------------
 * A multi-piece kernel takes, per array, up to BBMM_CL_BUFFERS buffer arguments (fewer when
 * its arguments would pass 1,024 bytes, CL_DEVICE_MAX_PARAMETER_SIZE's minimum; OpenCL 1.2
 * has no device pointers inside buffers) and reads the pieces from one __global table of longs:
 * per piece (rank r) a record of bbmm_cl_record(r) longs
 *   slot (the buffer argument holding it), o (element offset of index 0, i.e. the piece's
 *   offset less sum lo[d] * stride[d]), lo[r], hi[r], stride[0..r-2].
 * A view's pieces usually lie in few instances (buffers): each distinct buffer gets a slot.
 * When an array's view has more distinct buffers than slots, the pieces of the buffers
 * beyond the first (buffer arguments - 1) are copied into one staging buffer bound to the last
 * slot before the kernel, and back after it when the phase writes the array: any number of
 * pieces runs. BBMM_OPENCL_PIECE_BUFFERS=n (1..8, a test setting) uses n slots at most. */
#define BBMM_CL_BUFFERS 8

static inline int bbmm_cl_record(int rank) { return 3 * rank + 1; }

/* The slots a multi-piece launch uses: BBMM_OPENCL_PIECE_BUFFERS (read once), else all. */
static inline int bbmm_cl_slots(void) {
  static int slots = 0;
  if (slots == 0) {
    const char* t = getenv("BBMM_OPENCL_PIECE_BUFFERS");
    slots = BBMM_CL_BUFFERS;
    if (t && *t) {
      char* end;
      long v = strtol(t, &end, 10);
      if (*end != '\0' || v < 1 || v > BBMM_CL_BUFFERS) {
        bbmm_fatal(1, "BBMM_OPENCL_PIECE_BUFFERS='%s' is not a number from 1 to %d", t,
                   BBMM_CL_BUFFERS);
      }
      slots = (int)v;
    }
  }
  return slots;
}

/* One array's buffers for a multi-piece launch. */
typedef struct bbmm_cl_array {
  cl_mem slot[BBMM_CL_BUFFERS]; /* NULL where unused */
  cl_mem staging;               /* the last used slot's buffer when pieces were staged */
} bbmm_cl_array;

/* Enqueues on "q" the copy of box [lo, hi) (rank "rank", elements of "esz" bytes) from
 * buffer "src" (element offset "so" of the box's first element, strides "ss") to "dst"
 * (offset "dof", strides "ds"): one rectangle per index of the dimensions before the last
 * two. */
static inline void bbmm_cl_copy_box(cl_command_queue q, cl_mem src, int64_t so, const int64_t* ss,
                                    cl_mem dst, int64_t dof, const int64_t* ds, const int64_t* lo,
                                    const int64_t* hi, int rank, size_t esz) {
  for (int d = 0; d < rank; ++d) {
    if (hi[d] <= lo[d]) return;
  }
  const size_t w = (size_t)(hi[rank - 1] - lo[rank - 1]) * esz;
  if (rank == 1) {
    bbmm_cl_check(clEnqueueCopyBuffer(q, src, dst, (size_t)so * esz, (size_t)dof * esz, w, 0, NULL,
                                      NULL),
                  "clEnqueueCopyBuffer (staging a piece)");
    return;
  }
  int64_t idx[BBMM_MAX_RANK] = {0};  /* over the dimensions before the last two */
  for (;;) {
    int64_t s = so, t = dof;
    for (int d = 0; d + 2 < rank; ++d) {
      s += idx[d] * ss[d];
      t += idx[d] * ds[d];
    }
    size_t src_origin[3] = {(size_t)s * esz, 0, 0}, dst_origin[3] = {(size_t)t * esz, 0, 0};
    size_t region[3] = {w, (size_t)(hi[rank - 2] - lo[rank - 2]), 1};
    bbmm_cl_check(clEnqueueCopyBufferRect(q, src, dst, src_origin, dst_origin, region,
                                          (size_t)ss[rank - 2] * esz, 0,
                                          (size_t)ds[rank - 2] * esz, 0, 0, NULL, NULL),
                  "clEnqueueCopyBufferRect (staging a piece)");
    int d = rank - 3;
    while (d >= 0 && ++idx[d] == hi[d] - lo[d]) idx[d--] = 0;
    if (d < 0) return;
  }
}

/* Writes the records of the "n" pieces "p" of an array (rank "rank", elements of "esz"
 * bytes) into "tab" and its buffers into "*a" (slots, staging), for a kernel taking
 * "buffers" buffer arguments for the array: see above. Staged pieces are copied into the
 * staging buffer (created in "ctx") on "q" now. */
static inline void bbmm_cl_pieces_in(cl_context ctx, cl_command_queue q, const bbmm_piece* p,
                                     int n, int rank, size_t esz, int buffers, cl_long* tab,
                                     bbmm_cl_array* a) {
  const int rec = bbmm_cl_record(rank);
  const int slots = bbmm_cl_slots() < buffers ? bbmm_cl_slots() : buffers;
  memset(a, 0, sizeof *a);
  int used = 0, staged = 0;
  /* Direct slots: the first buffers, all of them when they fit, else slots - 1 of them. */
  int distinct = 0;
  for (int k = 0; k < n; ++k) {
    int seen = 0;
    for (int j = 0; j < k && !seen; ++j) seen = p[j].data == p[k].data;
    distinct += !seen;
  }
  const int direct = distinct <= slots ? slots : slots - 1;
  size_t bytes = 0;
  for (int k = 0; k < n; ++k) {
    cl_long* r = tab + (size_t)k * rec;
    int s = 0;
    while (s < used && a->slot[s] != (cl_mem)p[k].data) ++s;
    if (s == used && used < direct) a->slot[used++] = (cl_mem)p[k].data;
    if (s < used) {
      r[0] = s;
      r[1] = (cl_long)(p[k].offset / esz);
      for (int d = 0; d + 1 < rank; ++d) r[2 + 2 * rank + d] = p[k].stride[d];
    } else {
      /* Staged: compact, at element "bytes / esz" of the staging buffer. */
      r[0] = -1;
      r[1] = (cl_long)(bytes / esz);
      int64_t vol = 1;
      for (int d = rank - 1; d >= 0; --d) {
        if (d < rank - 1) r[2 + 2 * rank + d] = vol;
        vol *= p[k].hi[d] > p[k].lo[d] ? p[k].hi[d] - p[k].lo[d] : 0;
      }
      bytes += (size_t)vol * esz;
      ++staged;
    }
    for (int d = 0; d < rank; ++d) {
      r[2 + d] = p[k].lo[d];
      r[2 + rank + d] = p[k].hi[d];
    }
  }
  if (staged) {
    cl_int e;
    a->staging = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes ? bytes : esz, NULL, &e);
    bbmm_cl_check(e, "clCreateBuffer (staging the pieces of a view)");
    a->slot[used] = a->staging;
    for (int k = 0; k < n; ++k) {
      cl_long* r = tab + (size_t)k * rec;
      if (r[0] != -1) continue;
      r[0] = used;
      int64_t ds[BBMM_MAX_RANK];
      for (int d = 0; d < rank; ++d) ds[d] = d + 1 < rank ? r[2 + 2 * rank + d] : 1;
      bbmm_cl_copy_box(q, (cl_mem)p[k].data, (int64_t)(p[k].offset / esz), p[k].stride,
                       a->staging, r[1], ds, p[k].lo, p[k].hi, rank, esz);
    }
  }
  /* o = offset - sum lo[d] * stride[d] (stride[rank-1] == 1). */
  for (int k = 0; k < n; ++k) {
    cl_long* r = tab + (size_t)k * rec;
    for (int d = 0; d < rank; ++d) r[1] -= p[k].lo[d] * (d + 1 < rank ? r[2 + 2 * rank + d] : 1);
  }
}

/* After the kernel: copies the staged pieces of "*a" back to their instances on "q" when
 * "written" (the phase writes the array), then releases the staging buffer (OpenCL frees
 * it once the enqueued commands using it have finished). */
static inline void bbmm_cl_pieces_out(cl_command_queue q, const bbmm_piece* p, int n, int rank,
                                      size_t esz, const cl_long* tab, bbmm_cl_array* a,
                                      int written) {
  if (!a->staging) return;
  const int rec = bbmm_cl_record(rank);
  for (int k = 0; k < n && written; ++k) {
    const cl_long* r = tab + (size_t)k * rec;
    if (a->slot[r[0]] != a->staging) continue;
    int64_t ss[BBMM_MAX_RANK], so = r[1];
    for (int d = 0; d < rank; ++d) {
      ss[d] = d + 1 < rank ? r[2 + 2 * rank + d] : 1;
      so += p[k].lo[d] * ss[d];
    }
    bbmm_cl_copy_box(q, a->staging, so, ss, (cl_mem)p[k].data, (int64_t)(p[k].offset / esz),
                     p[k].stride, p[k].lo, p[k].hi, rank, esz);
  }
  clReleaseMemObject(a->staging);
  a->staging = NULL;
}

/* The record of the first of the "n" pieces "p" (records at "tab") holding all of box
 * [lo, hi), copied as a reference's (slot, o, strides) to "ref"; 0 when no piece holds it
 * or the box is empty (bbmm_gen_piece_of). */
static inline int bbmm_cl_ref(const bbmm_piece* p, int n, int rank, const int64_t* lo,
                              const int64_t* hi, const cl_long* tab, cl_long* ref) {
  const bbmm_piece* f = bbmm_gen_piece_of(p, n, rank, lo, hi);
  if (!f) return 0;
  const cl_long* r = tab + (size_t)(f - p) * bbmm_cl_record(rank);
  ref[0] = r[0];
  ref[1] = r[1];
  for (int d = 0; d + 1 < rank; ++d) ref[2 + d] = r[2 + 2 * rank + d];
  return 1;
}

/* A buffer of "n" longs "tab" (read-only, copied now) in context "ctx". */
static inline cl_mem bbmm_cl_table(cl_context ctx, const cl_long* tab, size_t n) {
  cl_int e;
  cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * sizeof(cl_long),
                            (void*)tab, &e);
  bbmm_cl_check(e, "clCreateBuffer (the tile's pieces)");
  return m;
}

#endif /* BBMM_GENERATED_SUPPORT_OPENCL_H_ */
