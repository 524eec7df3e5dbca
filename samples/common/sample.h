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

static inline double sample_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline void* sample_alloc(size_t bytes) {
  void* p = malloc(bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "sample: out of host memory (%zu bytes)\n", bytes);
    exit(1);
  }
  return p;
}

/* Largest relative error of `got` against `want` over `n` doubles (absolute
 * where the expected value is tiny); prints and counts it in `*failures`. */
static inline void sample_compare_double(const char* name, const double* want, const double* got,
                                         long n, int* failures) {
  if (!sample_reference()) return;
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
  if (!sample_reference()) return;
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
    printf("%s: sequential not run, bbmmc %.3f s\n", sample, t_bbmm);
    printf("%s: verification skipped (BBMM_SAMPLE_REFERENCE=0)\n", sample);
    fflush(stdout);
    return 0;
  }
  printf("%s: sequential %.3f s, bbmmc %.3f s\n", sample, t_seq, t_bbmm);
  printf("%s: verification against the sequential program: %s\n", sample,
         failures ? "FAILED" : "PASSED");
  fflush(stdout);
  return failures ? 2 : 0;
}

/* The generated code prints the runtime's statistics at exit when BBMM_STATS
 * is set; the samples ask for the table unless the caller chose. */
static inline void sample_request_stats(void) { setenv("BBMM_STATS", "table", 0); }

#endif /* BBMM_SAMPLES_SAMPLE_H_ */
