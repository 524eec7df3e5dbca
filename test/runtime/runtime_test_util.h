// Helpers shared by the runtime test suites (conformance, fuzz, fault
// injection): backend factories, box shorthands, and a by-value copy of a
// view that a kernel may keep after the tile is released.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bbmm/box.h"
#include "bbmm/runtime.h"
#include "bbmm/view.h"
#include "core/backend.h"
#include "host/host_backend.h"

namespace bbmm::testing {

class PieceCopy;

// A host kernel: reads and writes the pieces of the tile's views (one per
// array) through host pointers.
using HostKernel = std::function<void(const std::vector<PieceCopy>&)>;

// Makes a backend of `devices` devices, each limited to `capacity` bytes
// (0 = unlimited). The conformance suite runs once per factory; CUDA and
// OpenCL factories join the list in their own test binaries.
struct BackendFactory {
  std::string name;
  std::function<std::unique_ptr<Backend>(int devices, size_t capacity)> make;
  // Pitch alignment the backend reports (capacity accounting tests use it).
  size_t pitch_alignment = 1;
  // How a host kernel reaches device memory: called inside the launch
  // function, runs the kernel on pieces the host can dereference (OpenCL maps
  // the buffers around it). Empty: the pieces already are host pointers (the
  // host backend), the kernel runs on them directly.
  std::function<void(const bbmm_launch_info&, const std::vector<PieceCopy>&, const HostKernel&)>
      host_access;
};

// gtest prints a parameter by its name.
inline void PrintTo(const BackendFactory& f, std::ostream* os) { *os << f.name; }

inline BackendFactory host_factory(std::string name, bool peer, size_t align, int queues = 1) {
  return BackendFactory{
      std::move(name),
      [peer, align, queues](int devices, size_t capacity) -> std::unique_ptr<Backend> {
        absl::StatusOr<std::unique_ptr<Backend>> b = make_host_backend(
            {.devices = devices, .capacity_bytes = capacity, .pitch_alignment = align,
             .peer_access = peer, .queues = queues});
        if (!b.ok()) {
          ADD_FAILURE() << b.status();
          return nullptr;
        }
        return *std::move(b);
      },
      align, {}};
}

// Today's factories: the host backend with and without (simulated) peer
// access, with rows padded to 64 bytes, and with 4 queues per device (kernels,
// H2D, D2H and peer copies run concurrently, ordered only by events, as on a
// GPU's streams).
inline std::vector<BackendFactory> host_backend_factories() {
  return {host_factory("host_peer", true, 1), host_factory("host_nopeer", false, 1),
          host_factory("host_pitch64", true, 64), host_factory("host_queues", true, 1, 4),
          host_factory("host_queues_nopeer", false, 1, 4)};
}

// A runtime that shuts down quietly when destroyed: tests keep their host
// arrays registered to the end (declared before the runtime, they outlive it),
// which the destructor would otherwise report on stderr.
struct QuietShutdown {
  void operator()(Runtime* rt) const {
    if (rt != nullptr) (void)rt->shutdown();
    delete rt;
  }
};
using TestRuntime = std::unique_ptr<Runtime, QuietShutdown>;

// Box [lo, hi); aborts the test on a malformed box.
inline Box B(std::initializer_list<int64_t> lo, std::initializer_list<int64_t> hi) {
  absl::StatusOr<Box> b = Box::create(lo, hi);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *b : Box();
}

// The pieces of a view, copied so that a kernel running on a device's worker
// thread after release still sees them (bbmm_view::pieces is only valid until
// release).
class PieceCopy {
 public:
  PieceCopy() = default;
  explicit PieceCopy(const bbmm_view& v)
      : rank_(v.rank), elem_size_(v.elem_size), pieces_(v.pieces, v.pieces + v.npieces) {}

  // Address of element `idx`, or nullptr when no piece holds it.
  void* at(const int64_t* idx) const {
    for (const bbmm_piece& p : pieces_) {
      if (bbmm_piece_contains(&p, rank_, idx)) return bbmm_piece_at(&p, elem_size_, rank_, idx);
    }
    return nullptr;
  }
  template <typename T>
  T& ref(std::initializer_list<int64_t> idx) const {
    void* p = at(idx.begin());
    if (p == nullptr) throw std::runtime_error("PieceCopy: element in no piece");
    return *static_cast<T*>(p);
  }
  const std::vector<bbmm_piece>& pieces() const { return pieces_; }
  std::vector<bbmm_piece>& mutable_pieces() { return pieces_; }
  int rank() const { return rank_; }
  size_t elem_size() const { return elem_size_; }

 private:
  int rank_ = 0;
  size_t elem_size_ = 0;
  std::vector<bbmm_piece> pieces_;
};

// The backend the random-trace test (runtime_fuzz_test.cpp) runs on: unset =
// the host backend with each trace's own options; a GPU test binary compiling
// the same test sets it to its factory.
inline std::optional<BackendFactory>& fuzz_backend() {
  static std::optional<BackendFactory> factory;
  return factory;
}
// When not empty, the random-trace test skips, printing this reason (e.g. a
// GPU binary on a machine without a GPU).
inline std::string& fuzz_skip_reason() {
  static std::string reason;
  return reason;
}

// Bytes from a piece's first element to one past its last (0 when empty).
inline size_t piece_span(const bbmm_piece& p, int rank, size_t elem) {
  int64_t last = 0;
  for (int d = 0; d < rank; ++d) {
    if (p.hi[d] <= p.lo[d]) return 0;
    last += (p.hi[d] - p.lo[d] - 1) * p.stride[d];
  }
  return (static_cast<size_t>(last) + 1) * elem;
}

// Calls `f(at, bytes)` for every row of piece `p` (rank `rank`, elements of `elem`
// bytes): its contiguous runs along the last dimension, `at` bytes from the piece's
// first element, in memory order. Nothing for an empty piece.
template <typename F>
void for_each_row(const bbmm_piece& p, int rank, size_t elem, F f) {
  for (int d = 0; d < rank; ++d) {
    if (p.hi[d] <= p.lo[d]) return;
  }
  const size_t row = static_cast<size_t>(p.hi[rank - 1] - p.lo[rank - 1]) * elem;
  int64_t idx[BBMM_MAX_RANK] = {};
  for (;;) {
    int64_t off = 0;
    for (int d = 0; d + 1 < rank; ++d) off += idx[d] * p.stride[d];
    f(static_cast<size_t>(off) * elem, row);
    int d = rank - 2;
    while (d >= 0 && ++idx[d] == p.hi[d] - p.lo[d]) idx[d--] = 0;
    if (d < 0) return;
  }
}

// The box of a piece.
inline Box piece_box(const bbmm_piece& p, int rank) {
  return Box::make_unchecked(rank, p.lo, p.hi);
}

// Calls `f(idx)` for every point of `box` in row-major order.
template <typename F>
void for_each_point(const Box& box, F f) {
  if (box.empty()) return;
  const int r = box.rank();
  int64_t idx[Box::kMaxRank];
  for (int d = 0; d < r; ++d) idx[d] = box.lo(d);
  while (true) {
    f(static_cast<const int64_t*>(idx));
    int d = r - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < box.hi(d)) break;
      idx[d] = box.lo(d);
    }
    if (d < 0) return;
  }
}

}  // namespace bbmm::testing
