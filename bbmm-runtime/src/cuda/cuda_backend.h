// The CUDA backend: real GPUs through the CUDA runtime API, with the GPUs
// running concurrently and the application's threads never waiting for them.
//
// What runs where
// ---------------
// - The application's threads (the runtime core's acquire/launch/flow_out/
//   release) call the Backend methods. allocate() runs there (the core needs
//   the pointer at once): cudaMallocAsync on the device's memory stream, then
//   a `ready` event recorded there. copy, copy_batch, launch, free and record
//   only validate their arguments, create the operation's event state (one
//   allocation) and move a command into the device's queue: no CUDA call, no
//   system call unless the worker is asleep (well under a microsecond).
// - One issue worker thread per logical device (cuda_worker.h) takes the
//   commands in order, makes the chosen stream wait for the command's events,
//   issues the CUDA calls, records the completion event and publishes it.
//   The user's launch function runs there, with LaunchContext{device, compute
//   stream}. The worker spins ~150 us for more work before it sleeps.
// - synchronize() and Event::wait() block the calling thread (allowed): until
//   the worker has issued everything enqueued before, then on the streams or
//   the CUDA event.
//
// Streams (cuda_streams.h), per logical device, all non-blocking: compute
// (kernels); h2d.k, d2h.k, d2d.k (k < copy_streams, round-robin; a copy
// between devices runs on the destination's d2d streams; the copy kernel for
// strided device-to-device boxes runs there too), at the greatest priority;
// memory (allocations and frees); join (record()); trace (reference events).
// Logical devices sharing a GPU (oversubscribe) each get their own streams and
// worker.
//
// Why it is correct
// -----------------
// - Ordering: operations are ordered only by the events in their wait lists
//   (the Backend contract). The worker turns each such event into a
//   cudaStreamWaitEvent on the operation's stream, after the event has been
//   issued (cuda_events.h says why that matters), skipping events of the same
//   stream (stream order), events known complete, and all but the latest
//   event of any one stream (events of one stream complete in order). A
//   worker waiting for an event of another device that is not issued yet
//   cannot deadlock (cuda_worker.h).
// - Events: an Event is usable at once, on any device, before the worker has
//   recorded its CUDA event (CudaOpEvent: pending -> issued or failed).
//   cudaEvent_t objects are pooled per GPU (they can only be recorded on
//   streams of their GPU; no cudaEventCreate on the hot path).
// - Memory: cudaMallocAsync and cudaFreeAsync both run on the device's
//   memory stream, from the device's default pool (release threshold raised:
//   freed memory stays in the pool). A free is issued by the worker after the
//   memory stream waited for the free's `after` events, so the block returns
//   to the pool only when its last user is done. A later cudaMallocAsync on
//   the memory stream may hand out that block again (memory freed in a stream
//   is reusable by later allocations in the same stream, in stream order):
//   its `ready` event, recorded on the memory stream after the allocation,
//   therefore completes only after the previous users of the block, and every
//   use of the new buffer waits for `ready`. A block freed by another logical
//   device of the same GPU (another memory stream) is reused only when its
//   free has completed or after the driver made our memory stream wait for it
//   (the pool's default reuse policies), which `ready` covers as well.
//   Capacity accounting (free_memory) counts a buffer free at the free()
//   call; when cudaMallocAsync then finds the pool short, allocate() lets the
//   worker issue the frees queued before it and tries once more.
//   A pool grower per GPU (cuda_pool_grower.h) keeps free memory in the pool
//   ahead of the allocations on a thread of its own, so that allocate() is a
//   pool hit: growing a pool on the caller's thread can wait for kernels,
//   even of another GPU (measured on two H200s).
// - Errors: every CUDA call's error becomes a status naming the call. An
//   operation that fails (a CUDA error, a launch error, an exception of the
//   launch function) fails its event, is remembered as the device's first
//   error (synchronize() returns and clears it; record()'s event fails with
//   it) and fails every operation that waits for it, without running them
//   (a free still frees). Nothing throws across a thread.
// - Copies (cuda_copy.h): copy() is one CUDA call on one copy stream;
//   copy_batch() issues all its rectangles as one command on one stream with
//   one event: cudaMemcpy3DBatchAsync for host<->device and same-device ones
//   (not tried again after 4 rejections in a row; never with host pointers
//   where a GPU cannot use them), one batched copy-kernel launch for strided
//   device-to-device ones, one by one for what is left (peer rectangles the
//   kernel does not take: the batch call's documentation does not cover peer
//   operands; CudaBackendOptions::batch_api_peer tries it).
// - Pinning (cuda_pinning.h): register_host page-locks (host_copies: pinned, or
//   auto once the registered arrays exceed the devices' capacity) in one call by default;
//   in chunks (optionally from several threads) when asked. CUDA rejects a
//   copy whose host bytes span two registrations, so the workers split host
//   copies at chunk boundaries. Copies of host bytes that are not page-locked
//   are staged (cuda_staging.h), never handed to CUDA as pageable memory
//   (CUDA stages those outside stream order: random traces read stale data).
// - Tracing (cuda_trace.h): with a tracer set, each operation is bracketed by
//   two timing events on its stream; flush_trace() (and synchronize(), when
//   many are pending) turns them into slices with the stream's name in the
//   args ("stream":"h2d.0"), GPU times mapped to the tracer's clock through a
//   reference event per device. Tracing off costs one pointer test per call.
//   set_tracer must not race with other calls (as on the host backend).
//
// Known costs
// -----------
// - One memory stream per device orders every allocation after every free
//   issued before it: a new buffer's `ready` waits for the users of buffers
//   freed earlier even when the pool hands out fresh memory (a false
//   dependency, at most until those users finish).
// - A copy from or to pageable host memory (register_host off, a failed
//   registration, memory the program never registered) is staged through
//   two pinned buffers per copy stream (cuda_staging.h): in stream order, but
//   the host side is a CPU copy (spread over staging_threads threads); a
//   copy of more than one buffer is pipelined (the CPU copies one buffer
//   while the copy engine moves the other).
// - A launch function that blocks (e.g. synchronises its stream) holds the
//   device's worker likewise.
//
// Thread-safety: every method may be called from several host threads at
// once. A launch function (which runs on a worker) may enqueue further
// operations but must not synchronize() (it would wait for itself; an error
// is returned).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/backend.h"
#include "cuda/cuda_pinning.h"

namespace bbmm {

struct CudaBackendOptions {
  int devices = 0;  // 0: every visible GPU
  // Allow more logical devices than GPUs: logical device d runs on GPU
  // d % visible with its own streams, worker and capacity (tests of
  // multi-device behaviour on one GPU).
  bool oversubscribe = false;
  size_t capacity_bytes = 0;  // per device; 0: the free memory at start less a reserve
  size_t pitch_alignment = 1;
  // What register_host does (bbmm_host_copies in bbmm.h): pinned, page-lock
  // each array (cuda_pinning.h); staged, leave it pageable; auto, staged while
  // the arrays registered fit in the devices' capacity together, and from the
  // registration that makes them exceed it every registered array pinned (out
  // of core each byte crosses PCIe many times, and the copy engines alone move
  // pinned bytes at the full rate of every GPU's link). Copies of host memory
  // that is not page-locked (staged arrays, memory never registered) are
  // staged through pinned buffers (cuda_staging.h) whatever this says.
  bbmm_host_copies host_copies = BBMM_HOST_COPIES_AUTO;
  bool peer_access = true;    // false: report no peer access (copies go through the host)
  // Strided device-to-device copies (same device, or peers) by a kernel
  // rather than the copy engine; on by default because it measured faster
  // (docs/performance.md).
  bool copy_kernel = true;
  // Also strided boxes between GPUs (peers) by the kernel (with copy_kernel). Off (the
  // default): the copy engines take them. A copy kernel of GPU b waiting for GPU a's
  // kernel held back b's later host-to-device copy at the start of a run, and copy
  // kernels take multiprocessors from the tiles' kernels: the stencils ran 0-8% faster
  // on 2 and 4 H100s with the engines (2026-11-26, docs/performance.md), although a
  // small strided box alone copies faster by the kernel (gpu_bench).
  bool peer_copy_kernel = false;
  // Which device's worker issues a copy between two devices, on its streams: the
  // destination's (false, the default: "pull") or the source's (true: "push"). Pulling,
  // the destination's worker waits, in its queue order, until the source's worker has
  // issued the operation that wrote the box, so on 4 H100s the workers issued in step
  // with one another and at the GPUs' pace (2026-11-26, fifth session,
  // docs/performance.md); pushing, the source's worker issues the copy right after its
  // own kernel: 1.06-1.29x faster on 4 H100s, 1.01-1.02x on 2 (2026-11-26, sixth
  // session), hence the default.
  bool peer_push = true;

  // Copy streams per direction (host-to-device, device-to-host, into the
  // device from a device), used round-robin: 1..8.
  int copy_streams = 2;
  // How long an idle issue worker spins before it sleeps (0..100000 us).
  int worker_spin_us = 150;
  // copy_batch issues host<->device and same-device rectangles with
  // cudaMemcpy3DBatchAsync (false: one by one on the batch's stream).
  bool batch_api = true;
  // Also try cudaMemcpy3DBatchAsync for peer rectangles the copy kernel does
  // not take (off: its documentation does not cover peer operands).
  bool batch_api_peer = false;
  // Host<->device boxes of a copy_batch smaller than this by the batched copy
  // kernel, reading or writing pinned host memory directly (zero-copy, one
  // launch for the batch's boxes) instead of one copy-engine operation each,
  // when the batch has at least 4 such boxes and the GPU can use host pointers
  // (cudaDevAttrCanUseHostPointerForRegisteredMem). Every copy-engine
  // operation pays ~3 us, a 1 MiB box takes 19 us on PCIe: measured on an
  // H100, zero-copy batches of 1 MiB boxes reach 0.90 (H2D) and 0.94 (D2H) of
  // the contiguous ceiling against 0.85 and 0.91 through the engine, and fall
  // behind from 16 MiB (docs/performance.md). 0: never.
  size_t host_copy_kernel_max_box = size_t{4} << 20;
  // Every operation of a device also waits for the device's latest
  // allocation's `ready` event: for a caller that does not put
  // DeviceBuffer::ready into the wait lists of the buffer's uses (the test
  // suites' current runtime core). Costs a stream wait per stream after each
  // allocation, and false dependencies behind frees. ("A device's operations"
  // are those its worker issues: with peer_push, a copy into another device's
  // buffer waits for this device's allocations, not for that buffer's.)
  bool wait_for_allocations = false;
  // Free bytes each GPU's memory pool keeps ahead of the allocations, grown
  // by a thread of its own (cuda_pool_grower.h), so that allocate() does not
  // grow the pool itself (which can wait for kernels, even of another GPU):
  // max(this, a quarter of the bytes in use), within the capacity; with a
  // capacity_bytes set, at least that capacity (up to 4 GiB), taken at
  // creation. 0: off.
  size_t pool_headroom_bytes = size_t{64} << 20;
  // How register_host pins (cuda_pinning.h).
  HostPinMethod pin_method = HostPinMethod::kAuto;
  size_t pin_chunk_bytes = size_t{256} << 20;
  int pin_threads = 4;
  // Host threads that pack and unpack a staged copy's round (the CUDA host
  // function's thread included), shared by the devices: 1..64; 0: 16 for
  // one GPU, 32 for more, at most half the host's hardware threads (at
  // least 1).
  int staging_threads = 0;
  // The copier's stores: streaming (copy_streaming: no read of the
  // destination into the cache) or plain memcpy.
  bool staging_streaming_stores = true;
  // Bytes of each of the two pinned buffers of a host<->device copy stream's
  // staging lane (cuda_staging.h: kStagingBufferBytes, 16 MiB, by default):
  // a staged copy moves in rounds of at most this, and every device pins
  // 2 x copy_streams x 2 such buffers at creation when arrays may be staged.
  // 64 KiB .. 1 GiB, a multiple of 256 bytes.
  size_t staging_buffer_bytes = size_t{16} << 20;
};

// OK when `bytes` is a valid CudaBackendOptions::staging_buffer_bytes, else
// an InvalidArgument error saying the bounds.
absl::Status check_staging_buffer_bytes(size_t bytes);

// Number of CUDA devices visible (0 when there is no driver or no GPU), with a
// reason in `why` when 0.
int cuda_device_count(std::string* why);

// Sets the CUDA environment libbbmm relies on (eager module loading) unless
// the user set it; call before the process's first CUDA call, from a thread
// while no other reads the environment (cuda_device_count calls it too).
void cuda_prepare_environment();

// Initialises the driver and creates the primary contexts of the GPUs a
// backend of `devices` devices (0: all) would use, as make_cuda_backend does,
// so that a later make_cuda_backend finds them ready (the contexts stay while
// the process lives). kUnavailable when no GPU is visible.
absl::Status cuda_warm_up(int devices);

// Creates the CUDA backend and starts its issue workers. kUnavailable when no
// GPU is present (the message says why), kInvalidArgument for bad options,
// the failing CUDA call's status otherwise.
absl::StatusOr<std::unique_ptr<Backend>> make_cuda_backend(const CudaBackendOptions& options);

}  // namespace bbmm
