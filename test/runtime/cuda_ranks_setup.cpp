// Makes global_tiles_fuzz_test.cpp run its ranks on the CUDA backend, with
// loopback transports that read CUDA device memory as a CUDA-aware MPI does
// (cuda_loopback_copy): cuda_global_tiles_fuzz_test on GPUs (label gpu; skips
// without one), cuda_global_tiles_fuzz_fake_test over the fake CUDA runtime
// (CI). Every rank's devices are logical devices of the first GPU.
#include "cuda_test_support.h"
#include "loopback_ranks.h"

namespace bbmm::testing {
namespace {

class CudaRanksEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string why;
    if (cuda_device_count(&why) == 0) {
      ranks_backend().skip = "no GPU: " + why;
      return;
    }
    RanksBackend& b = ranks_backend();
    b.backend = BBMM_BACKEND_CUDA;
    b.device_memory = {BackendKind::kHost, BackendKind::kCuda};
    b.make_copy = cuda_loopback_copy;
    b.host_access = cuda_host_access;
  }
};

::testing::Environment* const kEnv =
    ::testing::AddGlobalTestEnvironment(new CudaRanksEnvironment);

}  // namespace
}  // namespace bbmm::testing
