// The CUDA backend factory for the shared runtime suites (conformance and
// random traces). Host-written kernels reach the pieces by staging: inside
// the launch function (which runs on the device's issue worker thread) each
// piece's device memory is copied to the host on the launch's stream, the
// kernel runs, and the bytes are copied back.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bbmm/runtime.h"
#include "core/loopback_transport.h"
#include "cuda/cuda_backend.h"
#include "runtime_test_util.h"

namespace bbmm::testing {

inline void cuda_host_access(const bbmm_launch_info& info, const std::vector<PieceCopy>& views,
                             const HostKernel& body) {
  cudaStream_t stream = static_cast<cudaStream_t>(info.queue);
  std::vector<PieceCopy> host = views;
  // One host buffer per distinct device range (a view may appear twice), and its bytes as
  // staged, to write back only what the kernel changed.
  struct Staged {
    std::vector<char> buf, before;
  };
  std::map<std::pair<char*, size_t>, Staged> staged;
  for (PieceCopy& v : host) {
    for (bbmm_piece& p : v.mutable_pieces()) {
      char* dev = static_cast<char*>(p.data) + p.offset;
      const size_t span = piece_span(p, v.rank(), v.elem_size());
      std::vector<char>& buf = staged[{dev, span}].buf;
      if (buf.size() != span) buf.resize(span);
      // Only the piece's rows: the bytes between them (other columns of the instance)
      // are not the tile's, and another operation of the device may be writing them
      // meanwhile (ThreadSanitizer over the fake CUDA runtime reported those reads).
      for_each_row(p, v.rank(), v.elem_size(), [&](size_t at, size_t bytes) {
        EXPECT_EQ(cudaMemcpyAsync(buf.data() + at, dev + at, bytes, cudaMemcpyDeviceToHost,
                                  stream),
                  cudaSuccess);
      });
      p.data = buf.data();
      p.offset = 0;
    }
  }
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  for (auto& [key, st] : staged) st.before = st.buf;
  body(host);
  // Only the bytes the kernel changed go back: a piece's span also covers elements the
  // tile only reads, or does not require at all, which another operation of the device
  // may be writing meanwhile (a read-in for another open tile); copying those back would
  // overwrite its data with what was staged before it (found by cuda_fuzz_fake_test).
  for (auto& [key, st] : staged) {
    const size_t n = key.second;
    for (size_t i = 0; i < n;) {
      if (st.buf[i] == st.before[i]) {
        ++i;
        continue;
      }
      size_t j = i + 1;
      while (j < n && st.buf[j] != st.before[j]) ++j;
      EXPECT_EQ(cudaMemcpyAsync(key.first + i, st.buf.data() + i, j - i, cudaMemcpyHostToDevice,
                                stream),
                cudaSuccess);
      i = j;
    }
  }
  // The host buffers must outlive the copies.
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
}

// A loopback transport's copy (make_loopback_transports) that reads CUDA device
// memory as a CUDA-aware MPI does: cudaMemcpyDefault (unified addressing) on a
// stream of its own, non-blocking so that it waits for no other stream (the
// transport has waited for the send's events: what this checks), then
// synchronised. The stream lives as long as the returned function's copies.
inline LoopbackCopy cuda_loopback_copy() {
  struct Stream {
    std::mutex mu;
    cudaStream_t stream = nullptr;
    ~Stream() {
      if (stream != nullptr) {
        EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
      }
    }
  };
  auto s = std::make_shared<Stream>();
  return [s](void* dst, const void* src, size_t bytes) {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->stream == nullptr) {
      ASSERT_EQ(cudaStreamCreateWithPriority(&s->stream, cudaStreamNonBlocking, 0), cudaSuccess);
    }
    EXPECT_EQ(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s->stream), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(s->stream), cudaSuccess);
  };
}

inline BackendFactory cuda_factory(std::string name, bool copy_kernel) {
  BackendFactory f;
  f.name = std::move(name);
  f.make = [copy_kernel](int devices, size_t capacity) -> std::unique_ptr<Backend> {
    CudaBackendOptions o;
    o.devices = devices;
    o.capacity_bytes = capacity;
    o.oversubscribe = true;  // several logical devices per GPU on small machines
    o.copy_kernel = copy_kernel;
    // BBMM_CUDA_COPY_KERNEL, BBMM_CUDA_PEER_COPY_KERNEL, BBMM_CUDA_PEER_PUSH,
    // BBMM_CUDA_HOST_COPIES and BBMM_CUDA_COPY_STREAMS as for a
    // runtime (RuntimeOptions):
    // a copy path can be switched off on the GPU machine without a rebuild.
    absl::StatusOr<RuntimeOptions> env = RuntimeOptions::from_env();
    if (!env.ok()) {
      ADD_FAILURE() << env.status();
      return nullptr;
    }
    if (std::getenv("BBMM_CUDA_COPY_KERNEL") != nullptr) o.copy_kernel = env->cuda_copy_kernel;
    o.peer_copy_kernel = env->cuda_peer_copy_kernel;  // BBMM_CUDA_PEER_COPY_KERNEL
    o.peer_push = env->cuda_peer_push;                // BBMM_CUDA_PEER_PUSH
    // BBMM_CUDA_HOST_COPIES; unset: pinned, as these suites always ran (the
    // pageable ctest variants set staged).
    o.host_copies = std::getenv("BBMM_CUDA_HOST_COPIES") == nullptr ? BBMM_HOST_COPIES_PINNED
                                                                     : env->cuda_host_copies;
    o.copy_streams = env->cuda_copy_streams;
    absl::StatusOr<std::unique_ptr<Backend>> b = make_cuda_backend(o);
    if (!b.ok()) {
      ADD_FAILURE() << b.status();
      return nullptr;
    }
    return *std::move(b);
  };
  f.pitch_alignment = 1;
  f.host_access = cuda_host_access;
  return f;
}

}  // namespace bbmm::testing
