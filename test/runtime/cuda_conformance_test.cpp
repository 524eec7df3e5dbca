// The runtime conformance suite on the CUDA backend (label gpu): strided
// device copies by the copy kernel and by the copy engine.
#include "cuda_test_support.h"
#include "runtime_conformance.h"

namespace bbmm::testing {
namespace {

std::vector<BackendFactory> cuda_factories() {
  std::string why;
  if (cuda_device_count(&why) == 0) return {};
  return {cuda_factory("cuda_kernel", true), cuda_factory("cuda_engine", false)};
}

// Says why the suite has no instance on a machine without a GPU.
TEST(CudaConformance, NeedsAGpu) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no GPU: " << why;
}

}  // namespace

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RuntimeConformance);
INSTANTIATE_TEST_SUITE_P(Cuda, RuntimeConformance, ::testing::ValuesIn(cuda_factories()),
                         factory_name);

}  // namespace bbmm::testing
