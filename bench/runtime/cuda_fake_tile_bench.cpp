// The calling thread's cost per tile on the CUDA backend, measured over the
// host-only fake of the CUDA runtime (test/runtime/cuda_fake_runtime.cpp), so
// that it runs and profiles (perf) on a machine without a GPU: a 1-D Jacobi
// step of 2 tiles per device through the C API as bbmmc's generated code
// calls it (begin, require READ with halos and WRITE, acquire, view, launch,
// flow_out of the edge elements, release), on 1 and 2 GPUs. The CPU column is
// the calling thread's time (Google Benchmark measures the benchmark thread);
// the fake's stream threads run the copies. On GPUs the same path (jacobi2d_cuda,
// 2 x H200, nineteenth session, bench/gpu/host_calls.py over its traces) costs
// 2.2-4.4 us per tile on one GPU and 3.7-6.5 us on two, the difference being
// the flow_out calls of the tiles at the GPUs' boundary (~3 us each); this
// benchmark is where the per-tile cost is looked at without a GPU.
//
//   build/default/bench/runtime/cuda_fake_tile_bench [--benchmark_filter=Step/2]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <sys/resource.h>

#include <cuda_runtime.h>

#include "bbmm/bbmm.h"

// The fake CUDA runtime's hooks (test/runtime/cuda_fake_runtime.cpp).
extern "C" void fake_cuda_set_host_fn_delay_us(int us);
extern "C" uint64_t fake_cuda_event_queries_on_this_thread();

namespace {

constexpr int64_t kN = 1 << 14;  // doubles per array: the fake's copies stay cheap
constexpr int kTilesPerDevice = 2;

struct KernelArgs {
  int64_t lo, hi;
  bool lag;
  unsigned char pieces[2 * 96];  // the size of what bbmmc passes
};
void noop(void*) {}
// With a lag, the kernel is a host function that sleeps on the tile's stream.
void kernel(const bbmm_launch_info* info, void* args) {
  if (static_cast<const KernelArgs*>(args)->lag) {
    (void)cudaLaunchHostFunc(static_cast<cudaStream_t>(info->queue), noop, nullptr);
  }
}

void check(bbmm_status s, const char* what) {
  if (s != BBMM_OK) {
    std::fprintf(stderr, "cuda_fake_tile_bench: %s: %s\n", what, bbmm_last_error_message());
    std::abort();
  }
}

// One step of the timed loop: tile_instructions.sh counts the instructions
// under this function only, not the warm-up steps (which place the boxes and
// allocate).
// Every benchmark run's timed tiles, printed at exit for tile_instructions.sh.
int64_t g_timed_tiles = 0;
struct PrintTimedTiles {
  ~PrintTimedTiles() {
    std::fprintf(stderr, "cuda_fake_tile_bench: timed tiles %lld\n", static_cast<long long>(g_timed_tiles));
  }
} g_print_timed_tiles;

template <typename F>
[[gnu::noinline]] void timed_step(const F& step, int tiles) {
  step();
  g_timed_tiles += tiles;
}

// The calling thread's user and system CPU seconds and context switches so far.
struct ThreadUsage {
  double user = 0, sys = 0;
  double voluntary = 0, involuntary = 0;
  static ThreadUsage now() {
    rusage u{};
    (void)getrusage(RUSAGE_THREAD, &u);
    return {u.ru_utime.tv_sec + 1e-6 * u.ru_utime.tv_usec, u.ru_stime.tv_sec + 1e-6 * u.ru_stime.tv_usec,
            static_cast<double>(u.ru_nvcsw), static_cast<double>(u.ru_nivcsw)};
  }
  void add(const ThreadUsage& end, const ThreadUsage& start) {
    user += end.user - start.user;
    sys += end.sys - start.sys;
    voluntary += end.voluntary - start.voluntary;
    involuntary += end.involuntary - start.involuntary;
  }
};

void Step(benchmark::State& state) {
  const int devices = static_cast<int>(state.range(0));
  const int lag_us = static_cast<int>(state.range(1));
  fake_cuda_set_host_fn_delay_us(lag_us);
  std::vector<double> a(kN, 1.0), b(kN, 0.0);
  bbmm_options o;
  check(bbmm_options_init(&o), "options");
  o.backend = BBMM_BACKEND_CUDA;
  o.devices = devices;
  bbmm_runtime* rt = nullptr;
  check(bbmm_runtime_create(&o, &rt), "create");
  const int64_t ext[1] = {kN};
  bbmm_array* arr[2] = {nullptr, nullptr};
  check(bbmm_array_register(rt, "A", a.data(), 8, 1, ext, nullptr, 0, &arr[0]), "register");
  check(bbmm_array_register(rt, "B", b.data(), 8, 1, ext, nullptr, 0, &arr[1]), "register");
  const int tiles = devices * kTilesPerDevice;
  const int64_t chunk = kN / tiles;
  int step = 0;
  auto one_step = [&] {
    bbmm_array* in = arr[step % 2];
    bbmm_array* out = arr[(step + 1) % 2];
    ++step;
    check(bbmm_phase_boundary(rt), "phase_boundary");
    for (int t = 0; t < tiles; ++t) {
      const int64_t lo = t * chunk, hi = lo + chunk;
      const int64_t rlo[1] = {lo > 0 ? lo - 1 : 0}, rhi[1] = {hi < kN ? hi + 1 : kN};
      const int64_t wlo[1] = {lo}, whi[1] = {hi};
      bbmm_tile* tile = nullptr;
      check(bbmm_tile_begin(rt, t / kTilesPerDevice, &tile), "begin");
      check(bbmm_tile_require(tile, in, rlo, rhi, BBMM_READ), "require");
      check(bbmm_tile_require(tile, out, wlo, whi, BBMM_WRITE), "require");
      check(bbmm_tile_acquire(tile), "acquire");
      bbmm_view v;
      check(bbmm_tile_view(tile, in, &v), "view");
      KernelArgs args{lo, hi, lag_us > 0, {}};
      check(bbmm_tile_launch(tile, kernel, &args, sizeof args), "launch");
      const int64_t l0[1] = {lo}, l1[1] = {lo + 1}, h0[1] = {hi - 1}, h1[1] = {hi};
      if (lo > 0) check(bbmm_tile_flow_out(tile, out, l0, l1), "flow_out");
      if (hi < kN) check(bbmm_tile_flow_out(tile, out, h0, h1), "flow_out");
      check(bbmm_tile_release(tile), "release");
    }
  };
  for (int k = 0; k < 200; ++k) one_step();  // places the boxes, warms the pools
  check(bbmm_synchronize(rt), "synchronize");
  int64_t steps = 0;
  const uint64_t queries0 = fake_cuda_event_queries_on_this_thread();
  // The calling thread's user and system time and context switches over the
  // timed steps (not the synchronisations between them).
  ThreadUsage usage, start = ThreadUsage::now();
  for (auto _ : state) {
    timed_step(one_step, tiles);
    // Bound how far the calling thread runs ahead of the fake devices.
    if (++steps % 64 == 0) {
      state.PauseTiming();
      usage.add(ThreadUsage::now(), start);
      check(bbmm_synchronize(rt), "synchronize");
      start = ThreadUsage::now();
      state.ResumeTiming();
    }
  }
  usage.add(ThreadUsage::now(), start);
  const uint64_t queries = fake_cuda_event_queries_on_this_thread() - queries0;
  check(bbmm_synchronize(rt), "synchronize");
  fake_cuda_set_host_fn_delay_us(0);
  state.SetItemsProcessed(state.iterations() * tiles);  // items: tiles
  state.counters["tiles/step"] = tiles;
  const double all_tiles = static_cast<double>(state.iterations() * tiles);
  state.counters["queries/tile"] = static_cast<double>(queries) / all_tiles;
  state.counters["user_us/tile"] = 1e6 * usage.user / all_tiles;
  state.counters["sys_us/tile"] = 1e6 * usage.sys / all_tiles;
  state.counters["vcsw/tile"] = usage.voluntary / all_tiles;
  state.counters["ivcsw/tile"] = usage.involuntary / all_tiles;
  check(bbmm_array_unregister(rt, arr[0]), "unregister");
  check(bbmm_array_unregister(rt, arr[1]), "unregister");
  check(bbmm_runtime_destroy(rt), "destroy");
}
BENCHMARK(Step)
    ->ArgsProduct({{1, 2}, {0, 100}})
    ->ArgNames({"gpus", "lag_us"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
