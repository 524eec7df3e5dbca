// The runtime conformance suite: one set of behaviours every backend must
// show (reuse, containment, growth, pieces, LRU box-out with write-back,
// out-of-memory errors, flow-out, sync, read-only arrays, ranks 1-4, element
// sizes 1-16, padded host arrays, checking mode, exact accounting, views,
// several host threads).
//
// The cases live in runtime_conformance_suite.cpp. A test binary compiles
// that file and instantiates the suite with its backends' factories:
//
//   INSTANTIATE_TEST_SUITE_P(Host, RuntimeConformance,
//       ::testing::ValuesIn(bbmm::testing::host_backend_factories()),
//       bbmm::testing::factory_name);
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "runtime_test_util.h"

namespace bbmm::testing {

class RuntimeConformance : public ::testing::TestWithParam<BackendFactory> {
 protected:
  // A runtime over GetParam()'s backend with `devices` devices of
  // `capacity` bytes each (0 = unlimited).
  TestRuntime make_runtime(int devices, size_t capacity,
                                        RuntimeOptions options = {});
};

inline std::string factory_name(const ::testing::TestParamInfo<BackendFactory>& info) {
  return info.param.name;
}

}  // namespace bbmm::testing
