#include "cuda/cuda_topology.h"

#include <cstdint>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuda/cuda_status.h"

namespace bbmm {
namespace {

// Pairs (a, b) for which this process enabled peer access from GPU a to GPU b
// (it stays enabled for the contexts' lifetime), so that a second backend does
// not call cudaDeviceEnablePeerAccess again: the call would fail with
// cudaErrorPeerAccessAlreadyEnabled, harmless, but an API error that
// compute-sanitizer reports (72 of them in cuda_backend_test on 2 GPUs).
std::mutex peer_mu;
std::set<std::pair<int, int>>& peers_enabled() {
  static std::set<std::pair<int, int>> s;
  return s;
}

}  // namespace

absl::Status create_contexts(int n) {
  if (n <= 0) return absl::OkStatus();
  if (n == 1) {
    const cudaError_t e = cudaSetDevice(0);
    if (e == cudaSuccess) return absl::OkStatus();
    return cuda_status("cudaSetDevice (creating the context of GPU 0)", e, __FILE__, __LINE__);
  }
  std::vector<cudaError_t> errors(static_cast<size_t>(n), cudaSuccess);
  std::vector<std::thread> threads;
  try {
    for (int g = 0; g < n; ++g) {
      threads.emplace_back([g, &errors] { errors[static_cast<size_t>(g)] = cudaSetDevice(g); });
    }
  } catch (const std::exception&) {
    // No more threads: the first cudaSetDevice of the others creates theirs.
  }
  for (std::thread& t : threads) t.join();
  for (int g = 0; g < n; ++g) {
    const cudaError_t e = errors[static_cast<size_t>(g)];
    if (e != cudaSuccess) {
      return cuda_status(absl::StrCat("cudaSetDevice (creating the context of GPU ", g, ")").c_str(),
                         e, __FILE__, __LINE__);
    }
  }
  return absl::OkStatus();
}

absl::Status setup_topology(int count, int visible, bool peer_access, CudaTopology* out) {
  CudaTopology& t = *out;
  t.gpu_of.resize(count);
  for (int d = 0; d < count; ++d) t.gpu_of[d] = d % visible;
  t.gpu_count = std::min(count, visible);
  const int n = t.gpu_count;
  t.pool.assign(n, nullptr);
  t.peer.assign(static_cast<size_t>(n) * n, 0);
  for (int g = 0; g < n; ++g) {
    BBMM_CUDA(cudaSetDevice(g));
    BBMM_CUDA(cudaDeviceGetDefaultMemPool(&t.pool[g], g));
    uint64_t threshold = std::numeric_limits<uint64_t>::max();
    BBMM_CUDA(cudaMemPoolSetAttribute(t.pool[g], cudaMemPoolAttrReleaseThreshold, &threshold));
    int host_pointer = 0;
    BBMM_CUDA(cudaDeviceGetAttribute(&host_pointer, cudaDevAttrCanUseHostPointerForRegisteredMem, g));
    if (!host_pointer) t.host_pointers_ok = false;
  }
  for (int a = 0; a < n; ++a) {
    std::vector<cudaMemAccessDesc> access;
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      int can = 0;
      BBMM_CUDA(cudaDeviceCanAccessPeer(&can, a, b));
      if (can && peer_access) {
        std::lock_guard<std::mutex> lock(peer_mu);
        if (peers_enabled().count({a, b}) == 0) {
          BBMM_CUDA(cudaSetDevice(a));
          const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
          if (e == cudaErrorPeerAccessAlreadyEnabled) {
            (void)cudaGetLastError();  // not an error: the application did it
          } else if (e != cudaSuccess) {
            return cuda_status("cudaDeviceEnablePeerAccess", e, __FILE__, __LINE__);
          }
          peers_enabled().insert({a, b});
        }
        t.peer[static_cast<size_t>(a) * n + b] = 1;
      }
      // May GPU b read and write pool memory of GPU a?
      int reach = 0;
      BBMM_CUDA(cudaDeviceCanAccessPeer(&reach, b, a));
      if (!reach) continue;
      cudaMemAccessDesc desc = {};
      desc.location.type = cudaMemLocationTypeDevice;
      desc.location.id = b;
      desc.flags = cudaMemAccessFlagsProtReadWrite;
      access.push_back(desc);
    }
    if (!access.empty()) {
      BBMM_CUDA(cudaMemPoolSetAccess(t.pool[a], access.data(), access.size()));
    }
  }
  BBMM_CUDA(cudaSetDevice(0));
  return absl::OkStatus();
}

}  // namespace bbmm
