#include "mpi/mpi_transport.h"

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI: MPIX_CUDA_AWARE_SUPPORT
#endif

namespace bbmm {
namespace {

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return absl::StrCat("MPI error ", code);
  return std::string(text, static_cast<size_t>(len));
}

// One operation handed to the communication thread.
struct Op {
  enum Kind { kSend, kReceive, kGather } kind = kSend;
  HostArrayRef array;  // kSend, kReceive
  Box box;
  int peer = 0, tag = 0;
  std::string what;  // "send of array 'A' box [..) to rank 1, tag 3", for messages
  std::shared_ptr<TransportEvent> event;
  std::vector<Event> after;  // kSend, kReceive: started once these completed
  absl::Status failed_after;  // the first of them that failed, reported by `event`
  int64_t value = 0;                  // kGather
  std::vector<int64_t>* out = nullptr;  // kGather: filled before the event completes
};

class MpiTransport final : public Transport {
 public:
  MpiTransport(MPI_Comm comm, int rank, int size, int max_tag, bool cuda_aware)
      : comm_(comm), rank_(rank), size_(size), max_tag_(max_tag), cuda_aware_(cuda_aware) {
    thread_ = std::thread([this] { run(); });
  }

  ~MpiTransport() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // Host backend devices are host memory; CUDA memory when the library is CUDA-aware
  // (it then reads device pointers given to MPI_Isend itself).
  bool sends_from_device_memory(BackendKind kind) const override {
    return kind == BackendKind::kHost || (kind == BackendKind::kCuda && cuda_aware_);
  }

  absl::StatusOr<Event> send(const HostArrayRef& array, const Box& box, int to, int tag,
                             std::span<const Event> after) override {
    return post(Op::kSend, array, box, to, tag, after);
  }

  absl::StatusOr<Event> receive(const HostArrayRef& array, const Box& box, int from, int tag,
                                std::span<const Event> after) override {
    return post(Op::kReceive, array, box, from, tag, after);
  }

  absl::StatusOr<std::vector<int64_t>> all_gather(int64_t value) override {
    std::vector<int64_t> out;
    Op op;
    op.kind = Op::kGather;
    op.value = value;
    op.out = &out;
    op.what = "all_gather";
    op.event = std::make_shared<TransportEvent>();
    Event e(op.event);
    enqueue(std::move(op));
    if (absl::Status s = e.wait(); !s.ok()) return s;
    return out;
  }

 private:
  absl::StatusOr<Event> post(Op::Kind kind, const HostArrayRef& array, const Box& box, int peer,
                             int tag, std::span<const Event> after) {
    const char* name = kind == Op::kSend ? "send" : "receive";
    if (absl::Status s = check_transfer(array, box, name, peer, tag, rank_, size_, max_tag_);
        !s.ok()) {
      return s;
    }
    Op op;
    op.kind = kind;
    op.what = absl::StrCat(name, " of array '", array.name, "' box ", box.to_string(),
                           kind == Op::kSend ? " to rank " : " from rank ", peer, ", tag ", tag);
    for (size_t d = 0; d < array.extents.size(); ++d) {
      if (array.extents[d] > INT_MAX) {
        return absl::InvalidArgumentError(absl::StrCat(op.what, ": extent ", array.extents[d],
                                                       " exceeds MPI's int counts"));
      }
    }
    if (array.elem_size > static_cast<size_t>(INT_MAX)) {
      return absl::InvalidArgumentError(absl::StrCat(op.what, ": element size ",
                                                     array.elem_size, " exceeds MPI's ints"));
    }
    op.array = array;
    op.box = box;
    op.peer = peer;
    op.tag = tag;
    op.after.assign(after.begin(), after.end());
    op.event = std::make_shared<TransportEvent>();
    Event e(op.event);
    enqueue(std::move(op));
    return e;
  }

  void enqueue(Op&& op) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(op));
    }
    cv_.notify_all();
  }

  // The datatype of `op`'s box in its array: a subarray of elements that are
  // elem_size bytes each.
  int make_type(const Op& op, MPI_Datatype* type) {
    MPI_Datatype elem;
    int rc = MPI_Type_contiguous(static_cast<int>(op.array.elem_size), MPI_BYTE, &elem);
    if (rc != MPI_SUCCESS) return rc;
    const int rank = op.box.rank();
    int sizes[Box::kMaxRank], sub[Box::kMaxRank], starts[Box::kMaxRank];
    for (int d = 0; d < rank; ++d) {
      sizes[d] = static_cast<int>(op.array.extents[d]);
      sub[d] = static_cast<int>(op.box.extent(d));
      starts[d] = static_cast<int>(op.box.lo(d));
    }
    rc = MPI_Type_create_subarray(rank, sizes, sub, starts, MPI_ORDER_C, elem, type);
    MPI_Type_free(&elem);
    if (rc != MPI_SUCCESS) return rc;
    rc = MPI_Type_commit(type);
    if (rc != MPI_SUCCESS) MPI_Type_free(type);
    return rc;
  }

  // Posts `op` (gathers run to completion here); pending ones go to active_.
  void start(Op&& op) {
    if (op.kind == Op::kGather) {
      op.out->assign(static_cast<size_t>(size_), 0);
      const int rc = MPI_Allgather(&op.value, 1, MPI_INT64_T, op.out->data(), 1, MPI_INT64_T,
                                   comm_);
      op.event->complete(rc == MPI_SUCCESS ? absl::OkStatus()
                                           : absl::InternalError(absl::StrCat(
                                                 "MPI_Allgather: ", mpi_error(rc))));
      return;
    }
    MPI_Datatype type;
    int rc = make_type(op, &type);
    if (rc != MPI_SUCCESS) {
      op.event->complete(absl::InternalError(absl::StrCat(op.what, ": ", mpi_error(rc))));
      return;
    }
    MPI_Request req;
    rc = op.kind == Op::kSend ? MPI_Isend(op.array.base, 1, type, op.peer, op.tag, comm_, &req)
                              : MPI_Irecv(op.array.base, 1, type, op.peer, op.tag, comm_, &req);
    if (rc != MPI_SUCCESS) {
      MPI_Type_free(&type);
      op.event->complete(absl::InternalError(absl::StrCat(op.what, ": ", mpi_error(rc))));
      return;
    }
    requests_.push_back(req);
    types_.push_back(type);
    active_.push_back(std::move(op));
  }

  // Completes what MPI_Testsome reports done; returns how many.
  int poll() {
    int done = 0;
    indices_.resize(requests_.size());
    statuses_.resize(requests_.size());
    const int rc = MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &done,
                                indices_.data(), statuses_.data());
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
      // Nothing is known of single requests: fail them all.
      for (size_t k = 0; k < active_.size(); ++k) {
        active_[k].event->complete(
            absl::InternalError(absl::StrCat(active_[k].what, ": ", mpi_error(rc))));
        MPI_Type_free(&types_[k]);
      }
      active_.clear();
      requests_.clear();
      types_.clear();
      return 1;
    }
    if (done == MPI_UNDEFINED || done == 0) return 0;
    for (int k = 0; k < done; ++k) {
      const int i = indices_[k];
      Op& op = active_[i];
      int err = rc == MPI_ERR_IN_STATUS ? statuses_[k].MPI_ERROR : MPI_SUCCESS;
      absl::Status s;
      if (err != MPI_SUCCESS) {
        s = absl::InternalError(absl::StrCat(op.what, ": ", mpi_error(err)));
      } else if (!op.failed_after.ok()) {
        s = op.failed_after;
      } else if (op.kind == Op::kReceive) {
        int count = 0;
        MPI_Get_count(&statuses_[k], types_[i], &count);
        if (count != 1) {
          s = absl::InvalidArgumentError(
              absl::StrCat(op.what, ": the rank sent fewer elements than the box holds"));
        }
      }
      op.event->complete(std::move(s));
      MPI_Type_free(&types_[i]);
    }
    // Drop the completed entries (MPI set their requests to MPI_REQUEST_NULL).
    size_t w = 0;
    for (size_t k = 0; k < active_.size(); ++k) {
      if (requests_[k] == MPI_REQUEST_NULL) continue;
      if (w != k) {
        active_[w] = std::move(active_[k]);
        requests_[w] = requests_[k];
        types_[w] = types_[k];
      }
      ++w;
    }
    active_.resize(w);
    requests_.resize(w);
    types_.resize(w);
    return done;
  }

  // Starts the waiting operations in order while the first one's `after`
  // events have completed; returns how many started.
  int start_ready() {
    int started = 0;
    while (!waiting_.empty()) {
      Op& op = waiting_.front();
      for (const Event& e : op.after) {
        if (!e.done()) return started;
      }
      for (const Event& e : op.after) {
        absl::Status s = e.wait();  // complete: returns at once
        if (!s.ok() && op.failed_after.ok()) op.failed_after = absl::Status(s.code(), s.message());
      }
      op.after.clear();
      start(std::move(op));
      waiting_.pop_front();
      ++started;
    }
    return started;
  }

  // Whether an active send or receive moves at least kLarge bytes (MPI needs many
  // calls to move it).
  bool large_in_flight() const {
    constexpr int64_t kLarge = int64_t{256} << 10;
    for (const Op& op : active_) {
      if (op.kind != Op::kGather && op.box.volume() * static_cast<int64_t>(op.array.elem_size) >= kLarge) {
        return true;
      }
    }
    return false;
  }

  // Destroying the transport with operations that never complete (another rank
  // failed, or a send nobody receives) must not hang the program: past
  // BBMM_MPI_SHUTDOWN_TIMEOUT_S seconds (default 30) it says what is pending and
  // aborts the MPI job, which stops every rank.
  static double shutdown_timeout_s() {
    const char* v = std::getenv("BBMM_MPI_SHUTDOWN_TIMEOUT_S");
    char* end = nullptr;
    const double t = v ? std::strtod(v, &end) : 0;
    return v && end != v && *end == '\0' && t > 0 ? t : 30.0;
  }

  void abort_pending() {
    const Op& first = !active_.empty() ? active_.front() : waiting_.front();
    std::fprintf(stderr,
                 "bbmm: MPI rank %d of %d: %zu transfer(s) still pending when the runtime is "
                 "destroyed (a rank failed, or a send is never received), first: %s; aborting "
                 "the MPI job\n",
                 rank_, size_, active_.size() + waiting_.size(), first.what.c_str());
    std::fflush(stderr);
    MPI_Abort(comm_, 3);
  }

  void run() {
    constexpr std::chrono::microseconds kSpin{2000}, kPoll{20};
    std::chrono::steady_clock::time_point last_activity{}, last_check{};
    std::vector<Op> fresh;
    std::chrono::steady_clock::time_point stop_since{};
    bool stopping = false;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (queue_.empty() && active_.empty() && waiting_.empty()) {
          if (stop_) return;
          cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
          if (queue_.empty()) return;  // stopping with nothing pending
        }
        fresh.swap(queue_);
        if (stop_ && !stopping) {
          stopping = true;
          stop_since = std::chrono::steady_clock::now();
        }
      }
      if (stopping && (!active_.empty() || !waiting_.empty()) &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - stop_since).count() >
              shutdown_timeout_s()) {
        abort_pending();
      }
      const bool new_ops = !fresh.empty();
      for (Op& op : fresh) waiting_.push_back(std::move(op));
      fresh.clear();
      // Whether the operations waiting for events may start: checked when new ones
      // came and every kPoll (a query of a CUDA event takes the driver's lock that
      // the device's issue thread needs: not in a tight loop).
      auto now = std::chrono::steady_clock::now();
      int started = 0;
      if (!waiting_.empty() && (new_ops || now - last_check >= kPoll)) {
        started = start_ready();
        last_check = now;
      }
      const int finished = active_.empty() ? 0 : poll();
      if (started + finished > 0) last_activity = now;
      if ((!active_.empty() || !waiting_.empty()) && started + finished == 0) {
        // MPI moves a large message only while someone calls it (shared memory
        // goes in fragments of tens of KiB, one batch per call): while one is in
        // flight, right after an operation started or finished, call it again at
        // once (kSpin); otherwise (small messages, which one call moves, or a
        // transfer probably waiting for its peer) poll every kPoll without
        // holding a core. (Calling at once for small messages too made floyd
        // over 4 ranks of one GPU each slower: 4 threads spinning in MPI.)
        if (large_in_flight() && now - last_activity < kSpin) {
          std::this_thread::yield();
        } else {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait_for(lock, kPoll, [&] { return !queue_.empty(); });
        }
      }
    }
  }

  MPI_Comm comm_;
  const int rank_, size_;
  const int max_tag_;  // MPI_TAG_UB
  const bool cuda_aware_;  // mpi_cuda_aware(), asked before the thread makes every MPI call
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Op> queue_;  // posted by callers, taken by the thread
  bool stop_ = false;
  // The communication thread's own.
  std::deque<Op> waiting_;  // posted, not started (in posting order)
  std::vector<Op> active_;
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Datatype> types_;
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;
  std::thread thread_;
};

}  // namespace

bool mpi_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

absl::StatusOr<std::unique_ptr<Transport>> make_mpi_transport(MPI_Comm comm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    return absl::FailedPreconditionError("MPI transport: MPI is not initialised (or finalised)");
  }
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_SERIALIZED) {
    return absl::FailedPreconditionError(
        "MPI transport: MPI was initialised below MPI_THREAD_SERIALIZED (use MPI_Init_thread; "
        "the transport's communication thread makes the MPI calls)");
  }
  MPI_Comm dup;
  int rc = MPI_Comm_dup(comm, &dup);
  if (rc != MPI_SUCCESS) {
    return absl::InternalError(absl::StrCat("MPI transport: MPI_Comm_dup: ", mpi_error(rc)));
  }
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(dup, &rank);
  MPI_Comm_size(dup, &size);
  int max_tag = 32767;  // the least MPI_TAG_UB the standard allows
  int* ub = nullptr;
  int flag = 0;
  if (MPI_Comm_get_attr(dup, MPI_TAG_UB, &ub, &flag) == MPI_SUCCESS && flag && ub != nullptr) {
    max_tag = *ub;
  }
  return std::unique_ptr<Transport>(new MpiTransport(dup, rank, size, max_tag, mpi_cuda_aware()));
}

}  // namespace bbmm
