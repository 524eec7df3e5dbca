// Page-locking of registered host arrays (Backend::register_host), so that
// host<->device copies run at full PCIe speed without staging.
//
// cudaHostRegister of a multi-GB array takes a long time (the kernel pins
// every page and the driver maps them for each GPU), and a single call of
// 512 GiB or more fails on r580 drivers (a per-call page table limit). So an
// array may be registered in chunks (page-aligned boundaries, so that no page
// is registered twice), optionally from several threads at once; the chunks
// are remembered for unregistering. Pinning is an optimisation: when it fails
// the array stays pageable (copies still work, slower) and a note is printed.
//
// A copy whose host bytes span two registrations is rejected by CUDA
// (cudaErrorInvalidValue: a region must lie in one registration, or in none),
// so the issue workers split host copies at the chunk boundaries this class
// reports (boundaries_in; cuda_copy.h's split_copy_at). Since that costs more
// copies for the boxes that cross a boundary, and registering in chunks is
// only known to help when measured, the default (kAuto) is one call per array
// below 256 GiB.
//
// Thread-safety: every method may be called from several threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"

namespace bbmm {

enum class HostPinMethod {
  kAuto,      // chosen by size (see resolve_pin_method)
  kWhole,     // one cudaHostRegister of the whole array
  kChunked,   // one call per chunk, one after another
  kParallel,  // one call per chunk, from several threads
};

// "auto", "whole", "chunked", "parallel".
const char* pin_method_name(HostPinMethod m);

struct HostPinOptions {
  HostPinMethod method = HostPinMethod::kAuto;
  size_t chunk_bytes = size_t{256} << 20;
  int threads = 4;  // kParallel
};

// The method kAuto uses for an array of `bytes`: kWhole below 256 GiB (no
// copy has to be split), kParallel above (one call of 512 GiB or more fails).
// Chunks never exceed 256 GiB.
HostPinMethod resolve_pin_method(HostPinMethod m, size_t bytes);

class HostPinner {
 public:
  explicit HostPinner(const HostPinOptions& options) : options_(options) {}
  // Unpins whatever is still pinned.
  ~HostPinner();
  HostPinner(const HostPinner&) = delete;
  HostPinner& operator=(const HostPinner&) = delete;

  // Pins `bytes` at `host` (nothing for null or empty; nothing again for an
  // array pinned already). Failures leave it pageable and print a note;
  // returns OK then too.
  absl::Status pin(void* host, size_t bytes);
  // Unpins the array pinned at `host` (nothing when it is not pinned here).
  // Returns the first cudaHostUnregister error.
  absl::Status unpin(void* host);
  void unpin_all();

  // True when [`begin`, `end`) lies inside one array pinned here, or inside
  // page-locked memory CUDA knows of (cudaHostAlloc, another registration):
  // then a kernel may access it through its host address.
  bool covers(uintptr_t begin, uintptr_t end) const;
  // True when some array is pinned in more than one registration.
  bool has_boundaries() const { return has_boundaries_.load(std::memory_order_acquire); }
  // Appends to `out`, in increasing order, the addresses strictly inside
  // (`begin`, `end`) where one registration of a chunked array ends and the
  // next begins.
  void boundaries_in(uintptr_t begin, uintptr_t end, std::vector<uintptr_t>* out) const;

 private:
  struct Range {
    void* base;
    size_t bytes;
  };
  struct Pinned {
    std::vector<Range> ranges;
    int threads;
  };

  // Adds (`add`) or removes the inner boundaries of `p` (ranges 1..n-1's
  // starts).
  void update_boundaries(const Pinned& p, bool add);

  HostPinOptions options_;
  std::mutex serial_mu_;  // held through a whole pin or unpin
  mutable std::mutex mu_;  // guards pinned_
  std::unordered_map<void*, Pinned> pinned_;
  mutable std::shared_mutex boundaries_mu_;  // guards boundaries_
  std::vector<uintptr_t> boundaries_;        // sorted
  std::atomic<bool> has_boundaries_{false};
};

}  // namespace bbmm
