#include "api/warm_up.h"

#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#ifdef BBMM_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace bbmm::detail {
namespace {

// The warm-up thread; joined by finish_warm_up, or at exit by the destructor
// (a function-local static made at the first warm-up, so destroyed before
// what existed earlier, the CUDA runtime's own state included).
struct WarmUp {
  std::mutex mu;
  std::thread thread;
  ~WarmUp() {
    std::lock_guard<std::mutex> lock(mu);
    if (thread.joinable()) thread.join();
  }
};

WarmUp& state() {
  static WarmUp w;
  return w;
}

}  // namespace

absl::Status start_warm_up(const RuntimeOptions& options) {
#ifdef BBMM_HAVE_CUDA
  if (options.backend != BBMM_BACKEND_CUDA && options.backend != BBMM_BACKEND_AUTO) {
    return absl::OkStatus();
  }
  WarmUp& w = state();
  std::lock_guard<std::mutex> lock(w.mu);
  if (w.thread.joinable()) return absl::OkStatus();
  // The environment is set here, on the calling thread, not beside it.
  cuda_prepare_environment();
  int devices = options.devices;
  if (options.cuda_devices_per_gpu > 1 && devices > 0) {
    devices = (devices + options.cuda_devices_per_gpu - 1) / options.cuda_devices_per_gpu;
  }
  try {
    w.thread = std::thread([devices] { (void)cuda_warm_up(devices); });
  } catch (const std::exception& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("warm_up: cannot start a thread: ", e.what()));
  }
#else
  (void)options;
#endif
  return absl::OkStatus();
}

double finish_warm_up() {
#ifdef BBMM_HAVE_CUDA
  WarmUp& w = state();
  std::lock_guard<std::mutex> lock(w.mu);
  if (!w.thread.joinable()) return 0;
  const auto start = std::chrono::steady_clock::now();
  w.thread.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
#else
  return 0;
#endif
}

}  // namespace bbmm::detail
