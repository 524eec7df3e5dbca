// A host-only fake of the part of the CUDA runtime API that the CUDA backend
// uses, so that cuda_backend_test's checks of the backend's own logic (issue
// workers, events usable before they are issued, cross-stream ordering,
// record(), teardown, copy choice and splitting, tracing) also run in CI,
// which has no GPU. It models what that logic relies on:
// - a stream is a FIFO run by its own thread (with random short delays, to
//   expose missing orderings); nothing orders two streams but events;
// - cudaEventRecord starts a new recording; cudaStreamWaitEvent waits for
//   the recording current at the call (a no-op when never recorded); an
//   event may only be recorded on a stream of its own device;
// - cudaMallocAsync may hand out a block freed earlier on the same stream
//   (stream order), and a freed block is poisoned (0xDD) when its free runs;
// - a host operand spanning two registrations, or registered and
//   unregistered bytes, is cudaErrorInvalidValue;
// - "kernels" (copy kernels, test kernels) are host closures on the stream.
// It is no substitute for running cuda_backend_test on a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda/copy_kernel.h"

struct Recording {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::chrono::steady_clock::time_point at;
  void complete() {
    std::lock_guard<std::mutex> l(mu);
    done = true;
    at = std::chrono::steady_clock::now();
    cv.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return done; });
  }
};

struct CUevent_st {
  std::mutex mu;
  std::shared_ptr<Recording> current;
  int device;
};

struct CUstream_st {
  int device;
  std::mutex mu;
  std::condition_variable cv, idle_cv;
  std::deque<std::function<void()>> q;
  bool busy = false, stop = false;
  std::thread th;
  std::vector<std::pair<void*, size_t>> freed;  // reusable in stream order
  void run() {
    for (;;) {
      std::function<void()> f;
      {
        std::unique_lock<std::mutex> l(mu);
        cv.wait(l, [&] { return stop || !q.empty(); });
        if (q.empty()) return;
        f = std::move(q.front());
        q.pop_front();
        busy = true;
      }
      // Random small delays shake out missing orderings.
      if (std::rand() % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(std::rand() % 200));
      f();
      {
        std::lock_guard<std::mutex> l(mu);
        busy = false;
        if (q.empty()) idle_cv.notify_all();
      }
    }
  }
  void push(std::function<void()> f) {
    std::lock_guard<std::mutex> l(mu);
    q.push_back(std::move(f));
    cv.notify_one();
  }
  void sync() {
    std::unique_lock<std::mutex> l(mu);
    idle_cv.wait(l, [&] { return q.empty() && !busy; });
  }
};

// A pool's accounting (no memory of its own: blocks come from malloc): what
// cudaMemPoolGetAttribute reports and the pool grower reads. A block counts
// as used from its allocation to its free call; an allocation that finds
// fewer free bytes than it asks for grows `reserved` (as a pool maps a new
// chunk), counted per thread (fake_cuda_pool_growths_on_this_thread).
struct CUmemPoolHandle_st {
  int device;
  std::mutex mu;
  uint64_t reserved = 0, used = 0;
};

namespace {
int device_count() {
  const char* e = std::getenv("BBMM_FAKE_CUDA_DEVICES");
  return e ? std::atoi(e) : 2;
}
thread_local int tls_device = 0;
thread_local cudaError_t tls_error = cudaSuccess;
CUmemPoolHandle_st pools[16];
thread_local uint64_t tls_pool_growths = 0;
// cudaPointerGetAttributes calls made by the calling thread.
thread_local uint64_t tls_pointer_queries = 0;
// cudaEventCreateWithFlags and cudaEventRecord calls made by the calling thread.
thread_local uint64_t tls_event_calls = 0;
// cudaEventQuery calls made by the calling thread.
thread_local uint64_t tls_event_queries = 0;
std::atomic<int> copy_delay_us{0};     // fake_cuda_set_copy_delay_us
std::atomic<uint64_t> host_fn_calls{0};  // fake_cuda_host_fn_calls
std::atomic<int> host_fn_delay_us{0};  // fake_cuda_set_host_fn_delay_us
void delay_copy() {
  const int us = copy_delay_us.load();
  if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
}

// Accounts an allocation of `n` bytes in `pool`.
void pool_take(CUmemPoolHandle_st& pool, size_t n) {
  std::lock_guard<std::mutex> l(pool.mu);
  if (pool.reserved - pool.used < n) {
    pool.reserved = pool.used + n;
    ++tls_pool_growths;
  }
  pool.used += n;
}
void pool_give(CUmemPoolHandle_st& pool, size_t n) {
  std::lock_guard<std::mutex> l(pool.mu);
  pool.used -= std::min<uint64_t>(n, pool.used);
}

std::mutex reg_mu;
std::map<uintptr_t, size_t> registered;  // begin -> bytes (host registered or hostalloc)
std::map<uintptr_t, size_t> host_allocs;  // begin -> bytes (cudaHostAlloc only)

cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess) tls_error = e;
  return e;
}

void copy3d(char* d, size_t dp, size_t ds, const char* s, size_t sp, size_t ss, size_t w, size_t h,
            size_t depth) {
  for (size_t z = 0; z < depth; ++z)
    for (size_t y = 0; y < h; ++y) std::memmove(d + z * ds + y * dp, s + z * ss + y * sp, w);
}
}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* n) {
  *n = device_count();
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* d) {
  *d = tls_device;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) {
  if (d < 0 || d >= device_count()) return ret(cudaErrorInvalidDevice);
  tls_device = d;
  return cudaSuccess;
}
cudaError_t cudaGetLastError() {
  cudaError_t e = tls_error;
  tls_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return tls_error; }
const char* cudaGetErrorName(cudaError_t e) {
  static thread_local char buf[64];
  std::snprintf(buf, sizeof buf, "cudaError%d", static_cast<int>(e));
  if (e == cudaErrorInvalidConfiguration) return "cudaErrorInvalidConfiguration";
  return buf;
}
const char* cudaGetErrorString(cudaError_t) { return "fake error"; }

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  *least = 0;
  *greatest = -5;
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int, int) {
  auto* st = new CUstream_st();
  st->device = tls_device;
  st->th = std::thread([st] { st->run(); });
  *s = st;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  {
    std::lock_guard<std::mutex> l(s->mu);
    s->stop = true;
    s->cv.notify_all();
  }
  s->th.join();
  for (auto& [p, n] : s->freed) std::free(p);
  delete s;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  s->sync();
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) {
  ++tls_event_calls;
  auto* ev = new CUevent_st();
  ev->device = tls_device;
  *e = ev;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  ++tls_event_calls;
  if (e->device != s->device) {
    std::fprintf(stderr, "FAKE: event of device %d recorded on a stream of device %d\n", e->device,
                 s->device);
    std::abort();
  }
  auto rec = std::make_shared<Recording>();
  {
    std::lock_guard<std::mutex> l(e->mu);
    e->current = rec;
  }
  s->push([rec] { rec->complete(); });
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  std::shared_ptr<Recording> rec;
  {
    std::lock_guard<std::mutex> l(e->mu);
    rec = e->current;
  }
  if (rec) s->push([rec] { rec->wait(); });
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  ++tls_event_queries;
  std::shared_ptr<Recording> rec;
  {
    std::lock_guard<std::mutex> l(e->mu);
    rec = e->current;
  }
  if (!rec) return cudaSuccess;
  std::lock_guard<std::mutex> l(rec->mu);
  return rec->done ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  std::shared_ptr<Recording> rec;
  {
    std::lock_guard<std::mutex> l(e->mu);
    rec = e->current;
  }
  if (rec) rec->wait();
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  std::shared_ptr<Recording> ra, rb;
  {
    std::lock_guard<std::mutex> l(a->mu);
    ra = a->current;
  }
  {
    std::lock_guard<std::mutex> l(b->mu);
    rb = b->current;
  }
  if (!ra || !rb) return ret(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> la(ra->mu);
  if (!ra->done) return ret(cudaErrorNotReady);
  std::lock_guard<std::mutex> lb(rb->mu);
  if (!rb->done) return ret(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(rb->at - ra->at).count();
  return cudaSuccess;
}

std::mutex size_mu;
std::map<void*, size_t> dev_sizes;
// cudaMallocFromPoolAsync's blocks (bytes, pool), at addresses no malloc
// returns.
std::map<void*, std::pair<size_t, CUmemPoolHandle_st*>> phantoms;
uintptr_t next_phantom = uintptr_t{0x7e0000000000};

// CUDA's rule for a host operand: its bytes lie in one registration or in
// none (a region spanning two registrations is cudaErrorInvalidValue).
bool host_span_ok(const void* p, size_t n) {
  if (n == 0) return true;
  {
    std::lock_guard<std::mutex> l(size_mu);
    auto it = dev_sizes.upper_bound(const_cast<void*>(p));
    if (it != dev_sizes.begin()) {
      auto prev = std::prev(it);
      if ((uintptr_t)prev->first + prev->second > (uintptr_t)p) return true;  // device memory
    }
  }
  std::lock_guard<std::mutex> l(reg_mu);
  const uintptr_t b = (uintptr_t)p, e = b + n;
  auto it = registered.upper_bound(b);
  if (it != registered.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second > b) return e <= prev->first + prev->second;
  }
  return it == registered.end() || it->first >= e;
}
#define CHECK_SPAN(p, n) if (!host_span_ok((p), (n))) { std::fprintf(stderr, "FAKE: copy spans registrations at %p+%zu\n", (const void*)(p), (size_t)(n)); return ret(cudaErrorInvalidValue); }

cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t s) {
  pool_take(pools[s->device], n);
  {
    std::lock_guard<std::mutex> l(s->mu);
    for (size_t i = 0; i < s->freed.size(); ++i) {
      if (s->freed[i].second == n) {
        *p = s->freed[i].first;  // reuse in stream order, as CUDA may
        s->freed.erase(s->freed.begin() + i);
        std::lock_guard<std::mutex> l2(size_mu);
        dev_sizes[*p] = n;
        return cudaSuccess;
      }
    }
  }
  *p = std::malloc(n);
  std::memset(*p, 0xEE, n);
  std::lock_guard<std::mutex> l2(size_mu);
  dev_sizes[*p] = n;
  return cudaSuccess;
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  size_t n;
  {
    std::lock_guard<std::mutex> l(size_mu);
    if (auto it = phantoms.find(p); it != phantoms.end()) {
      pool_give(*it->second.second, it->second.first);
      phantoms.erase(it);
      return cudaSuccess;
    }
  }
  {
    std::lock_guard<std::mutex> l2(size_mu);
    auto it = dev_sizes.find(p);
    if (it == dev_sizes.end()) {
      std::fprintf(stderr, "FAKE: cudaFreeAsync of unknown %p\n", p);
      std::abort();
    }
    n = it->second;
    dev_sizes.erase(it);
  }
  pool_give(pools[s->device], n);
  // Stream-ordered: poisoned when the free executes; reusable by later
  // allocations on `s` at once (their work comes after it in stream order).
  s->push([p, n] { std::memset(p, 0xDD, n); });
  std::lock_guard<std::mutex> l(s->mu);
  s->freed.emplace_back(p, n);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* d, const void* src, size_t n, cudaMemcpyKind, cudaStream_t s) {
  CHECK_SPAN(d, n) CHECK_SPAN(src, n)
  s->push([=] {
    delay_copy();
    std::memmove(d, src, n);
  });
  return cudaSuccess;
}
cudaError_t cudaMemcpyPeerAsync(void* d, int, const void* src, int, size_t n, cudaStream_t s) {
  s->push([=] { std::memmove(d, src, n); });
  return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void* d, size_t dp, const void* src, size_t sp, size_t w, size_t h,
                              cudaMemcpyKind, cudaStream_t s) {
  if (w > dp || w > sp) return ret(cudaErrorInvalidValue);
  CHECK_SPAN(d, (h - 1) * dp + w) CHECK_SPAN(src, (h - 1) * sp + w)
  s->push([=] {
    delay_copy();
    copy3d((char*)d, dp, 0, (const char*)src, sp, 0, w, h, 1);
  });
  return cudaSuccess;
}
cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms* p, cudaStream_t s) {
  const cudaMemcpy3DParms q = *p;
  CHECK_SPAN(q.dstPtr.ptr, (q.extent.depth - 1) * q.dstPtr.pitch * q.dstPtr.ysize + (q.extent.height - 1) * q.dstPtr.pitch + q.extent.width)
  CHECK_SPAN(q.srcPtr.ptr, (q.extent.depth - 1) * q.srcPtr.pitch * q.srcPtr.ysize + (q.extent.height - 1) * q.srcPtr.pitch + q.extent.width)
  s->push([q] {
    delay_copy();
    copy3d((char*)q.dstPtr.ptr, q.dstPtr.pitch, q.dstPtr.pitch * q.dstPtr.ysize,
           (const char*)q.srcPtr.ptr, q.srcPtr.pitch, q.srcPtr.pitch * q.srcPtr.ysize,
           q.extent.width, q.extent.height, q.extent.depth);
  });
  return cudaSuccess;
}
cudaError_t cudaMemcpy3DPeerAsync(const cudaMemcpy3DPeerParms* p, cudaStream_t s) {
  const cudaMemcpy3DPeerParms q = *p;
  s->push([q] {
    delay_copy();
    copy3d((char*)q.dstPtr.ptr, q.dstPtr.pitch, q.dstPtr.pitch * q.dstPtr.ysize,
           (const char*)q.srcPtr.ptr, q.srcPtr.pitch, q.srcPtr.pitch * q.srcPtr.ysize,
           q.extent.width, q.extent.height, q.extent.depth);
  });
  return cudaSuccess;
}
cudaError_t cudaMemcpy3DBatchAsync(size_t n, cudaMemcpy3DBatchOp* ops, unsigned long long,
                                   cudaStream_t s) {
  std::vector<cudaMemcpy3DBatchOp> v(ops, ops + n);
  for (auto& o : v) {
    if (o.extent.width == 0 || o.extent.height == 0 || o.extent.depth == 0) return ret(cudaErrorInvalidValue);
    if (o.srcAccessOrder != cudaMemcpySrcAccessOrderStream) return ret(cudaErrorInvalidValue);
    const size_t w = o.extent.width, h = o.extent.height, d = o.extent.depth;
    const size_t sr = o.src.op.ptr.rowLength ? o.src.op.ptr.rowLength : w;
    const size_t dr = o.dst.op.ptr.rowLength ? o.dst.op.ptr.rowLength : w;
    const size_t sl = (o.src.op.ptr.layerHeight ? o.src.op.ptr.layerHeight : h) * sr;
    const size_t dl = (o.dst.op.ptr.layerHeight ? o.dst.op.ptr.layerHeight : h) * dr;
    CHECK_SPAN(o.src.op.ptr.ptr, (d - 1) * sl + (h - 1) * sr + w)
    CHECK_SPAN(o.dst.op.ptr.ptr, (d - 1) * dl + (h - 1) * dr + w)
  }
  s->push([v] {
    delay_copy();
    for (const auto& o : v) {
      const size_t w = o.extent.width, h = o.extent.height, d = o.extent.depth;
      const size_t sr = o.src.op.ptr.rowLength ? o.src.op.ptr.rowLength : w;
      const size_t dr = o.dst.op.ptr.rowLength ? o.dst.op.ptr.rowLength : w;
      const size_t sl = (o.src.op.ptr.layerHeight ? o.src.op.ptr.layerHeight : h) * sr;
      const size_t dl = (o.dst.op.ptr.layerHeight ? o.dst.op.ptr.layerHeight : h) * dr;
      copy3d((char*)o.dst.op.ptr.ptr, dr, dl, (const char*)o.src.op.ptr.ptr, sr, sl, w, h, d);
    }
  });
  return cudaSuccess;
}
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  host_fn_calls.fetch_add(1, std::memory_order_relaxed);
  s->push([fn, data] {
    const int us = host_fn_delay_us.load();
    if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
    fn(data);
  });
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s) {
  s->push([=] { std::memset(p, v, n); });
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* can, int, int) {
  *can = 1;
  return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int, unsigned int) { return cudaSuccess; }
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr, int) {
  *v = 1;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int d) {
  pools[d].device = d;
  *pool = &pools[d];
  return cudaSuccess;
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void*) { return cudaSuccess; }
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr a, void* v) {
  std::lock_guard<std::mutex> l(pool->mu);
  switch (a) {
    case cudaMemPoolAttrReservedMemCurrent: *static_cast<uint64_t*>(v) = pool->reserved; return cudaSuccess;
    case cudaMemPoolAttrUsedMemCurrent: *static_cast<uint64_t*>(v) = pool->used; return cudaSuccess;
    default: return ret(cudaErrorInvalidValue);
  }
}
// Only the pool grower calls it, to grow the pool: accounting only, the block
// has no memory behind it (nobody may touch it: a copy to it is an error).
cudaError_t cudaMallocFromPoolAsync(void** p, size_t n, cudaMemPool_t pool, cudaStream_t s) {
  if (pool->device != s->device) return ret(cudaErrorInvalidValue);
  pool_take(*pool, n);
  std::lock_guard<std::mutex> l(size_mu);
  *p = reinterpret_cast<void*>(next_phantom);
  next_phantom += (n + 4095) / 4096 * 4096 + 4096;
  phantoms[*p] = {n, pool};
  return cudaSuccess;
}
// Makes every later host<->device or device copy (the cudaMemcpy*Async
// family) wait `us` microseconds on its stream before it moves bytes: a slow
// copy engine, for tests of what must not overtake a copy.
void fake_cuda_set_copy_delay_us(int us) { copy_delay_us.store(us); }
// Makes every later host function (cudaLaunchHostFunc) wait `us`
// microseconds on its stream before it runs.
void fake_cuda_set_host_fn_delay_us(int us) { host_fn_delay_us.store(us); }
// Host functions launched so far (cudaLaunchHostFunc), all streams.
uint64_t fake_cuda_host_fn_calls() { return host_fn_calls.load(); }
// Pool growths made by the calling thread's allocations (the fake's own
// counter, for tests of who grows the pools).
uint64_t fake_cuda_pool_growths_on_this_thread() { return tls_pool_growths; }
// Test hook: the cudaPointerGetAttributes calls of the calling thread.
uint64_t fake_cuda_pointer_queries_on_this_thread() { return tls_pointer_queries; }
// Test hook: the events the calling thread created or recorded.
uint64_t fake_cuda_event_calls_on_this_thread() { return tls_event_calls; }
// cudaEventQuery calls made by the calling thread (each one a driver call on a GPU).
uint64_t fake_cuda_event_queries_on_this_thread() { return tls_event_queries; }
cudaError_t cudaMemPoolSetAccess(cudaMemPool_t, const cudaMemAccessDesc*, size_t) { return cudaSuccess; }
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) {
  std::lock_guard<std::mutex> l(pool->mu);
  pool->reserved = std::max<uint64_t>(pool->used, std::min<uint64_t>(pool->reserved, keep));
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* f, size_t* t) {
  *f = size_t{8} << 30;
  *t = size_t{10} << 30;
  return cudaSuccess;
}

cudaError_t cudaHostRegister(void* p, size_t n, unsigned int) {
  std::lock_guard<std::mutex> l(reg_mu);
  const uintptr_t b = (uintptr_t)p, e = b + n;
  // As the driver does: memory from cudaHostAlloc cannot be registered ("invalid argument").
  for (const auto& [base, bytes] : host_allocs)
    if (b < base + bytes && base < e) return ret(cudaErrorInvalidValue);
  auto it = registered.upper_bound(b);
  if (it != registered.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second > b) return ret(cudaErrorHostMemoryAlreadyRegistered);
  }
  if (it != registered.end() && it->first < e) return ret(cudaErrorHostMemoryAlreadyRegistered);
  registered[b] = n;
  return cudaSuccess;
}
cudaError_t cudaHostUnregister(void* p) {
  std::lock_guard<std::mutex> l(reg_mu);
  if (registered.erase((uintptr_t)p) == 0) return ret(cudaErrorHostMemoryNotRegistered);
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned int) {
  *p = std::malloc(n);
  std::lock_guard<std::mutex> l(reg_mu);
  registered[(uintptr_t)*p] = n;
  host_allocs[(uintptr_t)*p] = n;
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void* p) {
  {
    std::lock_guard<std::mutex> l(reg_mu);
    registered.erase((uintptr_t)p);
    host_allocs.erase((uintptr_t)p);
  }
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  ++tls_pointer_queries;
  std::lock_guard<std::mutex> l(reg_mu);
  *a = {};
  a->type = cudaMemoryTypeUnregistered;
  const uintptr_t b = (uintptr_t)p;
  auto it = registered.upper_bound(b);
  if (it != registered.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second > b) a->type = cudaMemoryTypeHost;
  }
  return cudaSuccess;
}

}  // extern "C"

// ---- the copy kernels and the test kernels, as host closures on the stream
namespace bbmm {
cudaError_t launch_copy_kernel(char* dst, size_t dst_row, size_t dst_slice, const char* src,
                               size_t src_row, size_t src_slice, size_t width, size_t height,
                               size_t depth, cudaStream_t stream) {
  stream->push([=] { copy3d(dst, dst_row, dst_slice, src, src_row, src_slice, width, height, depth); });
  return cudaSuccess;
}
cudaError_t preload_copy_kernels() { return cudaSuccess; }  // nothing to load
cudaError_t launch_copy_kernel_batch(const CopyKernelOp* ops, size_t count, cudaStream_t stream) {
  std::vector<CopyKernelOp> v(ops, ops + count);
  stream->push([v] {
    for (const auto& o : v)
      copy3d(o.dst, o.dst_row, o.dst_slice, o.src, o.src_row, o.src_slice, o.width, o.height, o.depth);
  });
  return cudaSuccess;
}
namespace testing {
cudaError_t launch_add_bytes(void* p, size_t n, unsigned char v, cudaStream_t stream) {
  stream->push([=] {
    auto* c = static_cast<unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) c[i] = static_cast<unsigned char>(c[i] + v);
  });
  return cudaSuccess;
}
cudaError_t launch_spin_until(const int* flag, int* seen, cudaStream_t stream) {
  stream->push([=] {
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (seen) __atomic_store_n(seen, 1, __ATOMIC_RELEASE);
  });
  return cudaSuccess;
}
cudaError_t launch_invalid(cudaStream_t) {
  tls_error = cudaErrorInvalidConfiguration;
  return cudaErrorInvalidConfiguration;
}
}  // namespace testing
}  // namespace bbmm
