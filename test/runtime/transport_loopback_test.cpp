// The transport checks (transport_checks.h) over the loopback transport: one
// thread per rank, for 1, 2, 3 and 5 ranks (and under ThreadSanitizer in CI);
// the stencil over ranks (rank_stencil.h) through the C API, and its errors.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "api/c_api_internal.h"
#include "bbmm/bbmm.h"
#include "bbmm/runtime.h"
#include "core/array.h"
#include "core/loopback_transport.h"
#include "host/host_backend.h"
#include "loopback_ranks.h"
#include "rank_stencil.h"
#include "transport_checks.h"

namespace bbmm {
namespace {

class LoopbackTransportTest : public ::testing::TestWithParam<int> {};

TEST_P(LoopbackTransportTest, EveryRankPassesTheChecks) {
  std::vector<std::unique_ptr<Transport>> ranks = make_loopback_transports(GetParam());
  ASSERT_EQ(ranks.size(), size_t(GetParam()));
  std::vector<std::thread> threads;
  for (auto& t : ranks) threads.emplace_back([&t] { testing::run_transport_checks(*t); });
  for (std::thread& th : threads) th.join();
}

INSTANTIATE_TEST_SUITE_P(Ranks, LoopbackTransportTest, ::testing::Values(1, 2, 3, 5));

TEST(LoopbackTransport, MismatchedShapesFailBothSides) {
  std::vector<std::unique_ptr<Transport>> t = make_loopback_transports(2);
  std::vector<double> a(12, 1.0), b(12, -1.0);
  HostArrayRef A{"A", a.data(), sizeof(double), {3, 4}};
  HostArrayRef B{"B", b.data(), sizeof(double), {3, 4}};
  const int64_t lo[2] = {0, 0}, hi_s[2] = {2, 3}, hi_r[2] = {3, 2};
  absl::StatusOr<Event> s = t[0]->send(A, Box::make_unchecked(2, lo, hi_s), 1, 4);
  absl::StatusOr<Event> r = t[1]->receive(B, Box::make_unchecked(2, lo, hi_r), 0, 4);
  ASSERT_TRUE(s.ok() && r.ok());
  absl::Status ws = s->wait(), wr = r->wait();
  EXPECT_FALSE(ws.ok());
  EXPECT_FALSE(wr.ok());
  EXPECT_NE(std::string(wr.message()).find("'A'"), std::string::npos) << wr;
  EXPECT_NE(std::string(wr.message()).find("'B'"), std::string::npos) << wr;
  for (double v : b) EXPECT_EQ(v, -1.0) << "nothing delivered";
}

TEST(LoopbackTransport, NoRanksNoTransports) { EXPECT_TRUE(make_loopback_transports(0).empty()); }

}  // namespace
}  // namespace bbmm

namespace bbmm {
namespace {

using testing::rank_runtime;
using testing::on_ranks;
using testing::RankSetup;
using testing::same;

// The stencil over ranks (rank_stencil.h): one thread and one runtime per rank,
// 2 host devices each; with room for everything, and with devices that hold
// one tile's boxes and little more (tight_device_memory), so that tiles box out.
struct StencilCase {
  int ranks;
  bool tight;
};
std::vector<RankSetup> stencil_ranks(const StencilCase& c) {
  return same(c.ranks, 2, c.tight ? testing::tight_device_memory(1000, c.ranks, 2) : 0);
}
std::string stencil_case_name(const ::testing::TestParamInfo<StencilCase>& i) {
  return std::to_string(i.param.ranks) + "ranks" + (i.param.tight ? "_boxout" : "");
}

class RankStencilTest : public ::testing::TestWithParam<StencilCase> {};

TEST_P(RankStencilTest, MatchesTheSequentialProgram) {
  const StencilCase c = GetParam();
  on_ranks(stencil_ranks(c), /*global_tiles=*/false, false, [&](bbmm_runtime* rt, int r) {
    EXPECT_EQ(bbmm_rank(rt), r);
    EXPECT_EQ(bbmm_rank_count(rt), c.ranks);
    testing::run_rank_stencil(rt, 1000, 12);
    bbmm_stats st;
    ASSERT_EQ(bbmm_stats_get(rt, -1, &st), BBMM_OK);
    if (c.tight) {
      EXPECT_GT(st.evictions, 0u) << "rank " << r;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, RankStencilTest,
                         ::testing::Values(StencilCase{1, false}, StencilCase{2, false},
                                           StencilCase{3, false}, StencilCase{1, true},
                                           StencilCase{2, true}, StencilCase{3, true},
                                           StencilCase{4, true}),
                         stencil_case_name);

void run_global_stencil_case(const StencilCase& c, bool staged);

// The stencil written for one runtime (run_global_stencil), its tiles on the
// devices of all ranks: the runtime moves the data; tight devices box out.
class GlobalStencilTest : public ::testing::TestWithParam<StencilCase> {};

// Both ways of sending (BBMM_RANK_SENDS): from the host-backend devices' memory (auto, the
// default: the loopback reads it) and through the host arrays (staged).
TEST_P(GlobalStencilTest, MatchesTheSequentialProgram) {
  for (const char* mode : {"auto", "staged"}) {
    SCOPED_TRACE(mode);
    testing::ScopedEnv env("BBMM_RANK_SENDS", mode);
    run_global_stencil_case(GetParam(), std::string(mode) == "staged");
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlobalStencilTest,
                         ::testing::Values(StencilCase{1, false}, StencilCase{2, false},
                                           StencilCase{3, false}, StencilCase{2, true},
                                           StencilCase{4, true}),
                         stencil_case_name);

void run_global_stencil_case(const StencilCase& c, bool staged) {
  const std::vector<uint64_t> want = testing::global_stencil_bytes_received(1000, 12, c.ranks, 2);
  std::vector<uint64_t> sent(c.ranks, 0), from_devices(c.ranks, 0);
  on_ranks(stencil_ranks(c), /*global_tiles=*/true, false, [&](bbmm_runtime* rt, int r) {
    EXPECT_EQ(bbmm_device_count(rt), 2 * c.ranks);
    testing::run_global_stencil(rt, 1000, 12);
    bbmm_stats st;
    ASSERT_EQ(bbmm_stats_get(rt, -1, &st), BBMM_OK);
    // Exactly what the dense model says each rank must receive: the edges
    // between ranks and rank 0's gather, never more.
    EXPECT_EQ(st.bytes_received_ranks, want[r]) << "rank " << r;
    sent[r] = st.bytes_sent_ranks;
    from_devices[r] = st.bytes_sent_from_devices;
    EXPECT_LE(st.bytes_sent_from_devices, st.bytes_sent_ranks) << "rank " << r;
    if (c.tight) {
      EXPECT_GT(st.evictions, 0u) << "rank " << r;
    }
  });
  uint64_t total_sent = 0, total_want = 0;
  for (int r = 0; r < c.ranks; ++r) {
    total_sent += sent[r];
    total_want += want[r];
  }
  EXPECT_EQ(total_sent, total_want) << "every byte received was sent once";
  uint64_t total_from_devices = 0;
  for (uint64_t b : from_devices) total_from_devices += b;
  if (staged) {
    EXPECT_EQ(total_from_devices, 0u) << "staged: every send from a host array";
  } else if (c.ranks > 1) {
    // The edges between ranks go from the device that wrote them (the gather at
    // unregistration too, where one instance holds a whole region).
    EXPECT_GT(total_from_devices, 0u);
  }
  if (c.ranks > 1) {
    EXPECT_GT(total_want, 0u);
  }
}

// With global tiles the runtime moves the data itself: explicit transfers are
// refused; the devices are all ranks', each with the least memory of any.
TEST(RankExchange, GlobalTilesRefuseExplicitTransfers) {
  on_ranks({{3, 2 << 20}, {2, 1 << 20}}, /*global_tiles=*/true, false,
           [&](bbmm_runtime* rt, int r) {
    EXPECT_EQ(bbmm_device_count(rt), 5);
    for (int d = 0; d < 5; ++d) EXPECT_EQ(bbmm_device_memory(rt, d), uint64_t{1} << 20) << d;
    EXPECT_EQ(bbmm_device_memory(rt, 5), 0u);
    if (r != 0) return;
    std::vector<double> a(8, 1.0);
    const int64_t n = 8, lo = 0, hi = 2;
    bbmm_array* A = nullptr;
    ASSERT_EQ(bbmm_array_register(rt, "A", a.data(), sizeof(double), 1, &n, nullptr, 0, &A),
              BBMM_OK);
    EXPECT_EQ(bbmm_array_send(rt, A, &lo, &hi, 1, 0), BBMM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(bbmm_last_error_message()).find("itself"), std::string::npos)
        << bbmm_last_error_message();
    bbmm_tile* tile = nullptr;
    EXPECT_EQ(bbmm_tile_begin(rt, 5, &tile), BBMM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(bbmm_last_error_message()).find("all ranks"), std::string::npos)
        << bbmm_last_error_message();
    // Host tiles would need every rank's host copy made current: refused.
    EXPECT_EQ(bbmm_tile_begin(rt, BBMM_DEVICE_HOST, &tile), BBMM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(bbmm_last_error_message()).find("several ranks"), std::string::npos)
        << bbmm_last_error_message();
    ASSERT_EQ(bbmm_array_unregister(rt, A), BBMM_OK);  // no tile ran: nothing to gather
  });
}

// Gathering on every rank (BBMM_MPI_GATHER_ALL): every rank ends with the
// sequential program's arrays.
TEST(GlobalStencil, GatherAllGivesEveryRankTheResult) {
  on_ranks(same(3, 2, 0), /*global_tiles=*/true, /*gather_all=*/true,
           [](bbmm_runtime* rt, int) { testing::run_global_stencil(rt, 1000, 12, true); });
}

// A flow-out whose readers may be on other ranks goes to the host copy at once, behind
// the writing tile's kernel (the send the reader's tile posts later then waits for
// nothing the writer's device runs meanwhile); without other ranks it does not. Rank 1's
// tile (global device 2) writes A[8, 16) and flows out A[8, 9); rank 0's tile (device
// 1) reads A[8, 9). Counted by each runtime's device-to-host bytes.
void noop_kernel(const bbmm_launch_info*, void*) {}

uint64_t bytes_d2h(bbmm_runtime* rt) {
  uint64_t total = 0;
  for (int d = 0; d < 2; ++d) {
    bbmm_stats st;
    EXPECT_EQ(bbmm_stats_get(rt, d, &st), BBMM_OK);
    total += st.bytes_d2h;
  }
  return total;
}

// A tile on `device` requiring A[lo, hi) with `access`, flowing out A[8, 9) if `flow`.
void run_tile(bbmm_runtime* rt, bbmm_array* A, int device, int64_t lo, int64_t hi,
              bbmm_access access, bool flow) {
  const int64_t flo = 8, fhi = 9;
  bbmm_tile* t = nullptr;
  ASSERT_EQ(bbmm_tile_begin(rt, device, &t), BBMM_OK);
  ASSERT_EQ(bbmm_tile_require(t, A, &lo, &hi, access), BBMM_OK);
  ASSERT_EQ(bbmm_tile_acquire(t), BBMM_OK);
  ASSERT_EQ(bbmm_tile_launch(t, noop_kernel, nullptr, 0), BBMM_OK);
  if (flow) {
    ASSERT_EQ(bbmm_tile_flow_out(t, A, &flo, &fhi), BBMM_OK);
  }
  ASSERT_EQ(bbmm_tile_release(t), BBMM_OK);
}

// Registers the 16 doubles of `a` as A.
bbmm_array* register_a(bbmm_runtime* rt, std::vector<double>& a) {
  const int64_t n = static_cast<int64_t>(a.size());
  bbmm_array* A = nullptr;
  EXPECT_EQ(bbmm_array_register(rt, "A", a.data(), sizeof(double), 1, &n, nullptr, 0, &A),
            BBMM_OK);
  return A;
}

TEST(RankExchange, FlowOutForOtherRanksGoesToTheHostAtOnce) {
  testing::ScopedEnv env("BBMM_RANK_SENDS", "staged");
  on_ranks(same(2, 2, 0), /*global_tiles=*/true, false, [](bbmm_runtime* rt, int r) {
    std::vector<double> a(16, 1.0);
    bbmm_array* A = register_a(rt, a);
    ASSERT_NE(A, nullptr);
    run_tile(rt, A, 2, 8, 16, BBMM_WRITE, /*flow=*/true);
    EXPECT_EQ(bytes_d2h(rt), r == 1 ? sizeof(double) : 0u) << "rank " << r;
    run_tile(rt, A, 1, 8, 9, BBMM_READ, /*flow=*/false);
    // The send found the box on the host: no second copy.
    EXPECT_EQ(bytes_d2h(rt), r == 1 ? sizeof(double) : 0u) << "rank " << r;
    ASSERT_EQ(bbmm_array_unregister(rt, A), BBMM_OK);
  });
  // One runtime, no ranks: nothing reads the box elsewhere yet, so it stays on the device.
  bbmm_runtime* rt = rank_runtime({2, 0});
  ASSERT_NE(rt, nullptr);
  std::vector<double> a(16, 1.0);
  bbmm_array* A = register_a(rt, a);
  ASSERT_NE(A, nullptr);
  run_tile(rt, A, 1, 8, 16, BBMM_WRITE, /*flow=*/true);
  EXPECT_EQ(bytes_d2h(rt), 0u);
  ASSERT_EQ(bbmm_array_unregister(rt, A), BBMM_OK);
  EXPECT_EQ(bbmm_runtime_destroy(rt), BBMM_OK);
}

// When the transport reads the devices' memory (the host backend's, by default), the
// same flow-out copies nothing to the host: the reader's tile makes rank 1 send A[8, 9)
// from its device's instance, after the kernel that wrote it, and rank 0 receives the
// values that kernel wrote.
void add_ten(const bbmm_launch_info*, void* args) {
  const bbmm_view* v = static_cast<const bbmm_view*>(args);
  const bbmm_piece& p = v->pieces[0];
  for (int64_t i = p.lo[0]; i < p.hi[0]; ++i) {
    *static_cast<double*>(bbmm_piece_at(&p, sizeof(double), 1, &i)) = 10.0 + static_cast<double>(i);
  }
}

TEST(RankExchange, FlowOutForOtherRanksIsSentFromTheDevice) {
  std::vector<double> gathered;
  on_ranks(same(2, 2, 0), /*global_tiles=*/true, false, [&](bbmm_runtime* rt, int r) {
    std::vector<double> a(16, 1.0);
    bbmm_array* A = register_a(rt, a);
    ASSERT_NE(A, nullptr);
    // Rank 1's tile (global device 2) writes A[8, 16) = 10 + i and flows out A[8, 9).
    const int64_t lo = 8, hi = 16, flo = 8, fhi = 9;
    bbmm_tile* t = nullptr;
    ASSERT_EQ(bbmm_tile_begin(rt, 2, &t), BBMM_OK);
    ASSERT_EQ(bbmm_tile_require(t, A, &lo, &hi, BBMM_WRITE), BBMM_OK);
    ASSERT_EQ(bbmm_tile_acquire(t), BBMM_OK);
    bbmm_view v{};
    if (r == 1) {
      ASSERT_EQ(bbmm_tile_view(t, A, &v), BBMM_OK);
      ASSERT_EQ(v.npieces, 1);
    }
    ASSERT_EQ(bbmm_tile_launch(t, r == 1 ? add_ten : noop_kernel, &v, sizeof(v)), BBMM_OK);
    ASSERT_EQ(bbmm_tile_flow_out(t, A, &flo, &fhi), BBMM_OK);
    ASSERT_EQ(bbmm_tile_release(t), BBMM_OK);
    EXPECT_EQ(bytes_d2h(rt), 0u) << "rank " << r;
    run_tile(rt, A, 1, 8, 9, BBMM_READ, /*flow=*/false);  // rank 0's: receives A[8, 9)
    bbmm_stats st;
    ASSERT_EQ(bbmm_stats_get(rt, -1, &st), BBMM_OK);
    EXPECT_EQ(st.bytes_d2h, 0u) << "rank " << r;
    EXPECT_EQ(st.bytes_sent_from_devices, r == 1 ? sizeof(double) : 0u) << "rank " << r;
    EXPECT_EQ(st.bytes_sent_ranks, r == 1 ? sizeof(double) : 0u) << "rank " << r;
    // Unregistering gathers A[9, 16) on rank 0, from rank 1's device too.
    ASSERT_EQ(bbmm_array_unregister(rt, A), BBMM_OK);
    ASSERT_EQ(bbmm_stats_get(rt, -1, &st), BBMM_OK);
    if (r == 1) {
      EXPECT_EQ(st.bytes_sent_from_devices, 8 * sizeof(double));
    } else {
      gathered = a;
    }
  });
  ASSERT_EQ(gathered.size(), 16u);
  for (int64_t i = 0; i < 16; ++i) {
    EXPECT_EQ(gathered[i], i < 8 ? 1.0 : 10.0 + static_cast<double>(i)) << "A[" << i << "]";
  }
}

// Rows padded on the device (a host backend with 64-byte pitch alignment): a 2-D box
// sent from the instance's memory is described over its padded rows. Explicit mode:
// rank 0's tile writes B[i][j] = 100 i + j on its device, rank 0 sends B[1, 4) x [2, 6)
// from there, rank 1 receives it into its host copy.
void fill_b(const bbmm_launch_info*, void* args) {
  const bbmm_view* v = static_cast<const bbmm_view*>(args);
  const bbmm_piece& p = v->pieces[0];
  for (int64_t i = p.lo[0]; i < p.hi[0]; ++i) {
    for (int64_t j = p.lo[1]; j < p.hi[1]; ++j) {
      const int64_t idx[2] = {i, j};
      *static_cast<double*>(bbmm_piece_at(&p, sizeof(double), 2, idx)) =
          static_cast<double>(100 * i + j);
    }
  }
}

TEST(RankExchange, BoxesSentFromPaddedDeviceRows) {
  std::vector<std::unique_ptr<Transport>> transports = make_loopback_transports(2);
  std::vector<double> received;
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      absl::StatusOr<std::unique_ptr<Backend>> b = make_host_backend(
          {.devices = 1, .capacity_bytes = 0, .pitch_alignment = 64, .peer_access = true});
      ASSERT_TRUE(b.ok()) << b.status();
      absl::StatusOr<std::unique_ptr<Runtime>> rt =
          Runtime::create_with_backend(*std::move(b), RuntimeOptions{});
      ASSERT_TRUE(rt.ok()) << rt.status();
      ASSERT_TRUE((*rt)->core()->set_transport(std::move(transports[r]), false).ok());
      std::vector<double> host(5 * 7, -1.0);
      const int64_t ext[2] = {5, 7};
      absl::StatusOr<Array*> B = (*rt)->register_array("B", host.data(), sizeof(double), ext);
      ASSERT_TRUE(B.ok()) << B.status();
      const Box part = *Box::create(std::vector<int64_t>{1, 2}, std::vector<int64_t>{4, 6});
      if (r == 0) {
        absl::StatusOr<Tile> t = (*rt)->begin_tile(0);
        ASSERT_TRUE(t.ok());
        ASSERT_TRUE(t->require(*B, (*B)->whole, Access::kWrite).ok());
        ASSERT_TRUE(t->acquire().ok());
        absl::StatusOr<bbmm_view> v = t->view(*B);
        ASSERT_TRUE(v.ok());
        ASSERT_EQ(v->npieces, 1);
        ASSERT_EQ(v->pieces[0].stride[0], 8) << "rows of 7 doubles padded to 64 bytes";
        const bbmm_view view = *v;
        ASSERT_TRUE(t->launch([view](const bbmm_launch_info& info) {
                       fill_b(&info, const_cast<bbmm_view*>(&view));
                     }).ok());
        ASSERT_TRUE(t->release().ok());
        ASSERT_TRUE((*rt)->core()->send_box(*B, part, 1, 5).ok());
        const bbmm_stats st = (*rt)->stats();
        EXPECT_EQ(st.bytes_sent_from_devices, 12 * sizeof(double));
        EXPECT_EQ(st.bytes_d2h, 0u) << "nothing staged through the host";
      } else {
        ASSERT_TRUE((*rt)->core()->receive_box(*B, part, 0, 5).ok());
      }
      ASSERT_TRUE((*rt)->unregister_array(*B).ok());
      if (r == 1) received = host;
    });
  }
  for (std::thread& t : threads) t.join();
  const int64_t lo[2] = {1, 2}, hi[2] = {4, 6};
  testing::expect_received_box(received, 5, 7, lo, hi);
}

TEST(RankExchange, AnUnknownRankSendsModeIsRefused) {
  testing::ScopedEnv env("BBMM_RANK_SENDS", "bogus");
  bbmm_runtime* rt = rank_runtime({1, 0});
  ASSERT_NE(rt, nullptr);
  const absl::Status s =
      detail::core_of(rt)->set_transport(std::move(make_loopback_transports(1)[0]), true);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("BBMM_RANK_SENDS='bogus'"), std::string::npos) << s;
  EXPECT_EQ(bbmm_runtime_destroy(rt), BBMM_OK);
}

TEST(RankExchange, WithoutATransportTheCallsSaySo) {
  bbmm_runtime* rt = rank_runtime({1, 0});
  ASSERT_NE(rt, nullptr);
  EXPECT_EQ(bbmm_rank(rt), 0);
  EXPECT_EQ(bbmm_rank_count(rt), 1);
  std::vector<double> a(8, 1.0);
  const int64_t n = 8, lo = 0, hi = 2;
  bbmm_array* A = nullptr;
  ASSERT_EQ(bbmm_array_register(rt, "A", a.data(), sizeof(double), 1, &n, nullptr, 0, &A), BBMM_OK);
  EXPECT_EQ(bbmm_array_send(rt, A, &lo, &hi, 1, 0), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bbmm_last_error_message()).find("no transport"), std::string::npos)
      << bbmm_last_error_message();
  // A transport comes before the first array.
  EXPECT_FALSE(detail::core_of(rt)->set_transport(std::move(make_loopback_transports(2)[0]), false).ok());
  ASSERT_EQ(bbmm_array_unregister(rt, A), BBMM_OK);
  EXPECT_EQ(bbmm_runtime_destroy(rt), BBMM_OK);
}

TEST(RankExchange, BadBoxesAndReadOnlyArraysAreRefused) {
  on_ranks(same(2, 1, 0), /*global_tiles=*/false, false, [](bbmm_runtime* rt, int r) {
    EXPECT_EQ(bbmm_device_count(rt), 1) << "explicit: this rank's devices";
    if (r != 0) return;
    std::vector<double> a(8, 1.0);
    const int64_t n = 8, lo = 6, hi = 9, lo2 = 0, hi2 = 2;
    bbmm_array *A = nullptr, *R = nullptr;
    ASSERT_EQ(bbmm_array_register(rt, "A", a.data(), sizeof(double), 1, &n, nullptr, 0, &A),
              BBMM_OK);
    ASSERT_EQ(bbmm_array_register(rt, "R", a.data(), sizeof(double), 1, &n, nullptr,
                                  BBMM_ARRAY_READ_ONLY, &R),
              BBMM_OK);
    EXPECT_EQ(bbmm_array_send(rt, A, &lo, &hi, 1, 0), BBMM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(bbmm_last_error_message()).find("'A'"), std::string::npos);
    EXPECT_EQ(bbmm_array_receive(rt, R, &lo2, &hi2, 1, 0), BBMM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(bbmm_last_error_message()).find("read-only"), std::string::npos);
    EXPECT_EQ(bbmm_array_send(rt, A, &lo2, &hi2, 0, 0), BBMM_ERROR_INVALID_ARGUMENT)
        << "a send to this rank";
    EXPECT_EQ(bbmm_array_send(rt, A, &lo2, &hi2, 1, 32767), BBMM_ERROR_INVALID_ARGUMENT)
        << "the runtime's own tag";
    // Unregistering gathers nothing in explicit mode.
    ASSERT_EQ(bbmm_array_unregister(rt, A), BBMM_OK);
    ASSERT_EQ(bbmm_array_unregister(rt, R), BBMM_OK);
  });
}

}  // namespace
}  // namespace bbmm
