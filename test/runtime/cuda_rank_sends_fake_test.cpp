// Sends between ranks from CUDA device memory, as with a CUDA-aware MPI, over the
// host-only fake of the CUDA runtime (its device memory is host memory): two ranks in
// one process on loopback transports that say they read CUDA memory
// (make_loopback_transports(2, {kHost, kCuda})). No machine here has a CUDA-aware MPI;
// this runs the runtime's side of that path (the instance's memory given to the
// transport, the CUDA events it waits for) in CI.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "api/c_api_internal.h"
#include "bbmm/bbmm.h"
#include "core/loopback_transport.h"
#include "loopback_ranks.h"

namespace bbmm {
namespace {

void noop_kernel(const bbmm_launch_info*, void*) {}

// Rank 0's tile reads B (6 x 7 doubles, B[i][j] = 100 i + j) into its GPU and takes it
// over (READ_WRITE: the GPU's copy is then the only current one); rank 0 sends
// B[1, 5) x [2, 6) to rank 1, which receives it into its host copy of -1s.
void exchange(std::vector<BackendKind> device_memory, std::vector<double>& received,
              bbmm_stats& sender) {
  std::vector<std::unique_ptr<Transport>> transports =
      make_loopback_transports(2, std::move(device_memory));
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      bbmm_options o;
      ASSERT_EQ(bbmm_options_init(&o), BBMM_OK);
      o.backend = BBMM_BACKEND_CUDA;
      o.devices = 1;
      bbmm_runtime* rt = nullptr;
      ASSERT_EQ(bbmm_runtime_create(&o, &rt), BBMM_OK) << bbmm_last_error_message();
      absl::Status s = detail::core_of(rt)->set_transport(std::move(transports[r]), false);
      ASSERT_TRUE(s.ok()) << s;
      std::vector<double> host(6 * 7, -1.0);
      if (r == 0) {
        for (int64_t i = 0; i < 6; ++i) {
          for (int64_t j = 0; j < 7; ++j) host[i * 7 + j] = static_cast<double>(100 * i + j);
        }
      }
      const int64_t ext[2] = {6, 7};
      bbmm_array* B = nullptr;
      ASSERT_EQ(bbmm_array_register(rt, "B", host.data(), sizeof(double), 2, ext, nullptr, 0, &B),
                BBMM_OK);
      const int64_t lo[2] = {1, 2}, hi[2] = {5, 6};
      if (r == 0) {
        const int64_t wlo[2] = {0, 0}, whi[2] = {6, 7};
        bbmm_tile* t = nullptr;
        ASSERT_EQ(bbmm_tile_begin(rt, 0, &t), BBMM_OK);
        ASSERT_EQ(bbmm_tile_require(t, B, wlo, whi, BBMM_READ_WRITE), BBMM_OK);
        ASSERT_EQ(bbmm_tile_acquire(t), BBMM_OK) << bbmm_last_error_message();
        ASSERT_EQ(bbmm_tile_launch(t, noop_kernel, nullptr, 0), BBMM_OK);
        ASSERT_EQ(bbmm_tile_release(t), BBMM_OK);
        ASSERT_EQ(bbmm_array_send(rt, B, lo, hi, 1, 3), BBMM_OK) << bbmm_last_error_message();
        ASSERT_EQ(bbmm_stats_get(rt, -1, &sender), BBMM_OK);
      } else {
        ASSERT_EQ(bbmm_array_receive(rt, B, lo, hi, 0, 3), BBMM_OK) << bbmm_last_error_message();
      }
      ASSERT_EQ(bbmm_array_unregister(rt, B), BBMM_OK) << bbmm_last_error_message();
      if (r == 1) received = host;
      EXPECT_EQ(bbmm_runtime_destroy(rt), BBMM_OK) << bbmm_last_error_message();
    });
  }
  for (std::thread& t : threads) t.join();
}

void expect_box_received(const std::vector<double>& received) {
  const int64_t lo[2] = {1, 2}, hi[2] = {5, 6};
  testing::expect_received_box(received, 6, 7, lo, hi);
}

TEST(CudaRankSends, FromTheGpuWhenTheTransportReadsCudaMemory) {
  std::vector<double> received;
  bbmm_stats sender{};
  exchange({BackendKind::kHost, BackendKind::kCuda}, received, sender);
  expect_box_received(received);
  EXPECT_EQ(sender.bytes_sent_from_devices, 16 * sizeof(double));
  EXPECT_EQ(sender.bytes_sent_ranks, 16 * sizeof(double));
  EXPECT_EQ(sender.bytes_d2h, 0u) << "nothing staged through the host";
}

TEST(CudaRankSends, ThroughTheHostOtherwise) {
  std::vector<double> received;
  bbmm_stats sender{};
  exchange({BackendKind::kHost}, received, sender);  // as with an MPI that is not CUDA-aware
  expect_box_received(received);
  EXPECT_EQ(sender.bytes_sent_from_devices, 0u);
  EXPECT_EQ(sender.bytes_sent_ranks, 16 * sizeof(double));
  EXPECT_GT(sender.bytes_d2h, 0u) << "written back to the host copy, then sent";
}

}  // namespace
}  // namespace bbmm
