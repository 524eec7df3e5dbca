// GPU benchmarks of libbbmm on the CUDA backend (run by bench/gpu/run_all.sh):
//   copies    box copy throughput (2-D/3-D, rows 64 B..64 KiB, boxes 64 KiB..256 MiB)
//             for H2D, D2H, device-local and peer, as a fraction of the contiguous
//             ceiling measured in the same run: single copies back to back, and
//             batches of 16 boxes through copy_batch;
//   pinning   register_host of 1, 4 and 8 GiB by each method (one call, chunks,
//             chunks from several threads), and H2D bandwidth from the result;
//   enqueue   the calling thread's cost of copy, copy_batch, launch, record and
//             free;
//   flowout   halo exchange by flow_out via peer vs via the host, 2 and 4 GPUs;
//   boxout    a read-write sweep over data 4x the device capacity limit, as a
//             fraction of the PCIe-bound ideal;
//   latency   acquire+release hit and miss latency;
//   halo      a chain of dense copies between GPUs 0 and 1 (8 B .. 1 MiB): µs per hop by
//             the copy engine or the copy kernel, pulled or pushed (peer_push);
//   staged    the host side alone (T threads packing and unpacking through pinned
//             buffers with memcpy or streaming stores; host functions of several
//             streams at once or not), then 1 GiB of pageable memory to 1, 2, 4... GPUs
//             and back: staged through pinned buffers vs registering the array (pin,
//             copy, unpin);
//   pinflags  (only when named, and alone: it needs no CUDA context yet) cudaHostRegister
//             of 1 GiB of touched memory with each flag set, with a context on GPU 0 only,
//             then on every GPU: what registration costs per GPU context.
// Prints markdown tables. Exits 77 when no GPU is present.
//
//   gpu_bench [copies] [pinning] [enqueue] [flowout] [boxout] [latency] [halo] [staged]
//             (default: all)
//   gpu_bench pinflags
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bbmm/runtime.h"
#include "core/backend.h"
#include "core/copy_merge.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_staging.h"

namespace bbmm {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Median over `reps` of the time of `iters` back-to-back runs of `issue`,
// each run returning the event of its operation. The backend may run the
// runs concurrently (several copy streams), so every run's event is waited
// for, not only the last one.
double time_median(int reps, int iters, const std::function<Event()>& issue) {
  issue().wait().IgnoreError();  // warm-up
  std::vector<double> t;
  std::vector<Event> events;
  for (int r = 0; r < reps; ++r) {
    events.clear();
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) events.push_back(issue());
    for (const Event& e : events) e.wait().IgnoreError();
    t.push_back(seconds_since(t0) / iters);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Buffers {
  Backend* b;
  void* host = nullptr;
  DeviceBuffer dev0, dev0b, dev1;
  size_t bytes;
};

Event must(absl::StatusOr<Event> e) {
  if (!e.ok()) {
    std::fprintf(stderr, "gpu_bench: %s\n", std::string(e.status().message()).c_str());
    std::exit(1);
  }
  return *e;
}

// ------------------------------------------------------------------ copies
// `x` with `digits` decimals.
std::string fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

// Targets of the box copies (docs/performance.md): H2D/D2H boxes >= 1 MiB
// with rows >= 1 KiB at >= 0.95 of the contiguous ceiling; peer boxes of
// 16 MiB and more with rows >= 256 B at >= 0.90.
double copy_target(int kind, size_t moved, size_t w) {
  if ((kind == 0 || kind == 1) && moved >= (size_t{1} << 20) && w >= 1024) return 0.95;
  if (kind == 3 && moved >= (size_t{16} << 20) && w >= 256) return 0.90;
  return 0;
}

// `b`: the default backend (copy kernel for strided device boxes, batch call
// for host boxes); `engine`: the copy engine for strided device boxes;
// `one_by_one`: copy_batch without cudaMemcpy3DBatchAsync (ops one by one on
// the batch's stream).
void bench_copies(Backend& b, Backend& engine, Backend& one_by_one, Backend& zero_copy) {
  const bool peer = b.device_count() > 1 && b.can_access_peer(1, 0);
  const size_t kMax = size_t{256} << 20;   // largest box
  const size_t kArray = 4 * kMax;  // its array: rows 2x wider, 3-D planes 2x taller
  constexpr int kBatch = 16;       // boxes per copy_batch call
  void* host = nullptr;
  if (cudaHostAlloc(&host, kArray, cudaHostAllocPortable | cudaHostAllocMapped) != cudaSuccess) {
    std::fprintf(stderr, "gpu_bench: cudaHostAlloc failed\n");
    std::exit(1);
  }
  std::memset(host, 1, kArray);
  DeviceBuffer d0 = *b.allocate(0, kArray), d0b = *b.allocate(0, kArray);
  DeviceBuffer d1 = peer ? *b.allocate(1, kArray) : DeviceBuffer{};
  b.synchronize(0).IgnoreError();  // the buffers' ready events
  if (peer) b.synchronize(1).IgnoreError();
  // Bytes per second of one contiguous copy of `n` bytes from `src` to `dst` (bases).
  auto contiguous = [&](int dst_dev, void* dst, int src_dev, void* src, size_t n, int iters) {
    const Endpoint to{dst_dev, dst, 0, n, n}, from{src_dev, src, 0, n, n};
    return n / time_median(5, iters, [&] { return must(b.copy(to, from, {n, 1, 1}, {})); });
  };
  const double h2d = contiguous(0, d0.base, kHost, host, kMax, 4);
  const double d2h = contiguous(kHost, host, 0, d0.base, kMax, 4);
  const double d2d = contiguous(0, d0b.base, 0, d0.base, kMax, 4);
  const double p2p = peer ? contiguous(1, d1.base, 0, d0.base, kMax, 4) : 0;
  std::printf("\n### Contiguous ceilings (256 MiB, this run)\n\n| direction | GB/s |\n|---|---|\n");
  std::printf("| H2D | %.1f |\n| D2H | %.1f |\n| device-local | %.1f |\n", h2d / 1e9, d2h / 1e9,
              d2d / 1e9);
  if (peer) std::printf("| peer 0->1 | %.1f |\n", p2p / 1e9);

  std::printf("\n### Box copies (2-D: rows of W bytes out of rows of 2W; 3-D: 16 planes, each half "
              "the rows of its array plane)\n\n");
  std::printf("single: copy() per box, back to back (the backend rotates its copy streams); "
              "batch16: copy_batch of %d distinct boxes (the default backend: boxes under 4 MiB by "
              "the zero-copy kernel, larger ones by cudaMemcpy3DBatchAsync); batch16 1by1: the "
              "copy engine, one call per box; batch16 zc: the zero-copy kernel at every size; mix "
              "8+8 (4+12): 8 (4) boxes by the copy engine and the rest by the zero-copy kernel at "
              "the same time (host<->device only); merged: the batch as the runtime's copy "
              "planner issues it (boxes that continue one another on both sides merged into one "
              "copy, core/copy_merge.h; these 16 boxes lie one below the other on both sides, so "
              "one copy; boxes apart stay at batch16). GB/s "
              "and fraction of the contiguous ceiling (256 MiB); contig 16x: one contiguous copy "
              "of the batch's bytes (its fixed cost included, the most a batch of that many bytes "
              "can reach), GB/s, and the best batch as a fraction of it (host<->device only; the "
              "targets stay on the 256 MiB ceiling).\n\n", kBatch);
  std::printf("| direction | dims | row W | box | single GB/s | single | batch16 GB/s | batch16 | "
              "batch16 1by1 | batch16 zc | mix 8+8 | mix 4+12 | merged | contig 16x GB/s | best batch / contig 16x | "
              "target | met by |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  // One contiguous copy of `n` bytes in direction `kind` (0 H2D, 1 D2H), cached by size.
  std::map<std::pair<int, size_t>, double> contig_cache;
  auto contig_bytes = [&](int kind, size_t n) {
    auto [it, fresh] = contig_cache.emplace(std::make_pair(kind, n), 0.0);
    if (fresh) {
      const int iters = n >= (size_t{16} << 20) ? 4 : 12;
      it->second = kind == 0 ? contiguous(0, d0b.base, kHost, host, n, iters)
                             : contiguous(kHost, host, 0, d0b.base, n, iters);
    }
    return it->second;
  };
  const size_t widths[] = {64, 256, 1024, 4096, 16384, 65536};
  const size_t sizes[] = {size_t{64} << 10, size_t{1} << 20, size_t{16} << 20, kMax};
  struct Dir {
    const char* name;
    int kind;  // 0 H2D, 1 D2H, 2 local, 3 peer
    double ceiling;
    Backend* via;  // `b` copies strided device boxes with a kernel, `engine` with the copy engine
  };
  std::vector<Dir> dirs = {{"H2D", 0, h2d, &b},
                           {"D2H", 1, d2h, &b},
                           {"device-local (kernel)", 2, d2d, &b},
                           {"device-local (engine)", 2, d2d, &engine}};
  if (peer) {
    dirs.push_back({"peer (kernel)", 3, p2p, &b});
    dirs.push_back({"peer (engine)", 3, p2p, &engine});
  }
  int checked = 0, met_single = 0, met_batch = 0, met_merged = 0, met_any = 0;
  for (int dims = 2; dims <= 3; ++dims) {
    for (const Dir& dir : dirs) {
      for (size_t w : widths) {
        for (size_t s : sizes) {
          if (s < w * 16) continue;
          const size_t depth = dims == 3 ? 16 : 1;
          const size_t rows = s / w / depth;
          if (rows == 0) continue;
          // The array side has rows of 2W (the box is half its array's
          // width); the instance side is dense, as BBMM allocates it.
          // 3-D: the box also covers half the rows of each plane, so its
          // planes are not evenly spaced rows (a true 3-D copy).
          const size_t plane = dims == 3 ? 2 * w * 2 * rows : 2 * w * rows;
          const size_t moved = w * rows * depth;
          const size_t wide_span = plane * depth;  // <= 4 * moved
          // Box k of a batch: its own part of each array, so that no two
          // boxes of a batch write the same bytes.
          auto op = [&](int k) {
            const Endpoint host_wide{kHost, host, k * wide_span, 2 * w, plane};
            const Endpoint dev_wide{0, d0.base, k * wide_span, 2 * w, plane};
            const Endpoint dev_dense{0, d0b.base, k * moved, w, w * rows};
            const Endpoint peer_dense{1, d1.base, k * moved, w, w * rows};
            switch (dir.kind) {
              case 0: return CopyOp{dev_dense, host_wide, {w, rows, depth}};
              case 1: return CopyOp{host_wide, dev_dense, {w, rows, depth}};
              case 2: return CopyOp{dev_dense, dev_wide, {w, rows, depth}};
              default: return CopyOp{peer_dense, dev_wide, {w, rows, depth}};
            }
          };
          const int iters = moved >= (size_t{16} << 20) ? 3 : 20;
          const CopyOp one = op(0);
          const double single = moved / time_median(5, iters, [&] {
            return must(dir.via->copy(one.dst, one.src, one.shape, {}));
          });
          double batch = 0, batch_1by1 = 0, batch_zc = 0, batch_mix8 = 0, batch_mix4 = 0,
                 batch_merged = 0;
          const bool batchable = wide_span * kBatch <= kArray && moved * kBatch <= kArray;
          if (batchable) {
            std::vector<CopyOp> ops;
            for (int k = 0; k < kBatch; ++k) ops.push_back(op(k));
            const int biters = moved >= (size_t{16} << 20) ? 2 : 8;
            batch = moved * kBatch / time_median(5, biters, [&] {
              return must(dir.via->copy_batch(ops, {}));
            });
            std::vector<CopyOp> merged = ops;
            merge_adjacent_copies(&merged);
            batch_merged = moved * kBatch / time_median(5, biters, [&] {
              return merged.size() == 1
                         ? must(dir.via->copy(merged[0].dst, merged[0].src, merged[0].shape, {}))
                         : must(dir.via->copy_batch(merged, {}));
            });
            if (dir.kind <= 1) {
              batch_1by1 = moved * kBatch / time_median(5, biters, [&] {
                return must(one_by_one.copy_batch(ops, {}));
              });
              batch_zc = moved * kBatch / time_median(5, biters, [&] {
                return must(zero_copy.copy_batch(ops, {}));
              });
              // The first `k` boxes by the copy engine (one call each), the
              // rest by the zero-copy kernel, at the same time (two backends:
              // their own streams): does the link fill when the engine's
              // per-box gaps are covered by the kernel's reads?
              auto mix = [&](int k) {
                const std::span<const CopyOp> all(ops);
                std::vector<Event> both;
                return moved * kBatch / time_median(5, biters, [&] {
                  Event a = must(one_by_one.copy_batch(all.subspan(0, k), {}));
                  Event z = must(zero_copy.copy_batch(all.subspan(k), {}));
                  // time_median waits for the event it is given: the later one.
                  a.wait().IgnoreError();
                  return z;
                });
              };
              batch_mix8 = mix(kBatch / 2);
              batch_mix4 = mix(kBatch / 4);
            }
          }
          const double target = copy_target(dir.kind, moved, w);
          const bool ok_single = single / dir.ceiling >= target;
          const bool ok_batch =
              batchable && std::max(batch, batch_zc) / dir.ceiling >= target;
          const bool ok_merged = batchable && batch_merged / dir.ceiling >= target;
          std::string met = "";
          if (target > 0) {
            ++checked;
            met_single += ok_single;
            met_batch += ok_batch;
            met_merged += ok_merged;
            met_any += ok_single || ok_batch;
            met = ok_single && ok_batch ? "both" : ok_single ? "single" : ok_batch ? "batch16" : "NO";
            if (ok_merged && !ok_batch) met += " (merged: yes)";
          }
          auto frac = [&](double bw) { return bw > 0 ? fixed(bw / dir.ceiling, 2) : std::string("-"); };
          const double contig =
              batchable && dir.kind <= 1 ? contig_bytes(dir.kind, moved * kBatch) : 0;
          const double best = std::max({batch, batch_1by1, batch_zc, batch_mix8, batch_mix4});
          std::printf("| %s | %d-D | %zu B | %zu KiB | %.1f | %s | %s | %s | %s | %s | %s | %s | %s | "
                      "%s | %s | %s | %s |\n",
                      dir.name, dims, w, moved >> 10, single / 1e9, frac(single).c_str(),
                      batch > 0 ? fixed(batch / 1e9, 1).c_str() : "-",
                      frac(batch).c_str(), frac(batch_1by1).c_str(), frac(batch_zc).c_str(),
                      frac(batch_mix8).c_str(), frac(batch_mix4).c_str(),
                      frac(batch_merged).c_str(), contig > 0 ? fixed(contig / 1e9, 1).c_str() : "-",
                      contig > 0 ? fixed(best / contig, 2).c_str() : "-",
                      target > 0 ? (target == 0.95 ? ">= 0.95" : ">= 0.90") : "-", met.c_str());
        }
      }
    }
  }
  std::printf("\ncopies: of %d targeted shapes, %d met by single copies, %d by batches of %d, "
              "%d by either; %d by the batches merged as the runtime issues them\n", checked,
              met_single, met_batch, kBatch, met_any, met_merged);
  b.free(0, d0, {}).IgnoreError();
  b.free(0, d0b, {}).IgnoreError();
  if (peer) b.free(1, d1, {}).IgnoreError();
  for (int d = 0; d < b.device_count(); ++d) b.synchronize(d).IgnoreError();
  engine.synchronize(0).IgnoreError();
  one_by_one.synchronize(0).IgnoreError();
  cudaFreeHost(host);
}

// ------------------------------------------------------------------ pinning
// register_host of malloc'ed, touched memory by each method, then the
// bandwidth of one host-to-device copy of the whole array (which crosses
// every chunk boundary) and the time to unregister.
void bench_pinning() {
  struct Method {
    const char* name;
    HostPinMethod method;
    size_t chunk;
    int threads;
  };
  const Method methods[] = {
      {"one call", HostPinMethod::kWhole, 0, 1},
      {"256 MiB chunks", HostPinMethod::kChunked, size_t{256} << 20, 1},
      {"256 MiB chunks, 4 threads", HostPinMethod::kParallel, size_t{256} << 20, 4},
      {"256 MiB chunks, 8 threads", HostPinMethod::kParallel, size_t{256} << 20, 8},
      {"1 GiB chunks, 8 threads", HostPinMethod::kParallel, size_t{1} << 30, 8},
  };
  std::printf("\n### Pinning (register_host) of malloc'ed, touched memory\n\n");
  std::printf("| size | method | pin s | pin GB/s | H2D of the whole array GB/s | unpin s |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (size_t gib : {1, 4, 8}) {
    const size_t bytes = gib << 30;
    char* host = static_cast<char*>(std::malloc(bytes));
    if (host == nullptr) {
      std::printf("| %zu GiB | - | malloc failed | | | |\n", gib);
      continue;
    }
    std::memset(host, 1, bytes);
    for (const Method& m : methods) {
      CudaBackendOptions o;
      o.devices = 1;
      o.host_copies = BBMM_HOST_COPIES_PINNED;
      o.pin_method = m.method;
      if (m.chunk > 0) o.pin_chunk_bytes = m.chunk;
      o.pin_threads = m.threads;
      auto backend = make_cuda_backend(o);
      if (!backend.ok()) {
        std::printf("| %zu GiB | %s | %s | | | |\n", gib, m.name,
                    std::string(backend.status().message()).c_str());
        continue;
      }
      Backend& b = **backend;
      absl::StatusOr<DeviceBuffer> d = b.allocate(0, bytes);
      if (!d.ok()) {
        std::printf("| %zu GiB | %s | no device buffer | | | |\n", gib, m.name);
        continue;
      }
      b.synchronize(0).IgnoreError();
      auto t0 = Clock::now();
      b.register_host(host, bytes).IgnoreError();
      const double pin = seconds_since(t0);
      cudaPointerAttributes attr = {};
      const bool pinned = cudaPointerGetAttributes(&attr, host + bytes / 2) == cudaSuccess &&
                          attr.type == cudaMemoryTypeHost;
      // The copy crosses every chunk boundary (the backend splits it there:
      // CUDA rejects a copy spanning two registrations). Best of 3.
      const Event ready[] = {d->ready};
      double best = 1e30;
      std::string error;
      for (int r = 0; r < 3 && error.empty(); ++r) {
        t0 = Clock::now();
        absl::Status s = must(b.copy({0, d->base, 0, bytes, bytes}, {kHost, host, 0, bytes, bytes},
                                     {bytes, 1, 1}, ready)).wait();
        if (!s.ok()) error = std::string(s.message());
        best = std::min(best, seconds_since(t0));
      }
      const double bw = bytes / best;
      t0 = Clock::now();
      b.unregister_host(host).IgnoreError();
      const double unpin = seconds_since(t0);
      std::printf("| %zu GiB | %s | %.3f | %.1f | %s%s | %.3f |\n", gib, m.name, pin,
                  bytes / pin / 1e9,
                  error.empty() ? fixed(bw / 1e9, 1).c_str() : ("FAILED: " + error).c_str(),
                  pinned ? "" : " (NOT pinned)", unpin);
      b.free(0, *d, {}).IgnoreError();
      b.synchronize(0).IgnoreError();
    }
    std::free(host);
  }
  std::printf("\nregister_host's default (HostPinMethod::kAuto): one call below 256 GiB (a copy "
              "crossing chunks is split by the backend, so chunking pays only if pinning gains "
              "more), else 64 GiB chunks from pin_threads threads.\n");
}

// ------------------------------------------------------------------ pinflags
// cudaHostRegister / cudaHostUnregister of 1 GiB of malloc'ed, touched memory with each
// flag set, first with a CUDA context on GPU 0 only, then with one on each of the
// `visible` GPUs (the runtime's pinner uses Portable | Mapped). Best of 2.
void bench_pin_flags(int visible) {
  struct Flags {
    const char* name;
    unsigned flags;
  };
  const Flags sets[] = {
      {"Portable | Mapped", cudaHostRegisterPortable | cudaHostRegisterMapped},
      {"Portable", cudaHostRegisterPortable},
      {"Mapped", cudaHostRegisterMapped},
      {"Default", cudaHostRegisterDefault},
  };
  const size_t bytes = size_t{1} << 30;
  char* host = static_cast<char*>(std::malloc(bytes));
  if (host == nullptr) return;
  std::memset(host, 1, bytes);
  std::printf("\n### cudaHostRegister of 1 GiB by flags and GPU contexts (best of 2)\n\n");
  std::printf("| contexts | flags | pin s | pin GB/s | unpin s |\n|---|---|---|---|---|\n");
  for (int contexts : {1, visible}) {
    for (int d = 0; d < contexts; ++d) {
      cudaSetDevice(d);
      cudaFree(nullptr);  // creates the device's primary context
    }
    cudaSetDevice(0);
    for (const Flags& f : sets) {
      double pin = 1e30, unpin = 1e30;
      for (int r = 0; r < 2; ++r) {
        auto t0 = Clock::now();
        cudaError_t e = cudaHostRegister(host, bytes, f.flags);
        pin = std::min(pin, seconds_since(t0));
        if (e != cudaSuccess) {
          std::printf("| %d | %s | failed: %s | | |\n", contexts, f.name, cudaGetErrorString(e));
          pin = -1;
          break;
        }
        t0 = Clock::now();
        cudaHostUnregister(host);
        unpin = std::min(unpin, seconds_since(t0));
      }
      if (pin >= 0)
        std::printf("| %d | %s | %.3f | %.1f | %.3f |\n", contexts, f.name, pin, bytes / pin / 1e9, unpin);
    }
    if (contexts == visible) break;
  }
  std::free(host);
}

// ------------------------------------------------------------------ enqueue
// The cost of each enqueueing call on the calling thread: the time from call
// to return, median and 90th percentile over many calls.
void bench_enqueue(Backend& b) {
  constexpr int kCalls = 20000;
  void* host = nullptr;
  cudaHostAlloc(&host, 1 << 20, cudaHostAllocPortable);
  DeviceBuffer buf = *b.allocate(0, 1 << 20);
  std::vector<DeviceBuffer> frees;
  for (int i = 0; i < kCalls; ++i) frees.push_back(*b.allocate(0, 256));
  b.synchronize(0).IgnoreError();
  std::vector<double> t(kCalls);
  std::printf("\n### Enqueue cost on the calling thread (%d calls each)\n\n", kCalls);
  std::printf("| call | median us | p90 us | p99 us |\n|---|---|---|---|\n");
  auto measure = [&](const char* what, const std::function<void(int)>& call) {
    for (int i = 0; i < kCalls; ++i) {
      const auto t0 = Clock::now();
      call(i);
      t[i] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    }
    b.synchronize(0).IgnoreError();
    std::sort(t.begin(), t.end());
    std::printf("| %s | %.3f | %.3f | %.3f |\n", what, t[kCalls / 2], t[kCalls * 9 / 10],
                t[kCalls * 99 / 100]);
  };
  const Event ready[] = {buf.ready};
  measure("copy, 4 KiB H2D, 1 wait", [&](int) {
    must(b.copy({0, buf.base, 0, 4096, 4096}, {kHost, host, 0, 4096, 4096}, {4096, 1, 1}, ready));
  });
  std::vector<CopyOp> ops;
  for (int k = 0; k < 16; ++k) {
    ops.push_back({{0, buf.base, k * size_t{4096}, 4096, 4096},
                   {kHost, host, k * size_t{4096}, 4096, 4096},
                   {4096, 1, 1}});
  }
  measure("copy_batch, 16 x 4 KiB H2D, 1 wait", [&](int) { must(b.copy_batch(ops, ready)); });
  measure("launch, empty function, 1 wait",
          [&](int) { must(b.launch(0, [](const LaunchContext&) {}, ready)); });
  measure("record", [&](int) { must(b.record(0)); });
  measure("free, 1 wait", [&](int i) {
    const Event after[] = {frees[i].ready};
    b.free(0, frees[i], after).IgnoreError();
  });
  std::vector<double> alloc(2000);
  for (size_t i = 0; i < alloc.size(); ++i) {
    const auto t0 = Clock::now();
    DeviceBuffer x = *b.allocate(0, 4096);
    alloc[i] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    b.free(0, x, {}).IgnoreError();
  }
  std::sort(alloc.begin(), alloc.end());
  std::printf("| allocate, 4 KiB (synchronous, for comparison) | %.3f | %.3f | %.3f |\n",
              alloc[alloc.size() / 2], alloc[alloc.size() * 9 / 10], alloc[alloc.size() * 99 / 100]);
  b.free(0, buf, {}).IgnoreError();
  b.synchronize(0).IgnoreError();
  cudaFreeHost(host);
}

// ------------------------------------------------------------------ flow-out
// Each GPU owns a block of rows of a 2-D array and, each step, writes it and
// flows out its first and last row to its neighbours. Time per step.
double halo_step_seconds(int gpus, bool peer, int64_t rows, int64_t cols, int steps) {
  CudaBackendOptions o;
  o.devices = gpus;
  o.peer_access = peer;
  auto backend = make_cuda_backend(o);
  if (!backend.ok()) return -1;
  RuntimeOptions ro;
  ro.devices = gpus;
  auto rt = Runtime::create_with_backend(*std::move(backend), ro);
  if (!rt.ok()) return -1;
  std::vector<double> host(static_cast<size_t>(rows) * cols, 1.0);
  const int64_t ext[2] = {rows, cols};
  Array* a = *(*rt)->register_array("X", host.data(), sizeof(double), ext);
  auto step = [&] {
    for (int g = 0; g < gpus; ++g) {
      const int64_t lo = rows * g / gpus, hi = rows * (g + 1) / gpus;
      auto t = *(*rt)->begin_tile(g);
      // Own rows plus one halo row each side.
      t.require(a, *Box::create({std::max<int64_t>(0, lo - 1), 0}, {std::min(rows, hi + 1), cols}),
                 Access::kRead).IgnoreError();
      t.require(a, *Box::create({lo, 0}, {hi, cols}), Access::kWrite).IgnoreError();
      if (!t.acquire().ok()) std::exit(3);
      t.launch([](const bbmm_launch_info&) {}).IgnoreError();
      if (lo > 0) t.flow_out(a, *Box::create({lo, 0}, {lo + 1, cols})).IgnoreError();
      if (hi < rows) t.flow_out(a, *Box::create({hi - 1, 0}, {hi, cols})).IgnoreError();
      t.release().IgnoreError();
    }
    (*rt)->synchronize().IgnoreError();
  };
  step();
  step();
  const auto t0 = Clock::now();
  for (int s = 0; s < steps; ++s) step();
  return seconds_since(t0) / steps;
}

void bench_flowout(int visible) {
  std::printf("\n### Halo exchange by flow_out: peer vs via host (rows of 8 MiB)\n\n");
  std::printf("| GPUs | halo bytes/step | peer ms/step | host ms/step | speed-up |\n|---|---|---|---|---|\n");
  const int64_t cols = (8 << 20) / 8, rows = 64;
  for (int g : {2, 4}) {
    if (g > visible) {
      std::printf("| %d | - | - | - | skipped: %d GPUs visible |\n", g, visible);
      continue;
    }
    const double tp = halo_step_seconds(g, true, rows, cols, 20);
    const double th = halo_step_seconds(g, false, rows, cols, 20);
    const double halo = 2.0 * (g - 1) * cols * 8;
    std::printf("| %d | %.0f MiB | %.3f | %.3f | %.1fx |\n", g, halo / (1 << 20), tp * 1e3,
                th * 1e3, th / tp);
  }
}

// ------------------------------------------------------------------ halo hops
// A chain of dense copies between GPUs 0 and 1, each waiting for the previous one
// (0 -> 1 -> 0 -> ...): the time per hop is what a halo adds to the path from one GPU's
// kernel to its neighbour's next kernel. By the copy engine or the copy kernel
// (peer_copy_kernel: dense boxes up to 256 KiB), issued by the destination's worker
// (pulled, peer_push off) or the source's (pushed, the default).
void bench_halo(int visible) {
  std::printf("\n### Halo hops: dense copies between GPUs 0 and 1, each after the previous one "
              "(µs per hop, median of 5 chains of 100)\n\n");
  if (visible < 2) {
    std::printf("skipped: %d GPU visible\n", visible);
    return;
  }
  struct Config {
    const char* name;
    bool kernel, push;
  };
  const Config configs[] = {{"engine, pulled", false, false}, {"engine, pushed", false, true},
                            {"kernel, pulled", true, false}, {"kernel, pushed", true, true}};
  const size_t sizes[] = {8, 4096, 65536, 262144, size_t{1} << 20};
  constexpr int kHops = 100;
  double us[4][5] = {};
  for (int c = 0; c < 4; ++c) {
    CudaBackendOptions o;
    o.devices = 2;
    o.peer_copy_kernel = configs[c].kernel;
    o.peer_push = configs[c].push;
    auto b = make_cuda_backend(o);
    if (!b.ok() || !(*b)->can_access_peer(1, 0)) {
      std::printf("skipped: no peer access between GPUs 0 and 1\n");
      return;
    }
    const size_t n = size_t{1} << 20;
    DeviceBuffer buf[2] = {*(*b)->allocate(0, n), *(*b)->allocate(1, n)};
    (*b)->synchronize(0).IgnoreError();
    (*b)->synchronize(1).IgnoreError();
    for (int k = 0; k < 5; ++k) {
      const size_t bytes = sizes[k];
      std::vector<double> t;
      for (int rep = 0; rep < 6; ++rep) {  // the first is a warm-up
        Event last;
        const auto t0 = Clock::now();
        for (int h = 0; h < kHops; ++h) {
          const int from = h % 2, to = 1 - from;
          const Endpoint dst{to, buf[to].base, 0, bytes, bytes};
          const Endpoint src{from, buf[from].base, 0, bytes, bytes};
          const Event w[] = {last};
          last = must((*b)->copy(dst, src, {bytes, 1, 1}, h ? std::span<const Event>(w)
                                                               : std::span<const Event>()));
        }
        last.wait().IgnoreError();
        if (rep > 0) t.push_back(seconds_since(t0) / kHops);
      }
      std::sort(t.begin(), t.end());
      us[c][k] = t[t.size() / 2] * 1e6;
    }
    (*b)->free(0, buf[0], {}).IgnoreError();
    (*b)->free(1, buf[1], {}).IgnoreError();
    (*b)->synchronize(0).IgnoreError();
    (*b)->synchronize(1).IgnoreError();
  }
  std::printf("| bytes | engine, pulled | engine, pushed | kernel, pulled | kernel, pushed |\n"
              "|---|---|---|---|---|\n");
  for (int k = 0; k < 5; ++k) {
    std::printf("| %zu | %.1f | %.1f | %.1f | %.1f |\n", sizes[k], us[0][k], us[1][k], us[2][k],
                us[3][k]);
  }
}

// ------------------------------------------------------------------ box-out
void bench_boxout(double h2d, double d2h) {
  const size_t capacity = size_t{1} << 30;      // 1 GiB limit on GPU 0
  const int64_t cols = (4 << 20) / 8;           // rows of 4 MiB
  const int64_t rows = 4 * 256;                 // 4 GiB of data: 4x the limit
  const int64_t tile_rows = 16;                 // 64 MiB tiles
  CudaBackendOptions o;
  o.devices = 1;
  o.capacity_bytes = capacity;
  auto backend = make_cuda_backend(o);
  RuntimeOptions ro;
  ro.devices = 1;
  ro.device_memory = capacity;
  auto rt = Runtime::create_with_backend(*std::move(backend), ro);
  if (!rt.ok()) {
    std::printf("boxout: %s\n", std::string(rt.status().message()).c_str());
    return;
  }
  std::vector<double> host(static_cast<size_t>(rows) * cols, 2.0);
  const int64_t ext[2] = {rows, cols};
  Array* a = *(*rt)->register_array("big", host.data(), sizeof(double), ext);
  const int sweeps = 2;
  const auto t0 = Clock::now();
  for (int s = 0; s < sweeps; ++s) {
    for (int64_t lo = 0; lo < rows; lo += tile_rows) {
      auto t = *(*rt)->begin_tile(0);
      t.require(a, *Box::create({lo, 0}, {lo + tile_rows, cols}), Access::kReadWrite).IgnoreError();
      absl::Status st = t.acquire();
      if (!st.ok()) {
        std::printf("boxout: %s\n", std::string(st.message()).c_str());
        return;
      }
      t.launch([](const bbmm_launch_info&) {}).IgnoreError();
      t.release().IgnoreError();
    }
  }
  (*rt)->sync_to_host(a).IgnoreError();
  const double secs = seconds_since(t0);
  const bbmm_stats st = (*rt)->stats();
  const double ideal = st.bytes_h2d / h2d + st.bytes_d2h / d2h;
  std::printf("\n### Box-out sweep: 4 GiB read-write in 64 MiB tiles through a 1 GiB limit, %d sweeps\n\n",
              sweeps);
  std::printf("| H2D GiB | D2H GiB | evictions | time s | PCIe-bound ideal s | fraction | target |\n");
  std::printf("|---|---|---|---|---|---|---|\n| %.2f | %.2f | %lu | %.3f | %.3f | %.2f | >= 0.8 |\n",
              st.bytes_h2d / 1073741824.0, st.bytes_d2h / 1073741824.0,
              static_cast<unsigned long>(st.evictions), secs, ideal, ideal / secs);
}

// ------------------------------------------------------------------ staged
// What bounds the host side of staged copies, with no copy engine in the way:
// T threads each copying their slice of 1 GiB of touched pageable memory
// through a 16 MiB pinned buffer of their own (pack: pageable -> pinned;
// unpack: pinned -> pageable), with memcpy and with streaming stores
// (copy_streaming); and whether CUDA runs host functions of different
// streams at once (2 per GPU, each sleeping 20 ms).
void bench_staging_host(int visible, std::vector<char>& host) {
  const size_t total = host.size(), chunk = kStagingBufferBytes;
  std::printf("\n### Host side of staged copies: T threads, each through its own 16 MiB pinned "
              "buffer (1 GiB, best of 3)\n\n");
  std::printf("| threads | stores | pack GB/s | unpack GB/s |\n|---|---|---|---|\n");
  for (int threads : {1, 8, 16, 32}) {
    std::vector<char*> bufs(threads, nullptr);
    for (char*& b : bufs) {
      if (cudaHostAlloc(reinterpret_cast<void**>(&b), chunk, cudaHostAllocPortable) != cudaSuccess) {
        std::printf("cudaHostAlloc failed\n");
        return;
      }
      std::memset(b, 0, chunk);
    }
    for (bool streaming : {false, true}) {
      auto pass = [&](bool unpack) {
        const auto t0 = Clock::now();
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t) {
          pool.emplace_back([&, t] {
            const size_t begin = total * t / threads, end = total * (t + 1) / threads;
            for (size_t at = begin; at < end; at += chunk) {
              const size_t n = std::min(chunk, end - at);
              char* h = host.data() + at;
              void* dst = unpack ? static_cast<void*>(h) : bufs[t];
              const void* src = unpack ? static_cast<const void*>(bufs[t]) : h;
              if (streaming) {
                copy_streaming(dst, src, n);
              } else {
                std::memcpy(dst, src, n);
              }
            }
          });
        }
        for (std::thread& th : pool) th.join();
        return seconds_since(t0);
      };
      double pack = 1e30, unpack = 1e30;
      for (int rep = 0; rep < 3; ++rep) {
        pack = std::min(pack, pass(false));
        unpack = std::min(unpack, pass(true));
      }
      std::printf("| %d | %s | %.1f | %.1f |\n", threads, streaming ? "streaming" : "memcpy",
                  total / pack / 1e9, total / unpack / 1e9);
    }
    for (char* b : bufs) cudaFreeHost(b);
  }
  // Host functions on 2 streams per GPU.
  std::vector<cudaStream_t> streams;
  for (int d = 0; d < visible; ++d) {
    cudaSetDevice(d);
    for (int k = 0; k < 2; ++k) {
      cudaStream_t st = nullptr;
      cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
      streams.push_back(st);
    }
  }
  auto sleep20 = [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
  const auto t0 = Clock::now();
  for (cudaStream_t st : streams) cudaLaunchHostFunc(st, sleep20, nullptr);
  for (cudaStream_t st : streams) cudaStreamSynchronize(st);
  const double secs = seconds_since(t0);
  std::printf("\nHost functions: %zu of 20 ms on %zu streams (%d GPUs) took %.1f ms (%s)\n",
              streams.size(), streams.size(), visible, secs * 1e3,
              secs > 0.02 * streams.size() * 0.8 ? "serialised"
              : secs < 0.02 * 2.5                ? "concurrent"
                                                 : "partly concurrent");
  for (cudaStream_t st : streams) cudaStreamDestroy(st);
  cudaSetDevice(0);
}

// 1 GiB of pageable host memory (touched) moved to G GPUs and back in 64 MiB
// boxes, every GPU at once: staged through the backend's pinned buffers
// (BBMM_HOST_COPIES_STAGED, 8, 16 and 32 copier threads; with the default threads,
// staging buffers of 4, 8, 16 and 32 MiB), against registering the array, copying
// pinned and unregistering. Copies: best of 2 passes; pin and unpin once. "create s"
// is the backend's creation (the staging buffers are pinned there).
void bench_staged(int visible) {
  const size_t total = size_t{1} << 30, box = size_t{64} << 20, boxes = total / box;
  std::vector<char> host(total, 1);
  bench_staging_host(visible, host);
  std::printf("\n### Pageable 1 GiB to G GPUs and back, 64 MiB boxes, all GPUs at once: staged "
              "vs pinned (register_host)\n\n");
  std::printf("| GPUs | path | create s | pin s | H2D s | D2H s | unpin s | total s | H2D GB/s | "
              "D2H GB/s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (int g = 1; g <= visible; g *= 2) {
    // Staged with 8, 16 and 32 copier threads (streaming stores; memcpy with
    // 8 and 32), with the default count (threads 0) and buffers of 4-32 MiB,
    // then pinned (threads -1). buffer_mib: MiB per staging buffer.
    struct Config {
      int threads;
      bool streaming;
      size_t buffer_mib;
    };
    for (const Config& config :
         {Config{8, true, 16}, Config{8, false, 16}, Config{16, true, 16}, Config{32, true, 16},
          Config{32, false, 16}, Config{0, true, 4}, Config{0, true, 8}, Config{0, true, 16},
          Config{0, true, 32}, Config{-1, false, 16}}) {
      const int threads = config.threads;
      const bool pinned = threads < 0;
      CudaBackendOptions o;
      o.devices = g;
      o.host_copies = pinned ? BBMM_HOST_COPIES_PINNED : BBMM_HOST_COPIES_STAGED;
      if (!pinned) o.staging_threads = threads;
      o.staging_streaming_stores = config.streaming;
      o.staging_buffer_bytes = config.buffer_mib << 20;
      const auto c0 = Clock::now();
      auto b = make_cuda_backend(o);
      const double create = seconds_since(c0);
      if (!b.ok()) {
        std::printf("staged: %s\n", std::string(b.status().message()).c_str());
        return;
      }
      Backend& be = **b;
      std::vector<DeviceBuffer> bufs;
      for (int d = 0; d < g; ++d) bufs.push_back(*be.allocate(d, total / g));
      for (int d = 0; d < g; ++d) be.synchronize(d).IgnoreError();
      auto pass = [&](bool to_host) {
        const auto t0 = Clock::now();
        std::vector<Event> events;
        for (size_t k = 0; k < boxes; ++k) {
          const int d = static_cast<int>(k * g / boxes);
          const size_t local = k * box - d * (total / g);
          const Endpoint h{kHost, host.data(), k * box, box, box};
          const Endpoint dev{d, bufs[d].base, local, box, box};
          events.push_back(must(to_host ? be.copy(h, dev, {box, 1, 1}, {})
                                        : be.copy(dev, h, {box, 1, 1}, {})));
        }
        for (Event& e : events) e.wait().IgnoreError();
        return seconds_since(t0);
      };
      auto t0 = Clock::now();
      if (pinned) be.register_host(host.data(), total).IgnoreError();
      const double pin = seconds_since(t0);
      double h2d = 1e30, d2h = 1e30;
      for (int rep = 0; rep < 2; ++rep) {
        h2d = std::min(h2d, pass(false));
        d2h = std::min(d2h, pass(true));
      }
      t0 = Clock::now();
      if (pinned) be.unregister_host(host.data()).IgnoreError();
      const double unpin = seconds_since(t0);
      const std::string path =
          pinned ? "pinned"
                 : "staged, " + (threads == 0 ? std::string("default") : std::to_string(threads)) +
                       " threads" + (config.streaming ? ", streaming" : ", memcpy") + ", " +
                       std::to_string(config.buffer_mib) + " MiB buffers";
      std::printf("| %d | %s | %.3f | %.3f | %.4f | %.4f | %.3f | %.3f | %.1f | %.1f |\n", g,
                  path.c_str(), create, pin, h2d, d2h, unpin, pin + h2d + d2h + unpin,
                  total / h2d / 1e9, total / d2h / 1e9);
      for (int d = 0; d < g; ++d) be.free(d, bufs[d], {}).IgnoreError();
      for (int d = 0; d < g; ++d) be.synchronize(d).IgnoreError();
    }
  }
}

// ------------------------------------------------------------------ latency
void bench_latency() {
  CudaBackendOptions o;
  o.devices = 1;
  auto backend = make_cuda_backend(o);
  RuntimeOptions ro;
  ro.devices = 1;
  auto rt = Runtime::create_with_backend(*std::move(backend), ro);
  std::vector<double> host(1 << 20, 1.0);
  const int64_t ext[2] = {1024, 1024};
  Array* a = *(*rt)->register_array("L", host.data(), sizeof(double), ext);
  auto once = [&](int64_t lo) {
    auto t = *(*rt)->begin_tile(0);
    t.require(a, *Box::create({lo, 0}, {lo + 8, 1024}), Access::kRead).IgnoreError();
    t.acquire().IgnoreError();
    t.release().IgnoreError();
  };
  once(0);
  const int n = 20000;
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) once(0);
  const double hit = seconds_since(t0) / n;
  (*rt)->synchronize().IgnoreError();
  // Misses: a new 64 KiB box each time (allocation from the pool + H2D).
  t0 = Clock::now();
  int misses = 0;
  for (int64_t lo = 8; lo + 8 <= 1024; lo += 8, ++misses) once(lo);
  const double miss = seconds_since(t0) / misses;
  (*rt)->synchronize().IgnoreError();
  std::printf("\n### acquire+release latency on the GPU (8x1024 doubles)\n\n| path | us |\n|---|---|\n");
  std::printf("| hit | %.2f |\n| miss (pool alloc + H2D issue) | %.2f |\n", hit * 1e6, miss * 1e6);
}

}  // namespace
}  // namespace bbmm

int main(int argc, char** argv) {
  std::string why;
  const int visible = bbmm::cuda_device_count(&why);
  if (visible == 0) {
    std::printf("SKIP: gpu_bench needs a GPU: %s\n", why.c_str());
    return 77;
  }
  auto want = [&](const char* what) {
    if (argc == 1) return true;
    for (int i = 1; i < argc; ++i)
      if (!std::strcmp(argv[i], what)) return true;
    return false;
  };
  if (argc == 2 && !std::strcmp(argv[1], "pinflags")) {
    bbmm::bench_pin_flags(visible);
    return 0;
  }
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("## gpu_bench: %d x %s\n", visible, prop.name);
  double h2d = 55e9, d2h = 55e9;
  {
    // The copy kernel for every strided device box, between GPUs too (the "(kernel)"
    // rows; the runtime's default takes the engines between GPUs).
    bbmm::CudaBackendOptions kernel_options;
    kernel_options.peer_copy_kernel = true;
    auto backend = bbmm::make_cuda_backend(kernel_options);
    if (!backend.ok()) {
      std::fprintf(stderr, "gpu_bench: %s\n", std::string(backend.status().message()).c_str());
      return 1;
    }
    bbmm::CudaBackendOptions engine_only;
    engine_only.copy_kernel = false;
    auto engine = bbmm::make_cuda_backend(engine_only);
    bbmm::CudaBackendOptions no_batch_api;
    no_batch_api.batch_api = false;
    no_batch_api.host_copy_kernel_max_box = 0;
    auto one_by_one = bbmm::make_cuda_backend(no_batch_api);
    bbmm::CudaBackendOptions zero_copy_options;
    zero_copy_options.host_copy_kernel_max_box = ~size_t{0};  // every size
    auto zero_copy = bbmm::make_cuda_backend(zero_copy_options);
    if (!engine.ok() || !one_by_one.ok() || !zero_copy.ok()) {
      std::fprintf(stderr, "gpu_bench: cannot create the comparison backends\n");
      return 1;
    }
    if (want("copies")) bbmm::bench_copies(**backend, **engine, **one_by_one, **zero_copy);
    if (want("enqueue")) bbmm::bench_enqueue(**backend);
    // Ceilings for the box-out ideal: contiguous 256 MiB copies.
    const size_t n = size_t{256} << 20;
    void* host = nullptr;
    cudaHostAlloc(&host, n, cudaHostAllocPortable);
    bbmm::DeviceBuffer d = *(*backend)->allocate(0, n);
    (*backend)->synchronize(0).IgnoreError();  // its ready event
    h2d = n / bbmm::time_median(5, 4, [&] {
            return bbmm::must((*backend)->copy({0, d.base, 0, n, n}, {bbmm::kHost, host, 0, n, n},
                                               {n, 1, 1}, {}));
          });
    d2h = n / bbmm::time_median(5, 4, [&] {
            return bbmm::must((*backend)->copy({bbmm::kHost, host, 0, n, n}, {0, d.base, 0, n, n},
                                               {n, 1, 1}, {}));
          });
    (*backend)->free(0, d, {}).IgnoreError();
    (*backend)->synchronize(0).IgnoreError();
    cudaFreeHost(host);
  }
  if (want("pinning")) bbmm::bench_pinning();
  if (want("flowout")) bbmm::bench_flowout(visible);
  if (want("boxout")) bbmm::bench_boxout(h2d, d2h);
  if (want("latency")) bbmm::bench_latency();
  if (want("halo")) bbmm::bench_halo(visible);
  if (want("staged")) bbmm::bench_staged(visible);
  return 0;
}
