/* Helpers shared by the samples' drivers: size arguments, deterministic
 * input, timing and the comparison of the bbmmc-generated program's result
 * with the sequential original's (exact for integers, relative error
 * <= 1e-10 for doubles). BBMM_SAMPLE_REFERENCE=0 skips the sequential run and
 * the comparison (kernel-speed runs at sizes where the sequential original
 * would take minutes, bench/gpu/kernels/). Header-only, plain C. */
#ifndef BBMM_SAMPLES_SAMPLE_H_
#define BBMM_SAMPLES_SAMPLE_H_

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Argument `k` (1-based) of the command line as an int, or `dflt`. */
static inline int sample_arg(int argc, char** argv, int k, int dflt) {
  if (argc > k) {
    int v = atoi(argv[k]);
    if (v <= 0) {
      fprintf(stderr, "%s: argument %d must be a positive integer, got '%s'\n", argv[0], k,
              argv[k]);
      exit(1);
    }
    return v;
  }
  return dflt;
}

/* A deterministic value in [0, 1) for element `k` of input `seed`. */
static inline double sample_value(long k, int seed) {
  unsigned long x = (unsigned long)k * 2654435761ul + (unsigned long)seed * 40503ul + 12345ul;
  x ^= x >> 13;
  x *= 0x5bd1e995ul;
  x ^= x >> 15;
  return (double)(x % 1000003ul) / 1000003.0;
}

/* Whether the driver runs the sequential original and compares with it: yes
 * unless the environment sets BBMM_SAMPLE_REFERENCE=0. The mains call the
 * sequential kernel only when this is true; the comparisons below do nothing
 * and sample_finish reports the verification as skipped when it is false. */
static inline int sample_reference(void) {
  const char* v = getenv("BBMM_SAMPLE_REFERENCE");
  return !(v && strcmp(v, "0") == 0);
}

/* --- Reference cache (bench/gpu/study.sh) ---------------------------------------------
 * The sequential original at the sizes of a GPU study takes seconds to a minute, and every
 * configuration (1 GPU, 2 GPUs, ...) of a size compares with the same result. With
 * BBMM_SAMPLE_CACHE=DIR, the sequential result is stored in DIR under a name made of the
 * sample's name and its command line, and a later run of the same command line loads it
 * instead of running the original again (the comparison itself is unchanged).
 * BBMM_SAMPLE_REFERENCE=only runs (or loads) the original, stores it and exits before the
 * bbmmc-generated program runs, so that a study can fill the cache in parallel. A main
 * lists its reference arrays, then:
 *
 *   sample_ref ref;
 *   sample_ref_begin(&ref, "heat2d", argc, argv);
 *   sample_ref_array(&ref, ra, bytes); sample_ref_array(&ref, rb, bytes);
 *   if (sample_ref_compute(&ref)) kernel_heat2d_seq(...);   // false: loaded, or no reference
 *   if (sample_ref_end(&ref)) return 0;                     // stores; "only": stop here
 */
enum { SAMPLE_REF_MAX_ARRAYS = 8 };
typedef struct {
  char path[1024]; /* empty: no cache */
  void* data[SAMPLE_REF_MAX_ARRAYS];
  size_t bytes[SAMPLE_REF_MAX_ARRAYS];
  int count;
  int computed; /* the original ran in this process */
} sample_ref;

/* BBMM_SAMPLE_REFERENCE=only: compute or load the reference, store it, exit. */
static inline int sample_reference_only(void) {
  const char* v = getenv("BBMM_SAMPLE_REFERENCE");
  return v && strcmp(v, "only") == 0;
}

static inline void sample_ref_begin(sample_ref* ref, const char* sample, int argc, char** argv) {
  memset(ref, 0, sizeof *ref);
  const char* dir = getenv("BBMM_SAMPLE_CACHE");
  if (!dir || !*dir) return;
  size_t len = (size_t)snprintf(ref->path, sizeof ref->path, "%s/%s", dir, sample);
  for (int k = 1; k < argc && len + 2 < sizeof ref->path; ++k) {
    ref->path[len++] = '_';
    for (const char* c = argv[k]; *c && len + 1 < sizeof ref->path; ++c)
      ref->path[len++] = (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ? *c : '-';
  }
  if (len + 5 >= sizeof ref->path) {
    fprintf(stderr, "%s: BBMM_SAMPLE_CACHE path too long\n", sample);
    exit(1);
  }
  memcpy(ref->path + len, ".ref", 5);
}

static inline void sample_ref_array(sample_ref* ref, void* data, size_t bytes) {
  if (ref->count == SAMPLE_REF_MAX_ARRAYS) {
    fprintf(stderr, "sample_ref_array: more than %d arrays\n", SAMPLE_REF_MAX_ARRAYS);
    exit(1);
  }
  ref->data[ref->count] = data;
  ref->bytes[ref->count++] = bytes;
}

/* Whether the caller must run the sequential original: there is a reference to compare
 * with and the cache did not hold it (a cache file of the wrong size is ignored). */
static inline int sample_ref_compute(sample_ref* ref) {
  if (!sample_reference()) return 0; /* (true for "only" too) */
  if (ref->path[0]) {
    FILE* f = fopen(ref->path, "rb");
    if (f) {
      size_t total = 0, got = 0;
      for (int k = 0; k < ref->count; ++k) total += ref->bytes[k];
      fseek(f, 0, SEEK_END);
      if ((size_t)ftell(f) == total) {
        fseek(f, 0, SEEK_SET);
        for (int k = 0; k < ref->count; ++k) got += fread(ref->data[k], 1, ref->bytes[k], f);
      }
      fclose(f);
      if (got == total && total > 0) {
        printf("  (sequential result loaded from %s)\n", ref->path);
        return 0;
      }
    }
  }
  ref->computed = 1;
  return 1;
}

/* Stores a freshly computed reference in the cache (atomically: a temporary file renamed).
 * Returns 1 when BBMM_SAMPLE_REFERENCE=only (the main then returns 0: the generated program
 * is not run), else 0. */
static inline int sample_ref_end(sample_ref* ref) {
  if (ref->computed && ref->path[0]) {
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", ref->path, (long)clock());
    FILE* f = fopen(tmp, "wb");
    int ok = f != NULL;
    for (int k = 0; ok && k < ref->count; ++k)
      ok = fwrite(ref->data[k], 1, ref->bytes[k], f) == ref->bytes[k];
    if (f && fclose(f) != 0) ok = 0;
    if (!ok || rename(tmp, ref->path) != 0) {
      fprintf(stderr, "sample: cannot store the sequential result in %s\n", ref->path);
      remove(tmp);
      exit(1);
    }
  }
  if (sample_reference_only()) {
    printf("sequential result %s\n", ref->path[0] ? ref->path : "computed (no BBMM_SAMPLE_CACHE)");
    fflush(stdout);
    return 1;
  }
  return 0;
}

/* BBMM_SAMPLE_WARMUP=1: the main runs the generated function once on a tiny input before
 * the timed run, so that the timed run excludes creating the runtime (CUDA contexts,
 * streams, memory pools: a few hundred ms on a GPU machine). */
static inline int sample_warmup(void) {
  const char* v = getenv("BBMM_SAMPLE_WARMUP");
  return v && strcmp(v, "1") == 0;
}

static inline double sample_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The arrays sample_alloc handed out, freed when the program exits (so that a run under
 * LeakSanitizer ends with status 0: bbmm_sample_report and the e2e tests read it). */
enum { SAMPLE_MAX_ALLOCS = 64 };
static void* sample_allocs[SAMPLE_MAX_ALLOCS];
static int sample_nallocs;

static inline void sample_free_all(void) {
  while (sample_nallocs > 0) free(sample_allocs[--sample_nallocs]);
}

static inline void* sample_alloc(size_t bytes) {
  void* p = malloc(bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "sample: out of host memory (%zu bytes)\n", bytes);
    exit(1);
  }
  if (sample_nallocs == 0) atexit(sample_free_all);
  if (sample_nallocs < SAMPLE_MAX_ALLOCS) sample_allocs[sample_nallocs++] = p;
  return p;
}

/* Built with -DBBMM_SAMPLE_MPI (<name>_mpi, linked with bbmm::mpi): the sample runs under
 * mpirun, every rank running the generated program over the devices of all ranks
 * (bbmm_mpi_use_by_default, before main); rank 0 gets the results and verifies them, the
 * other ranks print nothing and exit 0 (with BBMM_SAMPLE_RANK_OUTPUT=all they keep their
 * standard output, e.g. their statistics, told apart by mpirun --tag-output). MPI_Finalize
 * runs at exit, after the generated code's runtime is destroyed (atexit handlers run in
 * reverse order). */
#ifdef BBMM_SAMPLE_MPI
#include "bbmm/mpi.h"
static int sample_mpi_rank;
static void sample_mpi_finalize(void) { MPI_Finalize(); }
__attribute__((constructor)) static void sample_mpi_init(void) {
  int provided = 0;
  MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &sample_mpi_rank);
  atexit(sample_mpi_finalize);
  if (bbmm_mpi_use_by_default(MPI_COMM_WORLD, 0) != BBMM_OK) {
    fprintf(stderr, "sample: %s\n", bbmm_last_error_message());
    exit(1);
  }
  const char* keep = getenv("BBMM_SAMPLE_RANK_OUTPUT");
  if (sample_mpi_rank != 0 && !(keep && strcmp(keep, "all") == 0) &&
      !freopen("/dev/null", "w", stdout)) {
    exit(1);
  }
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  printf("mpi: %d ranks; CUDA-aware MPI: %s; transfers between ranks staged through the host "
         "arrays\n", ranks, bbmm_mpi_cuda_aware() ? "yes" : "no");
}
static inline int sample_rank(void) { return sample_mpi_rank; }
#else
static inline int sample_rank(void) { return 0; }
#endif

/* Largest relative error of `got` against `want` over `n` doubles (absolute
 * where the expected value is tiny); prints and counts it in `*failures`. */
static inline void sample_compare_double(const char* name, const double* want, const double* got,
                                         long n, int* failures) {
  if (!sample_reference() || sample_rank() != 0) return;
  double max_err = 0;
  long where = -1;
  for (long k = 0; k < n; ++k) {
    double d = fabs(got[k] - want[k]);
    double scale = fabs(want[k]) > 1e-300 ? fabs(want[k]) : 1.0;
    double e = d / scale;
    if (!(e <= max_err)) { /* also catches NaN */
      max_err = e;
      where = k;
    }
  }
  int ok = max_err <= 1e-10;
  printf("  %-6s %8ld doubles, max relative error %.3g%s\n", name, n, max_err,
         ok ? "" : "  <-- MISMATCH");
  if (!ok) {
    printf("         first worst element %ld: sequential %.17g, bbmmc %.17g\n", where,
           want[where], got[where]);
    ++*failures;
  }
}

/* Exact comparison of `n` ints. */
static inline void sample_compare_int(const char* name, const int* want, const int* got, long n,
                                      int* failures) {
  if (!sample_reference() || sample_rank() != 0) return;
  long bad = 0, first = -1;
  for (long k = 0; k < n; ++k) {
    if (want[k] != got[k]) {
      if (first < 0) first = k;
      ++bad;
    }
  }
  printf("  %-6s %8ld ints, %ld differ%s\n", name, n, bad, bad ? "  <-- MISMATCH" : "");
  if (bad) {
    printf("         first difference at %ld: sequential %d, bbmmc %d\n", first, want[first],
           got[first]);
    ++*failures;
  }
}

/* Prints the verdict; the exit status of the sample. Statistics are printed
 * by the generated code when the program exits (BBMM_STATS). */
static inline int sample_finish(const char* sample, int failures, double t_seq, double t_bbmm) {
  if (!sample_reference()) {
    printf("%s: sequential not run, bbmmc %.6f s\n", sample, t_bbmm);
    printf("%s: verification skipped (BBMM_SAMPLE_REFERENCE=0)\n", sample);
    fflush(stdout);
    return 0;
  }
  if (sample_rank() != 0) {
    printf("%s: bbmmc %.6f s on rank %d (rank 0 verifies)\n", sample, t_bbmm, sample_rank());
    fflush(stdout);
    return 0;
  }
  printf("%s: sequential %.6f s, bbmmc %.6f s\n", sample, t_seq, t_bbmm);
  printf("%s: verification against the sequential program: %s\n", sample,
         failures ? "FAILED" : "PASSED");
  fflush(stdout);
  return failures ? 2 : 0;
}

/* The generated code prints the runtime's statistics at exit when BBMM_STATS
 * is set; the samples ask for the table unless the caller chose. */
static inline void sample_request_stats(void) { setenv("BBMM_STATS", "table", 0); }

#endif /* BBMM_SAMPLES_SAMPLE_H_ */
