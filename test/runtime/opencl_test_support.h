// The OpenCL backend factory for the shared runtime suites (conformance and
// random traces). The suites' kernels are host lambdas: host_access maps each
// buffer the pieces live in (blocking clEnqueueMapBuffer on the device's
// queue, inside the launch function, so after the tile's read-ins), runs the
// kernel on host pointers, then unmaps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "opencl/opencl_backend.h"
#include "runtime_test_util.h"

namespace bbmm::testing {
namespace opencl_test {

inline void check(cl_int e, const char* call) {
  if (e != CL_SUCCESS) throw std::runtime_error(absl::StrCat(call, ": ", opencl_error_name(e)));
}

inline void opencl_host_access(const bbmm_launch_info& info, const std::vector<PieceCopy>& views,
                        const HostKernel& kernel) {
  cl_command_queue q = static_cast<cl_command_queue>(info.queue);
  // One mapping per buffer over the union of its pieces (two pieces may share
  // an instance; overlapping write mappings are undefined in OpenCL).
  struct Mapping {
    size_t lo = SIZE_MAX, hi = 0;
    char* host = nullptr;
  };
  std::map<cl_mem, Mapping> maps;
  for (const PieceCopy& v : views) {
    for (const bbmm_piece& p : v.pieces()) {
      const size_t span = piece_span(p, v.rank(), v.elem_size());
      if (span == 0) continue;
      Mapping& m = maps[static_cast<cl_mem>(p.data)];
      m.lo = std::min<size_t>(m.lo, p.offset);
      m.hi = std::max<size_t>(m.hi, p.offset + span);
    }
  }
  auto unmap_all = [&] {
    std::vector<cl_event> events;
    for (auto& [mem, m] : maps) {
      if (m.host == nullptr) continue;
      cl_event ev = nullptr;
      if (clEnqueueUnmapMemObject(q, mem, m.host, 0, nullptr, &ev) == CL_SUCCESS) {
        events.push_back(ev);
      }
    }
    // Kept until complete (see docs/opencl.md on PoCL and released events).
    if (!events.empty()) clWaitForEvents(static_cast<cl_uint>(events.size()), events.data());
    for (cl_event ev : events) clReleaseEvent(ev);
  };
  for (auto& [mem, m] : maps) {
    cl_int e = CL_SUCCESS;
    void* host = clEnqueueMapBuffer(q, mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, m.lo,
                                    m.hi - m.lo, 0, nullptr, nullptr, &e);
    if (e != CL_SUCCESS) {
      unmap_all();
      check(e, "clEnqueueMapBuffer");
    }
    m.host = static_cast<char*>(host);
  }
  std::vector<PieceCopy> mapped;
  mapped.reserve(views.size());
  for (const PieceCopy& v : views) {
    std::vector<bbmm_piece> pieces = v.pieces();
    for (bbmm_piece& p : pieces) {
      auto it = maps.find(static_cast<cl_mem>(p.data));
      if (it == maps.end()) continue;  // an empty piece: never dereferenced
      p.data = it->second.host;
      p.offset -= it->second.lo;
    }
    const bbmm_view view{v.rank(), static_cast<int>(pieces.size()), v.elem_size(), pieces.data()};
    mapped.emplace_back(view);
  }
  try {
    kernel(mapped);
  } catch (...) {
    unmap_all();
    throw;
  }
  unmap_all();
}

inline BackendFactory opencl_factory(std::string name, size_t align) {
  return BackendFactory{
      std::move(name),
      [align](int devices, size_t capacity) -> std::unique_ptr<Backend> {
        absl::StatusOr<std::unique_ptr<Backend>> b = make_opencl_backend(
            {.devices = devices, .capacity_bytes = capacity, .pitch_alignment = align});
        if (!b.ok()) {
          ADD_FAILURE() << b.status();
          return nullptr;
        }
        return *std::move(b);
      },
      align, opencl_host_access};
}

}  // namespace opencl_test
}  // namespace bbmm::testing
