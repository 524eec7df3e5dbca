// The issue worker of one logical device: a host thread that issues the
// device's operations to CUDA, so that the application's threads only
// enqueue a command (a move into a vector under an uncontended lock, no
// system call unless the worker sleeps) and never pay a CUDA API call or wait
// for the device.
//
// For each command, in enqueue order, the worker
//  1. picks the stream: compute (launch), h2d.k / d2h.k / d2d.k round-robin
//     (copies; a copy between devices is on the destination's d2d streams),
//     memory (free), join (record);
//  2. resolves the wait list: waits until each event is issued (see below),
//     drops events known complete, on the same stream (stream order covers
//     them) or superseded by a later event of the same stream, and makes the
//     stream cudaStreamWaitEvent for the rest; a failed event fails the
//     command without running it (free still frees);
//  3. issues the operation (cuda_copy.h; a launch runs the user's function
//     with LaunchContext{device, compute stream} and checks cudaGetLastError;
//     an exception becomes the event's kInternal error);
//  4. records the completion event (pooled cudaEvent_t) and publishes it to
//     the command's CudaOpEvent; a failure is also remembered as the device's
//     first error (returned by synchronize()).
//
// Deadlock freedom of step 2: a command only waits for events its caller
// held, and a caller holds an event only after the enqueue that created it
// returned. So every event a command waits for was enqueued (on some device)
// strictly before the command itself: "waits for" follows enqueue order,
// which is a total order (each enqueue happens under its device's lock, and
// the event is published to the caller after it). The earliest command not
// yet issued, over all devices, therefore waits only for issued events, and
// its worker — which issues in enqueue order and has issued everything
// before it — makes progress. No cycle can form. (A launch function that
// waits on the host for an event of a later operation of its own device
// breaks this, as it would on any in-order queue.)
//
// Waiting for the issue before cudaStreamWaitEvent matters: the cudaEvent_t
// of a pending event is not recorded yet (and pooled: it may still hold an
// old recording), and cudaStreamWaitEvent waits for the most recent
// recording at the time of the call.
//
// Thread-safety: enqueue, wait_issued, first-error and allocation methods may
// be called from any thread; the rest run on the worker thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/backend.h"
#include "cuda/cuda_copy.h"
#include "cuda/cuda_events.h"
#include "cuda/cuda_pinning.h"
#include "cuda/cuda_staging.h"
#include "cuda/cuda_streams.h"
#include "cuda/cuda_topology.h"
#include "cuda/cuda_trace.h"

namespace bbmm {

class Tracer;

// kReady: the ready event of an allocation the calling thread made on the
// memory stream, recorded there by the worker (see CudaBackend's allocate).
enum class CommandKind : uint8_t { kCopy, kBatch, kLaunch, kFree, kRecord, kReady };

// One operation to issue; moved into the worker's queue. Compact, because
// each of its cache lines that the enqueueing thread writes moves to the
// worker's core when the worker reads it (about 0.1 us per line on the GPU
// machines, issue 10): the fields every command uses come first, in two
// lines; what only some kinds need is in `payload`, of which a move copies
// only the kind's alternative.
//
// The command's event and the events it waits for are borrowed: the threads
// that enqueue keep them alive (Worker::Keep) until the worker has issued the
// command, so that the worker never changes their reference counts, whose
// cache lines the enqueueing thread touches on every operation.
struct Command {
  CommandKind kind = CommandKind::kRecord;
  CopyDir dir = CopyDir::kH2D;  // copies
  StreamSlot* slot = nullptr;   // chosen at enqueue (Worker::enqueue)
  CudaOpEvent* event = nullptr;  // borrowed; null for kFree
  // Borrowed; inline: no allocation for the usual lists (a stencil tile's
  // kernel waits for up to 8 events while the calling thread runs ahead).
  absl::InlinedVector<const EventState*, 8> waits;
  std::shared_ptr<CudaOpEvent> ready;            // kReady: owned (note_allocation)
  std::function<void(const LaunchContext&)> fn;  // kLaunch
  // Null when tracing is off; else the tracer and the slice's args, built on
  // the calling thread (they include Tracer::current_label()).
  Tracer* tracer = nullptr;
  std::unique_ptr<std::string> trace;
  // kCopy: the rectangle; kBatch: the rectangles; kFree: the buffer's base.
  std::variant<std::monostate, CopyOp, std::vector<CopyOp>, void*> payload;

  const CopyOp& copy() const { return std::get<CopyOp>(payload); }
  std::vector<CopyOp>& batch() { return std::get<std::vector<CopyOp>>(payload); }
  const std::vector<CopyOp>& batch() const { return std::get<std::vector<CopyOp>>(payload); }
  void* free_base() const { return std::get<void*>(payload); }
  // The slice's args (tracing on): made on first use.
  std::string& trace_args() {
    if (trace == nullptr) trace = std::make_unique<std::string>();
    return *trace;
  }
};

// What the worker needs to know of the backend's options.
struct WorkerOptions {
  bool copy_kernel = true;
  bool peer_copy_kernel = false;  // CudaBackendOptions::peer_copy_kernel
  bool batch_api = true;
  bool batch_api_peer = false;
  size_t host_copy_kernel_max_box = 0;
  bool wait_for_allocations = false;
  int spin_us = 150;
};

class Worker {
 public:
  // The worker of logical device `device` (on the GPU of `gpu`), issuing on
  // `streams` with the topology `topology`, recording timings into `trace`
  // and splitting host copies at the chunk boundaries of `pinner`;
  // `batch_api_rejections` is shared by the backend's workers. All must
  // outlive the worker. start() launches the thread.
  Worker(int device, std::shared_ptr<GpuShared> gpu, DeviceStreams& streams, DeviceTrace& trace,
         const CudaTopology& topology, const HostPinner& pinner, StagingCopier& copier,
         const WorkerOptions& options, std::atomic<int>* batch_api_rejections);
  // Stops the thread after it has issued every queued command.
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void start();
  // Issues what is queued, then ends the thread. Idempotent.
  void stop();

  // What an enqueueing thread keeps alive for a command until it is issued:
  // its event and the events it waits for (Command borrows them).
  struct Keep {
    std::shared_ptr<CudaOpEvent> event;
    absl::InlinedVector<Event, 8> waits;
  };
  // Queues `command` on the stream it will run on (chosen now: round-robin
  // among the direction's copy streams), with `keep.event` as its event and
  // `keep.waits` as the events it waits for (kept alive by the worker's
  // enqueue side until the command is issued), tells its event its place on
  // that stream, and returns its ticket (1, 2, ... in enqueue order).
  uint64_t enqueue(Command&& command, Keep&& keep = {});
  // The same for a kBatch command whose rectangles are `ops`: they are copied
  // into the storage of an earlier batch this worker issued (no allocation
  // once warm; the storage is recycled on the worker after the issue).
  uint64_t enqueue_batch(Command&& command, Keep&& keep, std::span<const CopyOp> ops);
  // Drops what the commands issued so far kept alive (enqueue does it every
  // kReleaseEvery commands; synchronize after wait_issued).
  void release_issued();
  // The ticket of the last command queued so far.
  uint64_t last_ticket() const { return enqueued_.load(std::memory_order_acquire); }
  // Blocks until every command with a ticket <= `ticket` has been issued
  // (not completed). Must not be called on this worker's thread.
  void wait_issued(uint64_t ticket);
  // True on this worker's thread (inside a launch function).
  bool on_worker_thread() const;
  // True on the thread of any issue worker.
  static bool on_any_worker_thread();

  // Returns and clears the first error of an operation since the last call.
  absl::Status take_first_error();
  // Remembers `s` as the first error unless one is already there.
  void note_error(const absl::Status& s);

  // Called after `ready` was recorded on the memory stream (by the worker
  // for a kReady command; by allocate, holding streams.memory_mu, when it
  // runs on a worker thread): with wait_for_allocations, every later
  // operation of the device waits for it. Also counts work on the memory
  // stream, for record().
  void note_allocation(const std::shared_ptr<CudaOpEvent>& ready);

 private:
  // An event the target stream must wait for.
  struct WaitOn {
    StreamKey key;
    uint64_t seq;
    const CudaOpEvent* event;
  };

  void run();
  void issue(Command& c);
  // issue(c), timed against slow_issue_us_ (reported on stderr).
  void issue_timed(Command& c);
  static int slow_issue_threshold_us();
  // The stream for `c` (called at enqueue, under mu_).
  StreamSlot& pick_stream(const Command& c);
  // Adds `e` to waits_ for a command on stream `target`; a failure of `e` is
  // stored in `*failed` (the first one wins).
  void add_wait(const EventState* st, StreamKey target, absl::Status* failed);
  // cudaStreamWaitEvent(stream, ...) for every entry of waits_.
  absl::Status wait_all(cudaStream_t stream);
  // Issues the operation of `c` on `slot`.
  absl::Status issue_operation(Command& c, StreamSlot& slot);
  absl::Status run_launch(Command& c, StreamSlot& slot);
  absl::Status issue_free(Command& c);
  void issue_record(Command& c);
  void issue_ready(Command& c);
  // Tracing of `c` on `stream`: the timing event recorded before its operation (null
  // when `c` is not traced or the event failed), with the reference time in `*ref`.
  cudaEvent_t trace_begin(const Command& c, cudaStream_t stream,
                          std::shared_ptr<const TimingRef>* ref);
  // After the operation: records the end event and adds the slice `name` on
  // `stream_name` (nothing when `start` is null; the start event goes back to its pool
  // when the end event fails).
  void trace_end(Command& c, cudaStream_t stream, absl::string_view stream_name, const char* name,
                 cudaEvent_t start, std::shared_ptr<const TimingRef> ref);
  // Records `c`'s completion event on `slot` and publishes `status`.
  void complete(Command& c, StreamSlot& slot, absl::Status status);
  CopyEnv copy_env(const Command& c) const;
  // When `op` (in direction `dir`) has host bytes in two registrations of a
  // chunk-pinned array, appends its pieces (split_copy_at) to `out` and
  // returns true; else appends nothing and returns false.
  bool split_at_chunks(const CopyOp& op, CopyDir dir, std::vector<CopyOp>* out);
  // True when the host bytes of host<->device copy `op` (direction `dir`)
  // are page-locked (pinned here, or memory CUDA knows as page-locked): the
  // copy engines move them directly; else the copy is staged.
  bool host_side_pinned(const CopyOp& op, CopyDir dir) const;
  // Issues the copies `ops` of copy command `c` (all of it, or its ops with
  // page-locked host bytes) on `slot`: one op by issue_copy, a batch by
  // issue_copy_batch, split at chunk boundaries of pinned arrays.
  absl::Status issue_direct(Command& c, std::span<const CopyOp> ops, StreamSlot& slot);
  // Issues staged_ops_ (host<->device copies of pageable host bytes, of
  // command `c`) through `slot`'s staging lane (cuda_staging.h: one round on
  // the copy stream, several pipelined over the lane's buffers), making the
  // lanes at the first use; the number of rounds in `*round_count`.
  absl::Status issue_staged(Command& c, StreamSlot& slot, size_t* round_count);
  // "copy H2D on cuda device 0" for messages.
  std::string describe(const Command& c) const;

  const int device_;
  // BBMM_CUDA_SLOW_ISSUE_US (0: off): report commands whose issue took longer.
  const int slow_issue_us_ = slow_issue_threshold_us();
  const int gpu_;
  std::shared_ptr<GpuShared> shared_;
  DeviceStreams& streams_;
  DeviceTrace& trace_;
  const CudaTopology& topology_;
  const HostPinner& pinner_;
  StagingCopier& copier_;
  const WorkerOptions options_;
  std::atomic<int>* batch_api_rejections_;

  // The queue. Its fields are on cache lines apart from those the worker
  // spins on or writes while it issues (enqueued_, issued_): an enqueue then
  // moves only the lines it must (the queue's, the command's, enqueued_'s).
  alignas(64) std::mutex mu_;
  std::vector<Command> queue_;
  // Emptied rectangle vectors of issued batches, for enqueue_batch (at most
  // kSpareBatches).
  std::vector<std::vector<CopyOp>> spare_batches_;
  static constexpr size_t kSpareBatches = 1024;
  bool sleeping_ = false;
  bool stop_ = false;
  size_t round_robin_[3] = {0, 0, 0};  // h2d, d2h, d2d (guarded by mu_)
  // The ticket of the last command queued: written by enqueue, read by the
  // spinning worker.
  alignas(64) std::atomic<uint64_t> enqueued_{0};
  // Written by the worker after each issue; read by wait_issued.
  alignas(64) std::atomic<uint64_t> issued_{0};
  std::atomic<int> issue_waiters_{0};
  alignas(64) std::condition_variable work_cv_;  // worker: work queued or stop
  std::condition_variable issued_cv_;            // wait_issued: issued_ went up
  std::thread thread_;

  // What the enqueueing threads keep alive for commands not known issued yet,
  // by ticket (guarded by held_mu_; never touched by the worker). Entries
  // before held_head_ are released.
  struct Held {
    uint64_t ticket;
    Keep keep;
  };
  static constexpr size_t kReleaseEvery = 32;
  alignas(64) std::mutex held_mu_;
  std::vector<Held> held_;
  size_t held_head_ = 0;

  // First error since the last take_first_error().
  std::mutex error_mu_;
  absl::Status first_error_;

  // Allocations (note_allocation).
  std::mutex alloc_mu_;
  std::shared_ptr<CudaOpEvent> latest_ready_;
  std::atomic<uint64_t> alloc_gen_{0};
  std::atomic<uint64_t> memory_ops_{0};  // allocations + frees issued
  uint64_t memory_joined_ = 0;           // memory_ops_ at the last record()

  // Worker-thread state.
  std::vector<std::vector<CopyOp>> issued_batches_;  // to spare_batches_ at the next take
  absl::InlinedVector<WaitOn, 8> waits_;
  BatchScratch scratch_;
  std::vector<uintptr_t> cuts_;
  std::vector<CopyOp> pieces_;
  std::vector<CopyOp> staged_ops_, direct_ops_, device_ops_;
  std::vector<StagedRound> rounds_;
};

}  // namespace bbmm
