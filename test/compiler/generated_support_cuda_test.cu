/* Tests of include/bbmm/generated_support_cuda.h, the helpers every CUDA file bbmmc
 * generates includes, on the host side (no GPU needed; built when CUDA is enabled):
 * - bbmm_floord against a brute-force floor division over all signs (host code);
 * - bbmm_cu_parse_block / bbmm_cu_parse_int on tables of values;
 * - bbmm_cu_shape_of: block folding per grid dimension, the march of the outermost
 *   coordinate, the hardware limits and the user cap, empty ranges; and that the grid
 *   always covers each range (grid-stride loops do the rest) with no block fully idle
 *   unless capped, against an independent computation;
 * - bbmm_cu_fill_march: the march halves until the grid has the blocks asked for;
 * - bbmm_cu_balance_march: the least march giving the same blocks, by brute force;
 * - bbmm_cu_wave_march: the cheapest march in waves of resident blocks, by brute force;
 * - bbmm_cu_pick_march: the fill rule, then the waves or the balance rule, composed
 *   independently;
 * - bbmm_cu_fits32: every value the generated grid-stride and march loops compute,
 *   emulated thread by thread in 64 bits, fits in int32_t whenever it says so, for ranges
 *   at the edges of int32_t's range;
 * - the environment settings in child processes: a malformed BBMM_CUDA_BLOCK,
 *   BBMM_CUDA_MARCH, BBMM_CUDA_GRID_CAP or BBMM_CUDA_FILL exits 1 naming the variable;
 *   valid ones apply.
 * Prints each failed check and exits nonzero when one failed. */
#include <sys/wait.h>
#include <unistd.h>

#define BBMM_GEN_CUDA_BLOCK_X 16
#define BBMM_GEN_CUDA_BLOCK_Y 4
#define BBMM_GEN_CUDA_BLOCK_Z 2
#define BBMM_GEN_CUDA_MARCH 7
#include "bbmm/generated_support_cuda.h"

#include <string>

static int failures = 0;
static int checks = 0;

#define CHECK_EQ(a, b, what)                                                                \
  do {                                                                                      \
    const long long va_ = (long long)(a), vb_ = (long long)(b);                             \
    ++checks;                                                                               \
    if (va_ != vb_) {                                                                       \
      fprintf(stderr, "%s:%d: %s: %s is %lld, expected %lld\n", __FILE__, __LINE__, what, #a, \
              va_, vb_);                                                                    \
      ++failures;                                                                           \
    }                                                                                       \
  } while (0)

// The largest q with q <= n / d, by search (q * d <= n for d > 0, q * d >= n for d < 0).
static long long brute_floor_div(long long n, long long d) {
  long long best = -1000;
  for (long long q = -1000; q <= 1000; ++q) {
    if (d > 0 ? q * d <= n : q * d >= n) best = q;
  }
  return best;
}

static void test_floord(void) {
  for (long long n = -40; n <= 40; ++n) {
    for (long long d = -7; d <= 7; ++d) {
      if (d == 0) continue;
      CHECK_EQ(bbmm_floord(n, d), brute_floor_div(n, d), "bbmm_floord");
    }
  }
  CHECK_EQ(bbmm_min(-3, 2), -3, "bbmm_min");
  CHECK_EQ(bbmm_max(-3, 2), 2, "bbmm_max");
}

static void test_parse(void) {
  struct {
    const char* text;
    int ok, x, y, z;
  } blocks[] = {{"32,8", 1, 32, 8, 1},     {"32,8,1", 1, 32, 8, 1}, {"1,1,1", 1, 1, 1, 1},
                {"1024,1", 1, 1024, 1, 1}, {"32,32,1", 1, 32, 32, 1}, {"32,32,2", 0, 0, 0, 0},
                {"0,8", 0, 0, 0, 0},       {"32", 0, 0, 0, 0},        {"32,8,1,1", 0, 0, 0, 0},
                {"32,8x", 0, 0, 0, 0},     {"-1,8", 0, 0, 0, 0},      {"", 0, 0, 0, 0},
                {"32,8,", 0, 0, 0, 0},     {"32,8,2x", 0, 0, 0, 0},   {"64,4,4", 1, 64, 4, 4}};
  for (const auto& b : blocks) {
    int s[3] = {0, 0, 0};
    const int ok = bbmm_cu_parse_block(b.text, s);
    CHECK_EQ(ok, b.ok, b.text);
    if (ok && b.ok) {
      CHECK_EQ(s[0], b.x, b.text);
      CHECK_EQ(s[1], b.y, b.text);
      CHECK_EQ(s[2], b.z, b.text);
    }
  }
  struct {
    const char* text;
    int ok;
    long long v;
  } ints[] = {{"1", 1, 1}, {"65536", 1, 65536}, {"65537", 0, 0}, {"0", 0, 0},
              {"7x", 0, 0}, {"", 0, 0},          {"-3", 0, 0},    {"32", 1, 32}};
  for (const auto& i : ints) {
    long long v = -1;
    const int ok = bbmm_cu_parse_int(i.text, 1, 65536, &v);
    CHECK_EQ(ok, i.ok, i.text);
    if (ok && i.ok) CHECK_EQ(v, i.v, i.text);
  }
}

// Independent: threads per block along d, values per thread along d, and the blocks a
// dimension needs without limits.
static void test_shape(void) {
  const int shape[3] = {16, 4, 2};
  const int64_t limits[3] = {2147483647, 65535, 65535};
  const int64_t extents[] = {1, 2, 15, 16, 17, 100, 1000, 70000, 5000000};
  for (int dims = 0; dims <= 3; ++dims) {
    for (int64_t march : {1, 3, 32}) {
      for (int64_t cap : {0, 1, 3}) {
        for (int64_t e : extents) {
          int64_t lo[3] = {-5, 7, 0}, hi[3];
          for (int d = 0; d < 3; ++d) hi[d] = lo[d] + e;
          dim3 grid, block;
          const bool ok = bbmm_cu_shape_of(dims, lo, hi, shape, march, cap, &grid, &block);
          CHECK_EQ(ok, 1, "nonempty ranges launch");
          const unsigned threads[3] = {block.x, block.y, block.z};
          const unsigned blocks[3] = {grid.x, grid.y, grid.z};
          // Threads per block: 256 whatever the dimension count (folded), 1 for dims 0.
          CHECK_EQ((long long)block.x * block.y * block.z, dims == 0 ? 1 : 128, "block size");
          for (int d = 0; d < 3; ++d) {
            if (d >= dims) {
              CHECK_EQ(threads[d], 1, "unused block dimension");
              CHECK_EQ(blocks[d], 1, "unused grid dimension");
              continue;
            }
            const int64_t per_thread = (d >= 1 && d == dims - 1) ? march : 1;
            const int64_t per_block = (int64_t)threads[d] * per_thread;
            int64_t need = 0;
            while (need * per_block < e) ++need;  // blocks to cover e without limits
            int64_t limit = limits[d];
            if (cap > 0 && cap < limit) limit = cap;
            CHECK_EQ(blocks[d], need < limit ? need : limit, "grid blocks");
          }
          if (dims == 1) CHECK_EQ(threads[0], 128, "1-D folds X*Y*Z");
          if (dims == 2) {
            CHECK_EQ(threads[0], 16, "2-D x");
            CHECK_EQ(threads[1], 8, "2-D folds Y*Z");
          }
          if (dims == 3) {
            CHECK_EQ(threads[0], 16, "3-D x");
            CHECK_EQ(threads[1], 4, "3-D y");
            CHECK_EQ(threads[2], 2, "3-D z");
          }
        }
        // An empty range launches nothing.
        int64_t lo[3] = {4, 4, 4}, hi[3] = {9, 9, 9};
        if (dims > 0) {
          hi[dims - 1] = 4;
          dim3 grid, block;
          CHECK_EQ(bbmm_cu_shape_of(dims, lo, hi, shape, march, cap, &grid, &block), 0,
                   "an empty range");
        }
      }
    }
  }
}

// The blocks of a launch over extents "e" with march "m" and block shape {16, 4, 2},
// counted independently of bbmm_cu_shape_of: the ceiling of each extent over the threads
// along it (2-D folds Y*Z into y) times, for the outermost coordinate, the march (the
// hardware limits do not bind at the tests' extents).
static int64_t oracle_blocks(int dims, const int64_t* e, int64_t m) {
  const int64_t t[3] = {16, dims == 2 ? 8 : 4, 2};
  int64_t n = 1;
  for (int d = 0; d < dims; ++d) {
    const int64_t per = t[d] * (d == dims - 1 ? m : 1);
    n *= (e[d] + per - 1) / per;
  }
  return n;
}

// The fill rule, independently: march, ceil(march/2), ... until the grid has
// min_blocks blocks (oracle_blocks), or 1; 1-D keeps the march.
static int64_t oracle_fill_march(int dims, const int64_t* e, int64_t march, int64_t min_blocks) {
  if (dims < 2) return march;
  while (march > 1 && oracle_blocks(dims, e, march) < min_blocks) march = (march + 1) / 2;
  return march;
}

// The waves rule, by brute force over 1..march: the cost ceil(blocks / resident) *
// (m + 1), the cheapest with ties to the larger march; 1-D and resident <= 0 keep it.
static int64_t oracle_wave_march(int dims, const int64_t* e, int64_t march, int64_t resident) {
  if (dims < 2 || resident <= 0) return march;
  int64_t want = march, best = -1;
  for (int64_t m = march; m >= 1; --m) {
    const int64_t cost = (oracle_blocks(dims, e, m) + resident - 1) / resident * (m + 1);
    if (best < 0 || cost < best) {
      best = cost;
      want = m;
    }
  }
  return want;
}

// The balance rule, by brute force: the least march m <= march giving the
// outermost coordinate of `extent` as many blocks of `threads` threads as march.
static int64_t oracle_balance_march(int64_t extent, int64_t threads, int64_t march) {
  auto blocks = [&](int64_t m) { return (extent + threads * m - 1) / (threads * m); };
  for (int64_t m = 1; m <= march; ++m) {
    if (blocks(m) == blocks(march)) return m;
  }
  return march;
}

// bbmm_cu_fill_march: against an independent count of the blocks of a march (the
// ceiling of each extent over threads x values per thread; the hardware limits do not
// bind at these extents): the march returned is the first of march, ceil(march/2), ...
// whose grid has at least min_blocks blocks, else 1; 1-D keeps the march.
static void test_fill_march(void) {
  const int shape[3] = {16, 4, 2};
  const int64_t extents[][3] = {{384, 384, 24}, {384, 384, 96}, {8192, 512, 1}, {8192, 2048, 1},
                                {17, 3, 5},     {1000, 1, 1},   {64, 64, 64}};
  for (int dims = 1; dims <= 3; ++dims) {
    for (const auto& e : extents) {
      for (int64_t march : {1, 7, 32}) {
        for (int64_t min_blocks : {0, 1, 100, 1056, 100000}) {
          const int64_t lo[3] = {3, -2, 0};
          const int64_t hi[3] = {3 + e[0], -2 + e[1], e[2]};
          const int64_t got = bbmm_cu_fill_march(dims, lo, hi, shape, march, 0, min_blocks);
          CHECK_EQ(got, oracle_fill_march(dims, e, march, min_blocks), "fill march");
          if (dims >= 2 && got > 1) {
            CHECK_EQ(oracle_blocks(dims, e, got) >= min_blocks, 1, "the grid fills");
          }
        }
      }
    }
  }
}

// bbmm_cu_balance_march, by brute force: the least march m' <= march whose blocks along
// the outermost coordinate are as many as march's (the grid does not change) and cover
// the extent; and every block then has work (m' * threads * (blocks - 1) < extent).
static void test_balance_march(void) {
  const int shape[3] = {16, 4, 2};
  for (int dims = 1; dims <= 3; ++dims) {
    const int64_t threads = dims == 2 ? 8 : dims == 3 ? 2 : 0;
    for (int64_t extent : {1, 2, 7, 16, 17, 47, 48, 64, 100, 383, 1024}) {
      for (int64_t march : {1, 2, 7, 32}) {
        const int64_t lo[3] = {5, -3, 2};
        int64_t hi[3] = {5 + 9, -3 + 9, 2 + 9};
        hi[dims - 1] = lo[dims - 1] + extent;
        const int64_t got = bbmm_cu_balance_march(dims, lo, hi, shape, march);
        if (dims == 1) {
          CHECK_EQ(got, march, "1-D does not march");
          continue;
        }
        auto blocks = [&](int64_t m) { return (extent + threads * m - 1) / (threads * m); };
        CHECK_EQ(got, oracle_balance_march(extent, threads, march), "balanced march");
        CHECK_EQ(got * threads * blocks(got) >= extent, 1, "covers the extent");
        CHECK_EQ(got * threads * (blocks(got) - 1) < extent, 1, "no idle block");
      }
    }
  }
}

// bbmm_cu_wave_march, by brute force over every march 1..march: blocks counted
// independently (as test_fill_march), the cost ceil(blocks / resident) * (m + 1), the
// cheapest with ties to the larger march; 1-D launches and resident <= 0 keep the march.
static void test_wave_march(void) {
  const int shape[3] = {16, 4, 2};
  const int64_t extents[][3] = {{384, 384, 48}, {384, 384, 192}, {384, 48, 1}, {8192, 1024, 1},
                                {17, 3, 5},     {1000, 1, 1},   {64, 64, 64}, {40, 40, 1}};
  for (int dims = 1; dims <= 3; ++dims) {
    for (const auto& e : extents) {
      for (int64_t march : {1, 7, 24, 32}) {
        for (int64_t resident : {-1, 0, 1, 100, 528, 1056, 100000}) {
          const int64_t lo[3] = {3, -2, 0};
          const int64_t hi[3] = {3 + e[0], -2 + e[1], e[2]};
          const int64_t got = bbmm_cu_wave_march(dims, lo, hi, shape, march, 0, resident);
          CHECK_EQ(got, oracle_wave_march(dims, e, march, resident), "wave march");
        }
      }
    }
  }
}

// bbmm_cu_pick_march, composed independently: the fill rule's halving (as
// test_fill_march) with fill_blocks, then the cheapest march in weighted waves no larger
// than that (as test_wave_march) when resident > 0, else the least march with as many
// outer blocks (as test_balance_march); never larger than the filled march.
static void test_pick_march(void) {
  const int shape[3] = {16, 4, 2};
  const int64_t extents[][3] = {{384, 384, 48}, {384, 384, 192}, {8192, 1024, 1}, {8192, 4096, 1},
                                {17, 3, 5},     {1000, 1, 1},   {64, 64, 64}};
  for (int dims = 1; dims <= 3; ++dims) {
    const int64_t threads = dims == 2 ? 8 : 2;
    for (const auto& e : extents) {
      for (int64_t march : {1, 7, 32}) {
        for (int64_t fill : {0, 1056, 100000}) {
          for (int64_t resident : {0, 528, 1056}) {
            const int64_t lo[3] = {3, -2, 0};
            const int64_t hi[3] = {3 + e[0], -2 + e[1], e[2]};
            const int64_t got =
                bbmm_cu_pick_march(dims, lo, hi, shape, march, 0, fill, resident);
            if (dims == 1) {
              CHECK_EQ(got, march, "1-D does not march");
              continue;
            }
            const int64_t filled = oracle_fill_march(dims, e, march, fill);
            const int64_t want = resident > 0
                                     ? oracle_wave_march(dims, e, filled, resident)
                                     : oracle_balance_march(e[dims - 1], threads, filled);
            CHECK_EQ(got, want, "picked march");
            CHECK_EQ(got <= filled, 1, "no larger than the fill rule's");
          }
        }
      }
    }
  }
}

// Runs "fn" in a child with VAR=VALUE; returns its exit status and stderr.
template <typename F>
static int in_child(const char* var, const char* value, F fn, std::string* err) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 2);
    close(pipefd[0]);
    setenv(var, value, 1);
    fn();
    _exit(0);
  }
  close(pipefd[1]);
  char buf[512];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) err->append(buf, (size_t)n);
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void test_environment(void) {
  struct {
    const char* var;
    const char* value;
    int status;
  } cases[] = {{"BBMM_CUDA_BLOCK", "64,2", 0},     {"BBMM_CUDA_BLOCK", "64", 1},
               {"BBMM_CUDA_BLOCK", "64,64,64", 1}, {"BBMM_CUDA_MARCH", "5", 0},
               {"BBMM_CUDA_MARCH", "0", 1},        {"BBMM_CUDA_MARCH", "many", 1},
               {"BBMM_CUDA_GRID_CAP", "3", 0},     {"BBMM_CUDA_GRID_CAP", "-3", 1},
               {"BBMM_CUDA_FILL", "0", 0},         {"BBMM_CUDA_FILL", "2000", 1}};
  for (const auto& c : cases) {
    std::string err;
    const std::string var = c.var;
    const int status = in_child(c.var, c.value, [&] {
      int s[3];
      bbmm_cu_block_shape(s);
      const int64_t m = bbmm_cu_march();
      const int64_t cap = bbmm_cu_grid_cap();
      const int64_t fill = bbmm_cu_fill();
      // Valid settings apply (exit 2 when they do not).
      if (var == "BBMM_CUDA_BLOCK" && !(s[0] == 64 && s[1] == 2 && s[2] == 1)) _exit(2);
      if (var == "BBMM_CUDA_MARCH" && m != 5) _exit(2);
      if (var == "BBMM_CUDA_GRID_CAP" && cap != 3) _exit(2);
      if (var == "BBMM_CUDA_FILL" && fill != 0) _exit(2);
      // The others keep this file's defaults.
      if (var != "BBMM_CUDA_BLOCK" && !(s[0] == 16 && s[1] == 4 && s[2] == 2)) _exit(3);
      if (var != "BBMM_CUDA_MARCH" && m != 7) _exit(3);
      if (var != "BBMM_CUDA_GRID_CAP" && cap != 0) _exit(3);
      if (var != "BBMM_CUDA_FILL" && fill != 8) _exit(3);
    }, &err);
    CHECK_EQ(status, c.status, (std::string(c.var) + "=" + c.value).c_str());
    if (c.status == 1) {
      CHECK_EQ(err.find(c.var) != std::string::npos, 1, "the message names the variable");
    }
  }
}

// The least and greatest values the counters of coordinate d of a generated single-piece
// kernel take (cuda_codegen.cpp: the march loop of the outermost of 2-3 coordinates with
// its inner loop and end, the grid-stride loop of the others), over every thread of the
// grid, emulated in 64 bits.
static void emulate_counters(int dims, int d, int64_t lo, int64_t hi, int64_t march, int64_t g,
                             int64_t b, int64_t* least, int64_t* most) {
  const bool marched = d >= 1 && d == dims - 1;
  const int64_t u = marched ? march : 1, stride = g * b * u;
  *least = INT64_MAX;
  *most = INT64_MIN;
  auto see = [&](int64_t v) {
    if (v < *least) *least = v;
    if (v > *most) *most = v;
  };
  for (int64_t t = 0; t < g * b; ++t) {
    int64_t v = lo + t * u;
    see(v);
    while (v < hi) {
      if (marched) {
        const int64_t e = hi < v + march ? hi : v + march;
        see(e);
        for (int64_t x = v; x < e; ++x) see(x + 1);
      }
      v += stride;
      see(v);
    }
  }
}

// bbmm_cu_fits32 against the emulated counters: when it allows 32 bits, every value fits;
// ranges near both ends of int32_t and around 0, with and without a grid cap.
static void test_fits32(void) {
  const int shape[3] = {16, 4, 2};
  const int64_t extents[] = {1, 17, 100, 3001};
  const int64_t bases[] = {-5, INT32_MIN, (int64_t)INT32_MIN - 40, (int64_t)INT32_MAX - 3000,
                           (int64_t)INT32_MAX - 200, (int64_t)INT32_MAX - 20};
  int allowed = 0, refused = 0;
  for (int dims = 1; dims <= 3; ++dims) {
    for (int64_t march : {1, 3, 32}) {
      for (int64_t cap : {0, 1, 3}) {
        for (int64_t e : extents) {
          for (int64_t base : bases) {
            for (int at = 0; at < dims; ++at) {  // the coordinate placed at "base"
              int64_t lo[3] = {0, 0, 0}, hi[3] = {5, 6, 7};
              lo[at] = base;
              hi[at] = base + e;
              dim3 grid, block;
              if (!bbmm_cu_shape_of(dims, lo, hi, shape, march, cap, &grid, &block)) continue;
              const int64_t g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
              bool fits = true;
              for (int d = 0; d < dims; ++d) {
                int64_t least, most;
                emulate_counters(dims, d, lo[d], hi[d], march, g[d], b[d], &least, &most);
                if (least < INT32_MIN || most > INT32_MAX) fits = false;
              }
              const bool says = bbmm_cu_fits32(dims, lo, hi, march, grid, block);
              ++checks;
              if (says && !fits) {
                fprintf(stderr, "bbmm_cu_fits32: allows 32 bits but a counter overflows (dims %d, "
                        "march %lld, cap %lld, coordinate %d in [%lld, %lld))\n", dims,
                        (long long)march, (long long)cap, at, (long long)lo[at], (long long)hi[at]);
                ++failures;
              }
              (says ? allowed : refused)++;
            }
          }
        }
      }
    }
  }
  // Both answers occur: ranges around 0 are allowed, those ending at INT32_MAX refused.
  CHECK_EQ(allowed > 0, 1, "bbmm_cu_fits32 allows some launches");
  CHECK_EQ(refused > 0, 1, "bbmm_cu_fits32 refuses some launches");
  // A launch one step past the limit is refused, one at it allowed (1-D, 128 threads).
  const int64_t lo[1] = {0};
  int64_t hi[1] = {(int64_t)INT32_MAX - 128};
  CHECK_EQ(bbmm_cu_fits32(1, lo, hi, 1, dim3(1), dim3(128)), 1, "at the limit");
  hi[0] += 1;
  CHECK_EQ(bbmm_cu_fits32(1, lo, hi, 1, dim3(1), dim3(128)), 0, "past the limit");
}

int main() {
  unsetenv("BBMM_CUDA_BLOCK");
  unsetenv("BBMM_CUDA_MARCH");
  unsetenv("BBMM_CUDA_GRID_CAP");
  unsetenv("BBMM_CUDA_FILL");
  test_floord();
  test_parse();
  test_shape();
  test_fill_march();
  test_balance_march();
  test_wave_march();
  test_pick_march();
  test_fits32();
  test_environment();
  printf("generated_support_cuda_test: %d checks, %d failed\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
