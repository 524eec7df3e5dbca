/* Tests of include/bbmm/generated_support.h, the helpers every C file bbmmc generates
 * includes. Built twice: as C11 (this file) and as C++ (generated_support_test.cpp includes
 * it), because generated files are C and users may compile them as C++.
 * - bbmm_floord, bbmm_min, bbmm_max against a brute-force floor division over all signs;
 * - bbmm_gen_at and bbmm_gen_at_from on pieces with padding against direct indexing of the
 *   array;
 * - bbmm_gen_piece_of against element-by-element containment, and BBMM_PIECE_LOOKUP's parser;
 * - BBMM_TILES_PER_DEVICE: the parser on a table of values, and bbmm_gen_runtime in a
 *   child process (exit status and message for a malformed value and for another backend);
 * - bbmm_gen_box_bytes and bbmm_gen_min_device_memory (capacity-driven tile counts), and
 *   bbmm_gen_order_tiles (issue order, most flow-out first, ties alternating between calls;
 *   BBMM_TILE_ORDER's parser), bbmm_gen_tile_bounds (tiles cover the range, each device
 *   its share, edge tiles as documented; BBMM_EDGE_TILES's parser), and
 *   bbmm_gen_tile_too_large's
 *   note (once, at the first tile that does not fit);
 * - BBMM_SPLIT's parser; bbmm_gen_small_tiles (one tile per device for small tiles, unless
 *   BBMM_TILES_PER_DEVICE is set); the statement-instance counters (BBMM_GEN_COUNT_INSTANCES) per
 *   device and for host tiles;
 * - bbmm_gen_require and bbmm_gen_flow_out on the host backend (2 devices): empty boxes
 *   are skipped (not counted, not required, nothing flowed out), nonempty ones reach the
 *   runtime (the flowed-out row is on the other device before its tile asks for it).
 * Prints each failed check and exits nonzero when one failed. */
#define _POSIX_C_SOURCE 200809L

#define BBMM_GEN_TARGET BBMM_BACKEND_HOST
#define BBMM_GEN_COUNT_INSTANCES 1
#include "bbmm/generated_support.h"

#if defined(__unix__)
#include <sys/wait.h>
#include <unistd.h>
#define BBMM_TEST_HAVE_FORK 1
#endif

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                                \
  do {                                                                             \
    ++checks;                                                                      \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);     \
      ++failures;                                                                  \
    }                                                                              \
  } while (0)

#define CHECK_EQ(a, b, what)                                                            \
  do {                                                                                  \
    long long va_ = (long long)(a), vb_ = (long long)(b);                               \
    ++checks;                                                                           \
    if (va_ != vb_) {                                                                   \
      fprintf(stderr, "%s:%d: %s: %s is %lld, expected %lld\n", __FILE__, __LINE__, what, \
              #a, va_, vb_);                                                            \
      ++failures;                                                                       \
    }                                                                                   \
  } while (0)

/* floor(n / d) by search: the q with q*d <= n < (q+1)*d (d > 0) or q*d >= n > (q+1)*d
 * (d < 0). */
static int64_t brute_floor_div(int64_t n, int64_t d) {
  for (int64_t q = -1000; q <= 1000; ++q) {
    if (d > 0 && q * d <= n && n < (q + 1) * d) return q;
    if (d < 0 && q * d >= n && n > (q + 1) * d) return q;
  }
  fprintf(stderr, "brute_floor_div(%lld, %lld): no quotient in range\n", (long long)n, (long long)d);
  abort();
}

static void test_arithmetic(void) {
  char what[64];
  for (int64_t n = -60; n <= 60; ++n) {
    for (int64_t d = -9; d <= 9; ++d) {
      if (d == 0) continue;
      snprintf(what, sizeof what, "bbmm_floord(%lld, %lld)", (long long)n, (long long)d);
      CHECK_EQ(bbmm_floord(n, d), brute_floor_div(n, d), what);
    }
  }
  /* Far from zero, where a floating-point floor would round. */
  CHECK_EQ(bbmm_floord(INT64_MAX, 2), INT64_MAX / 2, "bbmm_floord(INT64_MAX, 2)");
  CHECK_EQ(bbmm_floord(-INT64_MAX, 2), -(INT64_MAX / 2) - 1, "bbmm_floord(-INT64_MAX, 2)");
  CHECK_EQ(bbmm_floord(INT64_MIN, 1), INT64_MIN, "bbmm_floord(INT64_MIN, 1)");
  CHECK_EQ(bbmm_floord(-(INT64_C(1) << 62) - 1, INT64_C(1) << 61), -3, "bbmm_floord(-2^62-1, 2^61)");
  CHECK_EQ(bbmm_min(-3, 2), -3, "bbmm_min");
  CHECK_EQ(bbmm_min(INT64_MIN, INT64_MAX), INT64_MIN, "bbmm_min");
  CHECK_EQ(bbmm_max(-3, 2), 2, "bbmm_max");
  CHECK_EQ(bbmm_max(INT64_MIN, INT64_MAX), INT64_MAX, "bbmm_max");
}

/* A 6 x 8 array of ints held in three pieces, each in a buffer of its own with a padded
 * row stride and a byte offset: rows [0, 3) whole, rows [3, 6) split at column 4. */
enum { kRows = 6, kCols = 8 };

static int value_of(int64_t i, int64_t j) { return (int)(100 * i + j); }

static void test_gen_at(void) {
  static int buf[3][64];
  bbmm_piece p[3];
  const int64_t lo[3][2] = {{0, 0}, {3, 0}, {3, 4}};
  const int64_t hi[3][2] = {{3, 8}, {6, 4}, {6, 8}};
  const int64_t stride[3] = {9, 5, 4}; /* row strides in elements (>= the width) */
  const uint64_t offset[3] = {0, 2 * sizeof(int), 5 * sizeof(int)};
  memset(p, 0, sizeof p);
  memset(buf, 0, sizeof buf);
  for (int k = 0; k < 3; ++k) {
    p[k].lo[0] = lo[k][0];
    p[k].lo[1] = lo[k][1];
    p[k].hi[0] = hi[k][0];
    p[k].hi[1] = hi[k][1];
    p[k].stride[0] = stride[k];
    p[k].stride[1] = 1;
    p[k].data = buf[k];
    p[k].offset = offset[k];
    for (int64_t i = lo[k][0]; i < hi[k][0]; ++i) {
      for (int64_t j = lo[k][1]; j < hi[k][1]; ++j) {
        int* at = (int*)((char*)buf[k] + offset[k]) + (i - lo[k][0]) * stride[k] + (j - lo[k][1]);
        *at = value_of(i, j);
      }
    }
  }
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t j = 0; j < kCols; ++j) {
      const int64_t idx[2] = {i, j};
      const int* at = (const int*)bbmm_gen_at(p, 3, 2, idx, sizeof(int), "A");
      char what[64];
      snprintf(what, sizeof what, "A[%lld][%lld] through bbmm_gen_at", (long long)i, (long long)j);
      CHECK_EQ(*at, value_of(i, j), what);
      const int k = i < 3 ? 0 : (j < 4 ? 1 : 2);
      CHECK((const char*)at >= (const char*)buf[k] && (const char*)at < (const char*)(buf[k] + 64));
    }
  }
  /* bbmm_gen_at_from: the same elements, walked by rows and by columns (so the remembered
   * piece is right for runs of elements and wrong at each piece boundary), and from a stale
   * or out-of-range hint. */
  for (int order = 0; order < 2; ++order) {
    int last = order == 0 ? 0 : 7; /* 7: no such piece */
    const int64_t outer = order == 0 ? kRows : kCols, inner = order == 0 ? kCols : kRows;
    for (int64_t a = 0; a < outer; ++a) {
      for (int64_t b = 0; b < inner; ++b) {
        const int64_t i = order == 0 ? a : b, j = order == 0 ? b : a;
        const int64_t idx[2] = {i, j};
        const int* at = (const int*)bbmm_gen_at_from(p, 3, 2, idx, sizeof(int), "A", &last);
        char what[96];
        snprintf(what, sizeof what, "A[%lld][%lld] through bbmm_gen_at_from", (long long)i,
                 (long long)j);
        CHECK_EQ(*at, value_of(i, j), what);
        const int k = i < 3 ? 0 : (j < 4 ? 1 : 2);
        CHECK_EQ(last, k, "bbmm_gen_at_from remembers the piece it found");
      }
    }
  }
  /* One piece: direct addressing of a 3-D box. */
  {
    static double box[2 * 3 * 4];
    bbmm_piece one;
    memset(&one, 0, sizeof one);
    const int64_t l[3] = {5, -1, 10}, h[3] = {7, 2, 14};
    for (int d = 0; d < 3; ++d) {
      one.lo[d] = l[d];
      one.hi[d] = h[d];
    }
    one.stride[0] = 12;
    one.stride[1] = 4;
    one.stride[2] = 1;
    one.data = box;
    for (int n = 0; n < 24; ++n) box[n] = n;
    int n = 0;
    for (int64_t a = 5; a < 7; ++a)
      for (int64_t b = -1; b < 2; ++b)
        for (int64_t c = 10; c < 14; ++c, ++n) {
          const int64_t idx[3] = {a, b, c};
          CHECK(bbmm_gen_at(&one, 1, 3, idx, sizeof(double), "B") == (void*)&box[n]);
        }
  }
}

/* bbmm_gen_piece_of against enumeration: for every box in and around three pieces that
 * tile a 6 x 8 array (and a fourth that overlaps them), the first piece holding every
 * element of the box (bbmm_piece_contains, element by element), NULL for an empty box or
 * one no piece holds. */
static void test_piece_of(void) {
  bbmm_piece p[4];
  const int64_t lo[4][2] = {{0, 0}, {3, 0}, {3, 4}, {2, 2}};
  const int64_t hi[4][2] = {{3, 8}, {6, 4}, {6, 8}, {5, 7}};
  memset(p, 0, sizeof p);
  for (int k = 0; k < 4; ++k) {
    for (int d = 0; d < 2; ++d) {
      p[k].lo[d] = lo[k][d];
      p[k].hi[d] = hi[k][d];
    }
  }
  int nonnull = 0, null_nonempty = 0;
  for (int64_t a0 = -1; a0 <= 7; ++a0)
    for (int64_t b0 = a0; b0 <= 7; ++b0)
      for (int64_t a1 = -1; a1 <= 9; ++a1)
        for (int64_t b1 = a1 - 1; b1 <= 9; ++b1) {
          const int64_t l[2] = {a0, a1}, h[2] = {b0, b1};
          const bbmm_piece* expect = NULL;
          const int empty = b0 <= a0 || b1 <= a1;
          for (int k = 0; k < 4 && !empty && !expect; ++k) {
            int all = 1;
            for (int64_t i = a0; i < b0 && all; ++i)
              for (int64_t j = a1; j < b1 && all; ++j) {
                const int64_t idx[2] = {i, j};
                all = bbmm_piece_contains(&p[k], 2, idx);
              }
            if (all) expect = &p[k];
          }
          char what[96];
          snprintf(what, sizeof what, "bbmm_gen_piece_of([%lld,%lld)x[%lld,%lld))", (long long)a0,
                   (long long)b0, (long long)a1, (long long)b1);
          CHECK_EQ(bbmm_gen_piece_of(p, 4, 2, l, h) == expect, 1, what);
          if (expect) ++nonnull;
          else if (!empty) ++null_nonempty;
        }
  CHECK(nonnull > 100 && null_nonempty > 100); /* both outcomes exercised */
  int v = -1;
  CHECK(bbmm_gen_parse_piece_lookup("reference", &v) && v == 0);
  CHECK(bbmm_gen_parse_piece_lookup("element", &v) && v == 1);
  CHECK(!bbmm_gen_parse_piece_lookup("elements", &v) && v == 1);
  CHECK(!bbmm_gen_parse_piece_lookup("", &v));
}

/* Tiles of a 1-D split: in order, they cover [from, to) without gap or overlap; with n a
 * multiple of the devices, device d's tiles cover its even share; where edge tiles apply
 * (decided here from the documented rule), a device's first and last tiles are
 * share / E wide; elsewhere the
 * tiles are even (widths differ by at most one). */
static void test_tile_bounds(void) {
  const int64_t edges[] = {0, 1, 3, 32};
  char what[160];
  for (size_t ei = 0; ei < sizeof edges / sizeof edges[0]; ++ei) {
    bbmm_gen_edge_tiles = edges[ei];
    for (int64_t from = -3; from <= 2; from += 5) {
      for (int64_t span = 1; span <= 200; span += (span < 40 ? 1 : 37)) {
        for (int64_t devices = 1; devices <= 4; ++devices) {
          for (int64_t n = devices; n <= 6 * devices && n <= span; ++n) {
            int64_t prev_hi = from, wmin = span, wmax = 0;
            const int64_t per = n % devices == 0 ? n / devices : 0;
            for (int64_t k = 0; k < n; ++k) {
              int64_t lo = -999, hi = -999;
              bbmm_gen_tile_bounds(from, from + span, n, devices, k, &lo, &hi);
              snprintf(what, sizeof what, "tile %lld of %lld on %lld devices, [%lld, %lld), E %lld",
                       (long long)k, (long long)n, (long long)devices, (long long)from,
                       (long long)(from + span), (long long)edges[ei]);
              CHECK_EQ(lo, prev_hi, what);
              CHECK(hi >= lo);
              prev_hi = hi;
              if (hi - lo < wmin) wmin = hi - lo;
              if (hi - lo > wmax) wmax = hi - lo;
              if (per > 0 && k % per == 0) {
                const int64_t d = k / per;
                CHECK_EQ(lo, from + span * d / devices, what);
              }
              if (per > 0 && k % per == per - 1) {
                const int64_t d = k / per;
                CHECK_EQ(hi, from + span * (d + 1) / devices, what);
              }
              if (per >= 3 && devices > 1 && edges[ei] > 0) {
                const int64_t d = k / per, j = k % per;
                const int64_t share = from + span * (d + 1) / devices - (from + span * d / devices);
                const int64_t e = share / edges[ei];
                if (e >= 1 && share - 2 * e >= per - 2 && (j == 0 || j == per - 1)) {
                  CHECK_EQ(hi - lo, e, what);
                }
              }
            }
            CHECK_EQ(prev_hi, from + span, "the last tile ends at the range's end");
            const int edge_layout = per >= 3 && devices > 1 && edges[ei] > 0;
            if (!edge_layout) CHECK(wmax - wmin <= 1);
          }
        }
      }
    }
  }
  bbmm_gen_edge_tiles = 0;
  int64_t v = 5;
  CHECK(bbmm_gen_parse_edge_tiles("0", &v) && v == 0);
  CHECK(bbmm_gen_parse_edge_tiles("64", &v) && v == 64);
  CHECK(!bbmm_gen_parse_edge_tiles("-1", &v) && v == 64);
  CHECK(!bbmm_gen_parse_edge_tiles("8x", &v) && v == 64);
  CHECK(!bbmm_gen_parse_edge_tiles("", &v) && v == 64);
}

/* Work functions for bbmm_gen_weights: "x" points at the shape. */
enum { kLinear, kQuadratic, kDecreasing, kEmptyRows, kNone };
static int64_t shape_work(const void* x, int64_t row) {
  switch (*(const int*)x) {
    case kLinear: return row + 1;
    case kQuadratic: return row * row;
    case kDecreasing: return 1000 - row;
    case kEmptyRows: return row % 7 == 2 ? 50 + row : 0; /* a loop stepping by 7 from 2 */
    default: return 0;
  }
}

/* Split points weighted by work, against prefix sums of the work computed here: tiles are
 * consecutive and cover the range, a device's block is the same for 1, 2 and 3 tiles per
 * device, and the busiest device's work is within 2% (plus one row's work, a tile being
 * whole rows) of a fair share; even splits where weights do not apply. */
static void test_weighted_split(void) {
  char what[200];
  for (int shape = kLinear; shape <= kNone; ++shape) {
    for (int64_t span = 5; span <= 3000; span = span * 3 + 1) {
      const int64_t from = shape == kDecreasing ? 0 : 3, to = from + span;
      bbmm_gen_weights w;
      const int64_t stride = shape == kEmptyRows ? 7 : 1;
      bbmm_gen_weights_init(&w, from, to, stride, 2, shape_work, &shape);
      double total = 0, rowmax = 0;
      for (int64_t r = from; r < to; ++r) {
        total += (double)shape_work(&shape, r);
        if ((double)shape_work(&shape, r) > rowmax) rowmax = (double)shape_work(&shape, r);
      }
      CHECK_EQ(w.segments > 0, total > 0, "a range with work has segments");
      for (int64_t devices = 1; devices <= 4; ++devices) {
        int64_t block_lo[4] = {0}, block_hi[4] = {0};
        for (int64_t t = 1; t <= 3; ++t) {
          const int64_t n = devices * t;
          int64_t prev_hi = from;
          double busiest = 0, mine = 0;
          for (int64_t k = 0; k < n; ++k) {
            int64_t lo = -999, hi = -999;
            bbmm_gen_split(&w, from, to, n, devices, k, &lo, &hi);
            snprintf(what, sizeof what, "shape %d, tile %lld of %lld on %lld devices, [%lld, %lld)",
                     shape, (long long)k, (long long)n, (long long)devices, (long long)from,
                     (long long)to);
            CHECK_EQ(lo, prev_hi, what);
            CHECK(hi >= lo);
            prev_hi = hi;
            const int64_t d = k * devices / n;
            /* Blocks are compared where every count splits by work (n < span). */
            const int weighted = devices * 3 < span;
            if (k % t == 0) {
              if (t == 1) block_lo[d] = lo;
              if (weighted) CHECK_EQ(lo, block_lo[d], what);
              mine = 0;
            }
            for (int64_t r = lo; r < hi; ++r) mine += (double)shape_work(&shape, r);
            if (k % t == t - 1) {
              if (t == 1) block_hi[d] = hi;
              if (weighted) CHECK_EQ(hi, block_hi[d], what);
              if (mine > busiest) busiest = mine;
            }
            if (total == 0 || n >= span) {
              int64_t elo, ehi;
              bbmm_gen_tile_bounds(from, to, n, devices, k, &elo, &ehi);
              CHECK_EQ(lo, elo, "even split without weights");
              CHECK_EQ(hi, ehi, "even split without weights");
            }
          }
          CHECK_EQ(prev_hi, to, "the last tile ends at the range's end");
          if (total > 0 && n < span && n <= (span + stride - 1) / stride) {
            snprintf(what, sizeof what, "shape %d on %lld devices x %lld over %lld rows: busiest %.0f, fair %.0f",
                     shape, (long long)devices, (long long)t, (long long)span, busiest,
                     total / (double)devices);
            if (!(busiest <= 1.02 * total / (double)devices + rowmax)) {
              fprintf(stderr, "check failed: %s\n", what);
              ++failures;
            }
            ++checks;
          }
        }
      }
      /* Another range (BBMM_SPLIT=step's per-iteration range): even. */
      int64_t lo, hi, elo, ehi;
      bbmm_gen_split(&w, from + 1, to, 2, 2, 1, &lo, &hi);
      bbmm_gen_tile_bounds(from + 1, to, 2, 2, 1, &elo, &ehi);
      CHECK(lo == elo && hi == ehi);
    }
  }
  /* BBMM_SPLIT_BY=iterations: no segments, even splits. */
  int shape = kLinear;
  bbmm_gen_weights w;
  bbmm_gen_split_by_work = 0;
  bbmm_gen_weights_init(&w, 0, 100, 1, 0, shape_work, &shape);
  CHECK_EQ(w.segments, 0, "BBMM_SPLIT_BY=iterations");
  bbmm_gen_split_by_work = 1;
  int v = 7;
  CHECK(bbmm_gen_parse_split_by("iterations", &v) && v == 0);
  CHECK(bbmm_gen_parse_split_by("work", &v) && v == 1);
  CHECK(!bbmm_gen_parse_split_by("Work", &v) && v == 1);
  CHECK(!bbmm_gen_parse_split_by("", &v) && v == 1);
}

static void test_parse_tile_order(void) {
  int v = 7;
  CHECK(bbmm_gen_parse_tile_order("alternate", &v) && v == 1);
  CHECK(bbmm_gen_parse_tile_order("auto", &v) && v == 2);
  CHECK(bbmm_gen_parse_tile_order("forward", &v) && v == 0);
  CHECK(!bbmm_gen_parse_tile_order("Forward", &v) && v == 0);
  CHECK(!bbmm_gen_parse_tile_order("", &v) && v == 0);
}

static void test_parse_split(void) {
  int v = 0;
  CHECK(bbmm_gen_parse_split("step", &v) && v == 1);
  CHECK(bbmm_gen_parse_split("whole", &v) && v == 0);
  CHECK(!bbmm_gen_parse_split("steps", &v) && v == 0);
  CHECK(!bbmm_gen_parse_split("", &v) && v == 0);
}

/* A host kernel as bbmmc prints it with -DBBMM_GEN_COUNT_INSTANCES: "n" instances. */
static void counting_kernel(const bbmm_launch_info* bbmm_info, int n) {
  int i;
  BBMM_GEN_INSTANCES_BEGIN();
  for (i = 0; i < n; ++i) BBMM_GEN_INSTANCE();
  BBMM_GEN_INSTANCES_END(bbmm_info);
}

static void test_small_tiles(void) {
  const int saved = bbmm_gen_tiles_per_device_set;
  bbmm_gen_tiles_per_device_set = 0; /* the default count */
  CHECK(bbmm_gen_small_tiles(0));
  CHECK(bbmm_gen_small_tiles(BBMM_GEN_SMALL_TILE_BYTES));
  CHECK(!bbmm_gen_small_tiles(BBMM_GEN_SMALL_TILE_BYTES + 1));
  bbmm_gen_tiles_per_device_set = 1; /* BBMM_TILES_PER_DEVICE set: the user's count */
  CHECK(!bbmm_gen_small_tiles(0));
  bbmm_gen_tiles_per_device_set = saved;
}

static void test_count_instances(void) {
  const bbmm_launch_info dev1 = {1, NULL}, host = {BBMM_DEVICE_HOST, NULL}, far = {999, NULL};
  const uint64_t h0 = bbmm_gen_instances[0], d0 = bbmm_gen_instances[2];
  counting_kernel(&dev1, 5);
  counting_kernel(&dev1, 2);
  counting_kernel(&host, 3);
  counting_kernel(&far, 4); /* beyond the counted devices: ignored, no overflow */
  CHECK(bbmm_gen_instances[2] - d0 == 7);
  CHECK(bbmm_gen_instances[0] - h0 == 3);
}

static void test_parse_serial(void) {
  int v = 7;
  CHECK(bbmm_gen_parse_serial("host", &v) && v == 1);
  CHECK(bbmm_gen_parse_serial("device", &v) && v == 2);
  CHECK(bbmm_gen_parse_serial("auto", &v) && v == 0);
  CHECK(!bbmm_gen_parse_serial("Host", &v) && v == 0);
  CHECK(!bbmm_gen_parse_serial("", &v) && v == 0);
}

/* Where serial regions run: by size in auto mode, as told otherwise. */
static void test_serial_device(void) {
  bbmm_runtime* rt = bbmm_gen_runtime();
  const int saved = bbmm_gen_serial;
  bbmm_gen_serial = 0;
  CHECK_EQ(bbmm_gen_serial_device(rt, 8, 0, 0), BBMM_DEVICE_HOST, "auto, a whole nest: host");
  CHECK_EQ(bbmm_gen_serial_device(rt, 8, 0, 1), 0, "auto, nested: device 0");
  CHECK_EQ(bbmm_gen_serial_device(rt, 8, 0, 2), BBMM_DEVICE_HOST,
           "auto, nested, steps two loops deep: host");
  CHECK_EQ(bbmm_gen_serial_device(rt, (uint64_t)1 << 30, 0, 1), 0, "auto, nested, big: device 0");
  CHECK_EQ(bbmm_gen_serial_device(rt, 4097, 4096, 1), BBMM_DEVICE_HOST, "auto, cannot fit");
  CHECK_EQ(bbmm_gen_serial_device(rt, 4096, 4096, 1), 0, "auto, fits");
  bbmm_gen_serial = 1;
  CHECK_EQ(bbmm_gen_serial_device(rt, 8, 0, 1), BBMM_DEVICE_HOST, "host");
  bbmm_gen_serial = 2;
  CHECK_EQ(bbmm_gen_serial_device(rt, (uint64_t)1 << 40, 4096, 0), 0, "device");
  CHECK_EQ(bbmm_gen_serial_device(rt, 8, 0, 2), 0, "device, steps two loops deep");
  bbmm_gen_serial = saved;
}

static void test_parse_tiles_per_device(void) {
  /* The default before the environment is read: 1 on the host target (2 on CUDA). */
  CHECK_EQ(bbmm_gen_tiles_per_device, 1, "the host target's default tiles per device");
  static const struct {
    const char* text;
    int ok;
    int value;
  } cases[] = {
      {"1", 1, 1},       {"4", 1, 4},      {"4096", 1, 4096}, {" 17", 1, 17}, {"+3", 1, 3},
      {"0", 0, 0},       {"-2", 0, 0},     {"4097", 0, 0},    {"", 0, 0},     {" ", 0, 0},
      {"2x", 0, 0},      {"x2", 0, 0},     {"3 ", 0, 0},      {"1.5", 0, 0},  {"0x10", 0, 0},
      {"99999999999999999999999", 0, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    int v = -7;
    char what[96];
    snprintf(what, sizeof what, "bbmm_gen_parse_tiles_per_device(\"%s\")", cases[c].text);
    CHECK_EQ(bbmm_gen_parse_tiles_per_device(cases[c].text, &v), cases[c].ok, what);
    CHECK_EQ(v, cases[c].ok ? cases[c].value : -7, what);
  }
  {
    int v = -7;
    CHECK_EQ(bbmm_gen_parse_tiles_per_device(NULL, &v), 0, "NULL");
    CHECK_EQ(v, -7, "NULL");
  }
}

#ifdef BBMM_TEST_HAVE_FORK
/* Runs bbmm_gen_runtime() in a child process with "name"="value" in its environment; the
 * child exits 0 after printing bbmm_gen_tiles_per_device when the runtime was created.
 * Returns the child's exit status (-1 if it did not exit) and its stderr and stdout in
 * "out" (truncated to "size"). */
static int run_child(const char* name, const char* value, char* out, size_t size) {
  int fd[2];
  if (pipe(fd) != 0) abort();
  fflush(stdout);
  fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) abort();
  if (pid == 0) {
    dup2(fd[1], 1);
    dup2(fd[1], 2);
    close(fd[0]);
    close(fd[1]);
    setenv(name, value, 1);
    bbmm_gen_runtime();
    printf("tiles per device %d\n", bbmm_gen_tiles_per_device);
    exit(0);
  }
  close(fd[1]);
  size_t n = 0;
  for (;;) {
    const ssize_t r = read(fd[0], out + n, size - 1 - n);
    if (r <= 0) break;
    n += (size_t)r;
    if (n == size - 1) break;
  }
  out[n] = '\0';
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void check_child(const char* name, const char* value, int want_status, const char* want_text) {
  char out[1024];
  const int status = run_child(name, value, out, sizeof out);
  char what[128];
  snprintf(what, sizeof what, "exit status with %s='%s'", name, value);
  CHECK_EQ(status, want_status, what);
  if (!strstr(out, want_text)) {
    fprintf(stderr, "%s:%d: with %s='%s' the output is \"%s\", expected it to contain \"%s\"\n",
            __FILE__, __LINE__, name, value, out, want_text);
    ++failures;
  }
  ++checks;
}
#endif

static void test_runtime_environment(void) {
#ifdef BBMM_TEST_HAVE_FORK
  check_child("BBMM_TILES_PER_DEVICE", "3", 0, "tiles per device 3");
  check_child("BBMM_TILES_PER_DEVICE", "", 0, "tiles per device 1");
  check_child("BBMM_TILES_PER_DEVICE", "0", 1,
              "bbmm: BBMM_TILES_PER_DEVICE='0' is not an integer in [1, 4096]\n");
  check_child("BBMM_TILES_PER_DEVICE", "4x", 1,
              "bbmm: BBMM_TILES_PER_DEVICE='4x' is not an integer in [1, 4096]\n");
  check_child("BBMM_BACKEND", "opencl", 1,
              "bbmm: this program was generated with --target=host: its kernels run on the host "
              "backend only (unset BBMM_BACKEND or set it to 'host')\n");
  check_child("BBMM_BACKEND", "host", 0, "tiles per device 1");
  check_child("BBMM_SERIAL", "gpu", 1, "bbmm: BBMM_SERIAL='gpu' is not 'auto', 'host' or 'device'\n");
  check_child("BBMM_SPLIT_BY", "rows", 1, "bbmm: BBMM_SPLIT_BY='rows' is not 'work' or 'iterations'\n");
#else
  printf("generated_support_test: no fork() here: bbmm_gen_runtime's exits are not tested\n");
#endif
}

/* The host kernels of the flow-out test: "fill" writes value_of(i, j) into box [lo, hi) of
 * the tile's single piece, "copy" copies that box to "out" (a kOutCols-wide host array). */
enum { kOutCols = 4 };
typedef struct box_args {
  bbmm_piece piece;
  int64_t lo[2], hi[2];
  int* out;
} box_args;

static void fill_kernel(const bbmm_launch_info* info, void* args) {
  const box_args* a = (const box_args*)args;
  (void)info;
  for (int64_t i = a->lo[0]; i < a->hi[0]; ++i) {
    for (int64_t j = a->lo[1]; j < a->hi[1]; ++j) {
      const int64_t idx[2] = {i, j};
      *(int*)bbmm_piece_at(&a->piece, sizeof(int), 2, idx) = value_of(i, j);
    }
  }
}

static void copy_kernel(const bbmm_launch_info* info, void* args) {
  const box_args* a = (const box_args*)args;
  (void)info;
  for (int64_t i = a->lo[0]; i < a->hi[0]; ++i) {
    for (int64_t j = a->lo[1]; j < a->hi[1]; ++j) {
      const int64_t idx[2] = {i, j};
      a->out[(i - a->lo[0]) * kOutCols + (j - a->lo[1])] =
          *(const int*)bbmm_piece_at(&a->piece, sizeof(int), 2, idx);
    }
  }
}

/* Bytes moved between devices so far. */
static uint64_t device_bytes(bbmm_runtime* rt) {
  bbmm_stats s;
  bbmm_gen_check(bbmm_synchronize(rt), "bbmm_synchronize");
  bbmm_gen_check(bbmm_stats_get(rt, -1, &s), "bbmm_stats_get");
  return s.bytes_d2d + s.bytes_peer;
}

/* Runs one tile on "dev" requiring box [lo, hi) of "a" with "mode" and launching "kernel"
 * (if any) on it with "out". */
static void run_tile(bbmm_runtime* rt, int dev, bbmm_array* a, const int64_t lo[2],
                     const int64_t hi[2], bbmm_access mode, bbmm_kernel_fn kernel, int* out) {
  bbmm_tile* t = NULL;
  bbmm_view v;
  int count = 0;
  bbmm_gen_check(bbmm_tile_begin(rt, dev, &t), "bbmm_tile_begin");
  bbmm_gen_require(t, a, 2, lo, hi, mode, &count);
  CHECK_EQ(count, 1, "boxes required");
  bbmm_gen_check(bbmm_tile_acquire(t), "bbmm_tile_acquire");
  bbmm_gen_check(bbmm_tile_view(t, a, &v), "bbmm_tile_view");
  CHECK_EQ(v.npieces, 1, "pieces of the view");
  if (kernel && v.npieces == 1) {
    box_args args;
    memset(&args, 0, sizeof args);
    args.piece = v.pieces[0];
    memcpy(args.lo, lo, sizeof args.lo);
    memcpy(args.hi, hi, sizeof args.hi);
    args.out = out;
    bbmm_gen_check(bbmm_tile_launch(t, kernel, &args, sizeof args), "bbmm_tile_launch");
  }
  bbmm_gen_check(bbmm_tile_release(t), "bbmm_tile_release");
}

static void test_require_and_flow_out(void) {
  static int host[kRows][kCols];
  const int64_t ext[2] = {kRows, kCols};
  const int64_t all_lo[2] = {0, 0}, all_hi[2] = {kRows, kCols};
  bbmm_runtime* rt = bbmm_gen_runtime();
  bbmm_array* a = NULL;
  bbmm_tile* t = NULL;
  bbmm_view v;
  int count = 0;
  CHECK(bbmm_gen_runtime() == rt);
  CHECK_EQ(bbmm_device_count(rt), 2, "devices");
  for (int i = 0; i < kRows; ++i)
    for (int j = 0; j < kCols; ++j) host[i][j] = -1;
  bbmm_gen_check(bbmm_array_register(rt, "A", host, sizeof(int), 2, ext, NULL, 0, &a), "register");
  /* Device 1 holds the whole array (an unused instance after its tile), so that what device
     0 flows out is pushed there. */
  run_tile(rt, 1, a, all_lo, all_hi, BBMM_READ, NULL, NULL);
  bbmm_gen_check(bbmm_tile_begin(rt, 0, &t), "bbmm_tile_begin");
  {
    /* Empty in one dimension, inverted, then the box [1, 3) x [2, 6). */
    const int64_t lo0[2] = {1, 2}, hi0[2] = {1, 6};
    const int64_t lo1[2] = {1, 6}, hi1[2] = {3, 2};
    const int64_t lo2[2] = {1, 2}, hi2[2] = {3, 6};
    bbmm_gen_require(t, a, 2, lo0, hi0, BBMM_READ, &count);
    CHECK_EQ(count, 0, "boxes required after an empty box");
    bbmm_gen_require(t, a, 2, lo1, hi1, BBMM_READ, &count);
    CHECK_EQ(count, 0, "boxes required after an inverted box");
    bbmm_gen_require(t, a, 2, lo2, hi2, BBMM_WRITE, &count);
    CHECK_EQ(count, 1, "boxes required after a nonempty box");
    bbmm_gen_check(bbmm_tile_acquire(t), "bbmm_tile_acquire");
    bbmm_gen_check(bbmm_tile_view(t, a, &v), "bbmm_tile_view");
    /* Only the nonempty box was required: one piece, inside what device 0 allocated for it. */
    CHECK_EQ(v.npieces, 1, "pieces of the view");
    if (v.npieces == 1) {
      box_args args;
      memset(&args, 0, sizeof args);
      args.piece = v.pieces[0];
      memcpy(args.lo, lo2, sizeof args.lo);
      memcpy(args.hi, hi2, sizeof args.hi);
      bbmm_gen_check(bbmm_tile_launch(t, fill_kernel, &args, sizeof args), "bbmm_tile_launch");
    }
  }
  {
    /* Empty boxes flow nothing out; then row 2 of the written box goes to device 1. */
    const int64_t lo0[2] = {2, 2}, hi0[2] = {3, 2};
    const int64_t lo1[2] = {5, 2}, hi1[2] = {2, 6};
    const int64_t lo2[2] = {2, 2}, hi2[2] = {3, 6};
    const uint64_t before = device_bytes(rt);
    bbmm_gen_flow_out(t, a, 2, lo0, hi0);
    bbmm_gen_flow_out(t, a, 2, lo1, hi1);
    CHECK_EQ(device_bytes(rt) - before, 0, "bytes between devices after empty flow-outs");
    bbmm_gen_flow_out(t, a, 2, lo2, hi2);
    CHECK_EQ(device_bytes(rt) - before, 4 * sizeof(int), "bytes between devices after the flow-out");
  }
  bbmm_gen_check(bbmm_tile_release(t), "bbmm_tile_release");
  {
    /* Device 1 finds row 2 in place (no copy) and with the values device 0 wrote. */
    int out[kOutCols];
    const int64_t lo[2] = {2, 2}, hi[2] = {3, 6};
    const uint64_t before = device_bytes(rt);
    run_tile(rt, 1, a, lo, hi, BBMM_READ, copy_kernel, out);
    CHECK_EQ(device_bytes(rt) - before, 0, "bytes between devices for a tile reading row 2 on device 1");
    for (int j = 0; j < kOutCols; ++j) CHECK_EQ(out[j], value_of(2, 2 + j), "row 2 on device 1");
  }
  bbmm_gen_check(bbmm_array_unregister(rt, a), "bbmm_array_unregister");
  for (int i = 0; i < kRows; ++i) {
    for (int j = 0; j < kCols; ++j) {
      char what[64];
      snprintf(what, sizeof what, "host A[%d][%d] after unregistering", i, j);
      CHECK_EQ(host[i][j], i >= 1 && i < 3 && j >= 2 && j < 6 ? value_of(i, j) : -1, what);
    }
  }
  /* The runtime is destroyed at exit (bbmm_gen_exit). */
}

/* A runtime of "devices" host devices of "memory" bytes each (NULL, reported, if it
 * cannot be made). */
static bbmm_runtime* host_runtime(int devices, uint64_t memory) {
  bbmm_options o;
  CHECK_EQ(bbmm_options_init(&o), BBMM_OK, "bbmm_options_init");
  o.backend = BBMM_BACKEND_HOST;
  o.devices = devices;
  o.device_memory = memory;
  bbmm_runtime* rt = NULL;
  CHECK_EQ(bbmm_runtime_create(&o, &rt), BBMM_OK, "bbmm_runtime_create");
  return rt;
}

/* bbmm_gen_box_bytes against the product of the extents (nothing for empty or inverted
 * boxes), and bbmm_gen_min_device_memory on runtimes of a given device memory. */
static void test_capacity_helpers(void) {
  for (int64_t a = -2; a <= 3; ++a) {
    for (int64_t b = -2; b <= 4; ++b) {
      const int64_t lo[2] = {1, 2}, hi[2] = {1 + a, 2 + b};
      uint64_t acc = 5;
      bbmm_gen_box_bytes(&acc, 8, 2, lo, hi);
      const uint64_t want = (a > 0 && b > 0) ? (uint64_t)(8 * a * b) : 0;
      CHECK_EQ(acc, 5 + want, "bbmm_gen_box_bytes");
    }
  }
  bbmm_runtime* rt = host_runtime(3, 5000);
  if (rt != NULL) {
    CHECK_EQ(bbmm_gen_min_device_memory(rt), 5000, "bbmm_gen_min_device_memory");
    CHECK_EQ(bbmm_runtime_destroy(rt), BBMM_OK, "bbmm_runtime_destroy");
  }
  CHECK_EQ(bbmm_gen_min_device_memory(NULL), 0, "bbmm_gen_min_device_memory(NULL)");

  /* Issue order: most flow-out first, ties in index order. */
  {
    const uint64_t bytes[6] = {0, 16, 16, 0, 8, 0};
    const int64_t want[6] = {1, 2, 4, 0, 3, 5};
    bbmm_gen_tile_rank r[6];
    for (int k = 0; k < 6; ++k) {
      r[k].k = 5 - k; /* given in reverse: the order must not depend on it */
      r[k].bytes = bytes[5 - k];
    }
    bbmm_gen_order_tiles(r, 6, 0, 1);
    for (int k = 0; k < 6; ++k) CHECK_EQ(r[k].k, want[k], "bbmm_gen_order_tiles");
  }
  /* Odd calls: ties downwards with "alternate"; always upwards with "forward" (the default). */
  for (int forward = 0; forward <= 1; ++forward) {
    const uint64_t bytes[6] = {0, 16, 16, 0, 8, 0};
    const int64_t want_odd[6] = {2, 1, 4, 5, 3, 0};
    const int64_t want_fwd[6] = {1, 2, 4, 0, 3, 5};
    for (int64_t call = 0; call < 4; ++call) {
      bbmm_gen_tile_rank r[6];
      for (int k = 0; k < 6; ++k) {
        r[k].k = k;
        r[k].bytes = bytes[k];
      }
      bbmm_gen_order_tiles(r, 6, call, !forward);
      const int64_t* want = !forward && (call & 1) ? want_odd : want_fwd;
      for (int k = 0; k < 6; ++k) CHECK_EQ(r[k].k, want[k], "bbmm_gen_order_tiles (alternating)");
    }
  }
  /* bbmm_gen_alternating: forward and alternate as set; auto once a box-out happened
   * (a host device of 256 bytes, 32 doubles: one 256-byte box, then another). */
  {
    bbmm_gen_tile_order = 0;
    CHECK_EQ(bbmm_gen_alternating(NULL), 0, "bbmm_gen_alternating (forward)");
    bbmm_gen_tile_order = 1;
    CHECK_EQ(bbmm_gen_alternating(NULL), 1, "bbmm_gen_alternating (alternate)");
    bbmm_gen_tile_order = 2;
    CHECK_EQ(bbmm_gen_alternating(NULL), 0, "bbmm_gen_alternating (auto, no runtime)");
    bbmm_runtime* art = host_runtime(1, 256);
    double x[64];
    for (int i = 0; i < 64; ++i) x[i] = i;
    const int64_t ext[1] = {64};
    bbmm_array* xa = NULL;
    if (art != NULL) {
      CHECK_EQ(bbmm_array_register(art, "x", x, 8, 1, ext, NULL, 0, &xa), BBMM_OK, "register x");
      CHECK_EQ(bbmm_gen_alternating(art), 0, "bbmm_gen_alternating (auto, in core)");
      for (int64_t b = 0; b < 2 && xa != NULL; ++b) {
        const int64_t lo[1] = {32 * b}, hi[1] = {32 * b + 32};
        bbmm_tile* t = NULL;
        CHECK_EQ(bbmm_tile_begin(art, 0, &t), BBMM_OK, "bbmm_tile_begin");
        CHECK_EQ(bbmm_tile_require(t, xa, lo, hi, BBMM_READ), BBMM_OK, "bbmm_tile_require");
        CHECK_EQ(bbmm_tile_acquire(t), BBMM_OK, "bbmm_tile_acquire");
        CHECK_EQ(bbmm_tile_release(t), BBMM_OK, "bbmm_tile_release");
      }
      CHECK_EQ(bbmm_gen_alternating(art), 1, "bbmm_gen_alternating (auto, after a box-out)");
      CHECK_EQ(bbmm_array_unregister(art, xa), BBMM_OK, "bbmm_array_unregister");
      CHECK_EQ(bbmm_runtime_destroy(art), BBMM_OK, "bbmm_runtime_destroy");
    }
  }
  bbmm_gen_tile_order = 2;
}

#ifdef BBMM_TEST_HAVE_FORK
/* What bbmm_gen_tile_too_large prints (stderr of the calls, captured in a file). */
static void capture_stderr(void (*calls)(void), char* out, size_t size) {
  char path[] = "/tmp/bbmm_gen_note_XXXXXX";
  const int fd = mkstemp(path);
  out[0] = '\0';
  if (fd < 0) return;
  fflush(stderr);
  const int saved = dup(2);
  dup2(fd, 2);
  calls();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  const ssize_t n = pread(fd, out, size - 1, 0);
  out[n > 0 ? n : 0] = '\0';
  close(fd);
  unlink(path);
}

static void note_calls(void) {
  /* A serial loop's iterations: fits, fits, too large (said), too large (not again). */
  bbmm_gen_tile_too_large("phase 0 of scop 0 in f", 100, 4096, 0);
  bbmm_gen_tile_too_large("phase 0 of scop 0 in f", 4000, 4096, 0);
  bbmm_gen_tile_too_large("phase 0 of scop 0 in f", 4416, 4096, 0);
  bbmm_gen_tile_too_large("phase 0 of scop 0 in f", 5000, 4096, 0);
  /* A 2-D partition whose tiles one iteration wide each way still do not fit. */
  bbmm_gen_tile_too_large("phase 1 of scop 0 in f", 6000, 4096, 2);
}
#endif

/* The note of a phase whose tiles outgrow the devices is printed once, at the first call
 * whose tile does not fit, also when earlier calls' tiles fit (PolyBench lu at 4 KiB: the
 * serial region's box grows with i and outgrows the device at i = 23). */
static void test_tile_too_large(void) {
#ifdef BBMM_TEST_HAVE_FORK
  char text[1024];
  capture_stderr(note_calls, text, sizeof text);
  CHECK(strstr(text, "phase 0 of scop 0 in f has no parallel loop and runs as one tile, which "
                     "requires boxes of up to 4416 bytes; a device holds 4096 bytes") != NULL);
  CHECK(strstr(text, "5000") == NULL);
  CHECK(strstr(text, "a tile of phase 1 of scop 0 in f, one iteration of each of its two "
                     "partitioned loops wide, requires boxes of up to 6000 bytes") != NULL);
  CHECK(strstr(text, "4000") == NULL);
#endif
}

int main(void) {
  /* The environment of the tests: the host backend on 2 devices, nothing printed at exit. */
  setenv("BBMM_BACKEND", "host", 1);
  setenv("BBMM_DEVICES", "2", 1);
  unsetenv("BBMM_TILES_PER_DEVICE");
  unsetenv("BBMM_STATS");
  test_arithmetic();
  test_gen_at();
  test_piece_of();
  test_parse_tiles_per_device();
  test_parse_tile_order();
  test_parse_serial();
  test_parse_split();
  test_count_instances();
  test_small_tiles();
  test_tile_bounds();
  test_weighted_split();
  test_runtime_environment(); /* forks: before this process starts runtime threads */
  test_serial_device();
  test_require_and_flow_out();
  test_capacity_helpers();
  test_tile_too_large();
  printf("generated_support_test (%s): %d checks, %d failed\n",
#ifdef __cplusplus
         "C++",
#else
         "C",
#endif
         checks, failures);
  return failures == 0 ? 0 : 1;
}
