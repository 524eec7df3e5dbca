// The tile path never waits for device work: acquire, launch, flow_out and
// release (and reserve) return while nothing issued to the devices has run.
//
// A backend adaptor holds every device operation behind a closed gate (each
// copy, batch, launch and free also waits for a gate event that completes
// only when the test opens it), and counts the calls that block the calling
// thread (Event::wait on the events it hands out, synchronize). A
// multi-step 2-D Jacobi on 2 devices x 2 tiles, with a capacity that forces
// box-out (dirty write-backs), instances that grow, reservations and halo
// flow-outs between the devices, is issued from a driver thread while the
// gate is closed: if any call waited for device work, the driver could not
// finish, and the test fails on a timeout instead of hanging. Then the gate
// opens and the result is compared with a CPU loop.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "bbmm/runtime.h"
#include "core/backend.h"
#include "host/host_backend.h"
#include "gated_backend.h"
#include "runtime_test_util.h"

namespace bbmm::testing {
namespace {

// A 2-D Jacobi grid `n` x `n`, `steps` steps of two phases (A -> B, B -> A).
void jacobi_reference(std::vector<double>& a, std::vector<double>& b, int64_t n, int steps) {
  auto phase = [n](const std::vector<double>& in, std::vector<double>& out) {
    for (int64_t i = 1; i < n - 1; ++i)
      for (int64_t j = 1; j < n - 1; ++j)
        out[i * n + j] = 0.2 * (in[i * n + j] + in[i * n + j - 1] + in[i * n + j + 1] +
                                in[(i + 1) * n + j] + in[(i - 1) * n + j]);
  };
  for (int t = 0; t < steps; ++t) {
    phase(a, b);
    phase(b, a);
  }
}

struct Case {
  const char* name;
  int queues;
  bool reserve;
  size_t capacity;  // per device; 0 = unlimited
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class NoBlocking : public ::testing::TestWithParam<Case> {};

TEST_P(NoBlocking, TilePathReturnsWhileNoDeviceWorkHasRun) {
  const Case c = GetParam();
  const int64_t n = 34;
  const int steps = 4, devices = 2, tiles = 4;
  std::vector<double> a(n * n), b(n * n);
  for (int64_t k = 0; k < n * n; ++k) {
    a[k] = static_cast<double>((k * 7) % 101) / 101.0;
    b[k] = static_cast<double>((k * 3) % 37) / 37.0;
  }
  std::vector<double> ra = a, rb = b;
  jacobi_reference(ra, rb, n, steps);

  absl::StatusOr<std::unique_ptr<Backend>> host =
      make_host_backend({.devices = devices, .capacity_bytes = c.capacity, .queues = c.queues});
  ASSERT_TRUE(host.ok()) << host.status();
  auto gated = std::make_unique<GatedBackend>(*std::move(host));
  GatedBackend* gate = gated.get();
  absl::StatusOr<std::unique_ptr<Runtime>> rts = Runtime::create_with_backend(std::move(gated), {});
  ASSERT_TRUE(rts.ok()) << rts.status();
  Runtime& rt = **rts;
  const int64_t ext[2] = {n, n};
  Array* A = *rt.register_array("A", a.data(), sizeof(double), ext);
  Array* B = *rt.register_array("B", b.data(), sizeof(double), ext);

  // Issues everything from a driver thread; the promise is kept when the last
  // call returned.
  std::promise<absl::Status> issued;
  std::future<absl::Status> done = issued.get_future();
  std::thread driver([&] {
    gate->watch(std::this_thread::get_id());
    absl::Status s;
    if (c.reserve) {
      for (int d = 0; d < devices && s.ok(); ++d) {
        const int64_t lo = 1 + (n - 2) * d / devices, hi = 1 + (n - 2) * (d + 1) / devices;
        for (Array* x : {A, B}) {
          if (s.ok()) s = rt.reserve(d, x, *Box::create({lo - 1, 0}, {hi + 1, n}));
        }
      }
    }
    for (int t = 0; t < 2 * steps && s.ok(); ++t) {
      Array* src = t % 2 == 0 ? A : B;
      Array* dst = t % 2 == 0 ? B : A;
      for (int k = 0; k < tiles && s.ok(); ++k) {
        const int64_t lo = 1 + (n - 2) * k / tiles, hi = 1 + (n - 2) * (k + 1) / tiles;
        absl::StatusOr<Tile> tile = rt.begin_tile(k * devices / tiles);
        if (!tile.ok()) {
          s = tile.status();
          break;
        }
        s = tile->require(src, *Box::create({lo - 1, 0}, {hi + 1, n}), Access::kRead);
        if (s.ok()) s = tile->require(dst, *Box::create({lo, 1}, {hi, n - 1}), Access::kWrite);
        if (s.ok()) s = tile->acquire();
        if (!s.ok()) break;
        const PieceCopy in(*tile->view(src)), out(*tile->view(dst));
        s = tile->launch([in, out, lo, hi, n](const bbmm_launch_info&) {
          for (int64_t i = lo; i < hi; ++i)
            for (int64_t j = 1; j < n - 1; ++j)
              out.ref<double>({i, j}) =
                  0.2 * (in.ref<double>({i, j}) + in.ref<double>({i, j - 1}) +
                         in.ref<double>({i, j + 1}) + in.ref<double>({i + 1, j}) +
                         in.ref<double>({i - 1, j}));
        });
        if (s.ok() && lo > 1) s = tile->flow_out(dst, *Box::create({lo, 1}, {lo + 1, n - 1}));
        if (s.ok() && hi < n - 1) s = tile->flow_out(dst, *Box::create({hi - 1, 1}, {hi, n - 1}));
        if (s.ok()) s = tile->release();
      }
    }
    issued.set_value(s);
  });
  const bool returned = done.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  const int blocking = gate->blocking_calls();
  const int ops = gate->device_ops();
  gate->open_gate();  // let the devices run (and a stuck driver finish)
  driver.join();
  ASSERT_TRUE(returned) << "a tile-path call waited for device work (the gate was closed)";
  const absl::Status s = done.get();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(blocking, 0) << "calls that blocked the driver thread on device work";
  EXPECT_GT(ops, 2 * steps * tiles) << "device operations issued behind the gate";
  const bbmm_stats st = rt.stats(-1);
  if (c.capacity > 0) {
    EXPECT_GT(st.evictions, 0u);
  }
  if (c.reserve) {
    EXPECT_EQ(st.hits_grown, 0u);
  }
  ASSERT_TRUE(rt.unregister_array(A).ok());
  ASSERT_TRUE(rt.unregister_array(B).ok());
  for (int64_t k = 0; k < n * n; ++k) {
    ASSERT_EQ(a[k], ra[k]) << "A " << k / n << "," << k % n;
    ASSERT_EQ(b[k], rb[k]) << "B " << k / n << "," << k % n;
  }
}

// A runtime on 2 host devices whose operations wait behind a closed gate
// (GatedBackend). The gate opens before the runtime goes, also after a failed
// assertion, so that tearing down never waits for it.
class GatedTwoDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Backend>> host = make_host_backend({.devices = 2});
    ASSERT_TRUE(host.ok()) << host.status();
    auto gated = std::make_unique<GatedBackend>(*std::move(host));
    GatedBackend* gate = gated.get();
    absl::StatusOr<std::unique_ptr<Runtime>> rt = Runtime::create_with_backend(std::move(gated), {});
    ASSERT_TRUE(rt.ok()) << rt.status();
    rt_ = *std::move(rt);
    gate_ = gate;  // owned by rt_
  }
  void TearDown() override {
    if (gate_ != nullptr) gate_->open_gate();
  }

  GatedBackend* gate_ = nullptr;
  std::unique_ptr<Runtime> rt_;
};
class ReadInSource : public GatedTwoDevices {};
class WriteBack : public GatedTwoDevices {};

// Where a read-in comes from when the host and another device both hold the
// elements. While that device's own copy of them is still in flight (its
// read-in from the host, behind the closed gate), from the host: the read-in
// must not wait for the other device's. Once that copy has completed, from the
// device (a peer copy).
TEST_F(ReadInSource, FromTheHostWhileThePeersCopyIsInFlightElseFromThePeer) {
  const int64_t n = 16;
  std::vector<double> a(n * n);
  for (int64_t k = 0; k < n * n; ++k) a[k] = static_cast<double>(k);
  Runtime& rt = *rt_;
  GatedBackend* gate = gate_;
  const int64_t ext[2] = {n, n};
  Array* A = *rt.register_array("A", a.data(), sizeof(double), ext);
  // Reads rows [lo, hi) of A on `device` (a kernel that does nothing).
  auto read_rows = [&](int device, int64_t lo, int64_t hi) {
    absl::StatusOr<Tile> tile = rt.begin_tile(device);
    ASSERT_TRUE(tile.ok()) << tile.status();
    ASSERT_TRUE(tile->require(A, *Box::create({lo, 0}, {hi, n}), Access::kRead).ok());
    ASSERT_TRUE(tile->acquire().ok());
    ASSERT_TRUE(tile->launch([](const bbmm_launch_info&) {}).ok());
    ASSERT_TRUE(tile->release().ok());
  };
  read_rows(0, 0, 8);  // device 0's read-in waits behind the gate
  read_rows(1, 4, 8);  // rows 4..7: on the host, and in flight to device 0
  bbmm_stats d1 = rt.stats(1);
  EXPECT_EQ(d1.bytes_peer, 0u) << "device 1 read what device 0 had not received yet from it";
  EXPECT_EQ(d1.bytes_h2d, static_cast<uint64_t>(4 * n * sizeof(double)));
  gate->open_gate();
  ASSERT_TRUE(rt.synchronize().ok());
  read_rows(1, 0, 4);  // rows 0..3: on the host and, complete now, on device 0
  d1 = rt.stats(1);
  EXPECT_EQ(d1.bytes_peer, static_cast<uint64_t>(4 * n * sizeof(double)));
  EXPECT_EQ(d1.bytes_h2d, static_cast<uint64_t>(4 * n * sizeof(double)));
  ASSERT_TRUE(rt.unregister_array(A).ok());
  for (int64_t k = 0; k < n * n; ++k) ASSERT_EQ(a[k], static_cast<double>(k));
}

// write_back starts the copies of the device-only elements to the host and
// returns while they wait behind the closed gate; sync_to_host then waits, and
// the host holds what the kernel wrote.
TEST_F(WriteBack, StartsTheCopiesWithoutWaiting) {
  const int64_t n = 16;
  std::vector<double> a(n * n, 1.0);
  Runtime& rt = *rt_;
  GatedBackend* gate = gate_;
  const int64_t ext[2] = {n, n};
  Array* A = *rt.register_array("A", a.data(), sizeof(double), ext);
  for (int d = 0; d < 2; ++d) {
    absl::StatusOr<Tile> tile = rt.begin_tile(d);
    ASSERT_TRUE(tile.ok()) << tile.status();
    const Box rows = *Box::create({8 * d, 0}, {8 * d + 8, n});
    ASSERT_TRUE(tile->require(A, rows, Access::kWrite).ok());
    ASSERT_TRUE(tile->acquire().ok());
    const PieceCopy out(*tile->view(A));
    ASSERT_TRUE(tile->launch([out, d, n](const bbmm_launch_info&) {
      for (int64_t i = 8 * d; i < 8 * d + 8; ++i)
        for (int64_t j = 0; j < n; ++j) out.ref<double>({i, j}) = static_cast<double>(i * n + j);
    }).ok());
    ASSERT_TRUE(tile->release().ok());
  }
  const int before = gate->device_ops();
  std::future<absl::Status> done = std::async(std::launch::async, [&] {
    gate->watch(std::this_thread::get_id());
    return rt.write_back(A);
  });
  ASSERT_EQ(done.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "write_back waited for device work";
  ASSERT_TRUE(done.get().ok());
  EXPECT_EQ(gate->blocking_calls(), 0);
  EXPECT_GE(gate->device_ops(), before + 2) << "a device-to-host copy per device";
  EXPECT_EQ(a[0], 1.0) << "the host copy changed before the devices ran";
  gate->open_gate();
  ASSERT_TRUE(rt.sync_to_host(A).ok());
  for (int64_t k = 0; k < n * n; ++k) ASSERT_EQ(a[k], static_cast<double>(k)) << k;
  ASSERT_TRUE(rt.unregister_array(A).ok());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NoBlocking,
    ::testing::Values(Case{"one_queue", 1, false, 0}, Case{"four_queues", 4, false, 0},
                      Case{"reserved", 4, true, 0},
                      // Room for about 1.5 tiles' boxes per device: box-out.
                      Case{"boxout", 4, false, 34 * 8 * 8 * 3}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace bbmm::testing
