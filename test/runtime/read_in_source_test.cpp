// Where a read-in takes a box from (core/coherency.cpp): a box another device is still
// reading in from the host is taken from the host too when host copies cost only the
// device's own link (pinned), and from that device, behind its read-in, when they go
// through the host's shared copier threads (Backend::host_copies_staged). The devices'
// operations wait behind a closed gate (gated_backend.h), so the first read-in is in
// flight when the second device asks, every time.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "bbmm/runtime.h"
#include "gated_backend.h"
#include "host/host_backend.h"

namespace bbmm::testing {
namespace {

bbmm_stats read_on_both_devices(bool staged) {
  constexpr int64_t n = 64;
  std::vector<double> b(n * n);
  for (int64_t k = 0; k < n * n; ++k) b[k] = static_cast<double>(k);
  absl::StatusOr<std::unique_ptr<Backend>> host = make_host_backend({.devices = 2});
  EXPECT_TRUE(host.ok()) << host.status();
  auto gated = std::make_unique<GatedBackend>(*std::move(host));
  GatedBackend* gate = gated.get();
  gate->set_host_copies_staged(staged);
  absl::StatusOr<std::unique_ptr<Runtime>> rt = Runtime::create_with_backend(std::move(gated), {});
  EXPECT_TRUE(rt.ok()) << rt.status();
  const int64_t ext[2] = {n, n};
  Array* B = *(*rt)->register_array("B", b.data(), sizeof(double), ext);
  for (int device = 0; device < 2; ++device) {
    absl::StatusOr<Tile> t = (*rt)->begin_tile(device);
    EXPECT_TRUE(t.ok());
    EXPECT_TRUE(t->require(B, *Box::create({0, 0}, {n, n}), Access::kRead).ok());
    EXPECT_TRUE(t->acquire().ok());
    EXPECT_TRUE(t->launch([](const bbmm_launch_info&) {}).ok());
    EXPECT_TRUE(t->release().ok());
  }
  const bbmm_stats st = (*rt)->stats();  // the copies are issued, none has run
  gate->open_gate();
  EXPECT_TRUE((*rt)->synchronize().ok());
  EXPECT_TRUE((*rt)->unregister_array(B).ok());
  for (int64_t k = 0; k < n * n; ++k) EXPECT_EQ(b[k], static_cast<double>(k));
  return st;
}

TEST(ReadInSource, ABoxInFlightToAPeerComesFromTheHostWhenHostCopiesArePinned) {
  const bbmm_stats st = read_on_both_devices(/*staged=*/false);
  EXPECT_EQ(st.bytes_h2d, 2u * 64 * 64 * 8);
  EXPECT_EQ(st.bytes_peer, 0u);
}

TEST(ReadInSource, ABoxInFlightToAPeerComesFromThePeerWhenHostCopiesAreStaged) {
  const bbmm_stats st = read_on_both_devices(/*staged=*/true);
  EXPECT_EQ(st.bytes_h2d, 64u * 64 * 8);
  EXPECT_EQ(st.bytes_peer, 64u * 64 * 8);
}

}  // namespace
}  // namespace bbmm::testing
