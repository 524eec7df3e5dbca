// CUDA backend tests (label gpu). They skip, printing why, when no GPU is
// present, so CI (no GPU) stays green; they run for real on the GPU machine.
//
// The backend runs each device's operations on several streams and issues
// them from a worker thread, so these tests order everything they issue by
// events only (never by issue order), and check results against host
// references computed independently of the code under test.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/backend.h"
#include "core/trace.h"
#include "cuda/cuda_backend.h"
#include "cuda_test_kernels.h"

// Defined by the fake CUDA runtime only (cuda_fake_runtime.cpp): the pool
// growths made by the calling thread's allocations; null on a real GPU.
extern "C" uint64_t fake_cuda_pool_growths_on_this_thread() __attribute__((weak));
extern "C" uint64_t fake_cuda_pointer_queries_on_this_thread() __attribute__((weak));
extern "C" uint64_t fake_cuda_event_calls_on_this_thread() __attribute__((weak));
extern "C" void fake_cuda_set_copy_delay_us(int us) __attribute__((weak));
extern "C" void fake_cuda_set_host_fn_delay_us(int us) __attribute__((weak));
extern "C" uint64_t fake_cuda_host_fn_calls() __attribute__((weak));

namespace bbmm {
namespace {

using testing::launch_add_bytes;
using testing::launch_invalid;
using testing::launch_spin_until;
using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------------ helpers

int visible_gpus() {
  std::string why;
  return cuda_device_count(&why);
}

// A backend of at least two logical devices: every GPU when there are
// several, else two logical devices sharing the one GPU (oversubscribe), so
// that cross-device paths always run.
std::unique_ptr<Backend> make_two_device_backend(CudaBackendOptions o = {}) {
  o.devices = std::max(2, visible_gpus());
  o.oversubscribe = true;
  absl::StatusOr<std::unique_ptr<Backend>> b = make_cuda_backend(o);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *std::move(b) : nullptr;
}

// Page-locked host memory (cudaHostAlloc, portable, optionally mapped into
// the devices' address space).
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes, bool mapped = false) : bytes_(bytes) {
    const unsigned flags = cudaHostAllocPortable | (mapped ? cudaHostAllocMapped : 0);
    if (cudaHostAlloc(&p_, std::max<size_t>(bytes, 1), flags) != cudaSuccess) {
      ADD_FAILURE() << "cudaHostAlloc of " << bytes << " bytes failed";
      p_ = nullptr;
    }
  }
  ~PinnedBuffer() {
    if (p_ != nullptr) cudaFreeHost(p_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  unsigned char* data() const { return static_cast<unsigned char*>(p_); }
  size_t size() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_;
};

// Fills `n` bytes at `p` from a generator seeded with `seed`.
void fill(unsigned char* p, size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(rng());
}
void fill(std::vector<unsigned char>& v, unsigned seed) { fill(v.data(), v.size(), seed); }

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

Endpoint dense(int device, void* base, size_t offset, size_t bytes) {
  return Endpoint{device, base, offset, bytes, bytes};
}

// A launch function running launch_add_bytes(p, n, v) on the launch's stream.
std::function<void(const LaunchContext&)> add_fn(void* p, size_t n, unsigned char v) {
  return [p, n, v](const LaunchContext& ctx) {
    (void)launch_add_bytes(p, n, v, static_cast<cudaStream_t>(ctx.queue));
  };
}

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

// ------------------------------------------------------------------ copies

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
    const Event w0[] = {buf->ready};
    absl::StatusOr<Event> e1 = backend_->copy(d, h, shape, w0);
    ASSERT_TRUE(e1.ok()) << e1.status();
    Endpoint hb{kHost, back.data(), 5, hrow, hslice};
    const Event wait[] = {*e1};
    absl::StatusOr<Event> e2 = backend_->copy(hb, d, shape, wait);
    ASSERT_TRUE(e2.ok()) << e2.status();
    ASSERT_TRUE(e2->wait().ok());
    reference_copy(want.data() + 5, hrow, hslice, host.data() + 5, hrow, hslice, r);
    EXPECT_EQ(back, want) << "shape " << r.width << "x" << r.height << "x" << r.depth;
    const Event after[] = {*e2};
    ASSERT_TRUE(backend_->free(0, *buf, after).ok());
  }
  EXPECT_TRUE(backend_->synchronize(0).ok());
}

// Pageable host memory is staged through the pinned buffers of a copy
// stream (cuda_staging.h), here in four rounds per copy with the default
// buffers (boxes over 3.5 of the 16 MiB buffers: pipelined, each buffer used
// twice) and in fifteen with 4 MiB buffers (each used seven or eight times),
// and in stream order both ways: the second upload reads host bytes the
// download before it wrote, through the staging buffers. On the fake, with a
// slow copy engine (a pack that did not wait for the copy of its buffer's
// previous round would overwrite it in time), then with slow host functions
// (a copy that did not wait for the unpacking of its buffer's previous round
// would overwrite it in time).
class StagedRoundTrip : public CudaBackendTest,
                        public ::testing::WithParamInterface<std::tuple<bool, size_t>> {
 protected:
  void SetUp() override {
    CudaBackendTest::SetUp();
    if (IsSkipped()) return;
    CudaBackendOptions o;
    o.staging_buffer_bytes = std::get<1>(GetParam());
    absl::StatusOr<std::unique_ptr<Backend>> b = make_cuda_backend(o);
    ASSERT_TRUE(b.ok()) << b.status();
    backend_ = *std::move(b);
  }
};
INSTANTIATE_TEST_SUITE_P(SlowCopiesOrSlowHostFunctions, StagedRoundTrip,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(size_t{16} << 20, size_t{4} << 20)));

TEST_P(StagedRoundTrip, PageableCopiesOverTheStagingBuffersKeepStreamOrder) {
  struct Slow {
    explicit Slow(bool copies) {
      if (copies && fake_cuda_set_copy_delay_us) fake_cuda_set_copy_delay_us(3000);
      if (!copies && fake_cuda_set_host_fn_delay_us) fake_cuda_set_host_fn_delay_us(15000);
    }
    ~Slow() {
      if (fake_cuda_set_copy_delay_us) fake_cuda_set_copy_delay_us(0);
      if (fake_cuda_set_host_fn_delay_us) fake_cuda_set_host_fn_delay_us(0);
    }
  } slow(std::get<0>(GetParam()));
  const Rect r{5000, 12000, 1};  // 60 MB, rows 5,000 of 6,000 bytes
  const size_t row = 6000, bytes = row * r.height + 64;
  std::vector<unsigned char> a(bytes), b(bytes, 0), c(bytes, 0);
  fill(a, 11);
  absl::StatusOr<DeviceBuffer> d1 = backend_->allocate(0, r.width * r.height);
  absl::StatusOr<DeviceBuffer> d2 = backend_->allocate(0, r.width * r.height + 4096);
  ASSERT_TRUE(d1.ok() && d2.ok());
  const CopyShape shape{r.width, r.height, 1};
  auto host = [&](std::vector<unsigned char>& v) { return Endpoint{kHost, v.data(), 7, row, 0}; };
  const Endpoint e_d1{0, d1->base, 0, r.width, 0}, e_d2{0, d2->base, 4096, r.width + 0, 0};
  const Event w0[] = {d1->ready, d2->ready};
  absl::StatusOr<Event> up1 = backend_->copy(e_d1, host(a), shape, w0);
  ASSERT_TRUE(up1.ok()) << up1.status();
  const Event w1[] = {*up1};
  absl::StatusOr<Event> down1 = backend_->copy(host(b), e_d1, shape, w1);
  ASSERT_TRUE(down1.ok()) << down1.status();
  const Event w2[] = {*down1};
  absl::StatusOr<Event> up2 = backend_->copy(e_d2, host(b), shape, w2);
  ASSERT_TRUE(up2.ok()) << up2.status();
  const Event w3[] = {*up2};
  absl::StatusOr<Event> down2 = backend_->copy(host(c), e_d2, shape, w3);
  ASSERT_TRUE(down2.ok()) << down2.status();
  ASSERT_TRUE(down2->wait().ok());
  // At once: the last round's bytes (unpacked last) are in place when the
  // copy's event completes.
  const std::vector<unsigned char> last_row(c.end() - row - 64, c.end());
  std::vector<unsigned char> want(bytes, 0);
  reference_copy(want.data() + 7, row, 0, a.data() + 7, row, 0, r);
  EXPECT_TRUE(std::equal(last_row.begin(), last_row.end(), want.end() - row - 64))
      << "the download's event completed before its last round was unpacked";
  EXPECT_TRUE(c == want) << "the box did not survive two staged round trips";
  EXPECT_TRUE(b == want);
  const Event after[] = {*down2};
  ASSERT_TRUE(backend_->free(0, *d1, after).ok());
  ASSERT_TRUE(backend_->free(0, *d2, after).ok());
  EXPECT_TRUE(backend_->synchronize(0).ok());
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
    backend_ = make_two_device_backend(o);
    ASSERT_NE(backend_, nullptr);
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
    const Event w0[] = {a->ready};
    absl::StatusOr<Event> up = backend_->copy(dense(0, a->base, 0, host.size()),
                                              dense(kHost, host.data(), 0, host.size()), whole, w0);
    ASSERT_TRUE(up.ok());
    const Event w1[] = {*up, b->ready};
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
    const Event done[] = {*down};
    ASSERT_TRUE(backend_->free(0, *a, done).ok());
    ASSERT_TRUE(backend_->free(dst_dev, *b, done).ok());
  }
  for (int d = 0; d < n; ++d) EXPECT_TRUE(backend_->synchronize(d).ok());
}

// Random chains H2D -> kernel -> (peer copy -> kernel ->) D2H, many in
// flight, ordered only by events. Each chain's host input and output regions
// are its own; device buffers are reused round-robin, each chain waiting for
// the previous chain of its slot.
void run_chains(Backend& b, int dev_a, int dev_b, int iterations, unsigned seed) {
  constexpr size_t kMax = 96 << 10;
  constexpr int kSlots = 6;
  PinnedBuffer in(kMax * iterations), out(kMax * iterations);
  fill(in.data(), in.size(), seed);
  std::memset(out.data(), 0, out.size());
  std::mt19937 rng(seed * 7 + 1);
  struct Slot {
    DeviceBuffer a, b;
    Event done;
  };
  std::vector<Slot> slots(kSlots);
  for (Slot& s : slots) {
    absl::StatusOr<DeviceBuffer> a = b.allocate(dev_a, kMax);
    absl::StatusOr<DeviceBuffer> bb = b.allocate(dev_b, kMax);
    ASSERT_TRUE(a.ok() && bb.ok());
    s.a = *a;
    s.b = *bb;
  }
  struct Chain {
    size_t n;
    unsigned char add;
    Event done;
  };
  std::vector<Chain> chains;
  for (int i = 0; i < iterations; ++i) {
    Slot& s = slots[i % kSlots];
    const size_t n = 1 + rng() % kMax;
    const unsigned char v1 = static_cast<unsigned char>(1 + rng() % 200);
    const unsigned char v2 = dev_b != dev_a ? static_cast<unsigned char>(1 + rng() % 50) : 0;
    const Event w_in[] = {s.a.ready, s.done};
    absl::StatusOr<Event> up = b.copy(dense(dev_a, s.a.base, 0, n),
                                      dense(kHost, in.data() + i * kMax, 0, n), {n, 1, 1}, w_in);
    ASSERT_TRUE(up.ok()) << up.status();
    const Event w_k1[] = {*up};
    absl::StatusOr<Event> k1 = b.launch(dev_a, add_fn(s.a.base, n, v1), w_k1);
    ASSERT_TRUE(k1.ok()) << k1.status();
    Event last = *k1;
    void* result = s.a.base;
    int result_dev = dev_a;
    if (dev_b != dev_a) {
      const Event w_p[] = {last, s.b.ready};
      absl::StatusOr<Event> peer = b.copy(dense(dev_b, s.b.base, 0, n),
                                          dense(dev_a, s.a.base, 0, n), {n, 1, 1}, w_p);
      ASSERT_TRUE(peer.ok()) << peer.status();
      const Event w_k2[] = {*peer};
      absl::StatusOr<Event> k2 = b.launch(dev_b, add_fn(s.b.base, n, v2), w_k2);
      ASSERT_TRUE(k2.ok()) << k2.status();
      last = *k2;
      result = s.b.base;
      result_dev = dev_b;
    }
    const Event w_down[] = {last};
    absl::StatusOr<Event> down = b.copy(dense(kHost, out.data() + i * kMax, 0, n),
                                        dense(result_dev, result, 0, n), {n, 1, 1}, w_down);
    ASSERT_TRUE(down.ok()) << down.status();
    s.done = *down;
    chains.push_back({n, static_cast<unsigned char>(v1 + v2), *down});
  }
  for (int i = 0; i < iterations; ++i) {
    ASSERT_TRUE(chains[i].done.wait().ok()) << "chain " << i;
    const unsigned char* src = in.data() + i * kMax;
    const unsigned char* got = out.data() + i * kMax;
    for (size_t j = 0; j < chains[i].n; ++j) {
      ASSERT_EQ(got[j], static_cast<unsigned char>(src[j] + chains[i].add))
          << "chain " << i << " byte " << j << " of " << chains[i].n;
    }
  }
  for (Slot& s : slots) {
    const Event after[] = {s.done};
    ASSERT_TRUE(b.free(dev_a, s.a, after).ok());
    ASSERT_TRUE(b.free(dev_b, s.b, after).ok());
  }
}

// Options the chains run under: defaults; a worker that never spins (every
// enqueue wakes it); one copy stream per direction.
class CudaChainTest : public CudaBackendTest, public ::testing::WithParamInterface<int> {
 protected:
  void SetUp() override {
    CudaBackendTest::SetUp();
    if (IsSkipped()) return;
    CudaBackendOptions o;
    if (GetParam() == 1) o.worker_spin_us = 0;
    if (GetParam() == 2) o.copy_streams = 1;
    backend_ = make_two_device_backend(o);
    ASSERT_NE(backend_, nullptr);
  }
};
INSTANTIATE_TEST_SUITE_P(Options, CudaChainTest, ::testing::Values(0, 1, 2),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::string(i.param == 0   ? "defaults"
                                              : i.param == 1 ? "no_spin"
                                                             : "one_copy_stream");
                         });

TEST_P(CudaChainTest, ChainsOrderedOnlyByEventsProduceTheRightBytes) {
  run_chains(*backend_, 0, 0, 300, 11);
  run_chains(*backend_, 0, 1, 300, 12);
  run_chains(*backend_, 1, 0, 100, 13);
  for (int d = 0; d < backend_->device_count(); ++d) EXPECT_TRUE(backend_->synchronize(d).ok());
}

TEST_P(CudaChainTest, SeveralCallerThreadsAtOnce) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { run_chains(*backend_, t % 2, (t / 2) % 2, 120, 100 + t); });
  }
  for (std::thread& th : threads) th.join();
  for (int d = 0; d < backend_->device_count(); ++d) EXPECT_TRUE(backend_->synchronize(d).ok());
}

// copy_batch of 1..64 random 2-D and 3-D rectangles against a byte-wise host
// reference, for host->device, device->host, within a device and between
// devices, under several option sets (batch call + copy kernel; copy engine
// only; one by one; the kernel within a device and the engine between devices).
class CudaBatchTest : public CudaBackendTest, public ::testing::WithParamInterface<int> {
 protected:
  void SetUp() override {
    CudaBackendTest::SetUp();
    if (IsSkipped()) return;
    CudaBackendOptions o;
    if (GetParam() == 1) o.copy_kernel = false;
    if (GetParam() == 2) o.batch_api = false;
    if (GetParam() == 3) {
      o.copy_kernel = false;
      o.batch_api_peer = true;
    }
    // The defaults take the copy engines between GPUs; this takes the peer copy kernel.
    if (GetParam() == 4) o.peer_copy_kernel = true;
    // The destination device's worker issues the copies between devices (with the
    // engines, and with the peer copy kernel, which then reads from the other device);
    // the defaults push (the source's worker).
    if (GetParam() == 5) o.peer_push = false;
    if (GetParam() == 6) {
      o.peer_push = false;
      o.peer_copy_kernel = true;
    }
    backend_ = make_two_device_backend(o);
    ASSERT_NE(backend_, nullptr);
  }
};
std::string batch_option_name(const ::testing::TestParamInfo<int>& i) {
  static const char* const kNames[] = {"defaults", "engine_only", "one_by_one",
                                       "engine_batch_api_peer", "peer_kernel", "peer_pull",
                                       "peer_pull_kernel"};
  return kNames[i.param];
}
INSTANTIATE_TEST_SUITE_P(Options, CudaBatchTest, ::testing::Values(0, 1, 2, 3, 4, 5, 6),
                         batch_option_name);

TEST_P(CudaBatchTest, RandomRectanglesMatchReference) {
  constexpr size_t kSrc = 2 << 20;      // source region
  constexpr size_t kSlot = 40 << 10;    // each op's own destination slot
  constexpr size_t kDst = 64 * kSlot;   // destination region
  struct Case {
    int src, dst;
  };
  const Case cases[] = {{kHost, 0}, {0, kHost}, {0, 0}, {0, 1}, {1, 0}, {kHost, 1}, {1, kHost}};
  std::mt19937 rng(GetParam() * 1000 + 5);
  int round = 0;
  for (const Case& c : cases) {
    for (int rep = 0; rep < 6; ++rep, ++round) {
      // Images of both regions; device regions get them uploaded.
      std::vector<unsigned char> src_img(kSrc), dst_img(kDst);
      fill(src_img, round * 2 + 1);
      fill(dst_img, round * 2 + 2);
      // Host sides: pinned on even rounds, pageable on odd ones.
      PinnedBuffer src_pin(round % 2 == 0 ? kSrc : 0), dst_pin(round % 2 == 0 ? kDst : 0);
      std::vector<unsigned char> src_vec(round % 2 ? kSrc : 0), dst_vec(round % 2 ? kDst : 0);
      unsigned char* src_host = round % 2 == 0 ? src_pin.data() : src_vec.data();
      unsigned char* dst_host = round % 2 == 0 ? dst_pin.data() : dst_vec.data();
      DeviceBuffer src_dev, dst_dev;
      std::vector<Event> ready;
      if (c.src == kHost) {
        std::memcpy(src_host, src_img.data(), kSrc);
      } else {
        absl::StatusOr<DeviceBuffer> b = backend_->allocate(c.src, kSrc);
        ASSERT_TRUE(b.ok()) << b.status();
        src_dev = *b;
        const Event w[] = {b->ready};
        absl::StatusOr<Event> up = backend_->copy(dense(c.src, b->base, 0, kSrc),
                                                  dense(kHost, src_img.data(), 0, kSrc),
                                                  {kSrc, 1, 1}, w);
        ASSERT_TRUE(up.ok()) << up.status();
        ready.push_back(*up);
      }
      if (c.dst == kHost) {
        std::memcpy(dst_host, dst_img.data(), kDst);
      } else {
        absl::StatusOr<DeviceBuffer> b = backend_->allocate(c.dst, kDst);
        ASSERT_TRUE(b.ok()) << b.status();
        dst_dev = *b;
        const Event w[] = {b->ready};
        absl::StatusOr<Event> up = backend_->copy(dense(c.dst, b->base, 0, kDst),
                                                  dense(kHost, dst_img.data(), 0, kDst),
                                                  {kDst, 1, 1}, w);
        ASSERT_TRUE(up.ok()) << up.status();
        ready.push_back(*up);
      }
      void* src_base = c.src == kHost ? static_cast<void*>(src_host) : src_dev.base;
      void* dst_base = c.dst == kHost ? static_cast<void*>(dst_host) : dst_dev.base;
      const size_t nops = 1 + rng() % 64;
      std::vector<CopyOp> ops;
      std::vector<unsigned char> want = dst_img;
      for (size_t k = 0; k < nops; ++k) {
        const bool aligned = rng() % 2 == 0;
        const size_t w = aligned ? 16 * (1 + rng() % 20) : 1 + rng() % 300;
        const size_t h = 1 + rng() % 12;
        const size_t d = rng() % 3 == 0 ? 1 + rng() % 4 : 1;
        auto pitches = [&](size_t* row, size_t* slice) {
          *row = w + (aligned ? 16 * (rng() % 4) : rng() % 64);
          if (rng() % 4 == 0) *row = w;  // dense rows
          const size_t plane = *row * h;
          switch (rng() % 3) {
            case 0: *slice = plane; break;                                 // contiguous planes
            case 1: *slice = plane + *row * (1 + rng() % 3); break;        // whole rows apart
            default: *slice = plane + (aligned ? 16 : 1) * (1 + rng() % 40); break;  // not
          }
        };
        size_t srow, sslice, drow, dslice;
        pitches(&srow, &sslice);
        pitches(&drow, &dslice);
        const size_t sspan = (d - 1) * sslice + (h - 1) * srow + w;
        const size_t dspan = (d - 1) * dslice + (h - 1) * drow + w;
        ASSERT_LE(dspan, kSlot);
        size_t soff = rng() % (kSrc - sspan);
        size_t doff = k * kSlot + rng() % (kSlot - dspan + 1);
        if (aligned) {
          soff &= ~size_t{15};
          doff = std::max(k * kSlot, doff & ~size_t{15});
        }
        ops.push_back(CopyOp{{c.dst, dst_base, doff, drow, dslice},
                             {c.src, src_base, soff, srow, sslice},
                             {w, h, d}});
        reference_copy(want.data() + doff, drow, dslice, src_img.data() + soff, srow, sslice,
                       {w, h, d});
      }
      absl::StatusOr<Event> batch = backend_->copy_batch(ops, ready);
      ASSERT_TRUE(batch.ok()) << batch.status();
      std::vector<unsigned char> got(kDst);
      if (c.dst == kHost) {
        ASSERT_TRUE(batch->wait().ok());
        std::memcpy(got.data(), dst_host, kDst);
      } else {
        const Event w[] = {*batch};
        absl::StatusOr<Event> down = backend_->copy(dense(kHost, got.data(), 0, kDst),
                                                    dense(c.dst, dst_dev.base, 0, kDst),
                                                    {kDst, 1, 1}, w);
        ASSERT_TRUE(down.ok()) << down.status();
        ASSERT_TRUE(down->wait().ok());
      }
      for (size_t i = 0; i < kDst; ++i) {
        ASSERT_EQ(got[i], want[i]) << "src " << c.src << " dst " << c.dst << " round " << round
                                   << ": " << nops << " ops, first difference at byte " << i
                                   << " (op " << i / kSlot << ")";
      }
      for (int dev : {0, 1}) ASSERT_TRUE(backend_->synchronize(dev).ok());
      if (c.src != kHost) {
        ASSERT_TRUE(backend_->free(c.src, src_dev, {}).ok());
      }
      if (c.dst != kHost) {
        ASSERT_TRUE(backend_->free(c.dst, dst_dev, {}).ok());
      }
    }
  }
}

TEST_F(CudaBackendTest, CopyBatchChecksItsOps) {
  std::unique_ptr<Backend> b = make_two_device_backend();
  ASSERT_NE(b, nullptr);
  absl::StatusOr<DeviceBuffer> x = b->allocate(0, 4096), y = b->allocate(1, 4096);
  ASSERT_TRUE(x.ok() && y.ok());
  std::vector<unsigned char> host(4096);
  const CopyOp mixed[] = {{dense(0, x->base, 0, 64), dense(kHost, host.data(), 0, 64), {64, 1, 1}},
                          {dense(1, y->base, 0, 64), dense(kHost, host.data(), 0, 64), {64, 1, 1}}};
  absl::StatusOr<Event> e = b->copy_batch(mixed, {});
  EXPECT_TRUE(absl::IsInvalidArgument(e.status())) << e.status();
  const CopyOp narrow[] = {{{0, x->base, 0, 8, 64}, {kHost, host.data(), 0, 64, 640}, {64, 2, 1}}};
  e = b->copy_batch(narrow, {});
  EXPECT_TRUE(absl::IsInvalidArgument(e.status())) << e.status();
  e = b->copy_batch({}, {});
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->done());
  ASSERT_TRUE(b->free(0, *x, {}).ok());
  ASSERT_TRUE(b->free(1, *y, {}).ok());
}

// ------------------------------------------------------------------ memory

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
  // A second free of the same buffer is an error, not a crash.
  EXPECT_TRUE(absl::IsInvalidArgument((*b)->free(0, *y, {})));
  EXPECT_TRUE((*b)->synchronize(0).ok());
}

// The pool grower (cuda_pool_grower.h) keeps free memory in the GPU's pool
// ahead of the allocations, so that allocate() finds the pool grown already
// (growing it on the caller's thread can wait for kernels, even of another
// GPU). Read through the pool's own counters; on the fake CUDA runtime also
// through who grew the pool.

TEST_F(CudaBackendTest, PoolGrowerKeepsFreeMemoryAheadOfAllocations) {
  constexpr size_t kMiB = size_t{1} << 20, kHeadroom = 64 * kMiB, kStep = 8 * kMiB;
  CudaBackendOptions o;
  o.devices = 1;
  o.pool_headroom_bytes = kHeadroom;
  absl::StatusOr<std::unique_ptr<Backend>> made = make_cuda_backend(o);
  ASSERT_TRUE(made.ok()) << made.status();
  Backend& b = **made;
  ASSERT_GE(b.free_memory(0), 1024 * kMiB) << "needs a GPU with 1 GiB free";
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  auto attr = [&](cudaMemPoolAttr a) {
    uint64_t v = 0;
    EXPECT_EQ(cudaMemPoolGetAttribute(pool, a, &v), cudaSuccess);
    return v;
  };
  auto pool_free = [&] {
    const uint64_t reserved = attr(cudaMemPoolAttrReservedMemCurrent);
    const uint64_t used = attr(cudaMemPoolAttrUsedMemCurrent);
    return reserved > used ? reserved - used : 0;
  };
  // Waits (2 s at most) until the pool has `bytes` free; the free bytes.
  auto wait_free = [&](uint64_t bytes) {
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    uint64_t f = pool_free();
    while (f < bytes && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      f = pool_free();
    }
    return f;
  };
  // Primed when the backend was made.
  EXPECT_GE(pool_free(), kHeadroom / 2);
  const uint64_t grown_here_before =
      fake_cuda_pool_growths_on_this_thread ? fake_cuda_pool_growths_on_this_thread() : 0;
  std::vector<DeviceBuffer> held;
  for (size_t total = kStep; total <= 512 * kMiB; total += kStep) {
    absl::StatusOr<DeviceBuffer> x = b.allocate(0, kStep);
    ASSERT_TRUE(x.ok()) << x.status();
    held.push_back(*x);
    // The grower catches up: half its headroom (a quarter of what is in
    // use, at least 64 MiB) is free again.
    const uint64_t want = std::max<uint64_t>(kHeadroom, total / 4) / 2;
    EXPECT_GE(wait_free(want), want) << "after " << total / kMiB << " MiB allocated";
  }
  if (fake_cuda_pool_growths_on_this_thread) {
    EXPECT_EQ(fake_cuda_pool_growths_on_this_thread() - grown_here_before, 0u)
        << "allocate() grew the pool on the calling thread";
  }
  for (const DeviceBuffer& x : held) ASSERT_TRUE(b.free(0, x, {}).ok());
  EXPECT_TRUE(b.synchronize(0).ok());
}

// A capacity the program sets is taken into the pool when the backend starts (up to 4 GiB),
// so that an out-of-core run does not grow the pool while it fills the device.
TEST_F(CudaBackendTest, ASetCapacityIsPooledAtCreation) {
  constexpr size_t kCapacity = size_t{256} << 20;
  CudaBackendOptions o;
  o.devices = 1;
  o.capacity_bytes = kCapacity;
  absl::StatusOr<std::unique_ptr<Backend>> made = make_cuda_backend(o);
  ASSERT_TRUE(made.ok()) << made.status();
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  uint64_t reserved = 0, used = 0;
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved), cudaSuccess);
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess);
  // The pool is shared with the fixture's backend (whose grower primed 64 MiB): at least
  // half the capacity is free in it.
  EXPECT_GE(reserved - used, kCapacity / 2);
  const uint64_t grown_before =
      fake_cuda_pool_growths_on_this_thread ? fake_cuda_pool_growths_on_this_thread() : 0;
  absl::StatusOr<DeviceBuffer> all = (*made)->allocate(0, kCapacity / 2);
  ASSERT_TRUE(all.ok()) << all.status();
  if (fake_cuda_pool_growths_on_this_thread) {
    EXPECT_EQ(fake_cuda_pool_growths_on_this_thread() - grown_before, 0u);
  }
  ASSERT_TRUE((*made)->free(0, *all, {}).ok());
  EXPECT_TRUE((*made)->synchronize(0).ok());
}

// An allocation made while the free of a block of the same size still waits in the
// issue worker's queue can reuse that block in stream order (the worker issues the free
// first) instead of growing the pool, which waits for the pool's pending frees, i.e. for
// whatever the freed block's last users wait for (out of core: the write-backs of evicted
// instances). The worker is held by a launch function that sleeps, so that the free is
// still queued when allocate() runs. The fake CUDA runtime hands a block freed on the
// memory stream to the next allocation of its size there; a GPU's pool may pick another
// free block, so there the test checks only that nothing fails.
TEST_F(CudaBackendTest, AllocationAfterAQueuedFreeCanReuseItsBlock) {
  constexpr size_t kBytes = size_t{32} << 20;
  CudaBackendOptions o;
  o.devices = 1;
  o.pool_headroom_bytes = 0;  // no grower
  absl::StatusOr<std::unique_ptr<Backend>> made = make_cuda_backend(o);
  ASSERT_TRUE(made.ok()) << made.status();
  Backend& b = **made;
  absl::StatusOr<DeviceBuffer> first = b.allocate(0, kBytes);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<Event> held = b.launch(
      0, [](const bbmm_launch_info&) { std::this_thread::sleep_for(std::chrono::milliseconds(50)); },
      {});
  ASSERT_TRUE(held.ok()) << held.status();
  ASSERT_TRUE(b.free(0, *first, {}).ok());
  absl::StatusOr<DeviceBuffer> second = b.allocate(0, kBytes);
  ASSERT_TRUE(second.ok()) << second.status();
  if (fake_cuda_pool_growths_on_this_thread) {
    EXPECT_EQ(second->base, first->base) << "the queued free's block was not reused";
  }
  ASSERT_TRUE(b.free(0, *second, {}).ok());
  EXPECT_TRUE(b.synchronize(0).ok());
}

// A freed block handed out again must not be written before the old user is
// done: the new buffer's ready event (recorded on the memory stream after the
// free waited for the old user) orders it.
TEST_F(CudaBackendTest, ReusedPoolMemoryWaitsForTheOldUser) {
  PinnedBuffer flag(sizeof(int), /*mapped=*/true), out(1 << 20);
  *reinterpret_cast<volatile int*>(flag.data()) = 0;
  const size_t n = 1 << 20;
  absl::StatusOr<DeviceBuffer> a = backend_->allocate(0, n);
  ASSERT_TRUE(a.ok());
  std::vector<unsigned char> ones(n, 1), twos(n, 2);
  const Event w0[] = {a->ready};
  absl::StatusOr<Event> up = backend_->copy(dense(0, a->base, 0, n), dense(kHost, ones.data(), 0, n),
                                            {n, 1, 1}, w0);
  ASSERT_TRUE(up.ok());
  // The old user: waits for the flag, then adds 1 (expects 1 -> 2), then is
  // read back.
  int* f = reinterpret_cast<int*>(flag.data());
  const Event w1[] = {*up};
  absl::StatusOr<Event> spin = backend_->launch(
      0, [f](const LaunchContext& ctx) {
        (void)launch_spin_until(f, nullptr, static_cast<cudaStream_t>(ctx.queue));
      }, w1);
  ASSERT_TRUE(spin.ok());
  const Event w2[] = {*spin};
  absl::StatusOr<Event> add = backend_->launch(0, add_fn(a->base, n, 1), w2);
  ASSERT_TRUE(add.ok());
  const Event w3[] = {*add};
  absl::StatusOr<Event> down = backend_->copy(dense(kHost, out.data(), 0, n),
                                              dense(0, a->base, 0, n), {n, 1, 1}, w3);
  ASSERT_TRUE(down.ok());
  const Event after[] = {*down};
  ASSERT_TRUE(backend_->free(0, *a, after).ok());
  // Give the worker time to issue the free, so that the pool can hand the
  // block out again.
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // A new buffer of the same size, likely the same block: written at once
  // (waiting only for its ready event).
  absl::StatusOr<DeviceBuffer> b = backend_->allocate(0, n);
  ASSERT_TRUE(b.ok());
  const Event w4[] = {b->ready};
  absl::StatusOr<Event> over = backend_->copy(dense(0, b->base, 0, n), dense(kHost, twos.data(), 0, n),
                                              {n, 1, 1}, w4);
  ASSERT_TRUE(over.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // Releases the spinning kernel (an atomic store: the fake runtime's kernel
  // reads it from another thread).
  __atomic_store_n(reinterpret_cast<int*>(flag.data()), 1, __ATOMIC_RELEASE);
  ASSERT_TRUE(down->wait().ok());
  ASSERT_TRUE(over->wait().ok());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(out.data()[i], 2) << i;
  const Event after2[] = {*over};
  ASSERT_TRUE(backend_->free(0, *b, after2).ok());
  EXPECT_TRUE(backend_->synchronize(0).ok());
}

// ------------------------------------------------------------------ launch

TEST_F(CudaBackendTest, LaunchRunsOnTheWorkerAfterItsWaits) {
  std::vector<int> host(1 << 16);
  std::iota(host.begin(), host.end(), 0);
  const size_t bytes = host.size() * sizeof(int);
  absl::StatusOr<DeviceBuffer> buf = backend_->allocate(0, bytes);
  ASSERT_TRUE(buf.ok());
  const Event w0[] = {buf->ready};
  absl::StatusOr<Event> up = backend_->copy(dense(0, buf->base, 0, bytes),
                                            dense(kHost, host.data(), 0, bytes), {bytes, 1, 1}, w0);
  ASSERT_TRUE(up.ok());
  const Event w[] = {*up};
  std::atomic<void*> seen_queue{nullptr};
  std::atomic<bool> on_caller{true};
  const std::thread::id caller = std::this_thread::get_id();
  void* base = buf->base;
  absl::StatusOr<Event> k = backend_->launch(
      0,
      [&seen_queue, &on_caller, caller, base, bytes](const LaunchContext& ctx) {
        seen_queue = ctx.queue;
        on_caller = std::this_thread::get_id() == caller;
        // A "kernel" made of a memset on the stream: zero the first half.
        cudaMemsetAsync(base, 0, bytes / 2, static_cast<cudaStream_t>(ctx.queue));
      },
      w);
  ASSERT_TRUE(k.ok()) << k.status();
  std::vector<int> back(host.size(), -1);
  const Event w2[] = {*k};
  absl::StatusOr<Event> down = backend_->copy(dense(kHost, back.data(), 0, bytes),
                                              dense(0, buf->base, 0, bytes), {bytes, 1, 1}, w2);
  ASSERT_TRUE(down.ok());
  ASSERT_TRUE(down->wait().ok());
  EXPECT_NE(seen_queue.load(), nullptr);
  EXPECT_FALSE(on_caller.load()) << "the launch function ran on the calling thread";
  for (size_t i = 0; i < host.size(); ++i) {
    ASSERT_EQ(back[i], i < host.size() / 2 ? 0 : static_cast<int>(i)) << i;
  }
  const Event after[] = {*down};
  ASSERT_TRUE(backend_->free(0, *buf, after).ok());
  EXPECT_TRUE(backend_->synchronize(0).ok());
}

TEST_F(CudaBackendTest, LaunchExceptionBecomesTheEventsError) {
  absl::StatusOr<Event> k =
      backend_->launch(0, [](const LaunchContext&) { throw std::runtime_error("boom"); }, {});
  ASSERT_TRUE(k.ok()) << k.status();  // the function runs later, on the worker
  absl::Status s = k->wait();
  EXPECT_TRUE(absl::IsInternal(s)) << s;
  EXPECT_NE(std::string(s.message()).find("boom"), std::string::npos) << s;
  EXPECT_TRUE(k->done());
  // synchronize returns the device's first error once, then clears it.
  absl::Status first = backend_->synchronize(0);
  EXPECT_NE(std::string(first.message()).find("boom"), std::string::npos) << first;
  EXPECT_TRUE(backend_->synchronize(0).ok());
}

TEST_F(CudaBackendTest, KernelLaunchErrorBecomesTheEventsError) {
  absl::StatusOr<Event> k = backend_->launch(
      0, [](const LaunchContext& ctx) { (void)launch_invalid(static_cast<cudaStream_t>(ctx.queue)); },
      {});
  ASSERT_TRUE(k.ok()) << k.status();
  absl::Status s = k->wait();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("cudaGetLastError"), std::string::npos) << s;
  // A block of too many threads: CUDA 12 says cudaErrorInvalidConfiguration,
  // CUDA 13 (seen on an H100, driver 580) cudaErrorInvalidValue.
  const std::string m(s.message());
  EXPECT_TRUE(m.find("cudaErrorInvalidConfiguration") != std::string::npos ||
              m.find("cudaErrorInvalidValue") != std::string::npos)
      << s;
  EXPECT_FALSE(backend_->synchronize(0).ok());
  // The error was not sticky: the device keeps working.
  absl::StatusOr<Event> ok = backend_->launch(0, [](const LaunchContext&) {}, {});
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok->wait().ok());
  EXPECT_TRUE(backend_->synchronize(0).ok());
}

TEST_F(CudaBackendTest, AFailedEventFailsItsDependantsWithoutRunningThem) {
  absl::StatusOr<Event> bad =
      backend_->launch(0, [](const LaunchContext&) { throw std::runtime_error("boom"); }, {});
  ASSERT_TRUE(bad.ok());
  const Event w[] = {*bad};
  std::atomic<bool> ran{false};
  absl::StatusOr<Event> k = backend_->launch(0, [&ran](const LaunchContext&) { ran = true; }, w);
  ASSERT_TRUE(k.ok());
  std::vector<unsigned char> host(4096, 7);
  absl::StatusOr<DeviceBuffer> buf = backend_->allocate(0, host.size());
  ASSERT_TRUE(buf.ok());
  const Event w2[] = {*bad, buf->ready};
  absl::StatusOr<Event> c = backend_->copy(dense(0, buf->base, 0, host.size()),
                                           dense(kHost, host.data(), 0, host.size()),
                                           {host.size(), 1, 1}, w2);
  ASSERT_TRUE(c.ok());
  // A dependant of a dependant fails too.
  const Event w3[] = {*c};
  absl::StatusOr<Event> c2 = backend_->copy(dense(kHost, host.data(), 0, host.size()),
                                            dense(0, buf->base, 0, host.size()),
                                            {host.size(), 1, 1}, w3);
  ASSERT_TRUE(c2.ok());
  for (const Event* e : {&*k, &*c, &*c2}) {
    absl::Status s = e->wait();
    EXPECT_FALSE(s.ok());
    EXPECT_NE(std::string(s.message()).find("did not run"), std::string::npos) << s;
    EXPECT_NE(std::string(s.message()).find("boom"), std::string::npos) << s;
  }
  EXPECT_FALSE(ran.load());
  EXPECT_TRUE(std::all_of(host.begin(), host.end(), [](unsigned char x) { return x == 7; }));
  // A free after a failed event still frees.
  const size_t before = backend_->free_memory(0);
  ASSERT_TRUE(backend_->free(0, *buf, w3).ok());
  EXPECT_EQ(backend_->free_memory(0), before + host.size());
  // record() fails with the first error until synchronize() clears it.
  absl::StatusOr<Event> rec = backend_->record(0);
  ASSERT_TRUE(rec.ok());
  EXPECT_FALSE(rec->wait().ok());
  EXPECT_FALSE(backend_->synchronize(0).ok());
  rec = backend_->record(0);
  ASSERT_TRUE(rec.ok());
  EXPECT_TRUE(rec->wait().ok());
  EXPECT_TRUE(backend_->synchronize(0).ok());
}

TEST_F(CudaBackendTest, SynchronizeInsideALaunchFunctionIsAnError) {
  absl::Status inner;
  Backend* b = backend_.get();
  absl::StatusOr<Event> k =
      backend_->launch(0, [b, &inner](const LaunchContext&) { inner = b->synchronize(0); }, {});
  ASSERT_TRUE(k.ok());
  ASSERT_TRUE(k->wait().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(inner)) << inner;
}

// ------------------------------------------------------------------ record, teardown

TEST_F(CudaBackendTest, RecordCoversEveryStream) {
  PinnedBuffer flag(sizeof(int), /*mapped=*/true);
  *reinterpret_cast<volatile int*>(flag.data()) = 0;
  const size_t n = size_t{64} << 20;
  PinnedBuffer host(n), host_down(n);
  std::memset(host.data(), 3, n);
  absl::StatusOr<DeviceBuffer> a = backend_->allocate(0, n), b = backend_->allocate(0, n);
  absl::StatusOr<DeviceBuffer> c = backend_->allocate(0, n), d = backend_->allocate(0, n);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok());
  int* f = reinterpret_cast<int*>(flag.data());
  const Event w0[] = {a->ready, b->ready, c->ready, d->ready};
  absl::StatusOr<Event> spin = backend_->launch(
      0, [f](const LaunchContext& ctx) {
        (void)launch_spin_until(f, nullptr, static_cast<cudaStream_t>(ctx.queue));
      }, w0);
  ASSERT_TRUE(spin.ok());
  // Copies on the copy streams, held back by the spinning kernel, and a
  // device-local one; on buffers of their own (they run concurrently).
  const Event ws[] = {*spin};
  absl::StatusOr<Event> up = backend_->copy(dense(0, a->base, 0, n), dense(kHost, host.data(), 0, n),
                                            {n, 1, 1}, ws);
  absl::StatusOr<Event> down = backend_->copy(dense(kHost, host_down.data(), 0, n),
                                              dense(0, b->base, 0, n), {n, 1, 1}, ws);
  absl::StatusOr<Event> local = backend_->copy({0, d->base, 0, 4096, 8192}, {0, c->base, 0, 8192, 8192},
                                               {4096, n / 8192, 1}, ws);
  ASSERT_TRUE(up.ok() && down.ok() && local.ok());
  absl::StatusOr<Event> rec = backend_->record(0);
  ASSERT_TRUE(rec.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(rec->done()) << "record completed while the kernel it covers was spinning";
  // Releases the spinning kernel (an atomic store: the fake runtime's kernel
  // reads it from another thread).
  __atomic_store_n(reinterpret_cast<int*>(flag.data()), 1, __ATOMIC_RELEASE);
  ASSERT_TRUE(rec->wait().ok());
  EXPECT_TRUE(spin->done());
  EXPECT_TRUE(up->done()) << "record() did not cover the host-to-device stream";
  EXPECT_TRUE(down->done()) << "record() did not cover the device-to-host stream";
  EXPECT_TRUE(local->done()) << "record() did not cover the device-to-device stream";
  const Event after[] = {*rec};
  for (const DeviceBuffer* x : {&*a, &*b, &*c, &*d}) ASSERT_TRUE(backend_->free(0, *x, after).ok());
  EXPECT_TRUE(backend_->synchronize(0).ok());
}

// A copy waiting for a kernel holds back its own stream only. With both copy streams of
// one direction held back (copies waiting for a kernel that spins until the host sets a
// flag), copies of the other two directions, waiting for nothing, complete while the
// kernel still spins. (Streams that shared a hardware work queue, or a worker that
// waited on the host for the held-back copies, would hold them back too.)
TEST_F(CudaBackendTest, HeldBackStreamsHoldBackNoOtherStream) {
  enum Dir { kH2D, kD2H, kD2D };
  const char* names[] = {"host-to-device", "device-to-host", "device-to-device"};
  const size_t n = size_t{1} << 20;  // per copy; 6 disjoint slots per buffer
  PinnedBuffer flag(sizeof(int), /*mapped=*/true), host(6 * n);
  absl::StatusOr<DeviceBuffer> a = backend_->allocate(0, 6 * n), b = backend_->allocate(0, 6 * n);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a->ready.wait().ok() && b->ready.wait().ok());
  volatile int* f = reinterpret_cast<volatile int*>(flag.data());
  // Copy `k` (0, 1) of direction `d` in its own slot d * 2 + k of the buffers.
  auto copy = [&](Dir d, int k, std::span<const Event> waits) {
    const size_t at = static_cast<size_t>(d * 2 + k) * n;
    switch (d) {
      case kH2D:
        return backend_->copy(dense(0, a->base, at, n), dense(kHost, host.data(), at, n),
                              {n, 1, 1}, waits);
      case kD2H:
        return backend_->copy(dense(kHost, host.data(), at, n), dense(0, b->base, at, n),
                              {n, 1, 1}, waits);
      default:
        return backend_->copy(dense(0, b->base, at, n), dense(0, a->base, at, n), {n, 1, 1},
                              waits);
    }
  };
  for (Dir held : {kH2D, kD2H, kD2D}) {
    SCOPED_TRACE(std::string("held back: ") + names[held]);
    *f = 0;
    absl::StatusOr<Event> spin = backend_->launch(
        0, [&flag](const LaunchContext& ctx) {
          (void)launch_spin_until(reinterpret_cast<int*>(flag.data()), nullptr,
                                  static_cast<cudaStream_t>(ctx.queue));
        }, {});
    ASSERT_TRUE(spin.ok());
    const Event ws[] = {*spin};
    std::vector<Event> held_back, free_ones;
    std::vector<std::string> what;
    // Two copies: the direction's two copy streams (round-robin).
    for (int k = 0; k < 2; ++k) {
      absl::StatusOr<Event> e = copy(held, k, ws);
      ASSERT_TRUE(e.ok()) << e.status();
      held_back.push_back(*e);
    }
    for (Dir d : {kH2D, kD2H, kD2D}) {
      if (d == held) continue;
      for (int k = 0; k < 2; ++k) {
        absl::StatusOr<Event> e = copy(d, k, {});
        ASSERT_TRUE(e.ok()) << e.status();
        free_ones.push_back(*e);
        what.push_back(absl::StrCat(names[d], " copy ", k));
      }
    }
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
    auto all_done = [&] {
      return std::all_of(free_ones.begin(), free_ones.end(), [](const Event& e) { return e.done(); });
    };
    while (!all_done() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::string stuck;
    for (size_t i = 0; i < free_ones.size(); ++i) {
      if (!free_ones[i].done()) absl::StrAppend(&stuck, stuck.empty() ? "" : ", ", what[i]);
    }
    const bool spinning = !spin->done();
    const bool held_waiting = !held_back[0].done() && !held_back[1].done();
    __atomic_store_n(const_cast<int*>(f), 1, __ATOMIC_RELEASE);  // the fake kernel reads it on another thread
    ASSERT_TRUE(spin->wait().ok());
    for (Event& e : held_back) ASSERT_TRUE(e.wait().ok());
    for (Event& e : free_ones) ASSERT_TRUE(e.wait().ok());
    EXPECT_TRUE(spinning && held_waiting) << "the kernel or a held-back copy ended early";
    EXPECT_TRUE(stuck.empty()) << "waited for the spinning kernel though independent of it: "
                               << stuck;
  }
  ASSERT_TRUE(backend_->free(0, *a, {}).ok());
  ASSERT_TRUE(backend_->free(0, *b, {}).ok());
  EXPECT_TRUE(backend_->synchronize(0).ok());
}

TEST_F(CudaBackendTest, DestructionWithPendingWorkDrainsCleanly) {
  constexpr int kChains = 64;
  constexpr size_t kBytes = 256 << 10;
  PinnedBuffer in(kChains * kBytes), out(kChains * kBytes);
  fill(in.data(), in.size(), 99);
  std::memset(out.data(), 0, out.size());
  {
    std::unique_ptr<Backend> b = make_two_device_backend();
    ASSERT_NE(b, nullptr);
    for (int i = 0; i < kChains; ++i) {
      absl::StatusOr<DeviceBuffer> x = b->allocate(0, kBytes), y = b->allocate(1, kBytes);
      ASSERT_TRUE(x.ok() && y.ok());
      const Event w0[] = {x->ready};
      absl::StatusOr<Event> up = b->copy(dense(0, x->base, 0, kBytes),
                                         dense(kHost, in.data() + i * kBytes, 0, kBytes),
                                         {kBytes, 1, 1}, w0);
      ASSERT_TRUE(up.ok());
      const Event w1[] = {*up};
      absl::StatusOr<Event> k = b->launch(0, add_fn(x->base, kBytes, 5), w1);
      ASSERT_TRUE(k.ok());
      const Event w2[] = {*k, y->ready};
      absl::StatusOr<Event> peer = b->copy(dense(1, y->base, 0, kBytes),
                                           dense(0, x->base, 0, kBytes), {kBytes, 1, 1}, w2);
      ASSERT_TRUE(peer.ok());
      const Event w3[] = {*peer};
      absl::StatusOr<Event> down = b->copy(dense(kHost, out.data() + i * kBytes, 0, kBytes),
                                           dense(1, y->base, 0, kBytes), {kBytes, 1, 1}, w3);
      ASSERT_TRUE(down.ok());
      ASSERT_TRUE(b->free(0, *x, w3).ok());
      const Event w4[] = {*down};
      ASSERT_TRUE(b->free(1, *y, w4).ok());
      if (i % 8 == 0) {
        ASSERT_TRUE(b->record(i % 2).ok());
      }
    }
    // The backend goes away with all of that queued or running.
  }
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(out.data()[i], static_cast<unsigned char>(in.data()[i] + 5)) << i;
  }
}

// ------------------------------------------------------------------ no host blocking

// With a kernel spinning on each device until the host sets a flag, a long
// list of copies, launches, batches, allocations, frees and records that all
// (directly or not) wait for those kernels must return on the calling thread
// while the kernels still spin: the calling thread never waits for device
// work. A watchdog releases the flag after 20 s so that a blocking call fails
// the test instead of hanging it.
TEST_F(CudaBackendTest, NoCallBlocksOnDeviceWork) {
  std::unique_ptr<Backend> b = make_two_device_backend();
  ASSERT_NE(b, nullptr);
  const int ndev = 2;
  PinnedBuffer flags(4 * sizeof(int), /*mapped=*/true);
  volatile int* flag = reinterpret_cast<volatile int*>(flags.data());
  volatile int* seen = flag + 1;  // seen[0], seen[1]
  for (int i = 0; i < 3; ++i) flag[i] = 0;
  std::atomic<bool> issued{false}, watchdog_fired{false};
  // The call the test thread is in (named in the failure when one blocks).
  std::atomic<const char*> in_call{"(none)"};
  std::atomic<int> in_device{-1};
  std::thread watchdog([&] {
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (!issued && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!issued) {
      watchdog_fired = true;
      std::printf("[ info     ] watchdog: the test thread is blocked in %s (device %d)\n",
                  in_call.load(), in_device.load());
      std::fflush(stdout);
      __atomic_store_n(const_cast<int*>(&flag[0]), 1, __ATOMIC_RELEASE);
    }
  });
  int* f = reinterpret_cast<int*>(flags.data());
  std::vector<Event> spin(ndev);
  for (int d = 0; d < ndev; ++d) {
    int* s = f + 1 + d;
    absl::StatusOr<Event> e = b->launch(
        d, [f, s](const LaunchContext& ctx) {
          (void)launch_spin_until(f, s, static_cast<cudaStream_t>(ctx.queue));
        }, {});
    ASSERT_TRUE(e.ok());
    spin[d] = *e;
  }
  constexpr int kIters = 64;
  constexpr size_t kBytes = 64 << 10;
  PinnedBuffer in(kIters * ndev * kBytes), out(kIters * ndev * kBytes),
      out_peer(kIters * ndev * kBytes), out_rect(kIters * ndev * kBytes);
  fill(in.data(), in.size(), 5);
  std::memset(out.data(), 0, out.size());
  std::memset(out_peer.data(), 0, out_peer.size());
  std::memset(out_rect.data(), 0, out_rect.size());
  double worst_us = 0;
  std::vector<Event> all;
  const char* slowest = "(none)";
  auto timed = [&](const char* what, int device, auto&& call) {
    in_call = what;
    in_device = device;
    const auto t0 = Clock::now();
    auto r = call();
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (us > worst_us) {
      worst_us = us;
      slowest = what;
    }
    return r;
  };
  for (int i = 0; i < kIters; ++i) {
    for (int d = 0; d < ndev; ++d) {
      const int o = 1 - d;
      const size_t slot = (static_cast<size_t>(i) * ndev + d) * kBytes;
      absl::StatusOr<DeviceBuffer> x = timed("allocate", d, [&] { return b->allocate(d, kBytes); });
      absl::StatusOr<DeviceBuffer> y = timed("allocate (other device)", o, [&] { return b->allocate(o, kBytes); });
      ASSERT_TRUE(x.ok() && y.ok());
      const Event w0[] = {spin[d], x->ready};
      absl::StatusOr<Event> up = timed("copy H2D", d, [&] {
        return b->copy(dense(d, x->base, 0, kBytes), dense(kHost, in.data() + slot, 0, kBytes),
                       {kBytes, 1, 1}, w0);
      });
      ASSERT_TRUE(up.ok());
      const Event w1[] = {*up};
      absl::StatusOr<Event> k = timed("launch", d, [&] { return b->launch(d, add_fn(x->base, kBytes, 9), w1); });
      ASSERT_TRUE(k.ok());
      const Event w2[] = {*k};
      absl::StatusOr<Event> down = timed("copy D2H", d, [&] {
        return b->copy(dense(kHost, out.data() + slot, 0, kBytes), dense(d, x->base, 0, kBytes),
                       {kBytes, 1, 1}, w2);
      });
      const Event w3[] = {*k, y->ready, spin[o]};
      absl::StatusOr<Event> peer = timed("copy peer", o, [&] {
        return b->copy(dense(o, y->base, 0, kBytes), dense(d, x->base, 0, kBytes), {kBytes, 1, 1},
                       w3);
      });
      ASSERT_TRUE(down.ok() && peer.ok());
      const Event w4[] = {*peer};
      absl::StatusOr<Event> down_peer = timed("copy D2H (other device)", o, [&] {
        return b->copy(dense(kHost, out_peer.data() + slot, 0, kBytes),
                       dense(o, y->base, 0, kBytes), {kBytes, 1, 1}, w4);
      });
      // Four quarter-rectangles of x (256 rows of 256 B, as 128 B wide
      // halves) back to the host in one batch.
      std::vector<CopyOp> ops;
      for (size_t q = 0; q < 4; ++q) {
        const size_t off = (q / 2) * 128 * 256 + (q % 2) * 128;
        ops.push_back({{kHost, out_rect.data() + slot, off, 256, 256 * 128},
                       {d, x->base, off, 256, 256 * 128},
                       {128, 128, 1}});
      }
      absl::StatusOr<Event> batch = timed("copy_batch", d, [&] { return b->copy_batch(ops, w2); });
      absl::StatusOr<Event> rec = timed("record", d, [&] { return b->record(d); });
      ASSERT_TRUE(down_peer.ok() && batch.ok() && rec.ok());
      const Event fx[] = {*down, *peer, *batch};
      ASSERT_TRUE(timed("free", d, [&] { return b->free(d, *x, fx); }).ok());
      const Event fy[] = {*down_peer};
      ASSERT_TRUE(timed("free (other device)", o, [&] { return b->free(o, *y, fy); }).ok());
      // Queries answer at once.
      EXPECT_FALSE(timed("Event::done", d, [&] { return spin[d].done(); }));
      EXPECT_FALSE(timed("Event::done (record)", d, [&] { return rec->done(); }));
      all.insert(all.end(), {*down, *down_peer, *batch, *rec});
    }
  }
  // Still spinning: every call above returned while the kernels ran.
  const bool still_spinning = __atomic_load_n(&seen[0], __ATOMIC_ACQUIRE) == 0 &&
                              __atomic_load_n(&seen[1], __ATOMIC_ACQUIRE) == 0 &&
                              __atomic_load_n(&flag[0], __ATOMIC_ACQUIRE) == 0;
  issued = true;
  EXPECT_TRUE(still_spinning) << "a kernel finished before the host released it";
  EXPECT_FALSE(watchdog_fired.load()) << "a call blocked until the watchdog released the GPU";
  std::printf("[ info     ] %d calls issued while the GPUs spun; slowest call %.1f us (%s)\n",
              kIters * ndev * 11, worst_us, slowest);
  __atomic_store_n(const_cast<int*>(&flag[0]), 1, __ATOMIC_RELEASE);
  watchdog.join();
  // Released, the device work must drain: poll (a deadlock on the devices
  // fails the test, naming how much is left, instead of hanging it).
  const auto drain_deadline = Clock::now() + std::chrono::seconds(30);
  size_t pending = all.size();
  while (pending > 0 && Clock::now() < drain_deadline) {
    pending = std::count_if(all.begin(), all.end(), [](const Event& e) { return !e.done(); });
    if (pending > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(pending, 0u) << "of " << all.size()
                         << " operations, these never completed after the spinning kernels "
                            "were released (spin done: "
                         << spin[0].done() << ", " << spin[1].done() << ")";
  for (const Event& e : all) ASSERT_TRUE(e.wait().ok());
  for (int d = 0; d < ndev; ++d) EXPECT_TRUE(b->synchronize(d).ok());
  for (size_t i = 0; i < in.size(); ++i) {
    const unsigned char want = static_cast<unsigned char>(in.data()[i] + 9);
    ASSERT_EQ(out.data()[i], want) << i;
    ASSERT_EQ(out_peer.data()[i], want) << i;
  }
  for (size_t s = 0; s < in.size(); s += kBytes) {
    for (size_t j = 0; j < 256 * 256; ++j) {
      ASSERT_EQ(out_rect.data()[s + j], static_cast<unsigned char>(in.data()[s + j] + 9)) << s + j;
    }
  }
}

// An allocation's ready event is recorded on the memory stream by the issue
// worker, not by the calling thread: getting a CUDA event (creating one when the
// pool is empty) and recording it are driver calls, and they waited 28-35 ms on
// the calling thread while the device's queues were full (fdtd2d on one H200,
// BBMM_SLOW_CALL_US). On the fake runtime the calling thread's event calls are
// counted: 1,500 allocations (more than the pool's 1,024 events) make none. Every
// buffer is usable after its ready event: a value copied in and read back.
TEST_F(CudaBackendTest, AllocationsRecordNoEventOnTheCallingThread) {
  constexpr int kBuffers = 1500;
  constexpr size_t kBytes = 64;
  const uint64_t before =
      fake_cuda_event_calls_on_this_thread ? fake_cuda_event_calls_on_this_thread() : 0;
  std::vector<DeviceBuffer> bufs;
  for (int i = 0; i < kBuffers; ++i) {
    absl::StatusOr<DeviceBuffer> b = backend_->allocate(0, kBytes);
    ASSERT_TRUE(b.ok()) << b.status();
    bufs.push_back(*b);
  }
  if (fake_cuda_event_calls_on_this_thread) {
    EXPECT_EQ(fake_cuda_event_calls_on_this_thread() - before, 0u);
  }
  std::vector<unsigned char> in(kBytes), back(kBytes);
  for (int i = 0; i < kBuffers; i += 97) {
    fill(in, static_cast<unsigned>(i));
    std::fill(back.begin(), back.end(), 0);
    const Event w0[] = {bufs[i].ready};
    absl::StatusOr<Event> up = backend_->copy(dense(0, bufs[i].base, 0, kBytes),
                                              dense(kHost, in.data(), 0, kBytes),
                                              CopyShape{kBytes, 1, 1}, w0);
    ASSERT_TRUE(up.ok()) << up.status();
    const Event w1[] = {*up};
    absl::StatusOr<Event> down = backend_->copy(dense(kHost, back.data(), 0, kBytes),
                                                dense(0, bufs[i].base, 0, kBytes),
                                                CopyShape{kBytes, 1, 1}, w1);
    ASSERT_TRUE(down.ok()) << down.status();
    ASSERT_TRUE(down->wait().ok());
    EXPECT_EQ(back, in) << "buffer " << i;
  }
  for (const DeviceBuffer& b : bufs) {
    const Event after[] = {b.ready};
    ASSERT_TRUE(backend_->free(0, b, after).ok());
  }
  EXPECT_TRUE(backend_->synchronize(0).ok());
}

// An allocation that the pool's free memory covers does not wait for the issue
// worker, even with frees queued there: issuing may wait for the device (a
// stream's queue full of staged copy rounds), and fdtd2d's one-element read-in
// per step waited up to 54 ms for it on 2 x H200 (BBMM_SLOW_CALL_US). The
// worker is held inside a launch function, with a free queued behind it;
// without the pool check the second allocation waited until the watchdog let
// the worker go.
TEST_F(CudaBackendTest, AllocationThePoolCoversDoesNotWaitForTheIssueWorker) {
  std::atomic<bool> let_go{false}, done{false};
  absl::StatusOr<Event> held = backend_->launch(
      0, [&let_go](const LaunchContext&) {
        while (!let_go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }, {});
  ASSERT_TRUE(held.ok()) << held.status();
  absl::StatusOr<DeviceBuffer> first = backend_->allocate(0, 4096);
  ASSERT_TRUE(first.ok()) << first.status();
  const Event after_first[] = {first->ready, *held};
  ASSERT_TRUE(backend_->free(0, *first, after_first).ok());
  std::thread watchdog([&] {
    const auto deadline = Clock::now() + std::chrono::seconds(3);
    while (!done.load() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    let_go = true;
  });
  const auto t0 = Clock::now();
  absl::StatusOr<DeviceBuffer> second = backend_->allocate(0, 4096);
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  done = true;
  watchdog.join();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_LT(waited, 1.5) << "allocate waited " << waited << " s for the issue worker";
  const Event after_second[] = {second->ready};
  ASSERT_TRUE(backend_->free(0, *second, after_second).ok());
  EXPECT_TRUE(backend_->synchronize(0).ok());
}

// ------------------------------------------------------------------ cost

// The calling thread's cost of each enqueueing call (printed; a unit test
// asserts nothing about time).
TEST_F(CudaBackendTest, EnqueueCostOnTheCallingThread) {
  constexpr int kCalls = 20000;
  PinnedBuffer host(4096);
  // One 4 KiB slot per copy: the copies go to several streams and wait only for the
  // allocation, so they must not write the same bytes (a race ThreadSanitizer reports
  // over the fake runtime, whose streams are threads).
  absl::StatusOr<DeviceBuffer> buf = backend_->allocate(0, size_t{4096} * kCalls);
  ASSERT_TRUE(buf.ok());
  std::vector<DeviceBuffer> frees;
  for (int i = 0; i < kCalls; ++i) {
    absl::StatusOr<DeviceBuffer> f = backend_->allocate(0, 256);
    ASSERT_TRUE(f.ok());
    frees.push_back(*f);
  }
  ASSERT_TRUE(backend_->synchronize(0).ok());
  auto report = [](const char* what, std::vector<double>& t) {
    std::sort(t.begin(), t.end());
    std::printf("[ info     ] %-28s median %.3f us, p90 %.3f us, p99 %.3f us\n", what,
                t[t.size() / 2], t[t.size() * 9 / 10], t[t.size() * 99 / 100]);
  };
  std::vector<double> t(kCalls);
  const Event ready[] = {buf->ready};
  for (int i = 0; i < kCalls; ++i) {
    const auto t0 = Clock::now();
    absl::StatusOr<Event> e =
        backend_->copy(dense(0, buf->base, size_t{4096} * i, 4096),
                       dense(kHost, host.data(), 0, 4096), {4096, 1, 1}, ready);
    t[i] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    ASSERT_TRUE(e.ok());
  }
  report("copy (4 KiB H2D, 1 wait)", t);
  ASSERT_TRUE(backend_->synchronize(0).ok());
  for (int i = 0; i < kCalls; ++i) {
    const auto t0 = Clock::now();
    absl::StatusOr<Event> e = backend_->launch(0, [](const LaunchContext&) {}, ready);
    t[i] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    ASSERT_TRUE(e.ok());
  }
  report("launch (empty function)", t);
  ASSERT_TRUE(backend_->synchronize(0).ok());
  for (int i = 0; i < kCalls; ++i) {
    const auto t0 = Clock::now();
    absl::StatusOr<Event> e = backend_->record(0);
    t[i] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    ASSERT_TRUE(e.ok());
  }
  report("record", t);
  ASSERT_TRUE(backend_->synchronize(0).ok());
  for (int i = 0; i < kCalls; ++i) {
    const Event after[] = {frees[i].ready};
    const auto t0 = Clock::now();
    absl::Status s = backend_->free(0, frees[i], after);
    t[i] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    ASSERT_TRUE(s.ok());
  }
  report("free (1 wait)", t);
  ASSERT_TRUE(backend_->free(0, *buf, {}).ok());
  EXPECT_TRUE(backend_->synchronize(0).ok());
}

// ------------------------------------------------------------------ tracing, pinning

TEST_F(CudaBackendTest, TraceHasDeviceSlicesNamedByStream) {
  const std::string path = ::testing::TempDir() + "cuda_backend_trace.json";
  Tracer tracer(path);
  backend_->set_tracer(&tracer);
  const size_t n = 1 << 20;
  PinnedBuffer host(n);
  absl::StatusOr<DeviceBuffer> buf = backend_->allocate(0, n);
  ASSERT_TRUE(buf.ok());
  Event last;
  {
    Tracer::Label label("\"array\":\"A\"");
    const Event w0[] = {buf->ready};
    absl::StatusOr<Event> up = backend_->copy(dense(0, buf->base, 0, n),
                                              dense(kHost, host.data(), 0, n), {n, 1, 1}, w0);
    ASSERT_TRUE(up.ok());
    const Event w1[] = {*up};
    absl::StatusOr<Event> k = backend_->launch(0, add_fn(buf->base, n, 1), w1);
    ASSERT_TRUE(k.ok());
    const Event w2[] = {*k};
    absl::StatusOr<Event> down = backend_->copy(dense(kHost, host.data(), 0, n),
                                                dense(0, buf->base, 0, n), {n, 1, 1}, w2);
    ASSERT_TRUE(down.ok());
    last = *down;
  }
  const Event after[] = {last};
  ASSERT_TRUE(backend_->free(0, *buf, after).ok());
  ASSERT_TRUE(backend_->synchronize(0).ok());
  backend_->flush_trace();
  backend_->set_tracer(nullptr);
  ASSERT_TRUE(tracer.close().ok());
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  const std::string json = text.str();
  for (const char* want : {"\"copy H2D\"", "\"copy D2H\"", "\"kernel\"", "\"free\"",
                           "\"stream\":\"compute\"", "\"stream\":\"h2d.", "\"stream\":\"d2h.",
                           "\"stream\":\"memory\"", "\"array\":\"A\"", "\"bytes\":1048576"}) {
    EXPECT_NE(json.find(want), std::string::npos) << "no " << want << " in\n" << json;
  }
  // Every operation the worker issued says when it was taken and issued (the
  // host clock of the trace), taken first.
  int issued = 0;
  for (size_t at = json.find("\"taken_us\":"); at != std::string::npos;
       at = json.find("\"taken_us\":", at + 1)) {
    long long taken = -1, when = -1;
    ASSERT_EQ(std::sscanf(json.c_str() + at, "\"taken_us\":%lld,\"issued_us\":%lld", &taken, &when),
              2)
        << json.substr(at, 60);
    EXPECT_LE(taken, when);
    EXPECT_GE(taken, 0);
    ++issued;
  }
  EXPECT_EQ(issued, 3) << "the two copies and the kernel\n" << json;
}

// Registration by each method gives pinned memory (cudaPointerGetAttributes)
// and copies that cross the chunks' boundaries (which CUDA rejects as such:
// the backend splits them) move the right bytes.
TEST_F(CudaBackendTest, PinningMethodsPinAndCopyAcrossChunks) {
  const size_t n = (size_t{8} << 20) + 4321;
  for (HostPinMethod m : {HostPinMethod::kWhole, HostPinMethod::kChunked, HostPinMethod::kParallel,
                          HostPinMethod::kAuto}) {
    CudaBackendOptions o;
    o.devices = 1;
    o.host_copies = BBMM_HOST_COPIES_PINNED;
    o.pin_method = m;
    o.pin_chunk_bytes = 1 << 20;
    o.pin_threads = 3;
    absl::StatusOr<std::unique_ptr<Backend>> b = make_cuda_backend(o);
    ASSERT_TRUE(b.ok()) << b.status();
    std::vector<unsigned char> raw(n + 64), back(n, 0);
    unsigned char* host = raw.data() + 17;  // not page-aligned
    fill(host, n, 3);
    ASSERT_TRUE((*b)->register_host(host, n).ok());
    for (size_t at : {size_t{0}, n / 3, n / 2, n - 1}) {
      cudaPointerAttributes attr = {};
      ASSERT_EQ(cudaPointerGetAttributes(&attr, host + at), cudaSuccess);
      EXPECT_EQ(attr.type, cudaMemoryTypeHost)
          << pin_method_name(m) << ": byte " << at << " is not pinned";
    }
    absl::StatusOr<DeviceBuffer> d = (*b)->allocate(0, n);
    ASSERT_TRUE(d.ok());
    const Event w0[] = {d->ready};
    absl::StatusOr<Event> up = (*b)->copy(dense(0, d->base, 0, n), dense(kHost, host, 0, n),
                                          {n, 1, 1}, w0);
    ASSERT_TRUE(up.ok());
    const Event w1[] = {*up};
    absl::StatusOr<Event> down = (*b)->copy(dense(kHost, back.data(), 0, n),
                                            dense(0, d->base, 0, n), {n, 1, 1}, w1);
    ASSERT_TRUE(down.ok());
    ASSERT_TRUE(down->wait().ok());
    EXPECT_EQ(0, std::memcmp(back.data(), host, n)) << pin_method_name(m);
    // Rectangles across the chunks: rows of 3000 B, 4101 B apart (some rows
    // straddle a chunk boundary), host -> device and device -> host, single
    // and batched.
    const size_t w = 3000, pitch = 4101, rows = (n - w - 7) / pitch + 1;
    const Event w2[] = {*down};
    absl::StatusOr<Event> in = (*b)->copy({0, d->base, 0, w, w * rows},
                                          {kHost, host, 0, pitch, pitch * rows}, {w, rows, 1}, w2);
    ASSERT_TRUE(in.ok());
    std::vector<unsigned char> dense_back(w * rows), want(w * rows);
    reference_copy(want.data(), w, w * rows, host, pitch, pitch * rows, {w, rows, 1});
    const Event w3[] = {*in};
    absl::StatusOr<Event> check = (*b)->copy(dense(kHost, dense_back.data(), 0, w * rows),
                                             dense(0, d->base, 0, w * rows), {w * rows, 1, 1}, w3);
    ASSERT_TRUE(check.ok());
    ASSERT_TRUE(check->wait().ok()) << pin_method_name(m);
    EXPECT_EQ(dense_back, want) << pin_method_name(m) << ": strided host-to-device";
    // Device -> host: the rows go back shifted by 7 bytes, in a batch of two
    // halves.
    std::vector<unsigned char> host_want(host, host + n);
    const size_t half = rows / 2;
    const CopyOp ops[] = {
        {{kHost, host, 7, pitch, pitch * rows}, {0, d->base, 0, w, w * rows}, {w, half, 1}},
        {{kHost, host, 7 + half * pitch, pitch, pitch * rows}, {0, d->base, half * w, w, w * rows},
         {w, rows - half, 1}}};
    reference_copy(host_want.data() + 7, pitch, pitch * rows, want.data(), w, w * rows, {w, rows, 1});
    absl::StatusOr<Event> out = (*b)->copy_batch(ops, w3);
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE(out->wait().ok()) << pin_method_name(m);
    EXPECT_EQ(0, std::memcmp(host_want.data(), host, n)) << pin_method_name(m)
                                                          << ": strided device-to-host batch";
    EXPECT_TRUE((*b)->unregister_host(host).ok());
    EXPECT_TRUE((*b)->unregister_host(host).ok());  // nothing left: no error
    cudaPointerAttributes attr = {};
    ASSERT_EQ(cudaPointerGetAttributes(&attr, host), cudaSuccess);
    EXPECT_EQ(attr.type, cudaMemoryTypeUnregistered) << pin_method_name(m);
    const Event after[] = {*out};
    ASSERT_TRUE((*b)->free(0, *d, after).ok());
  }
}

// BBMM_HOST_COPIES_AUTO: arrays stay pageable (copies staged) while the registered
// ones fit in the devices' capacity together; the registration that makes
// them exceed it pins all of them.
TEST_F(CudaBackendTest, AutoHostCopiesPinOnceTheArraysExceedTheCapacity) {
  CudaBackendOptions o;
  o.devices = 1;
  o.capacity_bytes = 1 << 20;
  absl::StatusOr<std::unique_ptr<Backend>> b = make_cuda_backend(o);
  ASSERT_TRUE(b.ok()) << b.status();
  auto pinned = [](const std::vector<unsigned char>& v) {
    cudaPointerAttributes attr = {};
    return cudaPointerGetAttributes(&attr, v.data() + v.size() / 2) == cudaSuccess &&
           attr.type == cudaMemoryTypeHost;
  };
  std::vector<unsigned char> a(512 << 10), c(768 << 10), d(256 << 10);
  ASSERT_TRUE((*b)->register_host(a.data(), a.size()).ok());
  EXPECT_FALSE(pinned(a)) << "512 KiB of 1 MiB: staged";
  ASSERT_TRUE((*b)->register_host(c.data(), c.size()).ok());
  EXPECT_TRUE(pinned(a)) << "1.25 MiB registered: out of core, pinned";
  EXPECT_TRUE(pinned(c));
  ASSERT_TRUE((*b)->unregister_host(a.data()).ok());
  ASSERT_TRUE((*b)->unregister_host(c.data()).ok());
  EXPECT_FALSE(pinned(a));
  ASSERT_TRUE((*b)->register_host(d.data(), d.size()).ok());
  EXPECT_FALSE(pinned(d)) << "back in core: staged";
  // A staged array's copies go through the staging buffers.
  fill(d, 9);
  absl::StatusOr<DeviceBuffer> buf = (*b)->allocate(0, d.size());
  ASSERT_TRUE(buf.ok());
  std::vector<unsigned char> back(d.size(), 0);
  const Event w0[] = {buf->ready};
  absl::StatusOr<Event> up =
      (*b)->copy(dense(0, buf->base, 0, d.size()), dense(kHost, d.data(), 0, d.size()),
                 {d.size(), 1, 1}, w0);
  ASSERT_TRUE(up.ok());
  const Event w1[] = {*up};
  absl::StatusOr<Event> down =
      (*b)->copy(dense(kHost, back.data(), 0, d.size()), dense(0, buf->base, 0, d.size()),
                 {d.size(), 1, 1}, w1);
  ASSERT_TRUE(down.ok());
  ASSERT_TRUE(down->wait().ok());
  EXPECT_EQ(back, d);
  ASSERT_TRUE((*b)->unregister_host(d.data()).ok());
  const Event after[] = {*down};
  ASSERT_TRUE((*b)->free(0, *buf, after).ok());
}

// Host memory the program page-locked itself (cudaHostAlloc) is copied by the copy
// engines directly, in every host-copy mode; pageable memory goes through the staging
// buffers, whose rounds run as host functions on the copy's stream (counted by the
// fake runtime; on a GPU only the decision and the bytes are checked).
TEST_F(CudaBackendTest, HostMemoryTheProgramPinnedIsCopiedWithoutStaging) {
  for (bbmm_host_copies mode :
       {BBMM_HOST_COPIES_STAGED, BBMM_HOST_COPIES_AUTO, BBMM_HOST_COPIES_PINNED}) {
    CudaBackendOptions o;
    o.devices = 1;
    o.host_copies = mode;
    absl::StatusOr<std::unique_ptr<Backend>> b = make_cuda_backend(o);
    ASSERT_TRUE(b.ok()) << b.status();
    const size_t n = 3 << 20;
    PinnedBuffer pinned(n);
    ASSERT_NE(pinned.data(), nullptr);
    std::vector<unsigned char> pageable(n);
    fill(pinned.data(), n, 5);
    fill(pageable, 6);
    // Memory the program pinned is used as it is: not registered again (cudaHostAlloc'ed
    // memory cannot be: an API error under compute-sanitizer), and nothing said about it.
    ::testing::internal::CaptureStderr();
    const absl::Status reg = (*b)->register_host(pinned.data(), n);
    const std::string said = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(reg.ok()) << reg;
    EXPECT_EQ(said, "") << "mode " << mode;
    ASSERT_TRUE((*b)->register_host(pageable.data(), n).ok());
    EXPECT_FALSE((*b)->host_copies_staged(pinned.data())) << "mode " << mode;
    EXPECT_FALSE((*b)->host_copies_staged(pinned.data() + n - 1)) << "mode " << mode;
    // Registration pins pageable arrays only in the pinned mode (one device with room
    // for both: auto stays staged).
    const bool pageable_staged = mode != BBMM_HOST_COPIES_PINNED;
    EXPECT_EQ((*b)->host_copies_staged(pageable.data()), pageable_staged) << "mode " << mode;
    // Round trips through one device buffer, back into memory pinned like the source
    // (program-pinned) or into an unregistered vector; the host functions each launches.
    absl::StatusOr<DeviceBuffer> buf = (*b)->allocate(0, n);
    ASSERT_TRUE(buf.ok());
    Event last = buf->ready;
    PinnedBuffer pinned_back(n);
    std::vector<unsigned char> back(n);
    auto round_trip = [&](unsigned char* host, unsigned char* dst, uint64_t* host_fns) {
      const uint64_t before = fake_cuda_host_fn_calls ? fake_cuda_host_fn_calls() : 0;
      std::memset(dst, 0, n);
      const Event w0[] = {last};
      absl::StatusOr<Event> up = (*b)->copy(dense(0, buf->base, 0, n), dense(kHost, host, 0, n),
                                            {n, 1, 1}, w0);
      ASSERT_TRUE(up.ok());
      const Event w1[] = {*up};
      absl::StatusOr<Event> down = (*b)->copy(dense(kHost, dst, 0, n), dense(0, buf->base, 0, n),
                                              {n, 1, 1}, w1);
      ASSERT_TRUE(down.ok());
      ASSERT_TRUE(down->wait().ok());
      EXPECT_EQ(std::memcmp(dst, host, n), 0) << "mode " << mode;
      last = *down;
      *host_fns = (fake_cuda_host_fn_calls ? fake_cuda_host_fn_calls() : 0) - before;
    };
    uint64_t pinned_fns = 0, pageable_fns = 0;
    round_trip(pinned.data(), pinned_back.data(), &pinned_fns);
    round_trip(pageable.data(), back.data(), &pageable_fns);
    if (fake_cuda_host_fn_calls) {
      EXPECT_EQ(pinned_fns, 0u) << "mode " << mode << ": pinned memory staged";
      if (pageable_staged) {
        EXPECT_GT(pageable_fns, 0u) << "mode " << mode << ": pageable memory not staged";
      }
    }
    ASSERT_TRUE((*b)->unregister_host(pinned.data()).ok());
    ASSERT_TRUE((*b)->unregister_host(pageable.data()).ok());
    const Event after[] = {last};
    ASSERT_TRUE((*b)->free(0, *buf, after).ok());
  }
}

// Whether a registered array's copies are staged is decided when it is registered (and
// when auto mode pins it), not asked of CUDA on every acquire that reads from the host:
// cudaPointerGetAttributes is a driver call, and the calling thread's path makes none. On
// the fake runtime the calling thread's queries are counted: asking the backend about a
// registered array 100 times makes none.
TEST_F(CudaBackendTest, WhetherCopiesAreStagedIsKnownWithoutAskingCuda) {
  for (bbmm_host_copies mode :
       {BBMM_HOST_COPIES_STAGED, BBMM_HOST_COPIES_AUTO, BBMM_HOST_COPIES_PINNED}) {
    CudaBackendOptions o;
    o.devices = 1;
    o.host_copies = mode;
    absl::StatusOr<std::unique_ptr<Backend>> b = make_cuda_backend(o);
    ASSERT_TRUE(b.ok()) << b.status();
    const size_t n = 1 << 20;
    PinnedBuffer pinned(n);
    ASSERT_NE(pinned.data(), nullptr);
    std::vector<unsigned char> pageable(n);
    ASSERT_TRUE((*b)->register_host(pinned.data(), n).ok());
    ASSERT_TRUE((*b)->register_host(pageable.data(), n).ok());
    const uint64_t before =
        fake_cuda_pointer_queries_on_this_thread ? fake_cuda_pointer_queries_on_this_thread() : 0;
    for (int i = 0; i < 100; ++i) {
      EXPECT_FALSE((*b)->host_copies_staged(pinned.data())) << "mode " << mode;
      EXPECT_EQ((*b)->host_copies_staged(pageable.data()), mode != BBMM_HOST_COPIES_PINNED)
          << "mode " << mode;
    }
    if (fake_cuda_pointer_queries_on_this_thread) {
      EXPECT_EQ(fake_cuda_pointer_queries_on_this_thread() - before, 0u) << "mode " << mode;
    }
    ASSERT_TRUE((*b)->unregister_host(pageable.data()).ok());
    ASSERT_TRUE((*b)->unregister_host(pinned.data()).ok());
    // Unregistered, the same memory is asked about again (and pageable memory is staged).
    EXPECT_TRUE((*b)->host_copies_staged(pageable.data())) << "mode " << mode;
  }
}

// ------------------------------------------------------------------ arguments

TEST_F(CudaBackendTest, BadArgumentsAreErrorsNotCrashes) {
  EXPECT_FALSE(backend_->allocate(-1, 16).ok());
  EXPECT_FALSE(backend_->allocate(backend_->device_count(), 16).ok());
  int x = 0;
  EXPECT_FALSE(backend_->copy({kHost, &x, 0, 4, 4}, {kHost, &x, 0, 4, 4}, {4, 1, 1}, {}).ok());
  EXPECT_FALSE(backend_->copy({0, nullptr, 0, 4, 4}, {kHost, &x, 0, 4, 4}, {4, 1, 1}, {}).ok());
  EXPECT_FALSE(backend_->launch(0, nullptr, {}).ok());
  EXPECT_FALSE(backend_->record(-1).ok());
  EXPECT_FALSE(backend_->synchronize(backend_->device_count()).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(make_cuda_backend({.copy_streams = 0}).status()));
  for (size_t bytes : {size_t{0}, size_t{4096}, (size_t{1} << 20) + 8, (size_t{2} << 30)}) {
    CudaBackendOptions o;
    o.staging_buffer_bytes = bytes;
    const absl::Status s = make_cuda_backend(o).status();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << bytes << ": " << s;
    EXPECT_NE(s.message().find("staging_buffer_bytes is " + std::to_string(bytes)),
              std::string::npos)
        << s;
  }
}

}  // namespace
}  // namespace bbmm
