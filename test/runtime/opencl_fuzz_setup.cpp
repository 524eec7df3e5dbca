// Makes runtime_fuzz_test.cpp, compiled into opencl_fuzz_test, run its random
// traces on the OpenCL backend (4 logical devices on PoCL in CI); skips
// without an OpenCL device. Same trace counts as the host run
// (BBMM_FUZZ_TRACES).
#include <cstdio>
#include <cstdlib>

#include "opencl_test_support.h"

namespace bbmm::testing {
namespace {

class OpenCLFuzzEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string why;
    if (opencl_device_count(&why) == 0) {
      fuzz_skip_reason() = "no OpenCL device: " + why;
      return;
    }
    std::printf("random traces on the OpenCL backend\n");
    fuzz_backend() = opencl_test::opencl_factory("opencl", 1);
  }
};

::testing::Environment* const kEnv =
    ::testing::AddGlobalTestEnvironment(new OpenCLFuzzEnvironment);

}  // namespace
}  // namespace bbmm::testing
