#include "cuda/cuda_trace.h"

#include <cmath>
#include <utility>

#include "core/trace.h"
#include "cuda/cuda_status.h"

namespace bbmm {

DeviceTrace::~DeviceTrace() {
  for (TraceRecord& r : pending_) release(r);
}

void DeviceTrace::release(TraceRecord& r) {
  if (r.start != nullptr) gpu_->timing.put(r.start);
  if (r.end != nullptr) gpu_->timing.put(r.end);
  r.start = r.end = nullptr;
}

absl::Status DeviceTrace::take_reference(Tracer* tracer, cudaStream_t stream) {
  cudaEvent_t ev;
  BBMM_CUDA(gpu_->timing.get(&ev));
  const int64_t before = tracer->now_us();
  cudaError_t e = cudaEventRecord(ev, stream);
  if (e == cudaSuccess) e = cudaEventSynchronize(ev);
  const int64_t after = tracer->now_us();
  if (e != cudaSuccess) {
    gpu_->timing.put(ev);
    return cuda_status("cudaEventRecord/cudaEventSynchronize (trace reference)", e, __FILE__,
                       __LINE__);
  }
  auto ref = std::make_shared<const TimingRef>(gpu_, ev, before + (after - before) / 2);
  std::lock_guard<std::mutex> lock(mu_);
  ref_ = std::move(ref);
  return absl::OkStatus();
}

std::shared_ptr<const TimingRef> DeviceTrace::reference() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ref_;
}

int64_t DeviceTrace::reference_age_us(Tracer* tracer) const {
  std::lock_guard<std::mutex> lock(mu_);
  return ref_ == nullptr ? 0 : tracer->now_us() - ref_->host_us;
}

void DeviceTrace::clear_reference() {
  std::lock_guard<std::mutex> lock(mu_);
  ref_.reset();
}

cudaError_t DeviceTrace::stamp(cudaStream_t stream, cudaEvent_t* ev) {
  cudaError_t e = gpu_->timing.get(ev);
  if (e != cudaSuccess) return e;
  e = cudaEventRecord(*ev, stream);
  if (e != cudaSuccess) {
    gpu_->timing.put(*ev);
    *ev = nullptr;
  }
  return e;
}

void DeviceTrace::add(TraceRecord r) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.push_back(std::move(r));
}

size_t DeviceTrace::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

void DeviceTrace::flush(bool drop_incomplete) {
  std::vector<TraceRecord> records;
  {
    std::lock_guard<std::mutex> lock(mu_);
    records.swap(pending_);
  }
  std::vector<TraceRecord> keep;
  for (TraceRecord& r : records) {
    const cudaError_t q = cudaEventQuery(r.end);
    if (q == cudaErrorNotReady) {
      if (drop_incomplete) {
        release(r);
      } else {
        keep.push_back(std::move(r));
      }
      continue;
    }
    float from_ref_ms = 0, duration_ms = 0;
    if (q != cudaSuccess ||
        cudaEventElapsedTime(&from_ref_ms, r.ref->event, r.start) != cudaSuccess ||
        cudaEventElapsedTime(&duration_ms, r.start, r.end) != cudaSuccess) {
      // A faulted device: no timing to report (the fault is reported by the
      // operations' events and synchronize()).
      (void)cudaGetLastError();
      release(r);
      continue;
    }
    const int64_t start = r.ref->host_us + std::llround(from_ref_ms * 1000.0);
    r.tracer->slice(device_, r.name, start, std::llround(duration_ms * 1000.0), r.args);
    release(r);
  }
  if (keep.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  // Records added meanwhile go after the kept ones.
  keep.insert(keep.end(), std::make_move_iterator(pending_.begin()),
              std::make_move_iterator(pending_.end()));
  pending_.swap(keep);
}

}  // namespace bbmm
