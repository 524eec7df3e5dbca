// CUDA backend tests (label gpu). They skip, printing why, when no GPU is
// present, so CI (no GPU) stays green; they run for real on the GPU machine.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "bbmm/runtime.h"
#include "core/backend.h"
#include "cuda/cuda_backend.h"

namespace bbmm {
namespace {

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no GPU: " << why;
    absl::StatusOr<std::unique_ptr<Backend>> b = make_cuda_backend({});
    ASSERT_TRUE(b.ok()) << b.status();
    backend_ = *std::move(b);
  }
  std::unique_ptr<Backend> backend_;
};

// Fills `v` with distinct bytes.
void fill(std::vector<unsigned char>& v, unsigned seed) {
  std::mt19937 rng(seed);
  for (auto& x : v) x = static_cast<unsigned char>(rng());
}

struct Rect {
  size_t width, height, depth;
};

// Reference: copies a `r` block between two host byte buffers with pitches.
void reference_copy(unsigned char* dst, size_t drow, size_t dslice, const unsigned char* src,
                    size_t srow, size_t sslice, Rect r) {
  for (size_t z = 0; z < r.depth; ++z)
    for (size_t y = 0; y < r.height; ++y)
      std::memcpy(dst + z * dslice + y * drow, src + z * sslice + y * srow, r.width);
}

TEST_F(CudaBackendTest, RectCopiesHostDeviceRoundTripMatchReference) {
  const Rect shapes[] = {{64, 1, 1}, {24, 7, 1}, {100, 5, 3}, {4096, 33, 2}, {12, 9, 4}};
  for (const Rect& r : shapes) {
    const size_t hrow = r.width + 40, hslice = hrow * (r.height + 3);
    const size_t drow = r.width + 8, dslice = drow * (r.height + 1);
    std::vector<unsigned char> host(hslice * r.depth + 64), back(host.size(), 0), want(host.size(), 0);
    fill(host, static_cast<unsigned>(r.width * 31 + r.height));
    absl::StatusOr<DeviceBuffer> buf = backend_->allocate(0, dslice * r.depth + 16);
    ASSERT_TRUE(buf.ok()) << buf.status();
    CopyShape shape{r.width, r.height, r.depth};
    Endpoint h{kHost, host.data(), 5, hrow, hslice};
    Endpoint d{0, buf->base, 16, drow, dslice};
    absl::StatusOr<Event> e1 = backend_->copy(d, h, shape, {});
    ASSERT_TRUE(e1.ok()) << e1.status();
    Endpoint hb{kHost, back.data(), 5, hrow, hslice};
    const Event wait[] = {*e1};
    absl::StatusOr<Event> e2 = backend_->copy(hb, d, shape, wait);
    ASSERT_TRUE(e2.ok()) << e2.status();
    ASSERT_TRUE(e2->wait().ok());
    reference_copy(want.data() + 5, hrow, hslice, host.data() + 5, hrow, hslice, r);
    EXPECT_EQ(back, want) << "shape " << r.width << "x" << r.height << "x" << r.depth;
    ASSERT_TRUE(backend_->free(0, *buf, {}).ok());
  }
}

// Strided device-to-device copies by the copy kernel (default) and by the
// copy engine.
class CudaDeviceCopyTest : public CudaBackendTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    CudaBackendTest::SetUp();
    if (IsSkipped()) return;
    CudaBackendOptions o;
    o.copy_kernel = GetParam();
    absl::StatusOr<std::unique_ptr<Backend>> b = make_cuda_backend(o);
    ASSERT_TRUE(b.ok()) << b.status();
    backend_ = *std::move(b);
  }
};
INSTANTIATE_TEST_SUITE_P(KernelAndEngine, CudaDeviceCopyTest, ::testing::Bool());

TEST_P(CudaDeviceCopyTest, DeviceToDeviceCopiesSameAndPeer) {
  const int n = backend_->device_count();
  const Rect r{256, 10, 3};
  const size_t row = 512, slice = row * 12;
  std::vector<unsigned char> host(slice * r.depth), back(host.size(), 0), want(host.size(), 0);
  fill(host, 7);
  for (int dst_dev = 0; dst_dev < n; ++dst_dev) {
    absl::StatusOr<DeviceBuffer> a = backend_->allocate(0, host.size());
    absl::StatusOr<DeviceBuffer> b = backend_->allocate(dst_dev, host.size());
    ASSERT_TRUE(a.ok() && b.ok());
    CopyShape whole{host.size(), 1, 1};
    absl::StatusOr<Event> up = backend_->copy({0, a->base, 0, host.size(), host.size()},
                                              {kHost, host.data(), 0, host.size(), host.size()},
                                              whole, {});
    ASSERT_TRUE(up.ok());
    const Event w1[] = {*up};
    // Rect copy with different pitches on each side: rows of 256 from a
    // 512-pitch source into a 300-pitch destination.
    absl::StatusOr<Event> mid = backend_->copy({dst_dev, b->base, 0, 300, 300 * 11},
                                               {0, a->base, 0, row, slice},
                                               {r.width, r.height, r.depth}, w1);
    ASSERT_TRUE(mid.ok()) << mid.status();
    const Event w2[] = {*mid};
    absl::StatusOr<Event> down = backend_->copy({kHost, back.data(), 0, 300, 300 * 11},
                                                {dst_dev, b->base, 0, 300, 300 * 11},
                                                {r.width, r.height, r.depth}, w2);
    ASSERT_TRUE(down.ok());
    ASSERT_TRUE(down->wait().ok());
    std::fill(want.begin(), want.end(), 0);
    reference_copy(want.data(), 300, 300 * 11, host.data(), row, slice, r);
    for (size_t z = 0; z < r.depth; ++z)
      for (size_t y = 0; y < r.height; ++y)
        ASSERT_EQ(0, std::memcmp(back.data() + z * 300 * 11 + y * 300,
                                 want.data() + z * 300 * 11 + y * 300, r.width))
            << "device 0 -> " << dst_dev << " plane " << z << " row " << y;
    ASSERT_TRUE(backend_->free(0, *a, {}).ok());
    ASSERT_TRUE(backend_->free(dst_dev, *b, {}).ok());
  }
}

TEST_F(CudaBackendTest, CapacityLimitGivesResourceExhausted) {
  absl::StatusOr<std::unique_ptr<Backend>> b = make_cuda_backend({.devices = 1, .capacity_bytes = 1 << 20});
  ASSERT_TRUE(b.ok());
  absl::StatusOr<DeviceBuffer> x = (*b)->allocate(0, 768 << 10);
  ASSERT_TRUE(x.ok());
  absl::StatusOr<DeviceBuffer> y = (*b)->allocate(0, 512 << 10);
  EXPECT_TRUE(absl::IsResourceExhausted(y.status())) << y.status();
  ASSERT_TRUE((*b)->free(0, *x, {}).ok());
  y = (*b)->allocate(0, 512 << 10);
  EXPECT_TRUE(y.ok()) << y.status();
  ASSERT_TRUE((*b)->free(0, *y, {}).ok());
}

TEST_F(CudaBackendTest, LaunchRunsOnTheDeviceStreamAfterItsWaits) {
  std::vector<int> host(1 << 16);
  std::iota(host.begin(), host.end(), 0);
  const size_t bytes = host.size() * sizeof(int);
  absl::StatusOr<DeviceBuffer> buf = backend_->allocate(0, bytes);
  ASSERT_TRUE(buf.ok());
  absl::StatusOr<Event> up = backend_->copy({0, buf->base, 0, bytes, bytes},
                                            {kHost, host.data(), 0, bytes, bytes}, {bytes, 1, 1}, {});
  ASSERT_TRUE(up.ok());
  const Event w[] = {*up};
  void* seen_queue = nullptr;
  absl::StatusOr<Event> k = backend_->launch(
      0,
      [&](const LaunchContext& ctx) {
        seen_queue = ctx.queue;
        // A "kernel" made of a memset on the stream: zero the first half.
        cudaMemsetAsync(buf->base, 0, bytes / 2, static_cast<cudaStream_t>(ctx.queue));
      },
      w);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_NE(seen_queue, nullptr);
  std::vector<int> back(host.size(), -1);
  const Event w2[] = {*k};
  absl::StatusOr<Event> down = backend_->copy({kHost, back.data(), 0, bytes, bytes},
                                              {0, buf->base, 0, bytes, bytes}, {bytes, 1, 1}, w2);
  ASSERT_TRUE(down.ok());
  ASSERT_TRUE(down->wait().ok());
  for (size_t i = 0; i < host.size(); ++i) {
    ASSERT_EQ(back[i], i < host.size() / 2 ? 0 : static_cast<int>(i)) << i;
  }
  ASSERT_TRUE(backend_->free(0, *buf, {}).ok());
  EXPECT_TRUE(backend_->synchronize(0).ok());
}

TEST_F(CudaBackendTest, LaunchExceptionBecomesStatus) {
  absl::StatusOr<Event> k =
      backend_->launch(0, [](const LaunchContext&) { throw std::runtime_error("boom"); }, {});
  EXPECT_FALSE(k.ok());
  EXPECT_NE(std::string(k.status().message()).find("boom"), std::string::npos);
}

TEST_F(CudaBackendTest, BadArgumentsAreErrorsNotCrashes) {
  EXPECT_FALSE(backend_->allocate(-1, 16).ok());
  EXPECT_FALSE(backend_->allocate(backend_->device_count(), 16).ok());
  int x = 0;
  EXPECT_FALSE(backend_->copy({kHost, &x, 0, 4, 4}, {kHost, &x, 0, 4, 4}, {4, 1, 1}, {}).ok());
  EXPECT_FALSE(backend_->launch(0, nullptr, {}).ok());
}

}  // namespace
}  // namespace bbmm
