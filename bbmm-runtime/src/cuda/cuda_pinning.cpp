#include "cuda/cuda_pinning.h"

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cuda/cuda_status.h"

namespace bbmm {
namespace {

constexpr size_t kMaxChunk = size_t{256} << 30;

// The host's page size in bytes.
size_t page_size() {
  const long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<size_t>(p) : 4096;
}

// [host, host + bytes) cut at page-aligned boundaries about `chunk` apart.
std::vector<std::pair<void*, size_t>> split(void* host, size_t bytes, size_t chunk) {
  const size_t page = page_size();
  chunk = std::clamp<size_t>(chunk, page, kMaxChunk);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(host), end = begin + bytes;
  std::vector<std::pair<void*, size_t>> out;
  uintptr_t at = begin;
  while (at < end) {
    uintptr_t next = (at + chunk + page - 1) / page * page;  // page-aligned
    if (next >= end || end - next < page) next = end;        // no sliver at the end
    out.emplace_back(reinterpret_cast<void*>(at), next - at);
    at = next;
  }
  return out;
}

// Runs `job(i)` for i in [0, n) on up to `threads` threads (the caller's
// included); falls back to the caller alone if a thread cannot start.
void run_spread(size_t n, int threads, const std::function<void(size_t)>& job) {
  const size_t t = std::min<size_t>(std::max(threads, 1), n);
  std::vector<std::thread> pool;
  size_t started = 1;
  for (size_t k = 1; k < t; ++k) {
    try {
      pool.emplace_back([&job, k, t, n] {
        for (size_t i = k; i < n; i += t) job(i);
      });
      ++started;
    } catch (const std::exception&) {
      break;  // std::system_error: no more threads; the caller does the rest
    }
  }
  // The caller takes index 0 mod t, plus the shares of threads that did not
  // start.
  for (size_t i = 0; i < n; ++i) {
    const size_t owner = i % t;
    if (owner == 0 || owner >= started) job(i);
  }
  for (std::thread& th : pool) th.join();
}

// Whether CUDA knows [begin, end) as page-locked host memory (asked at both ends).
bool page_locked(uintptr_t begin, uintptr_t end) {
  for (uintptr_t a : {begin, end - 1}) {
    cudaPointerAttributes attr;
    if (cudaPointerGetAttributes(&attr, reinterpret_cast<const void*>(a)) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    if (attr.type != cudaMemoryTypeHost) return false;
  }
  return true;
}

}  // namespace

const char* pin_method_name(HostPinMethod m) {
  switch (m) {
    case HostPinMethod::kAuto: return "auto";
    case HostPinMethod::kWhole: return "whole";
    case HostPinMethod::kChunked: return "chunked";
    case HostPinMethod::kParallel: return "parallel";
  }
  return "?";
}

HostPinMethod resolve_pin_method(HostPinMethod m, size_t bytes) {
  if (m != HostPinMethod::kAuto) return m;
  return bytes < kMaxChunk ? HostPinMethod::kWhole : HostPinMethod::kParallel;
}

HostPinner::~HostPinner() { unpin_all(); }

absl::Status HostPinner::pin(void* host, size_t bytes) {
  if (host == nullptr || bytes == 0) return absl::OkStatus();
  // One pin or unpin at a time: two threads pinning one array would each
  // see the other's chunks as "already registered".
  std::lock_guard<std::mutex> serial(serial_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pinned_.count(host) != 0) return absl::OkStatus();
  }
  // Memory the program pinned itself (cudaHostAlloc, or its own cudaHostRegister) is copied
  // directly as it is; registering it again would fail (cudaHostAlloc'ed memory: "invalid
  // argument", an API error under compute-sanitizer, and a false message below).
  const uintptr_t begin = reinterpret_cast<uintptr_t>(host);
  if (page_locked(begin, begin + bytes)) return absl::OkStatus();
  const HostPinMethod method = resolve_pin_method(options_.method, bytes);
  // kAuto chunks only huge arrays, in few large chunks (few copies to split).
  const size_t chunk = options_.method == HostPinMethod::kAuto
                           ? std::max(options_.chunk_bytes, size_t{64} << 30)
                           : options_.chunk_bytes;
  const std::vector<std::pair<void*, size_t>> parts =
      method == HostPinMethod::kWhole ? std::vector<std::pair<void*, size_t>>{{host, bytes}}
                                      : split(host, bytes, chunk);
  const int threads = method == HostPinMethod::kParallel ? options_.threads : 1;
  std::vector<cudaError_t> result(parts.size(), cudaSuccess);
  run_spread(parts.size(), threads, [&](size_t i) {
    result[i] = cudaHostRegister(parts[i].first, parts[i].second,
                                 cudaHostRegisterPortable | cudaHostRegisterMapped);
    if (result[i] != cudaSuccess) (void)cudaGetLastError();
  });
  Pinned p;
  p.threads = threads;
  cudaError_t failure = cudaSuccess;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (result[i] == cudaSuccess) {
      p.ranges.push_back(Range{parts[i].first, parts[i].second});
    } else if (result[i] != cudaErrorHostMemoryAlreadyRegistered && failure == cudaSuccess) {
      failure = result[i];
    }
  }
  if (failure != cudaSuccess) {
    // All or nothing: a partly pinned array would make some copies fast and
    // others staged, which is harder to reason about than either.
    for (const Range& r : p.ranges) (void)cudaHostUnregister(r.base);
    (void)cudaGetLastError();
    std::fprintf(stderr,
                 "bbmm: cudaHostRegister of %zu bytes (%s, %zu parts) failed (%s); copies of "
                 "this array use pageable memory\n",
                 bytes, pin_method_name(method), parts.size(), cudaGetErrorString(failure));
    return absl::OkStatus();
  }
  // Nothing of ours when the memory was pinned already (cudaHostAlloc).
  if (p.ranges.empty()) return absl::OkStatus();
  update_boundaries(p, true);
  std::lock_guard<std::mutex> lock(mu_);
  pinned_.emplace(host, std::move(p));
  return absl::OkStatus();
}

absl::Status HostPinner::unpin(void* host) {
  std::lock_guard<std::mutex> serial(serial_mu_);
  Pinned p;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pinned_.find(host);
    if (it == pinned_.end()) return absl::OkStatus();
    p = std::move(it->second);
    pinned_.erase(it);
  }
  // Copies split at these boundaries were issued already; later ones need
  // no split (the array is pageable again).
  update_boundaries(p, false);
  std::vector<cudaError_t> result(p.ranges.size(), cudaSuccess);
  run_spread(p.ranges.size(), p.threads, [&](size_t i) {
    result[i] = cudaHostUnregister(p.ranges[i].base);
    if (result[i] != cudaSuccess) (void)cudaGetLastError();
  });
  for (cudaError_t e : result) {
    if (e != cudaSuccess) return cuda_status("cudaHostUnregister", e, __FILE__, __LINE__);
  }
  return absl::OkStatus();
}

void HostPinner::update_boundaries(const Pinned& p, bool add) {
  if (p.ranges.size() < 2) return;
  std::unique_lock<std::shared_mutex> lock(boundaries_mu_);
  for (size_t i = 1; i < p.ranges.size(); ++i) {
    const uintptr_t b = reinterpret_cast<uintptr_t>(p.ranges[i].base);
    auto it = std::lower_bound(boundaries_.begin(), boundaries_.end(), b);
    if (add) {
      boundaries_.insert(it, b);
    } else if (it != boundaries_.end() && *it == b) {
      boundaries_.erase(it);
    }
  }
  has_boundaries_.store(!boundaries_.empty(), std::memory_order_release);
}

void HostPinner::boundaries_in(uintptr_t begin, uintptr_t end, std::vector<uintptr_t>* out) const {
  std::shared_lock<std::shared_mutex> lock(boundaries_mu_);
  for (auto it = std::upper_bound(boundaries_.begin(), boundaries_.end(), begin);
       it != boundaries_.end() && *it < end; ++it) {
    out->push_back(*it);
  }
}

bool HostPinner::covers(uintptr_t begin, uintptr_t end) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [host, p] : pinned_) {
      const uintptr_t first = reinterpret_cast<uintptr_t>(p.ranges.front().base);
      const Range& last_range = p.ranges.back();
      const uintptr_t last = reinterpret_cast<uintptr_t>(last_range.base) + last_range.bytes;
      if (begin >= first && end <= last) return true;
    }
  }
  // Not pinned by this backend: ask CUDA.
  return page_locked(begin, end);
}

void HostPinner::unpin_all() {
  std::vector<void*> hosts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [host, p] : pinned_) hosts.push_back(host);
  }
  for (void* h : hosts) (void)unpin(h);
}

}  // namespace bbmm
