// Tests of runs over several ranks on one machine: one thread per rank, each
// with its own runtime (the host backend unless ranks_backend() says otherwise)
// given its loopback transport (core/loopback_transport.h). Used by
// transport_loopback_test, global_tiles_fuzz_test (also on CUDA:
// cuda_ranks_setup.cpp) and cuda_rank_sends_test.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/c_api_internal.h"
#include "bbmm/bbmm.h"
#include "core/loopback_transport.h"
#include "runtime_test_util.h"

namespace bbmm::testing {

// What the ranks of on_ranks run on: by default host-backend runtimes whose
// transports send from host-backend devices. A GPU test binary sets the CUDA
// backend, the device memory its transports read (kCuda: as a CUDA-aware MPI)
// with a maker of the copy that reads it (one per run of on_ranks, which owns
// it), and how a host kernel reaches a tile's pieces
// (BackendFactory::host_access); `skip` (non-empty) skips the tests that use it.
struct RanksBackend {
  bbmm_backend_kind backend = BBMM_BACKEND_HOST;
  std::vector<BackendKind> device_memory = {BackendKind::kHost};
  std::function<LoopbackCopy()> make_copy;
  std::function<void(const bbmm_launch_info&, const std::vector<PieceCopy>&, const HostKernel&)>
      host_access;
  std::string skip;

  // Whether the transports read the memory of the ranks' devices.
  bool transports_read_devices() const {
    const BackendKind kind =
        backend == BBMM_BACKEND_CUDA ? BackendKind::kCuda : BackendKind::kHost;
    return std::find(device_memory.begin(), device_memory.end(), kind) != device_memory.end();
  }
};
inline RanksBackend& ranks_backend() {
  static RanksBackend b;
  return b;
}

// Runs `body` on the views of a tile's kernel with host pointers: directly on
// the host backend, through ranks_backend().host_access on the others.
inline void run_host_kernel(const bbmm_launch_info& info, const std::vector<PieceCopy>& views,
                            const HostKernel& body) {
  if (ranks_backend().host_access) {
    ranks_backend().host_access(info, views, body);
  } else {
    body(views);
  }
}

// One rank's runtime: `devices` devices, each holding `memory` bytes (0: no limit).
struct RankSetup {
  int devices;
  uint64_t memory;
};
inline std::vector<RankSetup> same(int ranks, int devices, uint64_t memory) {
  return std::vector<RankSetup>(ranks, RankSetup{devices, memory});
}

// Sets environment variable `name` to `value` until destroyed (set before the
// rank threads start: the runtimes read it when they get their transport).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

// Checks the host copy (`rows` x `cols`, row-major) of an array rank 1 received
// box [lo, hi) of: 100 i + j inside the box (what the sender held), -1 elsewhere
// (the receiver's own values).
inline void expect_received_box(const std::vector<double>& host, int64_t rows, int64_t cols,
                                const int64_t lo[2], const int64_t hi[2]) {
  ASSERT_EQ(host.size(), static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const bool in = i >= lo[0] && i < hi[0] && j >= lo[1] && j < hi[1];
      EXPECT_EQ(host[i * cols + j], in ? static_cast<double>(100 * i + j) : -1.0)
          << "[" << i << "][" << j << "]";
    }
  }
}

// A runtime as `setup` says (ranks_backend()'s backend; on CUDA,
// every device of the rank a logical device of the first GPU); null (with a
// failure) when it cannot be made.
inline bbmm_runtime* rank_runtime(const RankSetup& setup) {
  bbmm_options o;
  EXPECT_EQ(bbmm_options_init(&o), BBMM_OK);
  o.backend = ranks_backend().backend;
  o.devices = setup.devices;
  o.device_memory = setup.memory;
  if (o.backend == BBMM_BACKEND_CUDA) o.cuda_devices_per_gpu = setup.devices;
  bbmm_runtime* rt = nullptr;
  EXPECT_EQ(bbmm_runtime_create(&o, &rt), BBMM_OK) << bbmm_last_error_message();
  return rt;
}

// Runs `body(rt, r)` for every rank r on a thread of its own, with a runtime of
// setups[r] given its loopback transport (global tiles or explicit, and
// gather_all), then destroys the runtime.
inline void on_ranks(const std::vector<RankSetup>& setups, bool global_tiles, bool gather_all,
              const std::function<void(bbmm_runtime*, int)>& body) {
  const int ranks = static_cast<int>(setups.size());
  std::vector<std::unique_ptr<Transport>> transports =
      make_loopback_transports(ranks, ranks_backend().device_memory,
                               ranks_backend().make_copy ? ranks_backend().make_copy()
                                                         : LoopbackCopy{});
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      bbmm_runtime* rt = rank_runtime(setups[r]);
      if (rt == nullptr) return;
      absl::Status s =
          detail::core_of(rt)->set_transport(std::move(transports[r]), global_tiles, gather_all);
      EXPECT_TRUE(s.ok()) << s;
      if (s.ok()) body(rt, r);
      EXPECT_EQ(bbmm_runtime_destroy(rt), BBMM_OK) << "rank " << r << ": "
                                                   << bbmm_last_error_message();
    });
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace bbmm::testing
