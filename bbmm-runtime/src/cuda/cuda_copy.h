// How the CUDA backend issues one rectangular copy, or a batch of them, on a
// stream: the choice of CUDA call. No waiting, no events: the issue worker
// (cuda_worker.h) does that around these calls.
//
// Single copies (issue_copy): a dense copy is one cudaMemcpyAsync (or
// cudaMemcpyPeerAsync between GPUs); a strided device-to-device copy uses the
// copy kernel (copy_kernel.h) where it measured faster than the copy engine
// (every same-device box; with CopyEnv::peer_copy_kernel, peer boxes with rows
// under 256 B or under 64 MiB, and dense peer boxes up to 256 KiB, whose
// engine copies are all latency); the others cudaMemcpy2DAsync /
// cudaMemcpy3DAsync / cudaMemcpy3DPeerAsync.
//
// Batches (issue_copy_batch), all on the one stream given:
// - device-to-device ops the copy kernel would take: ONE batched kernel
//   launch (per 48 rectangles) for all of them;
// - host<->device and same-device ops: ONE cudaMemcpy3DBatchAsync (CUDA >=
//   12.8) where each op is expressible (pointer operands; a plane pitch that
//   is a whole number of rows), accessed in stream order;
// - peer ops the kernel does not take: one by one (cudaMemcpy3DBatchAsync's
//   documentation never mentions peer operands, so it is only tried when
//   CudaBackendOptions::batch_api_peer asks for it);
// - whatever is left, or everything when CUDA rejects the batch call, one by
//   one through issue_copy (after kBatchApiMaxRejections rejections in a row
//   the batch call is no longer tried).
//
// Thread-safety: the functions are reentrant; a BatchScratch belongs to one
// thread.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/backend.h"
#include "cuda/copy_kernel.h"

namespace bbmm {

// After this many rejected cudaMemcpy3DBatchAsync calls in a row (a platform
// or combination CUDA does not support), batches stop trying it.
inline constexpr int kBatchApiMaxRejections = 4;
// Fewer small host boxes than this in a batch go through the copy engine.
inline constexpr size_t kHostKernelMinOps = 4;

class HostPinner;

enum class CopyDir : uint8_t {
  kH2D,   // host to device
  kD2H,   // device to host
  kD2D,   // within one logical device
  kPeer,  // between two logical devices (maybe on one GPU)
};

// The trace name of a copy in direction `dir`: "copy H2D", "copy D2H",
// "copy D2D", "copy peer".
const char* copy_trace_name(CopyDir dir);

// The direction of a copy to `dst` from `src` (not both on the host).
inline CopyDir copy_direction(const Endpoint& dst, const Endpoint& src) {
  if (src.device == kHost) return CopyDir::kH2D;
  if (dst.device == kHost) return CopyDir::kD2H;
  return dst.device == src.device ? CopyDir::kD2D : CopyDir::kPeer;
}

// Checks one copy at the call (the error names `what`, e.g. "cuda copy", and
// op `index` when >= 0): not host-to-host, non-null bases, row pitches at
// least the row width when there are several rows, plane pitches that keep
// the planes apart when there are several planes. kInvalidArgument.
absl::Status check_copy(const Endpoint& dst, const Endpoint& src, const CopyShape& shape,
                        const char* what, long index);

// What issuing a copy needs beyond the copy itself.
struct CopyEnv {
  int dst_gpu = -1;  // the GPUs of the endpoints; -1 for the host
  int src_gpu = -1;
  // The destination's GPU reads the source directly (same GPU or peer
  // access enabled): the copy kernel may be used between devices.
  bool peer_reachable = false;
  bool copy_kernel = true;      // CudaBackendOptions::copy_kernel
  bool peer_copy_kernel = false; // CudaBackendOptions::peer_copy_kernel
  // Batches: host<->device ops of boxes under this size by the copy kernel,
  // through the host pointer, when the host bytes are page-locked (`pinner`)
  // and the batch has kHostKernelMinOps such boxes
  // (CudaBackendOptions::host_copy_kernel_max_box; 0: never).
  size_t host_kernel_max_box = 0;
  const HostPinner* pinner = nullptr;
  bool batch_api = true;        // CudaBackendOptions::batch_api
  // The batch call may take host pointers (CudaTopology::host_pointers_ok).
  bool batch_api_host = true;
  bool batch_api_peer = false;  // CudaBackendOptions::batch_api_peer
  // cudaMemcpy3DBatchAsync calls CUDA rejected in a row (shared by the
  // backend's workers); from kBatchApiMaxRejections on, batches go one by
  // one at once. Null: never use the batch call.
  std::atomic<int>* batch_api_rejections = nullptr;
};

// Issues `op` (checked by check_copy) in direction `dir` on `stream`, whose
// device must be the destination's GPU (or the source's for D2H). Returns
// the failing CUDA call's status.
absl::Status issue_copy(const CopyOp& op, CopyDir dir, const CopyEnv& env, cudaStream_t stream);

// The host bytes a copy touches on its host side `ep` (of `shape`, not
// empty): [first, one past the last).
std::pair<uintptr_t, uintptr_t> host_span(const Endpoint& ep, const CopyShape& shape);

// Splits `op` at the host addresses `cuts` (sorted, each strictly inside the
// host_span of its host side: dst when `host_is_dst`, else src) into copies
// whose host bytes each lie between two consecutive cuts, appended to `out`:
// runs of whole rows as 2-D copies, a row crossing a cut as one 1-D copy per
// piece. For host memory pinned in several registrations (cuda_pinning.h):
// CUDA rejects a copy spanning two.
void split_copy_at(const CopyOp& op, bool host_is_dst, std::span<const uintptr_t> cuts,
                   std::vector<CopyOp>* out);

// Reusable buffers of issue_copy_batch (one per issuing thread).
struct BatchScratch {
  std::vector<cudaMemcpy3DBatchOp> api;
  std::vector<const CopyOp*> api_ops;
  std::vector<CopyKernelOp> kernel;
  std::vector<const CopyOp*> rest;
};

// How a batch was issued (for the trace): how many ops went through each
// path.
struct BatchPaths {
  size_t kernel = 0;     // batched copy kernel
  size_t batch_api = 0;  // cudaMemcpy3DBatchAsync
  size_t single = 0;     // one by one (issue_copy)
};

// Issues every op of `ops` (each checked by check_copy, all in direction
// `dir` between the same two devices) on `stream` as described above; no op
// may write bytes another reads or writes. Fills `paths`.
absl::Status issue_copy_batch(std::span<const CopyOp> ops, CopyDir dir, const CopyEnv& env,
                              cudaStream_t stream, BatchScratch& scratch, BatchPaths* paths);

}  // namespace bbmm
