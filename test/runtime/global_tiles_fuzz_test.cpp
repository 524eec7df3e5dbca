// Random tile programs run with global tiles (runtime_ranks.cpp) over 2 and 3
// loopback ranks of 1-2 devices each, against the same program executed
// sequentially on dense arrays: each tile reads random boxes of two arrays and
// writes a random box with values computed from what it read, on a random
// device of any rank; at the end rank 0's arrays must equal the sequential
// ones exactly. Seeds: BBMM_GLOBAL_FUZZ_TRACES (default 150), printed on failure.
// Host devices here; compiled with cuda_ranks_setup.cpp, the ranks' devices are
// CUDA devices and the transports read their memory as a CUDA-aware MPI does
// (cuda_global_tiles_fuzz_test on GPUs, cuda_global_tiles_fuzz_fake_test over
// the fake CUDA runtime).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bbmm/bbmm.h"
#include "bbmm/view.h"
#include "loopback_ranks.h"

namespace bbmm {
namespace {

constexpr int64_t kRows = 12, kCols = 16, kLen = 40;  // A: 2-D, B: 1-D
constexpr int kMaxBoxes = 2;
constexpr int kMaxPieces = 64;

struct Box2 {
  int array;  // 0: A, 1: B
  int64_t lo[2], hi[2];
};

struct TileSpec {
  int device;
  int id;
  Box2 reads[kMaxBoxes];
  int nreads;
  Box2 write;
  bool read_write;  // the write box is also read (BBMM_READ_WRITE)
};

Box2 random_box(std::mt19937_64& g, int array) {
  Box2 b{array, {0, 0}, {1, 1}};
  const int64_t ext[2] = {array == 0 ? kRows : kLen, array == 0 ? kCols : 1};
  const int rank = array == 0 ? 2 : 1;
  for (int d = 0; d < rank; ++d) {
    const int64_t a = static_cast<int64_t>(g() % ext[d]), c = static_cast<int64_t>(g() % ext[d]);
    b.lo[d] = std::min(a, c);
    b.hi[d] = std::max(a, c) + 1;
  }
  return b;
}

std::vector<TileSpec> random_program(uint64_t seed, int devices) {
  std::mt19937_64 g(seed);
  std::vector<TileSpec> tiles(20 + g() % 20);
  for (size_t k = 0; k < tiles.size(); ++k) {
    TileSpec& t = tiles[k];
    t.device = static_cast<int>(g() % devices);
    t.id = static_cast<int>(k) + 1;
    t.nreads = static_cast<int>(g() % (kMaxBoxes + 1));
    for (int r = 0; r < t.nreads; ++r) t.reads[r] = random_box(g, static_cast<int>(g() % 2));
    t.write = random_box(g, static_cast<int>(g() % 2));
    t.read_write = g() % 3 == 0;
  }
  return tiles;
}


// The value a tile writes at element (i, j) of its write box, from the sum of
// what it read (exact in doubles: small integers).
double written(const TileSpec& t, double sum, double old, int64_t i, int64_t j) {
  return static_cast<double>(t.id * 1000 + i * 17 + j) + std::fmod(sum, 997.0) +
         (t.read_write ? std::fmod(old, 101.0) : 0.0);
}

// Sequential execution on dense arrays.
void run_sequential(const std::vector<TileSpec>& tiles, std::vector<double>* a,
                    std::vector<double>* b) {
  for (const TileSpec& t : tiles) {
    double sum = 0;
    for (int r = 0; r < t.nreads; ++r) {
      const Box2& x = t.reads[r];
      for (int64_t i = x.lo[0]; i < x.hi[0]; ++i) {
        for (int64_t j = x.lo[1]; j < x.hi[1]; ++j) {
          sum += x.array == 0 ? (*a)[i * kCols + j] : (*b)[i];
        }
      }
    }
    const Box2& w = t.write;
    for (int64_t i = w.lo[0]; i < w.hi[0]; ++i) {
      for (int64_t j = w.lo[1]; j < w.hi[1]; ++j) {
        double& v = w.array == 0 ? (*a)[i * kCols + j] : (*b)[i];
        v = written(t, sum, v, i, j);
      }
    }
  }
}

struct Pieces {
  int n, rank;
  bbmm_piece p[kMaxPieces];
};
struct Args {
  TileSpec t;
  Pieces views[2];  // A, B (what the tile required)
};

double* at(const testing::PieceCopy& view, int64_t i, int64_t j) {
  const int64_t idx[2] = {i, j};
  return static_cast<double*>(view.at(idx));
}

void kernel(const bbmm_launch_info* info, void* p) {
  const Args& a = *static_cast<const Args*>(p);
  const TileSpec& t = a.t;
  std::vector<testing::PieceCopy> views;
  for (const Pieces& ps : a.views) {
    const bbmm_view v{ps.rank, ps.n, sizeof(double), ps.p};
    views.emplace_back(v);
  }
  testing::run_host_kernel(*info, views, [&t](const std::vector<testing::PieceCopy>& host) {
    double sum = 0;
    for (int r = 0; r < t.nreads; ++r) {
      const Box2& x = t.reads[r];
      for (int64_t i = x.lo[0]; i < x.hi[0]; ++i) {
        for (int64_t j = x.lo[1]; j < x.hi[1]; ++j) sum += *at(host[x.array], i, j);
      }
    }
    const Box2& w = t.write;
    for (int64_t i = w.lo[0]; i < w.hi[0]; ++i) {
      for (int64_t j = w.lo[1]; j < w.hi[1]; ++j) {
        double* v = at(host[w.array], i, j);
        *v = written(t, sum, *v, i, j);
      }
    }
  });
}

// One rank's run of the program; returns false (with gtest failures) on error.
void run_rank(bbmm_runtime* rt, const std::vector<TileSpec>& tiles, std::vector<double>* a,
              std::vector<double>* b, uint64_t seed) {
  bbmm_array* arr[2] = {nullptr, nullptr};
  const int64_t ea[2] = {kRows, kCols}, eb[1] = {kLen};
  ASSERT_EQ(bbmm_array_register(rt, "A", a->data(), sizeof(double), 2, ea, nullptr, 0, &arr[0]),
            BBMM_OK);
  ASSERT_EQ(bbmm_array_register(rt, "B", b->data(), sizeof(double), 1, eb, nullptr, 0, &arr[1]),
            BBMM_OK);
  for (const TileSpec& t : tiles) {
    bbmm_tile* tile = nullptr;
    ASSERT_EQ(bbmm_tile_begin(rt, t.device, &tile), BBMM_OK) << bbmm_last_error_message();
    bool used[2] = {false, false};
    for (int r = 0; r < t.nreads; ++r) {
      const Box2& x = t.reads[r];
      ASSERT_EQ(bbmm_tile_require(tile, arr[x.array], x.lo, x.hi, BBMM_READ), BBMM_OK)
          << bbmm_last_error_message();
      used[x.array] = true;
    }
    ASSERT_EQ(bbmm_tile_require(tile, arr[t.write.array], t.write.lo, t.write.hi,
                                t.read_write ? BBMM_READ_WRITE : BBMM_WRITE),
              BBMM_OK)
        << bbmm_last_error_message();
    used[t.write.array] = true;
    ASSERT_EQ(bbmm_tile_acquire(tile), BBMM_OK) << "seed " << seed << ": " << bbmm_last_error_message();
    Args args{};
    args.t = t;
    for (int k = 0; k < 2; ++k) {
      if (!used[k]) continue;
      bbmm_view v;
      ASSERT_EQ(bbmm_tile_view(tile, arr[k], &v), BBMM_OK);
      ASSERT_LE(v.npieces, kMaxPieces);
      args.views[k].n = v.npieces;
      args.views[k].rank = v.rank;
      for (int p = 0; p < v.npieces; ++p) args.views[k].p[p] = v.pieces[p];
    }
    ASSERT_EQ(bbmm_tile_launch(tile, kernel, &args, sizeof args), BBMM_OK);
    ASSERT_EQ(bbmm_tile_release(tile), BBMM_OK);
  }
  ASSERT_EQ(bbmm_array_unregister(rt, arr[0]), BBMM_OK) << bbmm_last_error_message();
  ASSERT_EQ(bbmm_array_unregister(rt, arr[1]), BBMM_OK) << bbmm_last_error_message();
}

TEST(GlobalTilesFuzz, RankZeroMatchesTheSequentialProgram) {
  if (!testing::ranks_backend().skip.empty()) GTEST_SKIP() << testing::ranks_backend().skip;
  const char* env = std::getenv("BBMM_GLOBAL_FUZZ_TRACES");
  const int traces = env && *env ? std::atoi(env) : 150;
  // Bytes the ranks sent straight from device memory (Transport::sends_from_device_memory),
  // and in all: with a transport that reads the devices' memory, some must have.
  std::atomic<uint64_t> from_devices{0}, sent{0};
  for (int k = 0; k < traces; ++k) {
    const uint64_t seed = 20261126 + static_cast<uint64_t>(k);
    std::mt19937_64 g(seed ^ 0x9e3779b97f4a7c15ULL);
    const int ranks = 2 + static_cast<int>(g() % 2);
    const int per_rank = 1 + static_cast<int>(g() % 2);
    const bool tight = g() % 2 == 0;
    const std::vector<TileSpec> tiles = random_program(seed, ranks * per_rank);
    std::vector<double> want_a(kRows * kCols), want_b(kLen);
    for (size_t i = 0; i < want_a.size(); ++i) want_a[i] = static_cast<double>(i % 13);
    for (size_t i = 0; i < want_b.size(); ++i) want_b[i] = static_cast<double>(i % 7);
    std::vector<std::vector<double>> a(ranks, want_a), b(ranks, want_b);
    run_sequential(tiles, &want_a, &want_b);
    // Tight: room for the largest tile (3 boxes of A, 1,536 bytes each) and little more.
    testing::on_ranks(testing::same(ranks, per_rank, tight ? 6144 : 0), /*global_tiles=*/true,
                      false, [&](bbmm_runtime* rt, int r) {
                        run_rank(rt, tiles, &a[r], &b[r], seed);
                        bbmm_stats st{};
                        ASSERT_EQ(bbmm_stats_get(rt, -1, &st), BBMM_OK);
                        from_devices += st.bytes_sent_from_devices;
                        sent += st.bytes_sent_ranks;
                      });
    ASSERT_EQ(a[0], want_a) << "seed " << seed << " (" << ranks << " ranks x " << per_rank
                            << " devices" << (tight ? ", box-out" : "") << ")";
    ASSERT_EQ(b[0], want_b) << "seed " << seed;
  }
  std::printf("%d traces: %llu bytes sent between ranks, %llu of them from device memory\n",
              traces, static_cast<unsigned long long>(sent.load()),
              static_cast<unsigned long long>(from_devices.load()));
  EXPECT_GT(sent.load(), 0u);
  const char* sends = std::getenv("BBMM_RANK_SENDS");
  const bool staged = sends != nullptr && std::string(sends) == "staged";
  if (staged || !testing::ranks_backend().transports_read_devices()) {
    EXPECT_EQ(from_devices.load(), 0u) << "every box staged through the host copy";
  } else {
    EXPECT_GT(from_devices.load(), 0u) << "no box sent from the device holding it";
  }
}

}  // namespace
}  // namespace bbmm
