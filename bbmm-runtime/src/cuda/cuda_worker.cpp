#include "cuda/cuda_worker.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/slow_calls.h"
#include "core/trace.h"
#include "cuda/cuda_status.h"

namespace bbmm {
namespace {

// The worker whose thread this is (null on other threads).
thread_local const Worker* tls_worker = nullptr;

// Tells the core that we are spinning (x86 PAUSE, Arm YIELD).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace

Worker::Worker(int device, std::shared_ptr<GpuShared> gpu, DeviceStreams& streams,
               DeviceTrace& trace, const CudaTopology& topology, const HostPinner& pinner,
               StagingCopier& copier, const WorkerOptions& options,
               std::atomic<int>* batch_api_rejections)
    : device_(device),
      gpu_(gpu->gpu),
      shared_(std::move(gpu)),
      streams_(streams),
      trace_(trace),
      topology_(topology),
      pinner_(pinner),
      copier_(copier),
      options_(options),
      batch_api_rejections_(batch_api_rejections) {}

Worker::~Worker() { stop(); }

void Worker::start() { thread_ = std::thread([this] { run(); }); }

void Worker::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  release_issued();
}

bool Worker::on_worker_thread() const { return tls_worker == this; }

bool Worker::on_any_worker_thread() { return tls_worker != nullptr; }

uint64_t Worker::enqueue(Command&& command, Keep&& keep) {
  return enqueue_batch(std::move(command), std::move(keep), {});
}

void Worker::release_issued() {
  std::lock_guard<std::mutex> lock(held_mu_);
  const uint64_t issued = issued_.load(std::memory_order_acquire);
  // Tickets are pushed nearly in order (threads enqueueing at once may swap
  // neighbours): stop at the first one not issued yet.
  while (held_head_ < held_.size() && held_[held_head_].ticket <= issued) {
    held_[held_head_].keep = Keep();
    ++held_head_;
  }
  if (held_head_ == held_.size()) {
    held_.clear();  // keeps the capacity: no allocation once warm
    held_head_ = 0;
  } else if (held_head_ > held_.size() / 2) {
    held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(held_head_));
    held_head_ = 0;
  }
}

uint64_t Worker::enqueue_batch(Command&& command, Keep&& keep, std::span<const CopyOp> ops) {
  bool wake;
  uint64_t ticket;
  command.event = keep.event.get();
  for (const Event& e : keep.waits) {
    if (e.state() != nullptr) command.waits.push_back(e.state());
  }
  const bool holds = keep.event != nullptr || !keep.waits.empty();
  {
    // (The scopes read the clock only when slow calls are reported or profiled:
    // this is on every operation's path.)
    std::optional<detail::SlowScope> scope(std::in_place, "cuda: taking an issue worker's queue lock");
    std::lock_guard<std::mutex> lock(mu_);
    scope.emplace("cuda: queueing a command (under the worker's lock)");
    if (!ops.empty()) {
      if (!spare_batches_.empty()) {
        command.payload = std::move(spare_batches_.back());
        spare_batches_.pop_back();
      } else {
        command.payload.emplace<std::vector<CopyOp>>();
      }
      command.batch().assign(ops.begin(), ops.end());
    }
    StreamSlot& slot = pick_stream(command);
    command.slot = &slot;
    const uint64_t order = ++slot.order;
    if (command.event != nullptr) command.event->set_order(slot.key, order);
    queue_.push_back(std::move(command));
    ticket = enqueued_.load(std::memory_order_relaxed) + 1;
    enqueued_.store(ticket, std::memory_order_release);
    wake = sleeping_;
  }
  // Only a sleeping worker needs the (system call of the) notification; a
  // spinning one sees enqueued_ change.
  if (wake) {
    detail::SlowScope scope("cuda: waking a sleeping issue worker");
    work_cv_.notify_one();
  }
  if (holds) {
    // The references stay with this side (the worker only borrows them);
    // those of issued commands are dropped in bulk, every kReleaseEvery
    // commands (one read of the worker's issued_ for all of them).
    bool release;
    {
      detail::SlowScope scope("cuda: keeping a command's events until it is issued");
      std::lock_guard<std::mutex> lock(held_mu_);
      held_.push_back(Held{ticket, std::move(keep)});
      release = (held_.size() - held_head_) % kReleaseEvery == 0;
    }
    if (release) release_issued();
  }
  return ticket;
}

void Worker::wait_issued(uint64_t ticket) {
  if (issued_.load(std::memory_order_seq_cst) >= ticket) return;
  issue_waiters_.fetch_add(1, std::memory_order_seq_cst);
  {
    std::unique_lock<std::mutex> lock(mu_);
    issued_cv_.wait(lock, [&] { return issued_.load(std::memory_order_seq_cst) >= ticket; });
  }
  issue_waiters_.fetch_sub(1, std::memory_order_seq_cst);
}

absl::Status Worker::take_first_error() {
  std::lock_guard<std::mutex> lock(error_mu_);
  return std::exchange(first_error_, absl::OkStatus());
}

void Worker::note_error(const absl::Status& s) {
  if (s.ok()) return;
  std::lock_guard<std::mutex> lock(error_mu_);
  if (first_error_.ok()) first_error_ = s;
}

void Worker::note_allocation(const std::shared_ptr<CudaOpEvent>& ready) {
  if (options_.wait_for_allocations) {
    std::lock_guard<std::mutex> lock(alloc_mu_);
    latest_ready_ = ready;
  }
  alloc_gen_.fetch_add(1, std::memory_order_acq_rel);
  memory_ops_.fetch_add(1, std::memory_order_acq_rel);
}

void Worker::run() {
  tls_worker = this;
  const cudaError_t e = cudaSetDevice(gpu_);
  if (e != cudaSuccess) {
    // Every command will fail on its own CUDA calls; say why once.
    note_error(cuda_status("cudaSetDevice (issue worker)", e, __FILE__, __LINE__));
  }
  std::vector<Command> batch;
  uint64_t taken = 0;
  for (;;) {
    if (enqueued_.load(std::memory_order_acquire) == taken && options_.spin_us > 0) {
      // Spin a little before sleeping: the application usually issues the
      // next command within microseconds, and waking a sleeping thread costs
      // the caller a system call and the worker tens of microseconds.
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::microseconds(options_.spin_us);
      for (unsigned n = 1; enqueued_.load(std::memory_order_acquire) == taken; ++n) {
        cpu_relax();
        if (n % 64 == 0 && std::chrono::steady_clock::now() >= deadline) break;
      }
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (queue_.empty()) {
        if (stop_) break;
        sleeping_ = true;
        work_cv_.wait(lock, [&] { return !queue_.empty() || stop_; });
        sleeping_ = false;
        if (queue_.empty()) break;  // stopping, and everything was issued
      }
      // Take the whole queue; the caller's next push_back reuses `batch`'s
      // old capacity, so enqueueing allocates nothing in the steady state.
      batch.swap(queue_);
      // The rectangle vectors of the batches issued since, for enqueue_batch.
      while (!issued_batches_.empty() && spare_batches_.size() < kSpareBatches) {
        spare_batches_.push_back(std::move(issued_batches_.back()));
        issued_batches_.pop_back();
      }
      issued_batches_.clear();
    }
    // Allocations' ready events first: their allocations are on the memory
    // stream already, another device's worker may be waiting for one (a copy
    // pushed into the new buffer), and the rest of the batch may take long to
    // issue. issue() skips them afterwards (their event is gone).
    for (Command& c : batch) {
      if (c.kind == CommandKind::kReady) issue_ready(c);
    }
    for (Command& c : batch) {
      if (slow_issue_us_ > 0) {
        issue_timed(c);
      } else {
        issue(c);
      }
      // What the command captured (the launch function, the wait list, the
      // event) is released here, on the worker, before the issue is published
      // (a synchronize() that returns finds the captures gone); a batch's
      // vector is kept for reuse. Only those fields are written: the rest of
      // the command's lines stay as the enqueueing thread wrote them.
      if (c.kind == CommandKind::kBatch && issued_batches_.size() < kSpareBatches) {
        c.batch().clear();
        issued_batches_.push_back(std::move(c.batch()));
      }
      // (The events are borrowed: the enqueueing side releases them.)
      if (c.fn) c.fn = nullptr;
      if (c.ready) c.ready.reset();
      if (c.trace) c.trace.reset();
      issued_.store(++taken, std::memory_order_seq_cst);
      if (issue_waiters_.load(std::memory_order_seq_cst) > 0) {
        { std::lock_guard<std::mutex> lock(mu_); }
        issued_cv_.notify_all();
      }
    }
    batch.clear();
  }
  tls_worker = nullptr;
}

// BBMM_CUDA_SLOW_ISSUE_US=N: the worker reports on stderr every command whose
// issue (waiting for its events to be issued, and the CUDA calls) took N us or
// more: a diagnostic of what makes an issue thread wait (an issue that waits for
// the device serialises everything queued behind it on this device).
int Worker::slow_issue_threshold_us() {
  const char* v = std::getenv("BBMM_CUDA_SLOW_ISSUE_US");
  if (v == nullptr || *v == '\0') return 0;
  const int us = std::atoi(v);
  return us > 0 ? us : 0;
}

void Worker::issue_timed(Command& c) {
  const char* what = c.kind == CommandKind::kLaunch   ? "launch"
                     : c.kind == CommandKind::kFree   ? "free"
                     : c.kind == CommandKind::kRecord ? "record"
                     : c.kind == CommandKind::kReady  ? "allocation ready event"
                                                      : copy_trace_name(c.dir);
  const char* batch = c.kind == CommandKind::kBatch ? " batch" : "";
  const size_t waits = c.waits.size();
  const size_t ops = c.kind == CommandKind::kBatch ? c.batch().size() : 1;
  const auto t0 = std::chrono::steady_clock::now();
  issue(c);
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (us >= slow_issue_us_) {
    std::fprintf(stderr,
                 "bbmm: cuda worker of device %d: issuing %s%s (%zu ops, %zu waits) took %.0f us\n",
                 device_, what, batch, ops, waits, us);
  }
}

StreamSlot& Worker::pick_stream(const Command& c) {
  switch (c.kind) {
    case CommandKind::kLaunch: return streams_.compute;
    case CommandKind::kFree: return streams_.memory;
    case CommandKind::kReady: return streams_.memory;
    case CommandKind::kRecord: return streams_.join;
    default: break;
  }
  const int group = c.dir == CopyDir::kH2D ? 0 : c.dir == CopyDir::kD2H ? 1 : 2;
  std::vector<StreamSlot>& slots = group == 0 ? streams_.h2d : group == 1 ? streams_.d2h : streams_.d2d;
  return slots[round_robin_[group]++ % slots.size()];
}

std::string Worker::describe(const Command& c) const {
  const char* what = "record";
  switch (c.kind) {
    case CommandKind::kCopy: what = copy_trace_name(c.dir); break;
    case CommandKind::kBatch: what = copy_trace_name(c.dir); break;
    case CommandKind::kLaunch: what = "kernel launch"; break;
    case CommandKind::kFree: what = "free"; break;
    case CommandKind::kRecord: break;
    case CommandKind::kReady: what = "allocation ready event"; break;
  }
  return absl::StrCat(what, c.kind == CommandKind::kBatch ? " batch" : "", " on cuda device ",
                      device_);
}

CopyEnv Worker::copy_env(const Command& c) const {
  const CopyOp& op = c.kind == CommandKind::kBatch ? c.batch().front() : c.copy();
  CopyEnv env;
  env.dst_gpu = op.dst.device == kHost ? -1 : topology_.gpu_of[op.dst.device];
  env.src_gpu = op.src.device == kHost ? -1 : topology_.gpu_of[op.src.device];
  // The issuing device (this worker's) reaches the other one directly: a copy
  // kernel runs on it and reads or writes the other device's memory.
  const int other = op.dst.device == device_ ? op.src.device : op.dst.device;
  env.peer_reachable = op.dst.device != kHost && op.src.device != kHost &&
                       topology_.can_access_peer(device_, other);
  env.copy_kernel = options_.copy_kernel;
  env.peer_copy_kernel = options_.peer_copy_kernel;
  env.host_kernel_max_box = topology_.host_pointers_ok ? options_.host_copy_kernel_max_box : 0;
  env.pinner = &pinner_;
  env.batch_api = options_.batch_api;
  env.batch_api_host = topology_.host_pointers_ok;
  env.batch_api_peer = options_.batch_api_peer;
  env.batch_api_rejections = batch_api_rejections_;
  return env;
}

void Worker::add_wait(const EventState* st, StreamKey target, absl::Status* failed) {
  if (st == nullptr) return;
  const CudaOpEvent* ce = dynamic_cast<const CudaOpEvent*>(st);
  if (ce == nullptr) {
    // Not an event of a CUDA backend (a transfer between ranks,
    // core/transport.h): wait for it here, blocking this worker until it
    // completes. No deadlock: the transfer was posted, its own waits
    // collected, before this command was enqueued.
    absl::Status s = st->wait();
    if (!s.ok() && failed->ok()) *failed = std::move(s);
    return;
  }
  // Blocks only for an event of another device whose worker has not issued
  // it yet; see the header on why this cannot deadlock.
  ce->wait_issued();
  if (ce->failed() && failed->ok()) *failed = ce->error();
  if (!ce->has_cuda_event() || ce->known_complete() || ce->stream() == target) return;
  for (WaitOn& w : waits_) {
    if (w.key != ce->stream()) continue;
    // Events of one stream complete in order: the latest covers the others.
    if (ce->seq() > w.seq) {
      w.seq = ce->seq();
      w.event = ce;
    }
    return;
  }
  waits_.push_back(WaitOn{ce->stream(), ce->seq(), ce});
}

bool Worker::host_side_pinned(const CopyOp& op, CopyDir dir) const {
  const CopyShape& s = op.shape;
  if (s.width_bytes == 0 || s.height == 0 || s.depth == 0) return true;
  const auto [begin, end] = host_span(dir == CopyDir::kD2H ? op.dst : op.src, s);
  return pinner_.covers(begin, end);
}

absl::Status Worker::wait_all(cudaStream_t stream) {
  for (const WaitOn& w : waits_) {
    const cudaError_t e = cudaStreamWaitEvent(stream, w.event->cuda_event(), 0);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return cuda_status("cudaStreamWaitEvent", e, __FILE__, __LINE__);
    }
  }
  return absl::OkStatus();
}

void Worker::issue(Command& c) {
  if (c.kind == CommandKind::kRecord) {
    issue_record(c);
    return;
  }
  if (c.kind == CommandKind::kReady) {
    if (c.event != nullptr) issue_ready(c);  // else issued at the head of its batch
    return;
  }
  StreamSlot& slot = *c.slot;
  // Tracing: when this worker took the command (before waiting for other
  // devices' workers to issue what it waits for) and when it issued it.
  const int64_t taken_us = c.tracer != nullptr ? c.tracer->now_us() : 0;
  waits_.clear();
  absl::Status failed;
  for (const EventState* e : c.waits) add_wait(e, slot.key, &failed);
  // Holds the latest allocation's ready event while waits_ points to it.
  std::shared_ptr<CudaOpEvent> ready;
  if (options_.wait_for_allocations && &slot != &streams_.memory) {
    const uint64_t gen = alloc_gen_.load(std::memory_order_acquire);
    if (gen != slot.alloc_gen_seen) {
      {
        std::lock_guard<std::mutex> lock(alloc_mu_);
        ready = latest_ready_;
      }
      slot.alloc_gen_seen = gen;
      if (ready != nullptr) add_wait(ready.get(), slot.key, &failed);
    }
  }
  if (c.kind == CommandKind::kFree) {
    // A free runs even after a failed event: nobody uses the memory again,
    // and it still waits for whatever part of a failed operation ran.
    note_error(issue_free(c));
    return;
  }
  // A command that fails here still records its completion event on its
  // stream (complete()), after what was queued there before it: events of
  // one stream complete in enqueue order, which the core relies on
  // (EventState::implies) to drop hazard entries.
  if (!failed.ok()) {
    complete(c, slot,
             absl::Status(failed.code(), absl::StrCat("did not run: an event it waited for failed: ",
                                                      failed.message())));
    return;
  }
  absl::Status s = wait_all(slot.stream);
  if (!s.ok()) {
    complete(c, slot, std::move(s));
    return;
  }
  // Tracing: timing events before and after the operation on its stream.
  if (c.tracer != nullptr) {
    absl::StrAppend(&c.trace_args(), c.trace_args().empty() ? "" : ",", "\"taken_us\":", taken_us,
                    ",\"issued_us\":", c.tracer->now_us());
  }
  std::shared_ptr<const TimingRef> ref;
  const cudaEvent_t start = trace_begin(c, slot.stream, &ref);
  s = issue_operation(c, slot);
  trace_end(c, slot.stream, slot.name,
            c.kind == CommandKind::kLaunch ? "kernel" : copy_trace_name(c.dir), start,
            std::move(ref));
  complete(c, slot, std::move(s));
}

cudaEvent_t Worker::trace_begin(const Command& c, cudaStream_t stream,
                                std::shared_ptr<const TimingRef>* ref) {
  cudaEvent_t start = nullptr;
  if (c.tracer != nullptr && (*ref = trace_.reference()) != nullptr &&
      trace_.stamp(stream, &start) != cudaSuccess) {
    (void)cudaGetLastError();
    start = nullptr;
  }
  return start;
}

void Worker::trace_end(Command& c, cudaStream_t stream, absl::string_view stream_name,
                       const char* name, cudaEvent_t start, std::shared_ptr<const TimingRef> ref) {
  if (start == nullptr) return;
  cudaEvent_t end = nullptr;
  if (trace_.stamp(stream, &end) != cudaSuccess) {
    (void)cudaGetLastError();
    shared_->timing.put(start);
    return;
  }
  TraceRecord r;
  r.tracer = c.tracer;
  r.name = name;
  r.args = std::move(c.trace_args());
  absl::StrAppend(&r.args, r.args.empty() ? "" : ",", "\"stream\":\"", stream_name, "\"");
  r.start = start;
  r.end = end;
  r.ref = std::move(ref);
  trace_.add(std::move(r));
}

bool Worker::split_at_chunks(const CopyOp& op, CopyDir dir, std::vector<CopyOp>* out) {
  if ((dir != CopyDir::kH2D && dir != CopyDir::kD2H) || !pinner_.has_boundaries()) return false;
  const bool host_is_dst = dir == CopyDir::kD2H;
  const CopyShape& s = op.shape;
  if (s.width_bytes == 0 || s.height == 0 || s.depth == 0) return false;
  const auto [begin, end] = host_span(host_is_dst ? op.dst : op.src, s);
  cuts_.clear();
  pinner_.boundaries_in(begin, end, &cuts_);
  if (cuts_.empty()) return false;
  split_copy_at(op, host_is_dst, cuts_, out);
  return true;
}

absl::Status Worker::issue_direct(Command& c, std::span<const CopyOp> ops, StreamSlot& slot) {
  if (c.kind == CommandKind::kCopy) {
    const CopyOp& op = ops.front();
    pieces_.clear();
    if (!split_at_chunks(op, c.dir, &pieces_)) return issue_copy(op, c.dir, copy_env(c), slot.stream);
    for (const CopyOp& piece : pieces_) {
      absl::Status s = issue_copy(piece, c.dir, copy_env(c), slot.stream);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  // Ops crossing chunk boundaries of pinned host memory become pieces.
  pieces_.clear();
  bool split = false;
  for (const CopyOp& op : ops) {
    if (split_at_chunks(op, c.dir, &pieces_)) {
      split = true;
    } else {
      pieces_.push_back(op);
    }
  }
  if (split) ops = pieces_;
  BatchPaths paths;
  absl::Status s = issue_copy_batch(ops, c.dir, copy_env(c), slot.stream, scratch_, &paths);
  if (c.tracer != nullptr) {
    absl::StrAppend(&c.trace_args(), ",\"kernel_ops\":", paths.kernel,
                    ",\"batch_api_ops\":", paths.batch_api, ",\"single_ops\":", paths.single);
  }
  return s;
}

absl::Status Worker::issue_staged(Command& c, StreamSlot& slot, size_t* round_count) {
  StagingLane& lane = slot.lane;
  if (!lane.ready()) {
    // Not made at creation (host_copies pinned): now, for every copy stream
    // of the device (their slots belong to this worker).
    if (absl::Status s = streams_.allocate_staging(); !s.ok()) return s;
  }
  const bool to_host = c.dir == CopyDir::kD2H;
  rounds_.clear();
  plan_staging(staged_ops_, lane.bytes, &rounds_);
  *round_count = rounds_.size();
  const CopyEnv env = copy_env(c);
  // One round: everything on the copy stream; several: the pipeline over
  // the lane (cuda_staging.h).
  const bool piped = rounds_.size() > 1;
  auto fail = [](const char* call, cudaError_t e) {
    (void)cudaGetLastError();
    return cuda_status(call, e, __FILE__, __LINE__);
  };
  auto host_step = [&](cudaStream_t stream, std::unique_ptr<StagedJob>& job) -> absl::Status {
    const cudaError_t e = cudaLaunchHostFunc(stream, run_staged_round, job.get());
    if (e != cudaSuccess) {
      return fail(to_host ? "cudaLaunchHostFunc (unpacking a staged copy)"
                          : "cudaLaunchHostFunc (packing a staged copy)",
                  e);
    }
    job.release();  // the host function deletes it
    return absl::OkStatus();
  };
  auto record = [&](cudaEvent_t event, cudaStream_t stream) -> absl::Status {
    const cudaError_t e = cudaEventRecord(event, stream);
    return e == cudaSuccess ? absl::OkStatus() : fail("cudaEventRecord (staged copy)", e);
  };
  auto wait = [&](cudaStream_t stream, cudaEvent_t event) -> absl::Status {
    const cudaError_t e = cudaStreamWaitEvent(stream, event, 0);
    return e == cudaSuccess ? absl::OkStatus() : fail("cudaStreamWaitEvent (staged copy)", e);
  };
  absl::Status s;
  if (piped) {
    s = record(lane.start, slot.stream);
    if (s.ok()) s = wait(lane.stream, lane.start);
  }
  for (size_t k = 0; s.ok() && k < rounds_.size(); ++k) {
    const int b = static_cast<int>(k % kStagingSlots);
    const bool reused = k >= static_cast<size_t>(kStagingSlots);
    char* buffer = lane.buffer[b];
    device_ops_.clear();
    for (const StagedPiece& piece : rounds_[k].pieces) {
      device_ops_.push_back(staged_device_op(piece, to_host, buffer));
    }
    auto job =
        std::make_unique<StagedJob>(StagedJob{&copier_, std::move(rounds_[k]), to_host, buffer});
    BatchPaths paths;
    if (!piped) {
      if (!to_host) s = host_step(slot.stream, job);
      if (s.ok()) s = issue_copy_batch(device_ops_, c.dir, env, slot.stream, scratch_, &paths);
      if (s.ok() && to_host) s = host_step(slot.stream, job);
    } else if (!to_host) {
      if (reused) s = wait(lane.stream, lane.moved[b]);
      if (s.ok()) s = host_step(lane.stream, job);
      if (s.ok()) s = record(lane.staged[b], lane.stream);
      if (s.ok()) s = wait(slot.stream, lane.staged[b]);
      if (s.ok()) s = issue_copy_batch(device_ops_, c.dir, env, slot.stream, scratch_, &paths);
      if (s.ok()) s = record(lane.moved[b], slot.stream);
    } else {
      if (reused) s = wait(slot.stream, lane.staged[b]);
      if (s.ok()) s = issue_copy_batch(device_ops_, c.dir, env, slot.stream, scratch_, &paths);
      if (s.ok()) s = record(lane.moved[b], slot.stream);
      if (s.ok()) s = wait(lane.stream, lane.moved[b]);
      if (s.ok()) s = host_step(lane.stream, job);
      if (s.ok()) s = record(lane.staged[b], lane.stream);
      // The copy is complete when its last round is unpacked (the lane is a
      // queue: the earlier rounds are too).
      if (s.ok() && k + 1 == rounds_.size()) s = wait(slot.stream, lane.staged[b]);
    }
  }
  if (!s.ok() && piped) {
    // The copy stream's completion event (recorded after a failure too) must
    // still come after every host function already on the lane.
    if (cudaEventRecord(lane.staged[0], lane.stream) == cudaSuccess) {
      (void)cudaStreamWaitEvent(slot.stream, lane.staged[0], 0);
    }
    (void)cudaGetLastError();
  }
  return s;
}

absl::Status Worker::issue_operation(Command& c, StreamSlot& slot) {
  switch (c.kind) {
    case CommandKind::kCopy:
    case CommandKind::kBatch: {
      std::span<const CopyOp> ops = c.kind == CommandKind::kCopy
                                        ? std::span<const CopyOp>(&c.copy(), 1)
                                        : std::span<const CopyOp>(c.batch());
      if (c.dir == CopyDir::kH2D || c.dir == CopyDir::kD2H) {
        // Pageable host bytes go through the stream's staging buffer. The ops
        // are sorted into the two lists only from the first pageable one on
        // (all pinned, the usual case with pinned arrays: no copy of them).
        size_t first = 0;
        while (first < ops.size() && host_side_pinned(ops[first], c.dir)) ++first;
        if (first < ops.size()) {
          direct_ops_.assign(ops.begin(), ops.begin() + first);
          staged_ops_.assign(1, ops[first]);
          for (const CopyOp& op : ops.subspan(first + 1)) {
            (host_side_pinned(op, c.dir) ? direct_ops_ : staged_ops_).push_back(op);
          }
          size_t rounds = 0;
          absl::Status s = issue_staged(c, slot, &rounds);
          if (c.tracer != nullptr) {
            absl::StrAppend(&c.trace_args(), ",\"staged_ops\":", staged_ops_.size(),
                            ",\"staged_rounds\":", rounds);
          }
          if (!s.ok() || direct_ops_.empty()) return s;
          ops = direct_ops_;
        }
      }
      return issue_direct(c, ops, slot);
    }
    case CommandKind::kLaunch:
      return run_launch(c, slot);
    default:
      return absl::InternalError("cuda issue worker: unexpected command");
  }
}

absl::Status Worker::run_launch(Command& c, StreamSlot& slot) {
  // A stale, non-sticky error of an earlier call must not be blamed on this
  // launch.
  (void)cudaGetLastError();
  absl::Status status;
  // No exception may cross the worker thread.
  try {
    c.fn(LaunchContext{device_, slot.stream});
  } catch (const std::exception& e) {
    status = absl::InternalError(absl::StrCat("the launch function threw: ", e.what()));
  } catch (...) {
    status = absl::InternalError("the launch function threw a non-standard exception");
  }
  const cudaError_t launch_error = cudaGetLastError();
  if (launch_error != cudaSuccess && status.ok()) {
    status = cuda_status("a kernel launch of the launch function (cudaGetLastError)",
                         launch_error, __FILE__, __LINE__);
  }
  // The function may have made another GPU current.
  const cudaError_t e = cudaSetDevice(gpu_);
  if (e != cudaSuccess && status.ok()) {
    status = cuda_status("cudaSetDevice (after the launch function)", e, __FILE__, __LINE__);
  }
  return status;
}

absl::Status Worker::issue_free(Command& c) {
  StreamSlot& m = streams_.memory;
  std::lock_guard<std::mutex> lock(streams_.memory_mu);
  absl::Status s = wait_all(m.stream);
  if (!s.ok()) {
    // Freeing now could hand out memory still in use: leak it instead.
    return absl::Status(s.code(), absl::StrCat(describe(c), ": ", s.message(),
                                               " (the memory is not freed)"));
  }
  std::shared_ptr<const TimingRef> ref;
  const cudaEvent_t start = trace_begin(c, m.stream, &ref);
  // Stream-ordered: the memory returns to the pool when the memory stream
  // reaches this point, i.e. after every event in the wait list.
  const cudaError_t e = cudaFreeAsync(c.free_base(), m.stream);
  memory_ops_.fetch_add(1, std::memory_order_acq_rel);
  trace_end(c, m.stream, m.name, "free", start, std::move(ref));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    const absl::Status fs = cuda_status("cudaFreeAsync", e, __FILE__, __LINE__);
    return absl::Status(fs.code(), absl::StrCat(describe(c), ": ", fs.message()));
  }
  return absl::OkStatus();
}

void Worker::issue_record(Command& c) {
  StreamSlot& join = streams_.join;
  absl::Status status;
  // The join stream waits for every stream with work issued since it last
  // joined it, through a helper event recorded there now (the operations'
  // own events are borrowed from the enqueueing threads, which may have
  // released them)...
  for (StreamSlot* s : streams_.work_slots()) {
    if (s == &streams_.memory || s->seq == s->joined_seq) continue;
    cudaEvent_t helper;
    cudaError_t e = shared_->events.get(&helper);
    if (e == cudaSuccess) {
      e = cudaEventRecord(helper, s->stream);
      if (e == cudaSuccess) e = cudaStreamWaitEvent(join.stream, helper, 0);
      // The join stream captured the recording: the event may be reused.
      shared_->events.put(helper);
    }
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      if (status.ok()) {
        status = cuda_status("cudaEventRecord/cudaStreamWaitEvent (record)", e, __FILE__, __LINE__);
      }
      continue;
    }
    s->joined_seq = s->seq;
  }
  // ... and for the memory stream (allocations issued by callers' threads,
  // frees), through a helper event recorded there now.
  const uint64_t memory_ops = memory_ops_.load(std::memory_order_acquire);
  if (memory_ops != memory_joined_ && status.ok()) {
    std::lock_guard<std::mutex> lock(streams_.memory_mu);
    cudaEvent_t helper;
    cudaError_t e = shared_->events.get(&helper);
    if (e == cudaSuccess) {
      e = cudaEventRecord(helper, streams_.memory.stream);
      if (e == cudaSuccess) e = cudaStreamWaitEvent(join.stream, helper, 0);
      // The join stream captured the recording: the event may be reused.
      shared_->events.put(helper);
    }
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      status = cuda_status("cudaEventRecord/cudaStreamWaitEvent (record, memory stream)", e,
                           __FILE__, __LINE__);
    } else {
      memory_joined_ = memory_ops;
    }
  }
  if (status.ok()) {
    // Work waiting for this event must not run on the results of an
    // operation that failed (as on the host backend).
    std::lock_guard<std::mutex> lock(error_mu_);
    if (!first_error_.ok()) {
      status = absl::Status(first_error_.code(),
                            absl::StrCat("an earlier operation failed: ", first_error_.message()));
    }
  }
  complete(c, join, std::move(status));
}

void Worker::issue_ready(Command& c) {
  {
    // The calling threads allocate on the memory stream under this lock.
    std::lock_guard<std::mutex> lock(streams_.memory_mu);
    complete(c, streams_.memory, absl::OkStatus());
  }
  note_allocation(c.ready);
  c.event = nullptr;  // issued: issue() skips it
}

void Worker::complete(Command& c, StreamSlot& slot, absl::Status status) {
  cudaEvent_t ev = nullptr;
  cudaError_t e = shared_->events.get(&ev);
  if (e == cudaSuccess) {
    e = cudaEventRecord(ev, slot.stream);
    if (e != cudaSuccess) {
      shared_->events.put(ev);
      ev = nullptr;
    }
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (status.ok()) status = cuda_status("cudaEventRecord", e, __FILE__, __LINE__);
  }
  if (!status.ok()) {
    (void)cudaGetLastError();
    status = absl::Status(status.code(), absl::StrCat(describe(c), ": ", status.message()));
    note_error(status);
    c.event->mark_failed(std::move(status), ev, slot.key, ev != nullptr ? ++slot.seq : 0);
    return;
  }
  c.event->mark_issued(ev, slot.key, ++slot.seq);
}

}  // namespace bbmm
