#include "cuda/cuda_copy.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "cuda/cuda_pinning.h"
#include "cuda/cuda_status.h"

namespace bbmm {
namespace {

// Peer boxes at least this large with rows of 256 B or more go to the copy
// engine (docs/performance.md: 390 vs 370 GB/s at 256 MiB).
constexpr size_t kPeerKernelMaxBytes = size_t{64} << 20;
constexpr size_t kPeerKernelMinRow = 256;
// Dense peer boxes up to this size go to the copy kernel too (with peer_copy_kernel): a
// halo row is all latency on the engine (64 KiB rows took 20-28 µs between NVLink-
// connected H100s, fifth session), and one block of the kernel copies it.
constexpr size_t kPeerKernelMaxDense = size_t{256} << 10;
// Ops per cudaMemcpy3DBatchAsync call (the documentation states no limit;
// this bounds the size of one driver request).
constexpr size_t kBatchApiMaxOps = 1024;

// A copy in canonical form: first bytes, pitches and a shape in which
// height == 1 implies depth == 1, and depth > 1 only when the planes are not
// just consecutive rows on both sides.
struct Rect {
  char* dst;
  const char* src;
  size_t dst_row, dst_slice, src_row, src_slice;
  size_t width, height, depth;
  bool empty() const { return width == 0 || height == 0 || depth == 0; }
  size_t bytes() const { return width * height * depth; }
  // Rows contiguous and planes contiguous on both sides: one linear copy.
  bool dense() const { return height == 1 || (dst_row == width && src_row == width && depth == 1); }
  // Each plane pitch a whole number of rows (what cudaMemcpy3D* and the
  // batch call can express).
  bool whole_row_planes() const {
    return depth == 1 || (dst_row > 0 && src_row > 0 && dst_slice % dst_row == 0 &&
                          src_slice % src_row == 0);
  }
};

// The canonical form of `op`.
Rect canonical(const CopyOp& op) {
  Rect r;
  r.dst = static_cast<char*>(op.dst.base) + op.dst.offset;
  r.src = static_cast<const char*>(op.src.base) + op.src.offset;
  r.width = op.shape.width_bytes;
  r.height = op.shape.height;
  r.depth = op.shape.depth;
  r.dst_row = op.dst.row_pitch;
  r.src_row = op.src.row_pitch;
  r.dst_slice = op.dst.slice_pitch;
  r.src_slice = op.src.slice_pitch;
  if (r.empty()) return r;
  if (r.height == 1) {
    // One row per plane: the planes are the rows.
    r.height = r.depth;
    r.depth = 1;
    r.dst_row = r.height > 1 ? r.dst_slice : r.width;
    r.src_row = r.height > 1 ? r.src_slice : r.width;
  }
  if (r.height == 1) r.dst_row = r.src_row = r.width;
  if (r.depth > 1 && r.dst_slice == r.dst_row * r.height && r.src_slice == r.src_row * r.height) {
    // Planes that are just consecutive rows: one taller 2-D copy.
    r.height *= r.depth;
    r.depth = 1;
  }
  if (r.depth == 1) {
    r.dst_slice = r.dst_row * r.height;
    r.src_slice = r.src_row * r.height;
  }
  if (r.height > 1 && r.dst_row == r.width && r.src_row == r.width && r.depth == 1) {
    // Dense: one row of all the bytes.
    r.width *= r.height;
    r.height = 1;
    r.dst_row = r.src_row = r.width;
    r.dst_slice = r.src_slice = r.width;
  }
  return r;
}

// The cudaMemcpyKind of a copy in direction `dir`.
cudaMemcpyKind kind_of(CopyDir dir) {
  switch (dir) {
    case CopyDir::kH2D: return cudaMemcpyHostToDevice;
    case CopyDir::kD2H: return cudaMemcpyDeviceToHost;
    default: return cudaMemcpyDeviceToDevice;
  }
}

// True when the copy kernel takes `r` in direction `dir` under `env`
// (measured faster than the engine there).
bool use_kernel(const Rect& r, CopyDir dir, const CopyEnv& env) {
  if (!env.copy_kernel) return false;
  if (dir == CopyDir::kD2D) return !r.dense();
  if (dir != CopyDir::kPeer || !env.peer_copy_kernel || !env.peer_reachable) return false;
  if (r.dense()) return r.bytes() <= kPeerKernelMaxDense;
  return r.width < kPeerKernelMinRow || r.bytes() < kPeerKernelMaxBytes;
}

// The batched-kernel form of `r`.
CopyKernelOp kernel_op(const Rect& r) {
  return CopyKernelOp{r.dst, r.src, r.dst_row, r.dst_slice, r.src_row, r.src_slice,
                      r.width, r.height, r.depth};
}

// A pitched pointer to `p` with rows `row` bytes apart, `width` bytes used
// per row and `rows` rows per plane.
cudaPitchedPtr pitched(const void* p, size_t row, size_t width, size_t rows) {
  return make_cudaPitchedPtr(const_cast<void*>(p), row, width, rows);
}

// Issues the copy `r` in direction `dir` on `stream` (see the header for the
// choice of call).
absl::Status issue_rect(const Rect& r, CopyDir dir, const CopyEnv& env, cudaStream_t stream) {
  if (r.empty()) return absl::OkStatus();
  const bool cross = dir == CopyDir::kPeer;
  const cudaMemcpyKind kind = kind_of(dir);
  if (use_kernel(r, dir, env)) {
    BBMM_CUDA(launch_copy_kernel(r.dst, r.dst_row, r.dst_slice, r.src, r.src_row, r.src_slice,
                                 r.width, r.height, r.depth, stream));
    return absl::OkStatus();
  }
  if (r.dense()) {
    if (cross) {
      BBMM_CUDA(cudaMemcpyPeerAsync(r.dst, env.dst_gpu, r.src, env.src_gpu, r.bytes(), stream));
    } else {
      BBMM_CUDA(cudaMemcpyAsync(r.dst, r.src, r.bytes(), kind, stream));
    }
    return absl::OkStatus();
  }
  if (!cross && r.depth == 1) {
    BBMM_CUDA(cudaMemcpy2DAsync(r.dst, r.dst_row, r.src, r.src_row, r.width, r.height, kind,
                                stream));
    return absl::OkStatus();
  }
  // Planes whose pitch is not a whole number of rows: one 2-D copy each.
  const size_t planes = r.whole_row_planes() ? 1 : r.depth;
  const size_t depth = r.whole_row_planes() ? r.depth : 1;
  const size_t dst_rows = depth > 1 ? r.dst_slice / r.dst_row : r.height;
  const size_t src_rows = depth > 1 ? r.src_slice / r.src_row : r.height;
  for (size_t z = 0; z < planes; ++z) {
    char* d = r.dst + z * r.dst_slice;
    const char* s = r.src + z * r.src_slice;
    if (cross) {
      cudaMemcpy3DPeerParms parms = {};
      parms.dstPtr = pitched(d, r.dst_row, r.width, dst_rows);
      parms.srcPtr = pitched(s, r.src_row, r.width, src_rows);
      parms.dstDevice = env.dst_gpu;
      parms.srcDevice = env.src_gpu;
      parms.extent = make_cudaExtent(r.width, r.height, depth);
      BBMM_CUDA(cudaMemcpy3DPeerAsync(&parms, stream));
    } else if (depth == 1) {
      BBMM_CUDA(cudaMemcpy2DAsync(d, r.dst_row, s, r.src_row, r.width, r.height, kind, stream));
    } else {
      cudaMemcpy3DParms parms = {};
      parms.dstPtr = pitched(d, r.dst_row, r.width, dst_rows);
      parms.srcPtr = pitched(s, r.src_row, r.width, src_rows);
      parms.extent = make_cudaExtent(r.width, r.height, depth);
      parms.kind = kind;
      BBMM_CUDA(cudaMemcpy3DAsync(&parms, stream));
    }
  }
  return absl::OkStatus();
}

// The batch-call form of `r` (expressible: whole_row_planes()).
cudaMemcpy3DBatchOp batch_api_op(const Rect& r) {
  cudaMemcpy3DBatchOp b = {};
  b.src.type = cudaMemcpyOperandTypePointer;
  b.src.op.ptr.ptr = const_cast<char*>(r.src);
  b.dst.type = cudaMemcpyOperandTypePointer;
  b.dst.op.ptr.ptr = r.dst;
  // Element size 1 for pointer operands: lengths are in bytes and rows. Zero
  // means "tightly packed", which is what a single row or plane is.
  if (r.height > 1) {
    b.src.op.ptr.rowLength = r.src_row;
    b.dst.op.ptr.rowLength = r.dst_row;
  }
  if (r.depth > 1) {
    b.src.op.ptr.layerHeight = r.src_slice / r.src_row;
    b.dst.op.ptr.layerHeight = r.dst_slice / r.dst_row;
  }
  b.extent = make_cudaExtent(r.width, r.height, r.depth);
  // Stream order: the sources may be written by work the stream waited for.
  b.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  b.flags = cudaMemcpyFlagDefault;
  return b;
}

}  // namespace

const char* copy_trace_name(CopyDir dir) {
  switch (dir) {
    case CopyDir::kH2D: return "copy H2D";
    case CopyDir::kD2H: return "copy D2H";
    case CopyDir::kD2D: return "copy D2D";
    default: return "copy peer";
  }
}

absl::Status check_copy(const Endpoint& dst, const Endpoint& src, const CopyShape& shape,
                        const char* what, long index) {
  auto fail = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        index >= 0 ? absl::StrCat(what, ": op ", index, ": ", why) : absl::StrCat(what, ": ", why));
  };
  if (dst.device == kHost && src.device == kHost) {
    return fail("host-to-host copies are not device work");
  }
  if (dst.base == nullptr || src.base == nullptr) {
    return fail(absl::StrCat(dst.base == nullptr ? "destination" : "source", " base is null"));
  }
  if (shape.width_bytes == 0 || shape.height == 0 || shape.depth == 0) return absl::OkStatus();
  const Endpoint* sides[2] = {&dst, &src};
  for (const Endpoint* ep : sides) {
    const char* side = ep == &dst ? "destination" : "source";
    if (shape.height > 1 && ep->row_pitch < shape.width_bytes) {
      return fail(absl::StrCat("the ", side, " row pitch ", ep->row_pitch,
                               " is smaller than the row width ", shape.width_bytes));
    }
    if (shape.depth > 1) {
      const size_t rows = shape.height > 1 ? ep->row_pitch : shape.width_bytes;
      if (shape.height - 1 > (std::numeric_limits<size_t>::max() - shape.width_bytes) / rows ||
          ep->slice_pitch < rows * (shape.height - 1) + shape.width_bytes) {
        return fail(absl::StrCat("the ", side, " plane pitch ", ep->slice_pitch,
                                 " makes the planes of a ", shape.width_bytes, "x", shape.height,
                                 " rectangle overlap"));
      }
    }
  }
  return absl::OkStatus();
}

std::pair<uintptr_t, uintptr_t> host_span(const Endpoint& ep, const CopyShape& shape) {
  const uintptr_t first = reinterpret_cast<uintptr_t>(ep.base) + ep.offset;
  const size_t rows = shape.height > 1 ? (shape.height - 1) * ep.row_pitch : 0;
  const size_t planes = shape.depth > 1 ? (shape.depth - 1) * ep.slice_pitch : 0;
  return {first, first + planes + rows + shape.width_bytes};
}

void split_copy_at(const CopyOp& op, bool host_is_dst, std::span<const uintptr_t> cuts,
                   std::vector<CopyOp>* out) {
  const Endpoint& host = host_is_dst ? op.dst : op.src;
  const size_t w = op.shape.width_bytes, h = op.shape.height, d = op.shape.depth;
  const uintptr_t first = reinterpret_cast<uintptr_t>(host.base) + host.offset;
  // The piece of `op` at plane z, row y, byte x: `rows` rows of `width`.
  auto piece = [&](size_t z, size_t y, size_t x, size_t width, size_t rows) {
    CopyOp p = op;
    p.dst.offset += z * op.dst.slice_pitch + y * op.dst.row_pitch + x;
    p.src.offset += z * op.src.slice_pitch + y * op.src.row_pitch + x;
    p.shape = CopyShape{width, rows, 1};
    out->push_back(p);
  };
  for (size_t z = 0; z < d; ++z) {
    for (size_t y = 0; y < h;) {
      const uintptr_t row = first + (d > 1 ? z * host.slice_pitch : 0) +
                            (h > 1 ? y * host.row_pitch : 0);
      auto next = std::upper_bound(cuts.begin(), cuts.end(), row);
      const uintptr_t limit =
          next == cuts.end() ? std::numeric_limits<uintptr_t>::max() : *next;
      if (row + w <= limit) {
        // Rows y, y+1, ... that end before the next cut: one 2-D piece
        // (row pitch >= w when h > 1, so the count is well defined).
        size_t k = 1;
        if (h > 1 && y + 1 < h) {
          k = std::min<size_t>(h - y, (limit - row - w) / host.row_pitch + 1);
        }
        piece(z, y, 0, w, k);
        y += k;
        continue;
      }
      // Row y crosses one or more cuts: one 1-D piece between each two.
      size_t x = 0;
      for (auto c = next; c != cuts.end() && *c < row + w; ++c) {
        piece(z, y, x, *c - row - x, 1);
        x = *c - row;
      }
      piece(z, y, x, w - x, 1);
      ++y;
    }
  }
}

absl::Status issue_copy(const CopyOp& op, CopyDir dir, const CopyEnv& env, cudaStream_t stream) {
  return issue_rect(canonical(op), dir, env, stream);
}

absl::Status issue_copy_batch(std::span<const CopyOp> ops, CopyDir dir, const CopyEnv& env,
                              cudaStream_t stream, BatchScratch& scratch, BatchPaths* paths) {
  *paths = BatchPaths{};
  scratch.api.clear();
  scratch.api_ops.clear();
  scratch.kernel.clear();
  scratch.rest.clear();
  const bool api_allowed =
      env.batch_api && env.batch_api_rejections != nullptr &&
      env.batch_api_rejections->load(std::memory_order_relaxed) < kBatchApiMaxRejections &&
      (dir != CopyDir::kPeer || env.batch_api_peer) &&
      (env.batch_api_host || (dir != CopyDir::kH2D && dir != CopyDir::kD2H));
  // Small host boxes by the zero-copy kernel when there are enough of them.
  const bool host_dir = dir == CopyDir::kH2D || dir == CopyDir::kD2H;
  size_t small_host = 0;
  if (host_dir && env.host_kernel_max_box > 0 && env.pinner != nullptr) {
    for (const CopyOp& op : ops) {
      if (op.shape.width_bytes * op.shape.height * op.shape.depth < env.host_kernel_max_box) {
        ++small_host;
      }
    }
  }
  auto zero_copy = [&](const CopyOp& op, const Rect& r) {
    if (small_host < kHostKernelMinOps || r.bytes() >= env.host_kernel_max_box) return false;
    const auto [begin, end] = host_span(dir == CopyDir::kD2H ? op.dst : op.src, op.shape);
    return env.pinner->covers(begin, end);
  };
  for (const CopyOp& op : ops) {
    const Rect r = canonical(op);
    if (r.empty()) continue;
    if (use_kernel(r, dir, env) || zero_copy(op, r)) {
      scratch.kernel.push_back(kernel_op(r));
    } else if (api_allowed && r.whole_row_planes()) {
      scratch.api.push_back(batch_api_op(r));
      scratch.api_ops.push_back(&op);
    } else {
      scratch.rest.push_back(&op);
    }
  }
  if (!scratch.kernel.empty()) {
    BBMM_CUDA(launch_copy_kernel_batch(scratch.kernel.data(), scratch.kernel.size(), stream));
    paths->kernel = scratch.kernel.size();
  }
  // One op gains nothing from the batch call: issue it directly.
  if (scratch.api.size() == 1) {
    scratch.rest.push_back(scratch.api_ops[0]);
    scratch.api.clear();
  }
  for (size_t first = 0; first < scratch.api.size(); first += kBatchApiMaxOps) {
    const size_t n = std::min(kBatchApiMaxOps, scratch.api.size() - first);
    const cudaError_t e = cudaMemcpy3DBatchAsync(n, scratch.api.data() + first, 0, stream);
    if (e == cudaSuccess) {
      paths->batch_api += n;
      env.batch_api_rejections->store(0, std::memory_order_relaxed);
      continue;
    }
    if (e != cudaErrorInvalidValue && e != cudaErrorNotSupported) {
      return cuda_status("cudaMemcpy3DBatchAsync", e, __FILE__, __LINE__);
    }
    // CUDA rejects this combination (the call enqueues nothing then): the
    // rest of the batch goes one by one.
    (void)cudaGetLastError();
    env.batch_api_rejections->fetch_add(1, std::memory_order_relaxed);
    for (size_t k = first; k < scratch.api.size(); ++k) scratch.rest.push_back(scratch.api_ops[k]);
    break;
  }
  for (const CopyOp* op : scratch.rest) {
    absl::Status s = issue_copy(*op, dir, env, stream);
    if (!s.ok()) return s;
    ++paths->single;
  }
  return absl::OkStatus();
}

}  // namespace bbmm
