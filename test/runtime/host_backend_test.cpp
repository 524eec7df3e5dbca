// The host backend: simulated devices in host memory. Device buffers are host
// pointers here, so the tests read and write them directly (after waiting for
// the ops that touch them).
#include "host/host_backend.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/backend.h"

namespace bbmm {
namespace {

using std::chrono_literals::operator""ms;

std::unique_ptr<Backend> make(HostBackendOptions options = {}) {
  absl::StatusOr<std::unique_ptr<Backend>> b = make_host_backend(options);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? std::move(*b) : nullptr;
}

DeviceBuffer alloc(Backend& b, int device, size_t bytes) {
  absl::StatusOr<DeviceBuffer> buf = b.allocate(device, bytes);
  EXPECT_TRUE(buf.ok()) << buf.status();
  return buf.ok() ? *buf : DeviceBuffer{};
}

unsigned char* bytes_of(const DeviceBuffer& b) { return static_cast<unsigned char*>(b.base); }

// Blocks kernels until the test opens it, so that "not yet done" is observed
// deterministically rather than by timing.
class Gate {
 public:
  void open() { promise_.set_value(); }
  void wait() const { future_.wait(); }

 private:
  std::promise<void> promise_;
  std::shared_future<void> future_ = promise_.get_future().share();
};

// ---------------------------------------------------------------------------
// Options and queries

TEST(HostBackendOptions, RejectsBadOptions) {
  EXPECT_EQ(make_host_backend({.devices = 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(make_host_backend({.devices = -1}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(make_host_backend({.pitch_alignment = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(make_host_backend({.pitch_alignment = 48}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HostBackend, ReportsItsConfiguration) {
  auto b = make({.devices = 3, .pitch_alignment = 256, .peer_access = false});
  EXPECT_EQ(b->kind(), BackendKind::kHost);
  EXPECT_EQ(b->name(), "host");
  EXPECT_EQ(b->device_count(), 3);
  EXPECT_EQ(b->pitch_alignment(), 256u);
  EXPECT_TRUE(b->can_access_peer(1, 1));
  EXPECT_FALSE(b->can_access_peer(0, 1));
  EXPECT_FALSE(b->can_access_peer(0, 3));
  auto p = make({.devices = 2});
  EXPECT_TRUE(p->can_access_peer(0, 1));
  EXPECT_TRUE(p->can_access_peer(1, 0));
  EXPECT_EQ(p->pitch_alignment(), 1u);
}

TEST(HostBackend, InvalidDevicesAreErrorsNotCrashes) {
  auto b = make({.devices = 2});
  EXPECT_EQ(b->allocate(2, 8).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b->allocate(-1, 8).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b->free(5, DeviceBuffer{}, {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b->launch(2, [](const LaunchContext&) {}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b->record(2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b->synchronize(-1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b->free_memory(7), 0u);
  EXPECT_EQ(b->launch(0, nullptr, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// Allocation and capacity

TEST(HostBackendMemory, CapacityLimitGivesResourceExhaustedNamingTheSizes) {
  auto b = make({.devices = 2, .capacity_bytes = 1000});
  EXPECT_EQ(b->free_memory(1), 1000u);
  DeviceBuffer a = alloc(*b, 1, 600);
  EXPECT_EQ(a.bytes, 600u);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(b->free_memory(1), 400u);
  EXPECT_EQ(b->free_memory(0), 1000u);  // capacity is per device

  absl::StatusOr<DeviceBuffer> c = b->allocate(1, 401);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted) << c.status();
  const std::string msg(c.status().message());
  EXPECT_NE(msg.find("device 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("401"), std::string::npos) << msg;
  EXPECT_NE(msg.find("600"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1000"), std::string::npos) << msg;

  // Exactly filling the device is allowed; one byte more is not.
  DeviceBuffer d = alloc(*b, 1, 400);
  EXPECT_EQ(b->free_memory(1), 0u);
  EXPECT_EQ(b->allocate(1, 1).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(b->allocate(0, 1001).status().code(), absl::StatusCode::kResourceExhausted);
  // A request larger than any capacity must not wrap around in the check.
  EXPECT_EQ(b->allocate(0, SIZE_MAX).status().code(), absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(b->free(1, a, {}).ok());
  ASSERT_TRUE(b->free(1, d, {}).ok());
}

TEST(HostBackendMemory, FreeReleasesAccountingAtTheCall) {
  auto b = make({.devices = 2, .capacity_bytes = 4096});
  Gate gate;
  // Keep the queue busy so that the free op itself cannot have run yet.
  absl::StatusOr<Event> busy = b->launch(0, [&](const LaunchContext&) { gate.wait(); }, {});
  ASSERT_TRUE(busy.ok());
  DeviceBuffer a = alloc(*b, 0, 4096);
  EXPECT_EQ(b->allocate(0, 1).status().code(), absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(b->free(0, a, {}).ok());
  EXPECT_EQ(b->free_memory(0), 4096u);
  DeviceBuffer again = alloc(*b, 0, 4096);
  EXPECT_NE(again.base, nullptr);
  gate.open();
  ASSERT_TRUE(b->synchronize(0).ok());
  ASSERT_TRUE(b->free(0, again, {}).ok());
  EXPECT_EQ(b->free_memory(0), 4096u);
}

TEST(HostBackendMemory, NewMemoryIsPoisonedUnlessTurnedOff) {
  auto b = make({.devices = 1});
  DeviceBuffer a = alloc(*b, 0, 256);
  for (size_t k = 0; k < 256; ++k) ASSERT_EQ(bytes_of(a)[k], 0xA5) << k;
  ASSERT_TRUE(b->free(0, a, {}).ok());
  // Without poisoning an allocation is still usable (its contents are unspecified).
  auto c = make({.devices = 1, .poison = false});
  DeviceBuffer d = alloc(*c, 0, 256);
  std::memset(d.base, 1, 256);
  EXPECT_EQ(bytes_of(d)[255], 1);
  ASSERT_TRUE(c->free(0, d, {}).ok());
}

TEST(HostBackendMemory, FreeOfUnknownOrFreedBufferIsInvalidArgument) {
  auto b = make({.devices = 2});
  DeviceBuffer a = alloc(*b, 0, 64);
  EXPECT_EQ(b->free(1, a, {}).code(), absl::StatusCode::kInvalidArgument);  // wrong device
  ASSERT_TRUE(b->free(0, a, {}).ok());
  EXPECT_EQ(b->free(0, a, {}).code(), absl::StatusCode::kInvalidArgument);  // twice
  int local = 0;
  EXPECT_EQ(b->free(0, DeviceBuffer{&local, 0, 4, Event()}, {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b->free(0, DeviceBuffer{}, {}).code(), absl::StatusCode::kInvalidArgument);
}

TEST(HostBackendMemory, ZeroByteAllocationsAreDistinctAndFreeable) {
  auto b = make({.devices = 1, .capacity_bytes = 128});
  DeviceBuffer x = alloc(*b, 0, 0);
  DeviceBuffer y = alloc(*b, 0, 0);
  EXPECT_NE(x.base, nullptr);
  EXPECT_NE(y.base, nullptr);
  EXPECT_NE(x.base, y.base);
  EXPECT_EQ(b->free_memory(0), 128u);
  EXPECT_TRUE(b->free(0, x, {}).ok());
  EXPECT_TRUE(b->free(0, y, {}).ok());
}

TEST(HostBackendMemory, AllocationsAre64ByteAligned) {
  auto b = make({.devices = 1});
  std::vector<DeviceBuffer> bufs;
  for (size_t n : {1, 3, 63, 64, 65, 1000}) {
    bufs.push_back(alloc(*b, 0, n));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(bufs.back().base) % 64, 0u) << n;
  }
  for (const DeviceBuffer& d : bufs) EXPECT_TRUE(b->free(0, d, {}).ok());
}

TEST(HostBackendMemory, UnlimitedCapacityReportsLargeFreeMemory) {
  auto b = make({.devices = 1});
  const size_t before = b->free_memory(0);
  EXPECT_GT(before, size_t{1} << 26);
  DeviceBuffer a = alloc(*b, 0, 1 << 20);
  EXPECT_EQ(b->free_memory(0), before - (1 << 20));
  EXPECT_TRUE(b->free(0, a, {}).ok());
  // The backend frees whatever is still allocated when destroyed (ASan checks).
  alloc(*b, 0, 100);
}

TEST(HostBackendMemory, FreeWaitsForItsEventsBeforeReleasingMemory) {
  auto b = make({.devices = 2});
  DeviceBuffer a = alloc(*b, 0, 256);
  std::memset(a.base, 7, 256);
  Gate gate;
  std::atomic<int> sum{0};
  // A kernel on device 1 still reads device 0's buffer when free is issued;
  // under ASan, releasing the memory early would be a use-after-free.
  absl::StatusOr<Event> reader = b->launch(1,
                                           [&](const LaunchContext&) {
                                             gate.wait();
                                             int s = 0;
                                             for (int i = 0; i < 256; ++i) s += bytes_of(a)[i];
                                             sum = s;
                                           },
                                           {});
  ASSERT_TRUE(reader.ok());
  Event after[] = {*reader};
  ASSERT_TRUE(b->free(0, a, after).ok());
  gate.open();
  ASSERT_TRUE(b->synchronize(0).ok());
  EXPECT_TRUE(reader->done());
  EXPECT_EQ(sum.load(), 7 * 256);
}

TEST(HostBackendMemory, FreeRunsEvenWhenItsEventFailed) {
  auto b = make({.devices = 2});
  DeviceBuffer a = alloc(*b, 0, 256);
  absl::StatusOr<Event> bad =
      b->launch(1, [](const LaunchContext&) { throw std::runtime_error("bad"); }, {});
  ASSERT_TRUE(bad.ok());
  Event after[] = {*bad};
  ASSERT_TRUE(b->free(0, a, after).ok());
  // The free's device saw no failure of its own; the leak checker would
  // complain if the memory was never released.
  EXPECT_TRUE(b->synchronize(0).ok());
  EXPECT_FALSE(b->synchronize(1).ok());
}

// ---------------------------------------------------------------------------
// Rectangular copies

// One side of a copy as the test lays it out in a byte vector.
struct Layout {
  size_t offset;
  size_t row_pitch;
  size_t slice_pitch;
};

size_t footprint(const Layout& l, size_t width, size_t ny, size_t nz) {
  return l.offset + (nz - 1) * l.slice_pitch + (ny - 1) * l.row_pitch + width + 9;
}

// The oracle: element by element, byte by byte.
void reference_copy(std::vector<unsigned char>& dst, const Layout& dl,
                    const std::vector<unsigned char>& src, const Layout& sl, size_t elem, size_t nx,
                    size_t ny, size_t nz) {
  for (size_t z = 0; z < nz; ++z) {
    for (size_t y = 0; y < ny; ++y) {
      for (size_t x = 0; x < nx; ++x) {
        for (size_t k = 0; k < elem; ++k) {
          dst[dl.offset + z * dl.slice_pitch + y * dl.row_pitch + x * elem + k] =
              src[sl.offset + z * sl.slice_pitch + y * sl.row_pitch + x * elem + k];
        }
      }
    }
  }
}

Endpoint host_ep(std::vector<unsigned char>& v, const Layout& l) {
  return Endpoint{kHost, v.data(), l.offset, l.row_pitch, l.slice_pitch};
}

Endpoint dev_ep(int device, const DeviceBuffer& b, const Layout& l) {
  return Endpoint{device, b.base, l.offset, l.row_pitch, l.slice_pitch};
}

std::vector<unsigned char> device_bytes(const DeviceBuffer& b) {
  return std::vector<unsigned char>(bytes_of(b), bytes_of(b) + b.bytes);
}

// (element bytes, 3-D, second device is another device, peer access)
class HostBackendCopy : public ::testing::TestWithParam<std::tuple<size_t, bool, bool, bool>> {};

TEST_P(HostBackendCopy, MatchesReferenceForEveryPitchCombination) {
  const auto [elem, three_d, other_device, peer] = GetParam();
  const size_t nx = 5, ny = 4, nz = three_d ? 3 : 1;
  const size_t w = nx * elem;
  auto b = make({.devices = 2, .peer_access = peer});
  const int dev_a = 0;
  const int dev_b = other_device ? 1 : 0;

  // Each side gets its own pitches: padded rows, contiguous rows with padded
  // planes, fully contiguous; a 2-D host side has slice pitch 0 (unused).
  const Layout host_src{3, w + 5, (w + 5) * ny + 7};
  const Layout a_contig{2 * elem, w, w * ny};
  const Layout b_padded{1, w + 64, (w + 64) * (ny + 1)};
  const Layout b_planes{elem, w, w * ny + 5};
  const Layout b_contig{0, w, w * ny};
  const Layout host_dst{2 * elem + 1, w + 1, three_d ? (w + 1) * ny + 3 : 0};

  std::mt19937 rng(1234 + elem);
  std::vector<unsigned char> src(footprint(host_src, w, ny, nz));
  for (auto& c : src) c = static_cast<unsigned char>(rng());
  std::vector<unsigned char> dst(footprint(host_dst, w, ny, nz), 0xEE);

  DeviceBuffer a = alloc(*b, dev_a, footprint(a_contig, w, ny, nz));
  DeviceBuffer bp = alloc(*b, dev_b, footprint(b_padded, w, ny, nz));
  DeviceBuffer bl = alloc(*b, dev_b, footprint(b_planes, w, ny, nz));
  DeviceBuffer bc = alloc(*b, dev_b, footprint(b_contig, w, ny, nz));
  for (const DeviceBuffer* d : {&a, &bp, &bl, &bc}) std::memset(d->base, 0x11, d->bytes);
  std::vector<unsigned char> want_a = device_bytes(a), want_bp = device_bytes(bp),
                             want_bl = device_bytes(bl), want_bc = device_bytes(bc), want_dst = dst;

  const CopyShape shape{w, ny, nz};
  absl::StatusOr<Event> e1 = b->copy(dev_ep(dev_a, a, a_contig), host_ep(src, host_src), shape, {});
  ASSERT_TRUE(e1.ok()) << e1.status();
  Event w1[] = {*e1};
  absl::StatusOr<Event> e2 =
      b->copy(dev_ep(dev_b, bp, b_padded), dev_ep(dev_a, a, a_contig), shape, w1);
  ASSERT_TRUE(e2.ok()) << e2.status();
  absl::StatusOr<Event> e3 =
      b->copy(dev_ep(dev_b, bl, b_planes), dev_ep(dev_a, a, a_contig), shape, w1);
  ASSERT_TRUE(e3.ok()) << e3.status();
  absl::StatusOr<Event> e4 =
      b->copy(dev_ep(dev_b, bc, b_contig), dev_ep(dev_a, a, a_contig), shape, w1);
  ASSERT_TRUE(e4.ok()) << e4.status();
  Event w2[] = {*e2};
  absl::StatusOr<Event> e5 =
      b->copy(host_ep(dst, host_dst), dev_ep(dev_b, bp, b_padded), shape, w2);
  ASSERT_TRUE(e5.ok()) << e5.status();
  for (const auto* e : {&e1, &e2, &e3, &e4, &e5}) ASSERT_TRUE((*e)->wait().ok());

  reference_copy(want_a, a_contig, src, host_src, elem, nx, ny, nz);
  reference_copy(want_bp, b_padded, want_a, a_contig, elem, nx, ny, nz);
  reference_copy(want_bl, b_planes, want_a, a_contig, elem, nx, ny, nz);
  reference_copy(want_bc, b_contig, want_a, a_contig, elem, nx, ny, nz);
  reference_copy(want_dst, host_dst, want_bp, b_padded, elem, nx, ny, nz);
  EXPECT_EQ(device_bytes(a), want_a);
  EXPECT_EQ(device_bytes(bp), want_bp);
  EXPECT_EQ(device_bytes(bl), want_bl);
  EXPECT_EQ(device_bytes(bc), want_bc);
  EXPECT_EQ(dst, want_dst);
  // The oracle must have moved something, or the comparisons prove nothing.
  EXPECT_NE(want_dst, std::vector<unsigned char>(dst.size(), 0xEE));
  EXPECT_TRUE(b->synchronize(0).ok());
  EXPECT_TRUE(b->synchronize(1).ok());
}

INSTANTIATE_TEST_SUITE_P(Widths, HostBackendCopy,
                         ::testing::Combine(::testing::Values(1, 2, 4, 8, 12, 16),
                                            ::testing::Bool(), ::testing::Bool(),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return "elem" + std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_3d" : "_2d") +
                                  (std::get<2>(info.param) ? "_otherdev" : "_samedev") +
                                  (std::get<3>(info.param) ? "_peer" : "_nopeer");
                         });

TEST(HostBackendCopy, SubBoxOfALargerArrayAndBack) {
  // A 3x2x2 box at (1,1,1) of a 6x5x4 array of 12-byte elements, as the core
  // reads a box into an instance and writes it back.
  const size_t elem = 12, nx = 6, ny = 5, nz = 4;
  const size_t bx = 3, by = 2, bz = 2;
  auto b = make({.devices = 1});
  std::vector<unsigned char> host(nx * ny * nz * elem);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>(i * 7 + 1);
  const Layout box_in_host{((1 * ny + 1) * nx + 1) * elem, nx * elem, nx * ny * elem};
  const Layout inst{0, bx * elem, bx * by * elem};
  DeviceBuffer d = alloc(*b, 0, bx * by * bz * elem);
  const CopyShape shape{bx * elem, by, bz};
  ASSERT_TRUE(b->copy(dev_ep(0, d, inst), host_ep(host, box_in_host), shape, {}).ok());
  ASSERT_TRUE(b->synchronize(0).ok());
  std::vector<unsigned char> want(d.bytes);
  reference_copy(want, inst, host, box_in_host, elem, bx, by, bz);
  EXPECT_EQ(device_bytes(d), want);

  // Modify on the device, write back, check only the box changed.
  absl::StatusOr<Event> k =
      b->launch(0, [&](const LaunchContext&) { std::memset(d.base, 0xFF, d.bytes); }, {});
  ASSERT_TRUE(k.ok());
  std::vector<unsigned char> want_host = host;
  std::vector<unsigned char> ones(d.bytes, 0xFF);
  reference_copy(want_host, box_in_host, ones, inst, elem, bx, by, bz);
  Event wk[] = {*k};
  ASSERT_TRUE(b->copy(host_ep(host, box_in_host), dev_ep(0, d, inst), shape, wk).ok());
  ASSERT_TRUE(b->synchronize(0).ok());
  EXPECT_EQ(host, want_host);
}

TEST(HostBackendCopy, InvalidArgumentsAreRejectedAtTheCall) {
  auto b = make({.devices = 2});
  DeviceBuffer d = alloc(*b, 0, 100);
  std::vector<unsigned char> h(1000);
  const Endpoint dev{0, d.base, 0, 10, 100};
  const Endpoint host{kHost, h.data(), 0, 10, 100};
  auto code = [&](const Endpoint& dst, const Endpoint& src, CopyShape s) {
    return b->copy(dst, src, s, {}).status().code();
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(code(dev, host, {10, 10, 1}), absl::StatusCode::kOk);
  // Null base on either side.
  EXPECT_EQ(code(Endpoint{0, nullptr, 0, 10, 100}, host, {10, 10, 1}), kInvalid);
  EXPECT_EQ(code(dev, Endpoint{kHost, nullptr, 0, 10, 100}, {10, 10, 1}), kInvalid);
  // Row pitch smaller than a row, including 0, when there are several rows.
  EXPECT_EQ(code(dev, Endpoint{kHost, h.data(), 0, 9, 100}, {10, 10, 1}), kInvalid);
  EXPECT_EQ(code(Endpoint{0, d.base, 0, 0, 0}, host, {10, 2, 1}), kInvalid);
  // ... but a single row needs no pitch.
  EXPECT_EQ(code(Endpoint{0, d.base, 0, 0, 0}, host, {10, 1, 1}), absl::StatusCode::kOk);
  // Planes that would overlap.
  EXPECT_EQ(code(dev, Endpoint{kHost, h.data(), 0, 10, 19}, {10, 2, 2}), kInvalid);
  // Past the end of the device allocation: by offset, by rows, by planes.
  EXPECT_EQ(code(Endpoint{0, d.base, 1, 10, 100}, host, {10, 10, 1}), kInvalid);
  EXPECT_EQ(code(Endpoint{0, d.base, 0, 11, 100}, host, {10, 10, 1}), kInvalid);
  EXPECT_EQ(code(Endpoint{0, d.base, 0, 10, 50}, host, {10, 5, 3}), kInvalid);
  EXPECT_EQ(code(host, Endpoint{0, d.base, 91, 10, 100}, {10, 1, 1}), kInvalid);
  // Arithmetic that would overflow size_t.
  EXPECT_EQ(code(dev, Endpoint{kHost, h.data(), 0, SIZE_MAX / 2, SIZE_MAX}, {10, 3, 3}), kInvalid);
  // A pointer that is not an allocation of the named device.
  EXPECT_EQ(code(Endpoint{1, d.base, 0, 10, 100}, host, {10, 10, 1}), kInvalid);
  EXPECT_EQ(code(Endpoint{0, h.data(), 0, 10, 100}, host, {10, 10, 1}), kInvalid);
  // Bad device numbers, host to host.
  EXPECT_EQ(code(Endpoint{2, d.base, 0, 10, 100}, host, {10, 10, 1}), kInvalid);
  EXPECT_EQ(code(Endpoint{-2, d.base, 0, 10, 100}, host, {10, 10, 1}), kInvalid);
  EXPECT_EQ(code(host, host, {10, 10, 1}), kInvalid);
  // Freed buffers are no longer copy endpoints.
  ASSERT_TRUE(b->free(0, d, {}).ok());
  EXPECT_EQ(code(dev, host, {10, 10, 1}), kInvalid);
  EXPECT_TRUE(b->synchronize(0).ok());
}

TEST(HostBackendCopy, EmptyShapesAreNoOpsInQueueOrder) {
  auto b = make({.devices = 1});
  DeviceBuffer d = alloc(*b, 0, 8);
  std::vector<unsigned char> h(8, 3);
  for (CopyShape s : {CopyShape{0, 4, 4}, CopyShape{4, 0, 1}, CopyShape{4, 1, 0}}) {
    absl::StatusOr<Event> e =
        b->copy(Endpoint{0, d.base, 1000, 0, 0}, Endpoint{kHost, h.data(), 0, 0, 0}, s, {});
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_TRUE(e->wait().ok());
  }
  EXPECT_TRUE(b->synchronize(0).ok());
}

TEST(HostBackendCopy, SameEndpointObjectOnBothSides) {
  auto b = make({.devices = 1});
  DeviceBuffer d = alloc(*b, 0, 32);
  std::memset(d.base, 5, 32);
  const Endpoint e{0, d.base, 0, 16, 32};
  absl::StatusOr<Event> c = b->copy(e, e, {16, 2, 1}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->wait().ok());
  EXPECT_EQ(device_bytes(d), std::vector<unsigned char>(32, 5));
}

// Which queue a copy runs on, shown by blocking one queue with a kernel.
TEST(HostBackendCopy, CopiesRunOnTheDocumentedQueue) {
  auto run = [](bool peer) {
    auto b = make({.devices = 2, .peer_access = peer});
    DeviceBuffer d0 = alloc(*b, 0, 64), d1 = alloc(*b, 1, 64);
    std::vector<unsigned char> h(64, 9);
    const CopyShape s{64, 1, 1};
    const Endpoint e0{0, d0.base, 0, 64, 64}, e1{1, d1.base, 0, 64, 64},
        eh{kHost, h.data(), 0, 64, 64};
    struct Case {
      Endpoint dst, src;
      int queue;
    };
    for (const Case& c :
         {Case{e1, eh, 1}, Case{eh, e1, 1}, Case{e1, e0, 1}, Case{e0, e1, 0}, Case{e0, e0, 0}}) {
      Gate gate;
      const int other = 1 - c.queue;
      ASSERT_TRUE(b->launch(c.queue, [&](const LaunchContext&) { gate.wait(); }, {}).ok());
      // The other queue being blocked forever must not matter.
      Gate other_gate;
      ASSERT_TRUE(b->launch(other, [&](const LaunchContext&) { other_gate.wait(); }, {}).ok());
      absl::StatusOr<Event> e = b->copy(c.dst, c.src, s, {});
      ASSERT_TRUE(e.ok());
      std::this_thread::sleep_for(20ms);
      EXPECT_FALSE(e->done()) << "copy ran past a blocked queue " << c.queue;
      gate.open();
      EXPECT_TRUE(e->wait().ok());
      other_gate.open();
      ASSERT_TRUE(b->synchronize(0).ok());
      ASSERT_TRUE(b->synchronize(1).ok());
    }
  };
  run(true);
  run(false);
}

// ---------------------------------------------------------------------------
// Ordering, events, errors

TEST(HostBackendOrder, OpsOfOneDeviceRunInIssueOrder) {
  auto b = make({.devices = 2});
  std::vector<int> log;  // only touched by device 0's worker until synchronize
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(b->launch(0, [&log, i](const LaunchContext&) { log.push_back(i); }, {}).ok());
  }
  ASSERT_TRUE(b->synchronize(0).ok());
  ASSERT_EQ(log.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(log[i], i);
}

TEST(HostBackendOrder, OpOnOneDeviceWaitsForASlowOpOnAnother) {
  auto b = make({.devices = 2});
  std::mutex mu;
  std::vector<std::string> log;
  auto note = [&](std::string s) {
    std::lock_guard<std::mutex> lock(mu);
    log.push_back(std::move(s));
  };
  DeviceBuffer d0 = alloc(*b, 0, 64), d1 = alloc(*b, 1, 64);
  Gate gate;  // keeps the slow kernel from finishing before the checks below
  // The slow kernel writes the data the dependent peer copy reads.
  absl::StatusOr<Event> slow = b->launch(0,
                                         [&](const LaunchContext& ctx) {
                                           EXPECT_EQ(ctx.device, 0);
                                           gate.wait();
                                           std::this_thread::sleep_for(30ms);
                                           std::memset(d0.base, 0x42, 64);
                                           note("slow dev0");
                                         },
                                         {});
  ASSERT_TRUE(slow.ok());
  Event w[] = {*slow};
  absl::StatusOr<Event> copy =
      b->copy(Endpoint{1, d1.base, 0, 64, 64}, Endpoint{0, d0.base, 0, 64, 64}, {64, 1, 1}, w);
  ASSERT_TRUE(copy.ok());
  Event wc[] = {*copy};
  absl::StatusOr<Event> after = b->launch(
      1,
      [&](const LaunchContext& ctx) {
        EXPECT_EQ(ctx.device, 1);
        EXPECT_EQ(ctx.queue, nullptr);
        note("after dev1");
      },
      wc);
  ASSERT_TRUE(after.ok());
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(slow->done());
  EXPECT_FALSE(copy->done());
  EXPECT_FALSE(after->done());
  gate.open();
  ASSERT_TRUE(after->wait().ok());
  EXPECT_TRUE(slow->done());
  EXPECT_EQ(log, (std::vector<std::string>{"slow dev0", "after dev1"}));
  EXPECT_EQ(device_bytes(d1), std::vector<unsigned char>(64, 0x42));
}

TEST(HostBackendOrder, EventIsNotDoneUntilItsOpRan) {
  auto b = make({.devices = 2});
  Gate gate;
  absl::StatusOr<Event> blocked = b->launch(0, [&](const LaunchContext&) { gate.wait(); }, {});
  ASSERT_TRUE(blocked.ok());
  Event w[] = {*blocked, Event()};  // a default Event is already complete
  absl::StatusOr<Event> dependent = b->launch(
      1, [](const LaunchContext&) {}, w);
  absl::StatusOr<Event> rec = b->record(0);
  ASSERT_TRUE(dependent.ok() && rec.ok());
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(blocked->done());
  EXPECT_FALSE(dependent->done());
  EXPECT_FALSE(rec->done());
  gate.open();
  EXPECT_TRUE(dependent->wait().ok());
  EXPECT_TRUE(rec->wait().ok());
  EXPECT_TRUE(blocked->done());
  EXPECT_TRUE(Event().done());
  EXPECT_TRUE(Event().wait().ok());
}

TEST(HostBackendOrder, SynchronizeWaitsForEverythingIssued) {
  auto b = make({.devices = 1});
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(b->launch(0,
                          [&](const LaunchContext&) {
                            std::this_thread::sleep_for(2ms);
                            ++ran;
                          },
                          {})
                    .ok());
  }
  EXPECT_TRUE(b->synchronize(0).ok());
  EXPECT_EQ(ran.load(), 10);
}

TEST(HostBackendErrors, LaunchExceptionsBecomeInternalErrors) {
  auto b = make({.devices = 1});
  absl::StatusOr<Event> e =
      b->launch(0, [](const LaunchContext&) { throw std::runtime_error("kernel boom"); }, {});
  ASSERT_TRUE(e.ok());
  absl::Status s = e->wait();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("kernel boom"), std::string_view::npos) << s;
  absl::StatusOr<Event> odd = b->launch(0, [](const LaunchContext&) { throw 42; }, {});
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->wait().code(), absl::StatusCode::kInternal);
  // The worker survived: later work still runs.
  absl::StatusOr<Event> fine = b->launch(0, [](const LaunchContext&) {}, {});
  ASSERT_TRUE(fine.ok());
  EXPECT_TRUE(fine->wait().ok());
  // synchronize reports the first failure once.
  absl::Status first = b->synchronize(0);
  EXPECT_EQ(first.code(), absl::StatusCode::kInternal);
  EXPECT_NE(first.message().find("kernel boom"), std::string_view::npos) << first;
  EXPECT_TRUE(b->synchronize(0).ok());
}

TEST(HostBackendErrors, FailuresPropagateThroughEventsAcrossDevices) {
  auto b = make({.devices = 2});
  DeviceBuffer d1 = alloc(*b, 1, 16);
  std::memset(d1.base, 0x33, 16);
  std::vector<unsigned char> h(16, 0x77);
  absl::StatusOr<Event> bad = b->launch(
      0, [](const LaunchContext&) { throw std::out_of_range("index 99 out of range"); }, {});
  ASSERT_TRUE(bad.ok());
  Event w[] = {*bad};
  // The copy must not run: the data it would move is not valid.
  absl::StatusOr<Event> copy =
      b->copy(Endpoint{1, d1.base, 0, 16, 16}, Endpoint{kHost, h.data(), 0, 16, 16}, {16, 1, 1}, w);
  ASSERT_TRUE(copy.ok());
  Event wc[] = {*copy};
  bool ran = false;
  absl::StatusOr<Event> kernel = b->launch(
      1, [&](const LaunchContext&) { ran = true; }, wc);
  ASSERT_TRUE(kernel.ok());
  absl::Status s = kernel->wait();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("index 99 out of range"), std::string_view::npos) << s;
  EXPECT_FALSE(ran);
  EXPECT_EQ(copy->wait().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(device_bytes(d1), std::vector<unsigned char>(16, 0x33));
  // Each device reports its own failed ops.
  EXPECT_EQ(b->synchronize(1).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(b->synchronize(0).code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(b->synchronize(0).ok());
  EXPECT_TRUE(b->synchronize(1).ok());
}

TEST(HostBackendErrors, RecordFailsAfterAFailureUntilSynchronize) {
  auto b = make({.devices = 1});
  ASSERT_TRUE(
      b->launch(0, [](const LaunchContext&) { throw std::runtime_error("earlier"); }, {}).ok());
  absl::StatusOr<Event> r = b->record(0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->wait().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(b->synchronize(0).code(), absl::StatusCode::kInternal);
  absl::StatusOr<Event> r2 = b->record(0);
  ASSERT_TRUE(r2.ok());
  EXPECT_TRUE(r2->wait().ok());
}

// ---------------------------------------------------------------------------
// Threads

TEST(HostBackendThreads, ManyHostThreadsIssuingAtOnce) {
  constexpr int kThreads = 4, kRounds = 60, kDevices = 3;
  auto b = make({.devices = kDevices, .capacity_bytes = 1 << 20, .peer_access = false});
  std::atomic<int> failures{0};
  auto body = [&](int t) {
    std::mt19937 rng(99 + t);
    for (int r = 0; r < kRounds; ++r) {
      const int d0 = static_cast<int>(rng() % kDevices);
      const int d1 = static_cast<int>(rng() % kDevices);
      const size_t n = 1 + rng() % 300;
      const unsigned char v = static_cast<unsigned char>(rng());
      std::vector<unsigned char> in(n, v), out(n, 0);
      absl::StatusOr<DeviceBuffer> a = b->allocate(d0, n);
      absl::StatusOr<DeviceBuffer> c = b->allocate(d1, n);
      if (!a.ok() || !c.ok()) {
        ++failures;
        continue;
      }
      const Endpoint ea{d0, a->base, 0, n, n}, ec{d1, c->base, 0, n, n};
      absl::StatusOr<Event> e1 = b->copy(ea, Endpoint{kHost, in.data(), 0, n, n}, {n, 1, 1}, {});
      if (!e1.ok()) {
        ++failures;
        continue;
      }
      Event w1[] = {*e1};
      unsigned char* pa = static_cast<unsigned char*>(a->base);
      absl::StatusOr<Event> k = b->launch(
          d0,
          [pa, n](const LaunchContext&) {
            for (size_t i = 0; i < n; ++i) pa[i] = static_cast<unsigned char>(pa[i] + 1);
          },
          w1);
      if (!k.ok()) {
        ++failures;
        continue;
      }
      Event wk[] = {*k};
      absl::StatusOr<Event> e2 = b->copy(ec, ea, {n, 1, 1}, wk);
      if (!e2.ok()) {
        ++failures;
        continue;
      }
      Event w2[] = {*e2};
      absl::StatusOr<Event> e3 = b->copy(Endpoint{kHost, out.data(), 0, n, n}, ec, {n, 1, 1}, w2);
      if (!e3.ok() || !e3->wait().ok()) {
        ++failures;
        continue;
      }
      Event w3[] = {*e3};
      if (!b->free(d0, *a, w3).ok() || !b->free(d1, *c, w3).ok()) ++failures;
      if (out != std::vector<unsigned char>(n, static_cast<unsigned char>(v + 1))) ++failures;
      if (r % 16 == 0 && !b->synchronize(d0).ok()) ++failures;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(body, t);
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  for (int d = 0; d < kDevices; ++d) {
    EXPECT_TRUE(b->synchronize(d).ok());
    EXPECT_EQ(b->free_memory(d), size_t{1} << 20);
  }
}

TEST(HostBackendThreads, KernelsOfADeviceRunOnOneWorkerThread) {
  auto b = make({.devices = 2});
  std::thread::id ids[2][3];
  for (int d = 0; d < 2; ++d) {
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(
          b->launch(d,
                    [&ids, d, i](const LaunchContext&) { ids[d][i] = std::this_thread::get_id(); },
                    {})
              .ok());
    }
    ASSERT_TRUE(b->synchronize(d).ok());
  }
  EXPECT_EQ(ids[0][0], ids[0][1]);
  EXPECT_EQ(ids[0][0], ids[0][2]);
  EXPECT_EQ(ids[1][0], ids[1][2]);
  EXPECT_NE(ids[0][0], ids[1][0]);
  EXPECT_NE(ids[0][0], std::this_thread::get_id());
}

TEST(HostBackendThreads, KernelMayIssueWorkOnAnotherDevice) {
  auto b = make({.devices = 2});
  std::atomic<bool> inner_ran{false};
  absl::StatusOr<Event> outer =
      b->launch(0,
                [&](const LaunchContext&) {
                  absl::StatusOr<Event> inner =
                      b->launch(1, [&](const LaunchContext&) { inner_ran = true; }, {});
                  EXPECT_TRUE(inner.ok() && inner->wait().ok());
                },
                {});
  ASSERT_TRUE(outer.ok());
  EXPECT_TRUE(outer->wait().ok());
  EXPECT_TRUE(inner_ran.load());
}

TEST(HostBackendThreads, DestructorDrainsQueues) {
  std::atomic<int> ran{0};
  Event last;
  {
    auto b = make({.devices = 2});
    for (int i = 0; i < 20; ++i) {
      absl::StatusOr<Event> e = b->launch(i % 2,
                                          [&](const LaunchContext&) {
                                            std::this_thread::sleep_for(1ms);
                                            ++ran;
                                          },
                                          {});
      ASSERT_TRUE(e.ok());
      last = *e;
    }
  }
  EXPECT_EQ(ran.load(), 20);
  // Events outlive the backend.
  EXPECT_TRUE(last.done());
  EXPECT_TRUE(last.wait().ok());
}

}  // namespace
}  // namespace bbmm
