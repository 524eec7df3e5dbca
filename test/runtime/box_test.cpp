#include "bbmm/box.h"

#include <gtest/gtest.h>

#include "bbmm/box_set.h"

namespace bbmm {
namespace {

Box B(std::initializer_list<int64_t> lo, std::initializer_list<int64_t> hi) {
  return *Box::create(lo, hi);
}

TEST(BoxSmoke, SubtractCenterOfSquare) {
  absl::StatusOr<BoxSet> s = subtract(B({0, 0}, {3, 3}), B({1, 1}, {2, 2}));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->size(), 4u);
  EXPECT_EQ(s->volume(), 8);
}

}  // namespace
}  // namespace bbmm
