#include "cuda/cuda_staging.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace bbmm {
namespace {

// Parts of a round are at least this large: smaller ones cost more in
// hand-over than the copy.
constexpr size_t kMinPartBytes = size_t{1} << 20;

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// The sub-rectangle of `op` at byte `x`, row `y`, plane `z` with `shape`.
CopyOp sub_op(const CopyOp& op, size_t x, size_t y, size_t z, const CopyShape& shape) {
  CopyOp s = op;
  s.dst.offset += z * op.dst.slice_pitch + y * op.dst.row_pitch + x;
  s.src.offset += z * op.src.slice_pitch + y * op.src.row_pitch + x;
  s.shape = shape;
  return s;
}

size_t op_bytes(const CopyShape& s) { return s.width_bytes * s.height * s.depth; }

// The host side of a piece.
const Endpoint& host_side(const CopyOp& op, bool host_is_dst) {
  return host_is_dst ? op.dst : op.src;
}

// copy_streaming without the fence (store_fence after the last).
void stream_bytes(void* dst, const void* src, size_t n) {
#if defined(__x86_64__)
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  // Up to the first 16-byte aligned destination byte: plain stores.
  const size_t head = std::min(n, (16 - reinterpret_cast<uintptr_t>(d) % 16) % 16);
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  for (; i + 16 <= n; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  }
  std::memcpy(d + i, s + i, n - i);
#else
  std::memcpy(dst, src, n);
#endif
}

void store_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

}  // namespace

void plan_staging(std::span<const CopyOp> ops, size_t capacity, std::vector<StagedRound>* rounds) {
  capacity = std::max(capacity, kStagingAlign);
  StagedRound cur;
  auto add = [&](const CopyOp& piece) {
    const size_t bytes = op_bytes(piece.shape);
    if (bytes == 0) return;
    size_t at = align_up(cur.bytes, kStagingAlign);
    if (!cur.pieces.empty() && at + bytes > capacity) {
      rounds->push_back(std::move(cur));
      cur = StagedRound();
      at = 0;
    }
    cur.pieces.push_back(StagedPiece{piece, at});
    cur.bytes = at + bytes;
  };
  for (const CopyOp& op : ops) {
    const CopyShape& s = op.shape;
    const size_t w = s.width_bytes, plane = w * s.height;
    if (op_bytes(s) <= capacity) {
      add(op);
    } else if (plane <= capacity) {
      const size_t k = capacity / plane;
      for (size_t z = 0; z < s.depth; z += k) {
        add(sub_op(op, 0, 0, z, CopyShape{w, s.height, std::min(k, s.depth - z)}));
      }
    } else if (w <= capacity) {
      const size_t k = capacity / w;
      for (size_t z = 0; z < s.depth; ++z) {
        for (size_t y = 0; y < s.height; y += k) {
          add(sub_op(op, 0, y, z, CopyShape{w, std::min(k, s.height - y), 1}));
        }
      }
    } else {
      for (size_t z = 0; z < s.depth; ++z) {
        for (size_t y = 0; y < s.height; ++y) {
          for (size_t x = 0; x < w; x += capacity) {
            add(sub_op(op, x, y, z, CopyShape{std::min(capacity, w - x), 1, 1}));
          }
        }
      }
    }
  }
  if (!cur.pieces.empty()) rounds->push_back(std::move(cur));
}

CopyOp staged_device_op(const StagedPiece& piece, bool host_is_dst, void* buffer) {
  CopyOp op = piece.op;
  Endpoint& h = host_is_dst ? op.dst : op.src;
  h.base = buffer;
  h.offset = piece.offset;
  h.row_pitch = op.shape.width_bytes;
  h.slice_pitch = op.shape.width_bytes * op.shape.height;
  return op;
}

void copy_streaming(void* dst, const void* src, size_t n) {
  stream_bytes(dst, src, n);
  store_fence();
}

StagingCopier::StagingCopier(int threads, bool streaming)
    : threads_(std::clamp(threads, 1, 64)), streaming_(streaming) {}

StagingCopier::~StagingCopier() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : pool_) t.join();
}

void StagingCopier::copy_part(const Job& job, size_t part) {
  const StagedRound& r = *job.round;
  const size_t begin = r.bytes * part / job.parts, end = r.bytes * (part + 1) / job.parts;
  // The pieces overlapping [begin, end): sorted by offset.
  auto it = std::upper_bound(r.pieces.begin(), r.pieces.end(), begin,
                             [](size_t b, const StagedPiece& p) { return b < p.offset; });
  if (it != r.pieces.begin()) --it;
  for (; it != r.pieces.end() && it->offset < end; ++it) {
    const CopyShape& s = it->op.shape;
    const size_t w = s.width_bytes;
    const size_t piece_end = it->offset + w * s.height * s.depth;
    const size_t from = std::max(begin, it->offset), to = std::min(end, piece_end);
    if (to <= from) continue;
    // [lo, len): the part's bytes of the piece, relative to its offset.
    const size_t lo = from - it->offset, len = to - it->offset;
    const Endpoint& h = host_side(it->op, job.to_host);
    char* host = static_cast<char*>(h.base) + h.offset;
    char* staged = job.buffer + it->offset;
    // Row by row (the first and last may be partial).
    for (size_t at = lo; at < len;) {
      const size_t row = at / w, in_row = at % w;
      const size_t n = std::min(w - in_row, len - at);
      const size_t z = row / s.height, y = row % s.height;
      char* hp = host + z * h.slice_pitch + y * h.row_pitch + in_row;
      char* sp = staged + at;
      void* dst = job.to_host ? static_cast<void*>(hp) : sp;
      const void* src = job.to_host ? static_cast<const void*>(sp) : hp;
      if (job.streaming) {
        stream_bytes(dst, src, n);
      } else {
        std::memcpy(dst, src, n);
      }
      at += n;
    }
  }
  // The part's bytes are visible before the job counts it done.
  if (job.streaming) store_fence();
}

void StagingCopier::run(const StagedRound& round, bool to_host, char* buffer) {
  Job job{&round, to_host, streaming_, buffer, 1};
  job.parts = std::clamp<size_t>(round.bytes / kMinPartBytes, 1, static_cast<size_t>(threads_));
  if (job.parts == 1) {
    copy_part(job, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The threads start with the first round that has parts for them; a
    // thread that cannot start leaves its parts to the others.
    while (pool_.size() + 1 < static_cast<size_t>(threads_)) {
      try {
        pool_.emplace_back([this] { thread_main(); });
      } catch (const std::exception&) {
        break;
      }
    }
    queue_.push_back(&job);
  }
  // Wake only as many threads as the job has parts for besides the caller's
  // (waking them all costs each round a herd of threads finding nothing).
  for (size_t k = 1; k < job.parts; ++k) work_cv_.notify_one();
  std::unique_lock<std::mutex> lock(mu_);
  while (job.next < job.parts) {
    const size_t part = job.next++;
    if (job.next == job.parts) queue_.erase(std::find(queue_.begin(), queue_.end(), &job));
    lock.unlock();
    copy_part(job, part);
    lock.lock();
    ++job.done;
  }
  done_cv_.wait(lock, [&] { return job.done == job.parts; });
}

void StagingCopier::thread_main() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_
    Job* job = queue_.front();
    const size_t part = job->next++;
    if (job->next == job->parts) queue_.pop_front();
    lock.unlock();
    copy_part(*job, part);
    lock.lock();
    if (++job->done == job->parts) done_cv_.notify_all();
  }
}

void run_staged_round(void* staged_job) {
  std::unique_ptr<StagedJob> job(static_cast<StagedJob*>(staged_job));
  job->copier->run(job->round, job->to_host, job->buffer);
}

}  // namespace bbmm
