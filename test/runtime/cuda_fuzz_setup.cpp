// Makes runtime_fuzz_test.cpp, compiled into cuda_fuzz_test, run its random
// traces on the CUDA backend (label gpu); skips without a GPU.
#include "cuda_test_support.h"

namespace bbmm::testing {
namespace {

class CudaFuzzEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string why;
    if (cuda_device_count(&why) == 0) {
      fuzz_skip_reason() = "no GPU: " + why;
      return;
    }
    fuzz_backend() = cuda_factory("cuda", true);
  }
};

::testing::Environment* const kEnv =
    ::testing::AddGlobalTestEnvironment(new CudaFuzzEnvironment);

}  // namespace
}  // namespace bbmm::testing
