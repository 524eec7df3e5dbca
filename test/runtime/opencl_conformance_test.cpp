// The runtime conformance suite (runtime_conformance_suite.cpp) on the OpenCL
// backend (4 logical devices on PoCL in CI; unpadded and 64-byte rows). The
// suite's kernels are host lambdas: host_access maps each buffer the pieces
// live in (blocking clEnqueueMapBuffer on the device's queue, inside the
// launch function, so after the tile's read-ins), runs the kernel on host
// pointers, then unmaps. Without an OpenCL device the suite has no instances
// and OpenCLConformance.DeviceAvailable skips, printing why.
#include <string>
#include <vector>

#include "opencl_test_support.h"
#include "runtime_conformance.h"

namespace bbmm::testing {
namespace {

using opencl_test::opencl_factory;

std::vector<BackendFactory> opencl_factories() {
  if (opencl_device_count(nullptr) == 0) return {};
  return {opencl_factory("opencl", 1), opencl_factory("opencl_pitch64", 64)};
}

TEST(OpenCLConformance, DeviceAvailable) {
  std::string why;
  if (opencl_device_count(&why) == 0) {
    std::fprintf(stderr, "skipping the OpenCL conformance suite: no OpenCL device: %s\n",
                 why.c_str());
    GTEST_SKIP() << "no OpenCL device: " << why;
  }
}

}  // namespace

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RuntimeConformance);
INSTANTIATE_TEST_SUITE_P(OpenCL, RuntimeConformance, ::testing::ValuesIn(opencl_factories()),
                         factory_name);

}  // namespace bbmm::testing
