// The OpenCL backend: any OpenCL 3.0 platform (PoCL on the CPU in CI, a GPU
// driver on real machines), through the OpenCL C API.
//
// - Devices: ONE context holds every queue, so that buffers of any two
//   logical devices can be copied with clEnqueueCopyBufferRect and one
//   event's wait list may name events of any queue. Each logical device is one
//   in-order command queue. When the platform has several OpenCL devices,
//   logical device i runs on OpenCL device i mod M (by default one logical
//   device per OpenCL device); when it has a single CPU device (PoCL), the
//   default is 4 logical devices, i.e. 4 queues on that one device, each with
//   its own capacity limit, so that multi-device behaviour (flow-out, peer
//   copies, box-out) runs in CI. Platform: $BBMM_OPENCL_PLATFORM (a substring
//   of the platform name) if set, else the first platform with a GPU, else
//   the first platform with any device.
// - Memory: one clCreateBuffer (CL_MEM_READ_WRITE) per allocation;
//   DeviceBuffer::base is the cl_mem. Capacity per logical device: the option,
//   else CL_DEVICE_GLOBAL_MEM_SIZE shared among the logical devices on that
//   OpenCL device, less a 1/16 margin. Freed buffers are released once a
//   marker waiting for the free's `after` events completes (a deferred-release
//   list drained by later calls; never a blocking wait on the hot path).
// - Copies: clEnqueue{Write,Read,Copy}BufferRect, non-blocking, with the
//   wait events as the event wait list; buffer_origin = {offset, 0, 0}.
// - Errors: every CL call's error becomes a status naming the call, file,
//   line and the CL error name. A command whose wait list holds a failed event
//   fails too where the platform propagates failure (PoCL does).
//
// Thread-safety: every method may be called from several host threads at
// once.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/backend.h"

namespace bbmm {

struct OpenCLBackendOptions {
  // Logical devices; 0: one per OpenCL device of the platform, or 4 when the
  // platform has a single CPU device.
  int devices = 0;
  // Per logical device; 0: the device's global memory shared among the
  // logical devices on it, less a margin.
  size_t capacity_bytes = 0;
  // What pitch_alignment() reports (a power of two).
  size_t pitch_alignment = 1;
};

// Number of OpenCL devices on the platform the backend would use (0 when
// there is no ICD, no platform or no device), with the reason in `why` (may be
// null) when 0.
int opencl_device_count(std::string* why);

// Creates the OpenCL backend. kUnavailable when no OpenCL device is present
// (the message says why), kInvalidArgument for bad options (devices outside
// 0..1024, pitch alignment not a power of two).
absl::StatusOr<std::unique_ptr<Backend>> make_opencl_backend(const OpenCLBackendOptions& options);

// Builds kernel `name` from OpenCL C `source` for the context and device of
// `queue` (e.g. LaunchContext::queue). Programs are cached per (context,
// source) and kernels per (context, source, name, calling thread): each host
// thread gets its own cl_kernel, so clSetKernelArg + enqueue on it never races
// with another thread. The kernel belongs to the cache: do not release it; it
// stays valid until the backend owning the context is destroyed (for a
// context no backend owns, until the process exits). Errors: kInvalidArgument
// with the build log when the source does not compile or has no kernel
// `name`; kInternal for other CL errors.
absl::StatusOr<cl_kernel> opencl_build_kernel(cl_command_queue queue, const std::string& source,
                                              const std::string& name);

// Releases every program and kernel opencl_build_kernel cached for `context`
// (the backend calls it when it is destroyed).
void opencl_release_kernel_cache(cl_context context);

// "CL_INVALID_VALUE" etc. for an OpenCL error code ("CL_ERROR(<code>)" when
// unknown).
const char* opencl_error_name(cl_int code);

}  // namespace bbmm
