// Checks that the whole tile path on the CUDA backend allocates (almost)
// nothing on the calling thread in the steady state: begin, require, acquire, view, launch,
// flow_out and release of a two-GPU stencil step (halo flow-outs between the
// GPUs), through the C API as bbmmc's generated code calls it. The backend
// runs over the host-only fake of the CUDA runtime (cuda_fake_runtime.cpp), so
// this runs in CI; the worker threads issue as they would on GPUs.
//
// Why it matters beyond the allocator's own cost: each block the calling
// thread allocates is freed by an issue worker (the command and its event end
// there), and glibc's malloc then takes the calling thread's arena lock from
// the worker: with several GPUs the application thread and the workers
// contend on it, and libbbmm's time per tile grew with the GPU count.
//
// As runtime_alloc_test, the binary replaces the global operator new with a
// counting version (forwarding to malloc, so sanitizers still see every
// block), counting only on the test's thread while it measures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "bbmm/bbmm.h"

#include "counting_new.h"

// The fake CUDA runtime's count of host functions run (cuda_fake_runtime.cpp).
extern "C" uint64_t fake_cuda_host_fn_calls();

namespace {

using bbmm::testing::allocations_in;

constexpr int64_t kN = 1 << 14;  // doubles per array
constexpr int kDevices = 2;
constexpr int kTilesPerDevice = 2;

// The tile's kernel: nothing to compute (the fake has no device code); the
// arguments are the size of what bbmmc passes (a struct and two views' pieces).
struct KernelArgs {
  int64_t lo, hi;
  unsigned char pieces[2 * 96];
};
void kernel(const bbmm_launch_info*, void*) {}

// The environment's options with the CUDA backend on kDevices devices.
bbmm_options cuda_options() {
  bbmm_options o;
  EXPECT_EQ(bbmm_options_init(&o), BBMM_OK) << bbmm_last_error_message();
  o.backend = BBMM_BACKEND_CUDA;
  o.devices = kDevices;
  return o;
}

// What bbmm_stats_print writes for "rt" (empty if it fails).
std::string stats_table(const bbmm_runtime* rt) {
  std::string table;
  std::FILE* f = std::tmpfile();
  if (f == nullptr) return table;
  if (bbmm_stats_print(rt, f) == BBMM_OK) {
    std::rewind(f);
    for (int c; (c = std::fgetc(f)) != EOF;) table.push_back(static_cast<char>(c));
  }
  std::fclose(f);
  return table;
}

class TilePathAllocations : public ::testing::TestWithParam<bool> {};  // peer copy kernel

TEST_P(TilePathAllocations, TwoGpuStencilStepAllocatesNothing) {
  std::vector<double> a(kN, 1.0), b(kN, 0.0);
  bbmm_options o = cuda_options();
  o.cuda_peer_copy_kernel = GetParam() ? 1 : 0;
  bbmm_runtime* rt = nullptr;
  ASSERT_EQ(bbmm_runtime_create(&o, &rt), BBMM_OK) << bbmm_last_error_message();
  const int64_t ext[1] = {kN};
  bbmm_array *arr[2] = {nullptr, nullptr};
  ASSERT_EQ(bbmm_array_register(rt, "A", a.data(), 8, 1, ext, nullptr, 0, &arr[0]), BBMM_OK);
  ASSERT_EQ(bbmm_array_register(rt, "B", b.data(), 8, 1, ext, nullptr, 0, &arr[1]), BBMM_OK);
  constexpr int kTiles = kDevices * kTilesPerDevice;
  constexpr int64_t kChunk = kN / kTiles;
  int step = 0;
  // One Jacobi step: every tile reads `in` over its rows and one halo element
  // each side, writes `out` over its rows, and flows out its edge elements
  // (read by the neighbouring tiles, some on the other GPU).
  auto one_step = [&] {
    bbmm_array* in = arr[step % 2];
    bbmm_array* out = arr[(step + 1) % 2];
    ++step;
    ASSERT_EQ(bbmm_phase_boundary(rt), BBMM_OK);
    for (int t = 0; t < kTiles; ++t) {
      const int64_t lo = t * kChunk, hi = lo + kChunk;
      const int64_t rlo[1] = {lo > 0 ? lo - 1 : 0}, rhi[1] = {hi < kN ? hi + 1 : kN};
      const int64_t wlo[1] = {lo}, whi[1] = {hi};
      bbmm_tile* tile = nullptr;
      ASSERT_EQ(bbmm_tile_begin(rt, t / kTilesPerDevice, &tile), BBMM_OK);
      ASSERT_EQ(bbmm_tile_require(tile, in, rlo, rhi, BBMM_READ), BBMM_OK);
      ASSERT_EQ(bbmm_tile_require(tile, out, wlo, whi, BBMM_WRITE), BBMM_OK);
      ASSERT_EQ(bbmm_tile_acquire(tile), BBMM_OK) << bbmm_last_error_message();
      bbmm_view v;
      ASSERT_EQ(bbmm_tile_view(tile, in, &v), BBMM_OK);
      KernelArgs args{lo, hi, {}};
      ASSERT_EQ(bbmm_tile_launch(tile, kernel, &args, sizeof args), BBMM_OK)
          << bbmm_last_error_message();
      const int64_t l0[1] = {lo}, l1[1] = {lo + 1}, h0[1] = {hi - 1}, h1[1] = {hi};
      if (lo > 0) {
        ASSERT_EQ(bbmm_tile_flow_out(tile, out, l0, l1), BBMM_OK);
      }
      if (hi < kN) {
        ASSERT_EQ(bbmm_tile_flow_out(tile, out, h0, h1), BBMM_OK);
      }
      ASSERT_EQ(bbmm_tile_release(tile), BBMM_OK) << bbmm_last_error_message();
    }
  };
  // Places the boxes and warms every pool and list (tile states, events,
  // launch arguments, batch vectors, the workers' queues). The pools hold as
  // many blocks as operations were alive at once, a high-water mark: the
  // calling thread runs ahead of the devices, so the warm-up issues more
  // steps, unsynchronised, than the measured window (which starts with nothing
  // in flight). A window may still pass the mark by a few blocks (the fake's
  // workers sleep at random, and a loaded machine lets the calling thread run
  // further ahead): the pools only grow, so the fewest allocations of three
  // windows is taken. A handful in 400 tiles is a pool growing; one per
  // operation is the path allocating (2,350 in one window, ~6 per tile, before
  // the pools and the inline launch function).
  for (int k = 0; k < 500; ++k) one_step();
  ASSERT_EQ(bbmm_synchronize(rt), BBMM_OK) << bbmm_last_error_message();
  int64_t n = INT64_MAX;
  for (int window = 0; window < 3 && n > 0; ++window) {
    n = std::min(n, allocations_in([&] {
      for (int k = 0; k < 100; ++k) one_step();
    }));
    ASSERT_EQ(bbmm_synchronize(rt), BBMM_OK) << bbmm_last_error_message();
  }
  EXPECT_LE(n, 8) << "heap allocations on the calling thread in 100 two-GPU steps ("
                  << 100 * kTiles << " tiles), the fewest of 3 windows";
  bbmm_stats s;
  ASSERT_EQ(bbmm_stats_get(rt, -1, &s), BBMM_OK);
  EXPECT_GT(s.bytes_peer, 0u) << "the step must move halos between the GPUs";
  ASSERT_EQ(bbmm_synchronize(rt), BBMM_OK) << bbmm_last_error_message();
  ASSERT_EQ(bbmm_array_unregister(rt, arr[0]), BBMM_OK);
  ASSERT_EQ(bbmm_array_unregister(rt, arr[1]), BBMM_OK);
  ASSERT_EQ(bbmm_runtime_destroy(rt), BBMM_OK) << bbmm_last_error_message();
}

// The statistics say what creating the runtime cost, and the CUDA backend
// breaks it down by phase, every phase once, in order.
TEST(CudaCreation, StatisticsReportCreationByPhase) {
  bbmm_options o = cuda_options();
  bbmm_runtime* rt = nullptr;
  ASSERT_EQ(bbmm_runtime_create(&o, &rt), BBMM_OK) << bbmm_last_error_message();
  bbmm_stats total, dev0;
  ASSERT_EQ(bbmm_stats_get(rt, -1, &total), BBMM_OK);
  ASSERT_EQ(bbmm_stats_get(rt, 0, &dev0), BBMM_OK);
  EXPECT_GT(total.create_seconds, 0.0);
  EXPECT_LT(total.create_seconds, 60.0);
  EXPECT_EQ(dev0.create_seconds, 0.0) << "the runtime's figure, in the total only";
  const std::string table = stats_table(rt);
  const size_t at = table.find("created: ");
  ASSERT_NE(at, std::string::npos) << table;
  size_t prev = at;
  for (const char* phase : {"driver ", "contexts ", "pools and peers ", "events ", "copy kernels ",
                            "streams and workers ", "pool growers ", "threads "}) {
    const size_t p = table.find(phase, at);
    EXPECT_NE(p, std::string::npos) << phase << " in\n" << table;
    EXPECT_GT(p, prev) << phase << " out of order in\n" << table;
    prev = p;
  }
  EXPECT_NE(table.find("create_seconds"), std::string::npos) << table;
  ASSERT_EQ(bbmm_runtime_destroy(rt), BBMM_OK) << bbmm_last_error_message();
}

// bbmm_warm_up initialises the driver and the GPUs' contexts on a thread of its
// own; the runtime created next waits for it and works as without it. A second
// warm-up while one runs, or after, is harmless.
TEST(CudaCreation, WarmUpThenCreate) {
  bbmm_options o = cuda_options();
  ASSERT_EQ(bbmm_warm_up(&o), BBMM_OK) << bbmm_last_error_message();
  ASSERT_EQ(bbmm_warm_up(&o), BBMM_OK) << bbmm_last_error_message();
  bbmm_runtime* rt = nullptr;
  ASSERT_EQ(bbmm_runtime_create(&o, &rt), BBMM_OK) << bbmm_last_error_message();
  EXPECT_EQ(bbmm_device_count(rt), kDevices);
  // The creation says how long it waited for the warm-up, before the backend's phases.
  const std::string table = stats_table(rt);
  const size_t waited = table.find("created: waiting for bbmm_warm_up ");
  EXPECT_NE(waited, std::string::npos) << table;
  EXPECT_GT(table.find(", driver "), waited) << table;
  std::vector<double> a(1024, 1.0);
  const int64_t ext[1] = {1024};
  bbmm_array* arr = nullptr;
  ASSERT_EQ(bbmm_array_register(rt, "A", a.data(), 8, 1, ext, nullptr, 0, &arr), BBMM_OK);
  ASSERT_EQ(bbmm_array_unregister(rt, arr), BBMM_OK);
  ASSERT_EQ(bbmm_runtime_destroy(rt), BBMM_OK) << bbmm_last_error_message();
  ASSERT_EQ(bbmm_warm_up(&o), BBMM_OK) << "a warm-up after a runtime";
  ASSERT_EQ(bbmm_runtime_create(&o, &rt), BBMM_OK) << bbmm_last_error_message();
  ASSERT_EQ(bbmm_runtime_destroy(rt), BBMM_OK) << bbmm_last_error_message();
}

// BBMM_CUDA_STAGING_BUFFER sizes the staging buffers (a tuning knob read where the
// backend is made); a size out of bounds is an error naming the variable.
TEST(CudaCreation, StagingBufferSizeFromTheEnvironment) {
  bbmm_options o = cuda_options();
  bbmm_runtime* rt = nullptr;
  setenv("BBMM_CUDA_STAGING_BUFFER", "4MiB", 1);
  ASSERT_EQ(bbmm_runtime_create(&o, &rt), BBMM_OK) << bbmm_last_error_message();
  // A staged read-in of 6 MiB (two rounds of the 4 MiB buffers) and its write-back.
  std::vector<double> a(size_t{6} << 17, 2.5);
  const int64_t ext[1] = {static_cast<int64_t>(a.size())};
  bbmm_array* arr = nullptr;
  ASSERT_EQ(bbmm_array_register(rt, "A", a.data(), 8, 1, ext, nullptr, 0, &arr), BBMM_OK);
  bbmm_tile* tile = nullptr;
  const int64_t lo[1] = {0};
  ASSERT_EQ(bbmm_tile_begin(rt, 0, &tile), BBMM_OK);
  ASSERT_EQ(bbmm_tile_require(tile, arr, lo, ext, BBMM_READ_WRITE), BBMM_OK);
  const uint64_t host_fns = fake_cuda_host_fn_calls();
  ASSERT_EQ(bbmm_tile_acquire(tile), BBMM_OK) << bbmm_last_error_message();
  KernelArgs args{};
  ASSERT_EQ(bbmm_tile_launch(tile, kernel, &args, sizeof args), BBMM_OK);
  ASSERT_EQ(bbmm_tile_release(tile), BBMM_OK);
  // The device holds the only valid copy once the read-in is done: the host's is
  // overwritten by the write-back.
  ASSERT_EQ(bbmm_synchronize(rt), BBMM_OK) << bbmm_last_error_message();
  // One packing host function per round: 2 with 4 MiB buffers (1 with the default 16).
  EXPECT_EQ(fake_cuda_host_fn_calls() - host_fns, 2u) << "the read-in's staging rounds";
  std::fill(a.begin(), a.end(), 0.0);
  ASSERT_EQ(bbmm_sync_to_host(rt, arr), BBMM_OK) << bbmm_last_error_message();
  EXPECT_EQ(std::count(a.begin(), a.end(), 2.5), static_cast<long>(a.size()));
  ASSERT_EQ(bbmm_array_unregister(rt, arr), BBMM_OK);
  ASSERT_EQ(bbmm_runtime_destroy(rt), BBMM_OK) << bbmm_last_error_message();
  for (const char* bad : {"1KiB", "2GiB", "1000000", "lots"}) {
    setenv("BBMM_CUDA_STAGING_BUFFER", bad, 1);
    rt = nullptr;
    EXPECT_EQ(bbmm_runtime_create(&o, &rt), BBMM_ERROR_INVALID_ARGUMENT) << bad;
    EXPECT_EQ(rt, nullptr);
    EXPECT_NE(std::string(bbmm_last_error_message())
                  .find(std::string("BBMM_CUDA_STAGING_BUFFER='") + bad + "'"),
              std::string::npos)
        << bbmm_last_error_message();
  }
  unsetenv("BBMM_CUDA_STAGING_BUFFER");
}

INSTANTIATE_TEST_SUITE_P(PeerCopy, TilePathAllocations, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "kernel" : "engine";
                         });

}  // namespace
