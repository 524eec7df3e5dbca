// The transport checks (transport_checks.h) over the loopback transport: one
// thread per rank, for 1, 2, 3 and 5 ranks (and under ThreadSanitizer in CI).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "core/loopback_transport.h"
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
