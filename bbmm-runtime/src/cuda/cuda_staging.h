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
// stream, per round of at most the buffer's size,
//   host-to-device:  cudaLaunchHostFunc(pack)  then the copies buffer -> device
//   device-to-host:  the copies device -> buffer  then cudaLaunchHostFunc(unpack)
// A host function runs when the stream reaches it (after every event the
// stream waits for) and the stream goes on only when it returns, so the host
// bytes are read or written exactly where a DMA would: after what the copy
// waits for, before its completion event. One buffer per copy stream is
// enough: the stream itself orders a round's use of the buffer after the
// previous round's. The packing is spread over the copier's threads (the
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

// Bytes of one staging buffer (one per host<->device copy stream, allocated
// at its first staged copy).
inline constexpr size_t kStagingBufferBytes = size_t{16} << 20;
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

// Host threads that copy the host side of staged rounds.
class StagingCopier {
 public:
  // Up to `threads` threads copy one round (the caller's included); 1: the
  // caller alone. Threads start at the first round that needs them.
  explicit StagingCopier(int threads);
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
    char* buffer;
    size_t parts;
    size_t next = 0;  // the next part to take (under mu_)
    size_t done = 0;  // parts finished (under mu_)
  };
  // Copies part `part` of `job` (bytes [part, part + 1) x round.bytes / parts).
  static void copy_part(const Job& job, size_t part);
  void thread_main();

  const int threads_;
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
