// The call profile (core/call_profile.h): scopes added from several threads
// are merged by scope, with the calls and seconds each thread added (the
// oracle: the test's own sums), sorted by total time; reset forgets them.
#include "core/call_profile.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"

namespace bbmm::detail {
namespace {

// The row of `what` in `report`, or "" when absent.
std::string row_of(const std::string& report, const std::string& what) {
  const std::string key = "| " + what + " |";
  const size_t at = report.find(key);
  if (at == std::string::npos) return "";
  return report.substr(at, report.find('\n', at) - at);
}

TEST(CallProfile, MergesThreadsByScope) {
  call_profile_reset();
  static const char kLaunch[] = "test: launch";
  static const char kFlow[] = "test: flow_out";
  constexpr int kThreads = 4, kCalls = 1000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int k = 0; k < kCalls; ++k) {
        call_profile_add(kLaunch, 1e-6);             // 1 us each
        if (k % 2 == t % 2) call_profile_add(kFlow, 4e-6);  // half the calls, 4 us
      }
    });
  }
  for (auto& th : threads) th.join();
  const std::string report = call_profile_report();
  // 4,000 launches of 1 us; 2,000 flow-outs of 4 us.
  EXPECT_EQ(row_of(report, kLaunch),
            absl::StrFormat("| %s | %d | %.1f | %.3f |", kLaunch, kThreads * kCalls,
                            kThreads * kCalls * 1.0, 1.0));
  EXPECT_EQ(row_of(report, kFlow), absl::StrFormat("| %s | %d | %.1f | %.3f |", kFlow,
                                                   kThreads * kCalls / 2,
                                                   kThreads * kCalls / 2 * 4.0, 4.0));
  // By total time: the flow-outs (8,000 us) before the launches (4,000 us).
  EXPECT_LT(report.find(kFlow), report.find(kLaunch)) << report;
}

TEST(CallProfile, ScopesAreToldApartByAddress) {
  call_profile_reset();
  static const char kA[] = "test: same text";
  static const char kB[] = "test: same text";
  call_profile_add(kA, 1e-6);
  call_profile_add(kB, 1e-6);
  const std::string report = call_profile_report();
  size_t rows = 0;
  for (size_t at = report.find("| test: same text |"); at != std::string::npos;
       at = report.find("| test: same text |", at + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 2u) << report;
}

TEST(CallProfile, ResetForgetsAndAnEmptyProfileReportsNothing) {
  static const char kX[] = "test: forgotten";
  call_profile_add(kX, 1e-3);
  call_profile_reset();
  EXPECT_EQ(call_profile_report(), "");
}

}  // namespace
}  // namespace bbmm::detail
