#include "cuda/cuda_streams.h"

#include "absl/strings/str_cat.h"
#include "cuda/cuda_status.h"

namespace bbmm {
namespace {

// Creates `slot` at `priority` and names it; its key is `base` + `index`.
absl::Status make_slot(StreamSlot& slot, std::string name, int priority, StreamKey base,
                       int index) {
  BBMM_CUDA(cudaStreamCreateWithPriority(&slot.stream, cudaStreamNonBlocking, priority));
  slot.key = base + static_cast<StreamKey>(index);
  slot.name = std::move(name);
  return absl::OkStatus();
}

// Frees what make_lane made of `lane` (after its streams are idle).
void free_lane(StagingLane& lane) {
  if (lane.stream != nullptr) {
    (void)cudaStreamSynchronize(lane.stream);
    (void)cudaStreamDestroy(lane.stream);
  }
  if (lane.start != nullptr) (void)cudaEventDestroy(lane.start);
  for (int b = 0; b < kStagingSlots; ++b) {
    if (lane.moved[b] != nullptr) (void)cudaEventDestroy(lane.moved[b]);
    if (lane.staged[b] != nullptr) (void)cudaEventDestroy(lane.staged[b]);
  }
  if (lane.buffer[0] != nullptr) (void)cudaFreeHost(lane.buffer[0]);
  lane = StagingLane();
}

// The staging lane of copy stream `name`: one pinned allocation cut into the
// buffers of `buffer_bytes` each, the lane's stream and its events.
absl::Status make_lane(StagingLane& lane, absl::string_view name, size_t buffer_bytes) {
  const size_t bytes = kStagingSlots * buffer_bytes;
  void* p = nullptr;
  // Mapped, as registered arrays are: small boxes of a batch may be moved
  // by the copy kernel through the host pointer.
  cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable | cudaHostAllocMapped);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    const absl::Status fs = cuda_status("cudaHostAlloc", e, __FILE__, __LINE__);
    return absl::Status(fs.code(), absl::StrCat("the staging buffers (", bytes,
                                                " bytes) of stream ", name,
                                                " for copies of pageable host memory: ",
                                                fs.message()));
  }
  for (int b = 0; b < kStagingSlots; ++b) {
    lane.buffer[b] = static_cast<char*>(p) + b * buffer_bytes;
  }
  lane.bytes = buffer_bytes;
  int least = 0, greatest = 0;
  BBMM_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  BBMM_CUDA(cudaStreamCreateWithPriority(&lane.stream, cudaStreamNonBlocking, greatest));
  BBMM_CUDA(cudaEventCreateWithFlags(&lane.start, cudaEventDisableTiming));
  for (int b = 0; b < kStagingSlots; ++b) {
    BBMM_CUDA(cudaEventCreateWithFlags(&lane.moved[b], cudaEventDisableTiming));
    BBMM_CUDA(cudaEventCreateWithFlags(&lane.staged[b], cudaEventDisableTiming));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DeviceStreams::create(uint32_t backend_id, int device, int gpu, int copies,
                                   size_t staging_buffer_bytes) {
  (void)gpu;  // the current device; streams are created on it
  created_ = true;
  staging_buffer_bytes_ = staging_buffer_bytes;
  int least = 0, greatest = 0;
  BBMM_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  // Keys: backend id, logical device, slot index; unique among backends
  // alive at once, so events of another backend are never mistaken for ours.
  const StreamKey base = (static_cast<StreamKey>(backend_id) << 40) |
                         (static_cast<StreamKey>(device) << 12);
  int index = 0;
  absl::Status s = make_slot(compute, "compute", least, base, index++);
  if (!s.ok()) return s;
  h2d.resize(copies);
  d2h.resize(copies);
  d2d.resize(copies);
  for (int k = 0; k < copies; ++k) {
    if (!(s = make_slot(h2d[k], absl::StrCat("h2d.", k), greatest, base, index++)).ok()) return s;
    if (!(s = make_slot(d2h[k], absl::StrCat("d2h.", k), greatest, base, index++)).ok()) return s;
    if (!(s = make_slot(d2d[k], absl::StrCat("d2d.", k), greatest, base, index++)).ok()) return s;
  }
  if (!(s = make_slot(memory, "memory", least, base, index++)).ok()) return s;
  if (!(s = make_slot(join, "join", least, base, index++)).ok()) return s;
  if (!(s = make_slot(trace, "trace", least, base, index++)).ok()) return s;
  work_.push_back(&compute);
  for (auto* group : {&h2d, &d2h, &d2d}) {
    for (StreamSlot& slot : *group) work_.push_back(&slot);
  }
  work_.push_back(&memory);
  return absl::OkStatus();
}

void DeviceStreams::destroy() {
  if (!created_) return;
  created_ = false;
  // Every slot, also those a failed create() did not reach (null streams).
  std::vector<StreamSlot*> all = {&compute, &memory, &join, &trace};
  for (auto* group : {&h2d, &d2h, &d2d}) {
    for (StreamSlot& slot : *group) all.push_back(&slot);
  }
  for (StreamSlot* slot : all) {
    if (slot->stream == nullptr) continue;
    (void)cudaStreamSynchronize(slot->stream);
    (void)cudaStreamDestroy(slot->stream);
    slot->stream = nullptr;
  }
  // After the synchronisation: no host function or copy uses them any more.
  for (StreamSlot* slot : all) free_lane(slot->lane);
  work_.clear();
}

absl::Status DeviceStreams::allocate_staging() {
  for (auto* group : {&h2d, &d2h}) {
    for (StreamSlot& slot : *group) {
      if (slot.lane.ready()) continue;
      absl::Status s = make_lane(slot.lane, slot.name, staging_buffer_bytes_);
      if (!s.ok()) {
        free_lane(slot.lane);
        return s;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status DeviceStreams::synchronize_all() {
  absl::Status first;
  for (StreamSlot* slot : work_) {
    const cudaError_t e = cudaStreamSynchronize(slot->stream);
    if (e != cudaSuccess && first.ok()) {
      first = cuda_status(absl::StrCat("cudaStreamSynchronize(", slot->name, ")").c_str(), e,
                          __FILE__, __LINE__);
    }
  }
  const cudaError_t e = cudaStreamSynchronize(join.stream);
  if (e != cudaSuccess && first.ok()) {
    first = cuda_status("cudaStreamSynchronize(join)", e, __FILE__, __LINE__);
  }
  return first;
}

}  // namespace bbmm
