// Copies of pageable host memory through pinned staging buffers.
//
// A host<->device copy needs page-locked host bytes to run on the copy
// engines at PCIe speed and in stream order. register_host pins the arrays
// (cuda_pinning.h), but pinning costs ~10-30 GB/s of the array once per run,
// 2.6x more with 4 GPU contexts than with 1 (heat2d 8192 on 4 H100s: 0.18 s
// to pin and 0.05 s to unpin around a 0.04 s run, 2026-11-27), whereas a run
// often moves each byte once. Staging moves only the bytes copied: a host
// thread packs the box into a pinned buffer, the copy engine moves the
// buffer, and the other way round for device-to-host copies.
//
// How a staged copy keeps stream order: the worker issues, on the copy's own
// stream S, per round of at most a buffer's size,
//   host-to-device:  cudaLaunchHostFunc(pack)  then the copies buffer -> device
//   device-to-host:  the copies device -> buffer  then cudaLaunchHostFunc(unpack)
// A host function runs when its stream reaches it (after every event the
// stream waits for) and the stream goes on only when it returns, so the host
// bytes are read or written exactly where a DMA would: after what the copy
// waits for, before its completion event.
//
// A copy of one round does just that on S. A copy of several rounds is a
// pipeline over the stream's kStagingSlots buffers, so that the host copies
// one round while the copy engine moves another (one after the other, a
// round costs the sum of both: 40 GB/s on an H100 whose link moves 54): the
// host functions run on a second stream, the lane, and events order the two
// (StagingLane in cuda_streams.h). Round k uses buffer b = k % kStagingSlots:
//   host-to-device:  lane: wait(start) once; wait(moved[b]) from the second
//                    use of b on; pack; record(staged[b])
//                    S:    wait(staged[b]); copies; record(moved[b])
//   device-to-host:  S:    wait(staged[b]) from the second use of b on;
//                          copies; record(moved[b])
//                    lane: wait(moved[b]); unpack; record(staged[b])
//                    S:    wait(staged[last]) at the end
// where `start` is recorded on S before the first round: the lane's host
// functions come after what the copy waits for and after the buffers'
// previous uses (S is a queue), and S's completion event after the last
// unpack. The packing of one round is spread over the copier's threads (the
// host function's thread takes a share).
//
// plan_staging cuts the copies into rounds (whole copies, else planes, else
// rows, else pieces of a row); StagingCopier does the host side of a round.
//
// Thread-safety: plan_staging is reentrant; StagingCopier::run may be called
// from several threads at once.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "core/backend.h"

namespace bbmm {

// Bytes of one staging buffer, and buffers per host<->device copy stream
// (allocated with the backend, or at its first staged copy when the arrays
// are pinned).
inline constexpr size_t kStagingBufferBytes = size_t{16} << 20;  // the default
// Bounds of CudaBackendOptions::staging_buffer_bytes (a multiple of kStagingAlign).
inline constexpr size_t kMinStagingBufferBytes = size_t{64} << 10;
inline constexpr size_t kMaxStagingBufferBytes = size_t{1} << 30;
inline constexpr int kStagingSlots = 2;
// Offsets of pieces in a staging buffer are multiples of this.
inline constexpr size_t kStagingAlign = 256;

// One piece of a staged copy: the rectangle `op` (part of one host<->device
// copy), whose host bytes sit densely (rows of op.shape.width_bytes, one
// after another, plane after plane) at `offset` in the round's buffer.
struct StagedPiece {
  CopyOp op;
  size_t offset = 0;
};

struct StagedRound {
  std::vector<StagedPiece> pieces;
  size_t bytes = 0;  // the buffer bytes the round uses (end of its last piece)
};

// Cuts the host<->device copies `ops` (each checked by check_copy; the cuts
// are the same whichever side is the host's) into rounds of at most
// `capacity` bytes, appended to `rounds`: a copy that fits the round in
// progress joins it, else it starts a new round, and a copy larger than
// `capacity` is cut into groups of planes, else of rows, else row pieces.
void plan_staging(std::span<const CopyOp> ops, size_t capacity, std::vector<StagedRound>* rounds);

// The copy the device does for `piece`: its host side replaced by the dense
// bytes at `buffer` + piece.offset.
CopyOp staged_device_op(const StagedPiece& piece, bool host_is_dst, void* buffer);

// memcpy(dst, src, n) with non-temporal (streaming) stores where the CPU has
// them (x86-64: SSE2), for bytes the CPU will not read again soon (a staging
// buffer the copy engine reads; a host array the program reads later): the
// stores skip the read of the destination's lines into the cache that plain
// stores cost (one byte of memory traffic in four of a pack). Fenced: the
// bytes are visible to other threads and devices when it returns.
void copy_streaming(void* dst, const void* src, size_t n);

// Host threads that copy the host side of staged rounds.
class StagingCopier {
 public:
  // Up to `threads` threads copy one round (the caller's included); 1: the
  // caller alone. Threads start at the first round that needs them. Stores
  // by copy_streaming when `streaming`, else memcpy.
  explicit StagingCopier(int threads, bool streaming = true);
  // Joins the threads (no run() may be in progress).
  ~StagingCopier();
  StagingCopier(const StagingCopier&) = delete;
  StagingCopier& operator=(const StagingCopier&) = delete;

  // Copies the host rectangles of `round` into `buffer` (`to_host` false:
  // packing for a host-to-device copy) or from it into the host (true), and
  // returns when done.
  void run(const StagedRound& round, bool to_host, char* buffer);

 private:
  struct Job {
    const StagedRound* round;
    bool to_host;
    bool streaming;
    char* buffer;
    size_t parts;
    size_t next = 0;  // the next part to take (under mu_)
    size_t done = 0;  // parts finished (under mu_)
  };
  // Copies part `part` of `job` (bytes [part, part + 1) x round.bytes / parts).
  static void copy_part(const Job& job, size_t part);
  void thread_main();

  const int threads_;
  const bool streaming_;
  std::mutex mu_;
  std::condition_variable work_cv_;  // threads: a job queued, or stop
  std::condition_variable done_cv_;  // run(): a part finished
  std::deque<Job*> queue_;           // jobs with parts not taken yet
  bool stop_ = false;
  std::vector<std::thread> pool_;    // started by the first run() with parts > 1
};

// A host function's argument: the copier runs `round` on `buffer` and the
// function deletes the job (cudaLaunchHostFunc(stream, run_staged_round,
// new StagedJob{...})).
struct StagedJob {
  StagingCopier* copier;
  StagedRound round;
  bool to_host;
  char* buffer;
};
void run_staged_round(void* staged_job);

}  // namespace bbmm
