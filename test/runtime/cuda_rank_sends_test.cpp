// Sends between ranks from CUDA device memory, as with a CUDA-aware MPI: two ranks in
// one process on loopback transports that read CUDA memory (make_loopback_transports
// with kCuda and cuda_loopback_copy, which reads it with cudaMemcpyDefault as such an
// MPI does), and, as with an MPI that is not CUDA-aware, through the host copy.
// No machine here has a CUDA-aware MPI; this runs the runtime's side of that path (the
// instance's memory given to the transport, the CUDA events the send waits for) on a
// GPU (cuda_rank_sends_test, label gpu; skips without one) and over the host-only fake
// of the CUDA runtime (cuda_rank_sends_fake_test, CI; every stream a thread with random
// delays). The box's values exist only on the GPU, written there by the tile's kernel:
// a send that did not wait for the kernel would carry the sender's -1s.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "api/c_api_internal.h"
#include "bbmm/bbmm.h"
#include "core/loopback_transport.h"
#include "cuda_test_support.h"
#include "loopback_ranks.h"

namespace bbmm {
namespace {

constexpr int64_t kRows = 6, kCols = 7;

// The tile's view of B, for its kernel (valid until the rank's runtime is destroyed).
struct KernelArgs {
  std::vector<testing::PieceCopy> views;
};

// Writes B[i][j] = 100 i + j on the device (through the host: cuda_host_access).
void write_kernel(const bbmm_launch_info* info, void* p) {
  const KernelArgs& a = **static_cast<KernelArgs* const*>(p);
  testing::cuda_host_access(*info, a.views, [](const std::vector<testing::PieceCopy>& host) {
    for (int64_t i = 0; i < kRows; ++i) {
      for (int64_t j = 0; j < kCols; ++j) {
        host[0].ref<double>({i, j}) = static_cast<double>(100 * i + j);
      }
    }
  });
}

// Rank 0's tile writes the whole of B (6 x 7 doubles) on its GPU (BBMM_WRITE: nothing
// read in, the GPU's copy then the only current one); rank 0 sends B[1, 5) x [2, 6) to
// rank 1, which receives it into its host copy. Both host copies start as -1s.
void exchange(std::vector<BackendKind> device_memory, std::vector<double>& received,
              bbmm_stats& sender) {
  std::vector<std::unique_ptr<Transport>> transports =
      make_loopback_transports(2, std::move(device_memory), testing::cuda_loopback_copy());
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
      std::vector<double> host(kRows * kCols, -1.0);
      const int64_t ext[2] = {kRows, kCols};
      bbmm_array* B = nullptr;
      ASSERT_EQ(bbmm_array_register(rt, "B", host.data(), sizeof(double), 2, ext, nullptr, 0, &B),
                BBMM_OK);
      const int64_t lo[2] = {1, 2}, hi[2] = {5, 6};
      KernelArgs args;
      if (r == 0) {
        const int64_t wlo[2] = {0, 0}, whi[2] = {kRows, kCols};
        bbmm_tile* t = nullptr;
        ASSERT_EQ(bbmm_tile_begin(rt, 0, &t), BBMM_OK);
        ASSERT_EQ(bbmm_tile_require(t, B, wlo, whi, BBMM_WRITE), BBMM_OK);
        ASSERT_EQ(bbmm_tile_acquire(t), BBMM_OK) << bbmm_last_error_message();
        bbmm_view v;
        ASSERT_EQ(bbmm_tile_view(t, B, &v), BBMM_OK);
        args.views.emplace_back(v);
        KernelArgs* ap = &args;
        ASSERT_EQ(bbmm_tile_launch(t, write_kernel, &ap, sizeof ap), BBMM_OK);
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
  testing::expect_received_box(received, kRows, kCols, lo, hi);
}

class CudaRankSends : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no GPU: " << why;
  }
};

TEST_F(CudaRankSends, FromTheGpuWhenTheTransportReadsCudaMemory) {
  std::vector<double> received;
  bbmm_stats sender{};
  exchange({BackendKind::kHost, BackendKind::kCuda}, received, sender);
  expect_box_received(received);
  EXPECT_EQ(sender.bytes_sent_from_devices, 16 * sizeof(double));
  EXPECT_EQ(sender.bytes_sent_ranks, 16 * sizeof(double));
  EXPECT_EQ(sender.bytes_d2h, 0u) << "nothing staged through the host";
}

TEST_F(CudaRankSends, ThroughTheHostOtherwise) {
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
