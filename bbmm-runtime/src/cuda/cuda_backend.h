// The CUDA backend: real GPUs through the CUDA runtime API.
//
// - Memory: each device allocates from its default stream-ordered memory pool
//   (cudaMallocAsync on the device's stream), with the release threshold
//   raised so freed memory stays in the pool; never cudaMalloc on the tile
//   path. Capacity: what cudaMemGetInfo reports free at start, less a reserve.
// - Queues: one in-order stream per device for copies and kernels; events
//   (cudaEvent_t without timing) order work across devices.
// - Copies: cudaMemcpy3DAsync (host<->device, within a device) and
//   cudaMemcpy3DPeerAsync between devices, with peer access enabled wherever
//   cudaDeviceCanAccessPeer allows (the driver stages through the host where
//   it does not). Strided device-to-device boxes are copied by a kernel
//   (copy_kernel.h), which beats the copy engine there. Registered host arrays are page-locked with
//   cudaHostRegister so host copies run at full PCIe speed.
// - Errors: every CUDA call's error becomes a status naming the call, file and
//   line; sticky errors are reported by every later call.
//
// Thread-safety: every method may be called from several host threads at
// once (each call sets the device it works on).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "core/backend.h"

namespace bbmm {

struct CudaBackendOptions {
  int devices = 0;            // 0: every visible GPU
  // Allow more logical devices than GPUs: logical device d runs on GPU
  // d % visible with its own stream and capacity (tests of multi-device
  // behaviour on one GPU).
  bool oversubscribe = false;
  size_t capacity_bytes = 0;  // per device; 0: the free memory at start less a reserve
  size_t pitch_alignment = 1;
  bool register_host = true;  // page-lock registered host arrays
  bool peer_access = true;    // false: report no peer access (copies go through the host)
  // Strided device-to-device copies (same device, or peers) by a kernel
  // rather than the copy engine; on by default because it measured faster
  // (docs/performance.md).
  bool copy_kernel = true;
};

// Number of CUDA devices visible (0 when there is no driver or no GPU), with a
// reason in `why` when 0.
int cuda_device_count(std::string* why);

// Creates the CUDA backend. kUnavailable when no GPU is present (the message
// says why), kInvalidArgument for bad options.
absl::StatusOr<std::unique_ptr<Backend>> make_cuda_backend(const CudaBackendOptions& options);

}  // namespace bbmm
