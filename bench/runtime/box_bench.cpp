// Micro-benchmarks of the box algebra on the inputs the runtime sees: the
// requests of stencil tiles, i.e. a tile shifted by +-1 in some dimensions,
// and grids of tiles each grown by a halo of 1 (neighbours overlap by 2).
//
// All inputs are built before the timed loop; each iteration walks a ring of
// kRing precomputed inputs so the compiler cannot fold one fixed input.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <vector>

#include "bbmm/box.h"
#include "bbmm/box_set.h"

namespace bbmm {
namespace {

constexpr int kRing = 64;
constexpr int64_t kTile = 32;

// The tile at grid position `cell` (`rank` coordinates), moved by `shift` and
// grown by `halo` on every side.
Box tile(int rank, const int64_t* cell, const int64_t* shift, int64_t halo) {
  int64_t lo[Box::kMaxRank], hi[Box::kMaxRank];
  for (int d = 0; d < rank; ++d) {
    lo[d] = cell[d] * kTile + shift[d] - halo;
    hi[d] = lo[d] + kTile + 2 * halo;
  }
  return Box::make_unchecked(rank, lo, hi);
}

// The offsets of {-1,0,1}^rank, the centre first, then the face neighbours,
// then the rest: the order in which a stencil's reads usually appear.
std::vector<std::array<int64_t, Box::kMaxRank>> stencil_offsets(int rank) {
  std::vector<std::array<int64_t, Box::kMaxRank>> all;
  int total = 1;
  for (int d = 0; d < rank; ++d) total *= 3;
  for (int i = 0; i < total; ++i) {
    std::array<int64_t, Box::kMaxRank> o{};
    for (int d = 0, v = i; d < rank; ++d, v /= 3) o[d] = v % 3 - 1;
    all.push_back(o);
  }
  auto nonzeros = [rank](const std::array<int64_t, Box::kMaxRank>& o) {
    int n = 0;
    for (int d = 0; d < rank; ++d) n += o[d] != 0;
    return n;
  };
  std::stable_sort(all.begin(), all.end(),
                   [&](const auto& a, const auto& b) { return nonzeros(a) < nonzeros(b); });
  return all;
}

// Ring entry `k`: the same stencil footprint moved to tile k of a row of
// tiles, so that every entry has the same shape but other coordinates.
std::vector<Box> stencil_requests(int rank, int n, int k) {
  std::vector<std::array<int64_t, Box::kMaxRank>> offsets = stencil_offsets(rank);
  std::vector<Box> boxes;
  int64_t cell[Box::kMaxRank] = {k};
  for (int i = 0; i < n; ++i) {
    boxes.push_back(tile(rank, cell, offsets[i % offsets.size()].data(), 0));
  }
  return boxes;
}

// `n` tiles of a grid (row-major over a 4-wide last dimension, so 32 tiles
// of rank 2 are a 8x4 grid), each grown by a halo of 1.
std::vector<Box> halo_tiles(int rank, int n, int k) {
  std::vector<Box> boxes;
  const int64_t zero[Box::kMaxRank] = {};
  for (int i = 0; i < n; ++i) {
    int64_t cell[Box::kMaxRank] = {};
    cell[rank - 1] = i % 4;
    cell[0] += k;
    if (rank >= 2) cell[rank - 2] += i / 4;
    boxes.push_back(tile(rank, cell, zero, 1));
  }
  return boxes;
}

using Generator = std::vector<Box> (*)(int rank, int n, int k);

std::vector<std::vector<Box>> ring_of(Generator gen, int rank, int n) {
  std::vector<std::vector<Box>> ring;
  for (int k = 0; k < kRing; ++k) ring.push_back(gen(rank, n, k));
  return ring;
}

void set_label(benchmark::State& state, const std::vector<Box>& boxes) {
  absl::StatusOr<BoxSet> s = BoxSet::disjoint(boxes);
  BoxSet c = *s;
  c.coalesce();
  state.counters["boxes_in"] = static_cast<double>(boxes.size());
  state.counters["boxes_out"] = static_cast<double>(s->size());
  state.counters["coalesced"] = static_cast<double>(c.size());
}

// Pairs (a tile, the same tile shifted by +1 in every dimension).
std::vector<std::pair<Box, Box>> shifted_pairs(int rank) {
  std::vector<std::pair<Box, Box>> pairs;
  for (int k = 0; k < kRing; ++k) {
    int64_t cell[Box::kMaxRank] = {k};
    int64_t zero[Box::kMaxRank] = {}, one[Box::kMaxRank];
    for (int d = 0; d < rank; ++d) one[d] = 1;
    pairs.emplace_back(tile(rank, cell, zero, 0), tile(rank, cell, one, 0));
  }
  return pairs;
}

void BM_Intersection(benchmark::State& state) {
  const auto pairs = shifted_pairs(static_cast<int>(state.range(0)));
  size_t i = 0;
  for (auto _ : state) {
    const auto& [a, b] = pairs[i++ % kRing];
    benchmark::DoNotOptimize(intersection(a, b));
  }
}
BENCHMARK(BM_Intersection)->ArgName("rank")->Arg(2)->Arg(3);

void BM_Subtract(benchmark::State& state) {
  const auto pairs = shifted_pairs(static_cast<int>(state.range(0)));
  size_t i = 0;
  for (auto _ : state) {
    const auto& [a, b] = pairs[i++ % kRing];
    benchmark::DoNotOptimize(subtract(a, b));
  }
}
BENCHMARK(BM_Subtract)->ArgName("rank")->Arg(2)->Arg(3);

void BM_ConvexUnion(benchmark::State& state) {
  const auto pairs = shifted_pairs(static_cast<int>(state.range(0)));
  size_t i = 0;
  for (auto _ : state) {
    const auto& [a, b] = pairs[i++ % kRing];
    benchmark::DoNotOptimize(convex_union(a, b));
  }
}
BENCHMARK(BM_ConvexUnion)->ArgName("rank")->Arg(2)->Arg(3);

void run_disjoint(benchmark::State& state, Generator gen) {
  const int rank = static_cast<int>(state.range(0));
  const int n = static_cast<int>(state.range(1));
  const auto ring = ring_of(gen, rank, n);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(BoxSet::disjoint(ring[i++ % kRing]));
  }
  set_label(state, ring[0]);
}

void BM_DisjointStencil(benchmark::State& state) { run_disjoint(state, stencil_requests); }
BENCHMARK(BM_DisjointStencil)
    ->ArgNames({"rank", "boxes"})
    ->ArgsProduct({{2, 3}, {2, 8}})
    ->Args({3, 27});

void BM_DisjointHaloTiles(benchmark::State& state) { run_disjoint(state, halo_tiles); }
BENCHMARK(BM_DisjointHaloTiles)->ArgNames({"rank", "boxes"})->ArgsProduct({{2, 3}, {2, 8, 32}});

// Coalesce works in place, so each iteration copies a precomputed disjoint
// set first; BM_BoxSetCopy measures that copy alone.
void run_coalesce(benchmark::State& state, bool coalesce) {
  const int rank = static_cast<int>(state.range(0));
  const int n = static_cast<int>(state.range(1));
  std::vector<BoxSet> ring;
  for (int k = 0; k < kRing; ++k) ring.push_back(*BoxSet::disjoint(halo_tiles(rank, n, k)));
  size_t i = 0;
  for (auto _ : state) {
    BoxSet s = ring[i++ % kRing];
    if (coalesce) s.coalesce();
    benchmark::DoNotOptimize(s);
  }
  set_label(state, halo_tiles(rank, n, 0));
}

void BM_CoalesceHaloTiles(benchmark::State& state) { run_coalesce(state, true); }
BENCHMARK(BM_CoalesceHaloTiles)->ArgNames({"rank", "boxes"})->ArgsProduct({{2, 3}, {2, 8, 32}});

void BM_BoxSetCopy(benchmark::State& state) { run_coalesce(state, false); }
BENCHMARK(BM_BoxSetCopy)->ArgNames({"rank", "boxes"})->ArgsProduct({{2, 3}, {2, 8, 32}});

}  // namespace
}  // namespace bbmm

BENCHMARK_MAIN();
