#include "api/backend_factory.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "host/host_backend.h"
#ifdef BBMM_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif
#ifdef BBMM_HAVE_OPENCL
#include "opencl/opencl_backend.h"
#endif

namespace bbmm::detail {

absl::StatusOr<std::unique_ptr<Backend>> make_backend(const RuntimeOptions& options) {
  bbmm_backend_kind kind = options.backend;
  if (kind == BBMM_BACKEND_AUTO) {
    kind = BBMM_BACKEND_HOST;
#ifdef BBMM_HAVE_CUDA
    if (cuda_device_count(nullptr) > 0) kind = BBMM_BACKEND_CUDA;
#endif
  }
  switch (kind) {
    case BBMM_BACKEND_AUTO:
    case BBMM_BACKEND_HOST: {
      HostBackendOptions host;
      host.devices = options.devices > 0 ? options.devices : 4;
      host.capacity_bytes = options.device_memory;
      host.peer_access = options.peer_access;
      host.poison = options.host_poison;
      return make_host_backend(host);
    }
    case BBMM_BACKEND_CUDA: {
#ifdef BBMM_HAVE_CUDA
      CudaBackendOptions cuda;
      cuda.devices = options.devices;
      if (options.cuda_devices_per_gpu > 1) {
        // Several logical devices per GPU, each with its own streams and
        // capacity (multi-device behaviour on one GPU).
        cuda.oversubscribe = true;
        if (cuda.devices == 0) {
          cuda.devices = cuda_device_count(nullptr) * options.cuda_devices_per_gpu;
        }
      }
      cuda.capacity_bytes = options.device_memory;
      cuda.peer_access = options.peer_access;
      cuda.copy_kernel = options.cuda_copy_kernel;
      cuda.peer_copy_kernel = options.cuda_peer_copy_kernel;
      cuda.peer_push = options.cuda_peer_push;
      cuda.host_copies = options.cuda_host_copies;
      cuda.copy_streams = options.cuda_copy_streams;
      cuda.staging_threads = options.cuda_staging_threads;
      // A tuning knob of the issue workers, not an option of the API: how
      // long a worker spins for the next command before it sleeps (then the
      // next enqueue pays a wake-up).
      if (const char* v = std::getenv("BBMM_CUDA_WORKER_SPIN_US"); v != nullptr && *v != '\0') {
        if (!absl::SimpleAtoi(v, &cuda.worker_spin_us) || cuda.worker_spin_us < 0 ||
            cuda.worker_spin_us > 100000) {
          return absl::InvalidArgumentError(absl::StrCat(
              "BBMM_CUDA_WORKER_SPIN_US='", v, "': expected microseconds in 0..100000"));
        }
      }
      // A tuning knob too: the bytes of each staging buffer (cuda_staging.h),
      // e.g. "4MiB".
      if (const char* v = std::getenv("BBMM_CUDA_STAGING_BUFFER"); v != nullptr && *v != '\0') {
        absl::StatusOr<uint64_t> bytes = parse_bytes(v);
        absl::Status s = bytes.ok() ? check_staging_buffer_bytes(static_cast<size_t>(*bytes))
                                    : bytes.status();
        if (!s.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("BBMM_CUDA_STAGING_BUFFER='", v, "': ", s.message()));
        }
        cuda.staging_buffer_bytes = static_cast<size_t>(*bytes);
      }
      return make_cuda_backend(cuda);
#else
      return absl::UnavailableError(
          "backend 'cuda': this libbbmm was built without the CUDA backend");
#endif
    }
    case BBMM_BACKEND_OPENCL: {
#ifdef BBMM_HAVE_OPENCL
      OpenCLBackendOptions opencl;
      opencl.devices = options.devices;
      opencl.capacity_bytes = options.device_memory;
      return make_opencl_backend(opencl);
#else
      return absl::UnavailableError(
          "backend 'opencl': this libbbmm was built without the OpenCL backend");
#endif
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown backend kind ", static_cast<int>(options.backend)));
}

}  // namespace bbmm::detail
