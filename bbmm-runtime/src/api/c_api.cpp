// The C API (bbmm/bbmm.h) over the C++ API. No exception crosses it.
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bbmm/bbmm.h"
#include "bbmm/runtime.h"
#include "api/c_api_internal.h"
#include "api/warm_up.h"
#include "core/array.h"
#include "core/runtime_core.h"

namespace bbmm::detail {
absl::StatusOr<std::unique_ptr<Transport>> default_transport(bool* global_tiles,
                                                             bool* gather_all);
// set_fatal_hook's hook (bbmm_fatal).
std::atomic<FatalHook> g_fatal_hook{nullptr};
}  // namespace bbmm::detail

struct bbmm_runtime {
  std::unique_ptr<bbmm::Runtime> rt;
  std::string trace_file;
};

namespace {

using bbmm::detail::TileState;

// A bbmm_tile* is the address of the tile's (64-byte aligned, recycled,
// never freed while the runtime lives) TileState with the low 6 bits of its
// generation in the low bits: a handle used after its release finds another
// generation there and is reported as stale. No allocation per tile.
constexpr uintptr_t kTagMask = 63;
static_assert(alignof(TileState) >= kTagMask + 1);

bbmm_tile* make_handle(TileState* t) {
  const uintptr_t tag = t->generation.load(std::memory_order_relaxed) & kTagMask;
  return reinterpret_cast<bbmm_tile*>(reinterpret_cast<uintptr_t>(t) | tag);
}

// The live TileState behind `h`, or an error naming `what`.
absl::StatusOr<TileState*> open_handle(bbmm_tile* h, const char* what) {
  if (h == nullptr) return absl::InvalidArgumentError(std::string(what) + ": null tile");
  const uintptr_t v = reinterpret_cast<uintptr_t>(h);
  TileState* t = reinterpret_cast<TileState*>(v & ~kTagMask);
  const uint32_t gen = t->generation.load(std::memory_order_relaxed);
  if ((gen & kTagMask) != (v & kTagMask)) {
    return absl::FailedPreconditionError(std::string(what) +
                                         ": stale tile handle (the tile was released)");
  }
  absl::Status s = t->core->check_handle(t, gen, what);
  if (!s.ok()) return s;
  return t;
}

// The copies of bbmm_tile_launch's argument blocks, recycled: a launch takes a
// block, its function gives it back after the kernel function returned (on the
// backend's thread), so that launching allocates nothing once warm and the
// function is small enough for std::function to hold without allocating
// (core/block_pool.h says why frees on another thread matter). A launch whose
// function never runs (its enqueue or an operation it waits for failed) keeps
// its block out of the free list (the pool still owns it). One pool for the
// process, never destroyed: a backend's thread may still run a function while
// the program exits. Each thread keeps a few blocks of its own and trades them
// with the pool kBatch at a time: taking and giving back one block a launch
// under the pool's lock moved the lock's and the list's cache lines between
// the calling thread and the issue worker on every launch (~0.3 us on an H200
// host, twenty-third session). The per-thread lists are plain arrays (no
// destructor: exit() destroys thread_local objects before the handlers that
// may still launch); the blocks of a thread that ends stay owned by the pool.
class LaunchArgs {
 public:
  static LaunchArgs* take(const void* args, size_t n) {
    Local& mine = local;
    if (mine.count == 0) {
      Pool& p = pool();
      std::lock_guard<std::mutex> lock(p.mu);
      while (mine.count < kBatch && !p.free.empty()) {
        mine.blocks[mine.count++] = p.free.back();
        p.free.pop_back();
      }
      if (mine.count == 0) {
        p.all.push_back(std::make_unique<LaunchArgs>());
        p.free.reserve(p.all.size());  // a give-back never allocates
        mine.blocks[mine.count++] = p.all.back().get();
      }
    }
    LaunchArgs* a = mine.blocks[--mine.count];
    const auto* b = static_cast<const unsigned char*>(args);
    a->bytes_.assign(b, b + n);  // reuses the block's capacity
    return a;
  }
  void* data() { return bytes_.empty() ? nullptr : bytes_.data(); }
  void give_back() {
    Local& mine = local;
    if (mine.count == kLocal) {
      Pool& p = pool();
      std::lock_guard<std::mutex> lock(p.mu);
      for (size_t k = 0; k < kBatch; ++k) p.free.push_back(mine.blocks[--mine.count]);
    }
    mine.blocks[mine.count++] = this;
  }

 private:
  static constexpr size_t kBatch = 32;
  static constexpr size_t kLocal = 2 * kBatch;
  struct Pool {
    std::mutex mu;
    std::vector<std::unique_ptr<LaunchArgs>> all;  // every block, taken or free
    std::vector<LaunchArgs*> free;
  };
  struct Local {
    LaunchArgs* blocks[kLocal];
    size_t count;
  };
  static Pool& pool() {
    static Pool* const p = new Pool;
    return *p;
  }
  static thread_local Local local;
  std::vector<unsigned char> bytes_;
};
thread_local LaunchArgs::Local LaunchArgs::local = {};

// The calling thread's last error message. A plain buffer, not a std::string: exit()
// destroys thread_local objects before it runs the atexit handlers, and a program's
// handler may still call the API (a generated program destroys its runtime there), so
// the storage must outlive every destructor. Longer messages are cut, ending in "...".
constexpr size_t kLastErrorSize = 4096;
thread_local char g_last_error[kLastErrorSize];

bbmm_status fail(bbmm_status code, std::string message) {
  if (message.size() >= kLastErrorSize) {
    message.resize(kLastErrorSize - 4);
    message += "...";
  }
  std::memcpy(g_last_error, message.c_str(), message.size() + 1);
  return code;
}

// `opts` filled from `o`, but for the trace file (a C string: the caller's).
void to_c_options(const bbmm::RuntimeOptions& o, bbmm_options* opts) {
  std::memset(opts, 0, sizeof(*opts));
  opts->backend = o.backend;
  opts->devices = o.devices;
  opts->device_memory = o.device_memory;
  opts->eviction_policy = o.eviction_policy;
  opts->growth_threshold = o.growth_threshold;
  opts->write_back = o.write_back;
  opts->check = o.check ? 1 : 0;
  opts->peer_access = o.peer_access ? 1 : 0;
  opts->host_poison = o.host_poison ? 1 : 0;
  opts->cuda_devices_per_gpu = o.cuda_devices_per_gpu;
  opts->cuda_copy_kernel = o.cuda_copy_kernel ? 1 : 0;
  opts->cuda_peer_copy_kernel = o.cuda_peer_copy_kernel ? 1 : 0;
  opts->cuda_peer_push = o.cuda_peer_push ? 1 : 0;
  opts->cuda_host_copies = o.cuda_host_copies;
  opts->cuda_copy_streams = o.cuda_copy_streams;
  opts->cuda_staging_threads = o.cuda_staging_threads;
  opts->merge_copies = o.merge_copies ? 1 : 0;
  opts->tile_plans = o.tile_plans ? 1 : 0;
}

bbmm_status to_c(const absl::Status& s) {
  if (s.ok()) return BBMM_OK;
  bbmm_status code = BBMM_ERROR_BACKEND;
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      code = BBMM_ERROR_INVALID_ARGUMENT;
      break;
    case absl::StatusCode::kResourceExhausted:
      code = BBMM_ERROR_OUT_OF_MEMORY;
      break;
    case absl::StatusCode::kAborted:
      code = BBMM_ERROR_CONFLICT;
      break;
    case absl::StatusCode::kInternal:
      code = BBMM_ERROR_INTERNAL;
      break;
    default:
      break;
  }
  return fail(code, std::string(s.message()));
}

// Runs `body` turning any escaping exception into BBMM_ERROR_INTERNAL.
template <typename F>
bbmm_status guarded(F body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return fail(BBMM_ERROR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(BBMM_ERROR_INTERNAL, "internal error: unknown exception");
  }
}

bbmm::Array* unwrap(bbmm_array* a) { return reinterpret_cast<bbmm::Array*>(a); }

absl::StatusOr<bbmm::Box> make_box(const int64_t* lo, const int64_t* hi, int rank) {
  if (lo == nullptr || hi == nullptr) return absl::InvalidArgumentError("box bounds are null");
  return bbmm::Box::create(std::span<const int64_t>(lo, rank), std::span<const int64_t>(hi, rank));
}

int array_rank(bbmm_array* a) { return unwrap(a)->rank(); }

// Fix (UBSan, c_api_test): C callers may put any integer in an enum field or
// parameter; loading it as the C++ enum type is undefined behaviour when it is
// outside the enum's range, so read the bits as an int and check them.
template <typename E>
int enum_bits(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

}  // namespace

extern "C" {

const char* bbmm_last_error_message(void) { return g_last_error; }

void bbmm_fatal(int code, const char* format, ...) {
  std::string message = "(no message)";
  if (format != nullptr) {
    va_list args, again;
    va_start(args, format);
    va_copy(again, args);
    const int n = std::vsnprintf(nullptr, 0, format, args);
    va_end(args);
    if (n >= 0) {
      message.assign(static_cast<size_t>(n) + 1, '\0');
      std::vsnprintf(message.data(), message.size(), format, again);
      message.resize(static_cast<size_t>(n));
    }
    va_end(again);
  }
  if (bbmm::detail::FatalHook hook = bbmm::detail::g_fatal_hook.load()) hook(message.c_str(), code);
  std::fflush(stdout);
  std::fprintf(stderr, "bbmm: %s\n", message.c_str());
  std::exit(code);
}

bbmm_status bbmm_options_init(bbmm_options* opts) {
  return guarded([&] {
    if (opts == nullptr) return fail(BBMM_ERROR_INVALID_ARGUMENT, "options_init: null options");
    absl::StatusOr<bbmm::RuntimeOptions> o = bbmm::RuntimeOptions::from_env();
    // The defaults when a variable is malformed (and the error), else the environment's.
    to_c_options(o.ok() ? *o : bbmm::RuntimeOptions{}, opts);
    if (!o.ok()) return to_c(o.status());
    // The string lives as long as the environment variable.
    opts->trace_file = o->trace_file.empty() ? nullptr : std::getenv("BBMM_TRACE");
    return BBMM_OK;
  });
}

namespace {

// The runtime options of "opts" (null: the BBMM_* environment); BBMM_OK or a
// failed status with the message set.
bbmm_status to_runtime_options(const bbmm_options* opts, bbmm::RuntimeOptions* out) {
  bbmm_options local;
  if (opts == nullptr) {
    bbmm_status s = bbmm_options_init(&local);
    if (s != BBMM_OK) return s;
    opts = &local;
  }
  const int backend = enum_bits(opts->backend);
  if (backend < BBMM_BACKEND_AUTO || backend > BBMM_BACKEND_OPENCL) {
    return fail(BBMM_ERROR_INVALID_ARGUMENT,
                "runtime_create: unknown backend kind " + std::to_string(backend));
  }
  const int policy = enum_bits(opts->eviction_policy);
  if (policy != BBMM_EVICT_LRU) {
    return fail(BBMM_ERROR_INVALID_ARGUMENT,
                "runtime_create: unknown eviction policy " + std::to_string(policy));
  }
  const int write_back = enum_bits(opts->write_back);
  if (write_back < BBMM_WRITE_BACK_LAZY || write_back > BBMM_WRITE_BACK_AUTO) {
    return fail(BBMM_ERROR_INVALID_ARGUMENT,
                "runtime_create: unknown write_back " + std::to_string(write_back) +
                    " (BBMM_WRITE_BACK_LAZY, _EAGER or _AUTO)");
  }
  const int host_copies = enum_bits(opts->cuda_host_copies);
  if (host_copies < BBMM_HOST_COPIES_AUTO || host_copies > BBMM_HOST_COPIES_STAGED) {
    return fail(BBMM_ERROR_INVALID_ARGUMENT,
                "runtime_create: unknown cuda_host_copies " + std::to_string(host_copies) +
                    " (BBMM_HOST_COPIES_AUTO, _PINNED or _STAGED)");
  }
  if (opts->cuda_staging_threads < 0 || opts->cuda_staging_threads > 64) {
    return fail(BBMM_ERROR_INVALID_ARGUMENT,
                "runtime_create: cuda_staging_threads " +
                    std::to_string(opts->cuda_staging_threads) + " (use 0..64; 0: the default)");
  }
  bbmm::RuntimeOptions& o = *out;
  o.backend = static_cast<bbmm_backend_kind>(backend);
  o.devices = opts->devices;
  o.device_memory = opts->device_memory;
  o.trace_file = opts->trace_file == nullptr ? "" : opts->trace_file;
  o.eviction_policy = static_cast<bbmm_eviction_policy>(policy);
  o.growth_threshold = opts->growth_threshold;
  o.write_back = static_cast<bbmm_write_back>(write_back);
  o.check = opts->check != 0;
  o.peer_access = opts->peer_access != 0;
  o.host_poison = opts->host_poison != 0;
  o.cuda_devices_per_gpu = opts->cuda_devices_per_gpu < 1 ? 1 : opts->cuda_devices_per_gpu;
  o.cuda_copy_kernel = opts->cuda_copy_kernel != 0;
  o.cuda_peer_copy_kernel = opts->cuda_peer_copy_kernel != 0;
  o.cuda_peer_push = opts->cuda_peer_push != 0;
  o.cuda_host_copies = static_cast<bbmm_host_copies>(host_copies);
  // 0 (a zeroed struct): the default.
  if (opts->cuda_copy_streams > 0) o.cuda_copy_streams = opts->cuda_copy_streams;
  o.cuda_staging_threads = opts->cuda_staging_threads;
  o.merge_copies = opts->merge_copies != 0;
  o.tile_plans = opts->tile_plans != 0;
  return BBMM_OK;
}

}  // namespace

bbmm_status bbmm_warm_up(const bbmm_options* opts) {
  return guarded([&] {
    bbmm::RuntimeOptions o;
    if (bbmm_status s = to_runtime_options(opts, &o); s != BBMM_OK) return s;
    return to_c(bbmm::detail::start_warm_up(o));
  });
}

bbmm_status bbmm_runtime_create(const bbmm_options* opts, bbmm_runtime** out) {
  return guarded([&] {
    if (out == nullptr) return fail(BBMM_ERROR_INVALID_ARGUMENT, "runtime_create: null out");
    *out = nullptr;
    bbmm::RuntimeOptions o;
    if (bbmm_status s = to_runtime_options(opts, &o); s != BBMM_OK) return s;
    absl::StatusOr<std::unique_ptr<bbmm::Runtime>> rt = bbmm::Runtime::create(o);
    if (!rt.ok()) return to_c(rt.status());
    // A transport between ranks for every runtime (bbmm_mpi_use_by_default).
    bool global_tiles = true, gather_all = false;
    absl::StatusOr<std::unique_ptr<bbmm::Transport>> t =
        bbmm::detail::default_transport(&global_tiles, &gather_all);
    if (!t.ok()) return to_c(t.status());
    if (*t != nullptr) {
      if (absl::Status s = (*rt)->core()->set_transport(*std::move(t), global_tiles, gather_all);
          !s.ok()) {
        return to_c(s);
      }
    }
    *out = new bbmm_runtime{*std::move(rt), o.trace_file};
    return BBMM_OK;
  });
}

bbmm_status bbmm_runtime_destroy(bbmm_runtime* rt) {
  return guarded([&] {
    if (rt == nullptr) return BBMM_OK;
    absl::Status s = rt->rt->core()->shutdown();
    delete rt;
    return to_c(s);
  });
}

int bbmm_device_count(const bbmm_runtime* rt) {
  return rt == nullptr ? 0 : const_cast<bbmm_runtime*>(rt)->rt->core()->global_device_count();
}

uint64_t bbmm_device_memory(const bbmm_runtime* rt, int device) {
  if (rt == nullptr) return 0;
  const bbmm::detail::RuntimeCore* core = const_cast<bbmm_runtime*>(rt)->rt->core();
  if (device < 0 || device >= core->global_device_count()) return 0;
  return static_cast<uint64_t>(core->global_device_memory(device));
}

bbmm_status bbmm_array_register(bbmm_runtime* rt, const char* name, void* host,
                                size_t elem_size, int rank, const int64_t* extents,
                                const int64_t* strides, int flags, bbmm_array** out) {
  return guarded([&] {
    if (rt == nullptr || out == nullptr || extents == nullptr) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "array_register: null runtime, out or extents");
    }
    if (rank < 1 || rank > BBMM_MAX_RANK) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT,
                  "array_register '" + std::string(name ? name : "") + "': rank " +
                      std::to_string(rank) + " is outside 1..8");
    }
    std::span<const int64_t> st;
    if (strides != nullptr) st = std::span<const int64_t>(strides, rank);
    absl::StatusOr<bbmm::Array*> a = rt->rt->register_array(
        name ? name : "", host, elem_size, std::span<const int64_t>(extents, rank), st,
        (flags & BBMM_ARRAY_READ_ONLY) != 0);
    if (!a.ok()) return to_c(a.status());
    *out = reinterpret_cast<bbmm_array*>(*a);
    return BBMM_OK;
  });
}

bbmm_status bbmm_array_unregister(bbmm_runtime* rt, bbmm_array* array) {
  return guarded([&] {
    if (rt == nullptr || array == nullptr) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "array_unregister: null runtime or array");
    }
    return to_c(rt->rt->unregister_array(unwrap(array)));
  });
}

bbmm_status bbmm_reserve(bbmm_runtime* rt, int device, bbmm_array* array, const int64_t* lo,
                         const int64_t* hi) {
  return guarded([&] {
    if (rt == nullptr || array == nullptr) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "reserve: null runtime or array");
    }
    absl::StatusOr<bbmm::Box> box = make_box(lo, hi, array_rank(array));
    if (!box.ok()) return to_c(box.status());
    return to_c(rt->rt->core()->reserve_global(device, unwrap(array), *box));
  });
}

bbmm_status bbmm_tile_begin(bbmm_runtime* rt, int device, bbmm_tile** out) {
  return guarded([&] {
    if (rt == nullptr || out == nullptr) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "tile_begin: null runtime or out");
    }
    absl::StatusOr<TileState*> t = rt->rt->core()->begin_global_tile(device);
    if (!t.ok()) return to_c(t.status());
    *out = make_handle(*t);
    return BBMM_OK;
  });
}

bbmm_status bbmm_tile_require(bbmm_tile* tile, bbmm_array* array, const int64_t* lo,
                              const int64_t* hi, bbmm_access access) {
  return guarded([&] {
    if (tile == nullptr || array == nullptr) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "tile_require: null tile or array");
    }
    absl::StatusOr<TileState*> t = open_handle(tile, "tile_require");
    if (!t.ok()) return to_c(t.status());
    absl::StatusOr<bbmm::Box> box = make_box(lo, hi, array_rank(array));
    if (!box.ok()) return to_c(box.status());
    // bbmm::Access has a fixed underlying type: any value is valid there, and
    // the core rejects unknown modes.
    return to_c((*t)->core->require(**t, unwrap(array), *box,
                                    static_cast<bbmm::Access>(enum_bits(access))));
  });
}

bbmm_status bbmm_tile_acquire(bbmm_tile* tile) {
  return guarded([&] {
    absl::StatusOr<TileState*> t = open_handle(tile, "tile_acquire");
    if (!t.ok()) return to_c(t.status());
    return to_c((*t)->core->acquire(**t));
  });
}

bbmm_status bbmm_tile_view(bbmm_tile* tile, bbmm_array* array, bbmm_view* out) {
  return guarded([&] {
    if (tile == nullptr || array == nullptr || out == nullptr) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "tile_view: null tile, array or out");
    }
    absl::StatusOr<TileState*> t = open_handle(tile, "tile_view");
    if (!t.ok()) return to_c(t.status());
    absl::StatusOr<bbmm_view> v = (*t)->core->view(**t, unwrap(array));
    if (!v.ok()) return to_c(v.status());
    *out = *v;
    return BBMM_OK;
  });
}

bbmm_status bbmm_tile_launch(bbmm_tile* tile, bbmm_kernel_fn fn, const void* args,
                             size_t args_size) {
  return guarded([&] {
    if (tile == nullptr || fn == nullptr || (args == nullptr && args_size > 0)) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "tile_launch: null tile, kernel or args");
    }
    bbmm::detail::SlowScope whole("bbmm_tile_launch (the whole C call)");
    absl::StatusOr<TileState*> t = open_handle(tile, "tile_launch");
    if (!t.ok()) return to_c(t.status());
    LaunchArgs* copy;
    {
      bbmm::detail::SlowScope scope("bbmm_tile_launch: copying the kernel's arguments");
      copy = LaunchArgs::take(args, args_size);
    }
    // Two pointers: std::function keeps it inline. Runs once.
    return to_c((*t)->core->launch(**t, [fn, copy](const bbmm_launch_info& info) {
      fn(&info, copy->data());
      copy->give_back();
    }));
  });
}

bbmm_status bbmm_tile_flow_out(bbmm_tile* tile, bbmm_array* array, const int64_t* lo,
                               const int64_t* hi) {
  return guarded([&] {
    if (tile == nullptr || array == nullptr) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "tile_flow_out: null tile or array");
    }
    absl::StatusOr<TileState*> t = open_handle(tile, "tile_flow_out");
    if (!t.ok()) return to_c(t.status());
    absl::StatusOr<bbmm::Box> box = make_box(lo, hi, array_rank(array));
    if (!box.ok()) return to_c(box.status());
    return to_c((*t)->core->flow_out(**t, unwrap(array), *box));
  });
}

bbmm_status bbmm_tile_release(bbmm_tile* tile) {
  return guarded([&] {
    absl::StatusOr<TileState*> t = open_handle(tile, "tile_release");
    if (!t.ok()) return to_c(t.status());
    return to_c((*t)->core->release(**t));
  });
}

bbmm_status bbmm_array_discard(bbmm_runtime* rt, bbmm_array* array) {
  return guarded([&] {
    if (rt == nullptr || array == nullptr) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "array_discard: null runtime or array");
    }
    return to_c(rt->rt->discard(unwrap(array)));
  });
}

bbmm_status bbmm_array_write_back(bbmm_runtime* rt, bbmm_array* array) {
  return guarded([&] {
    if (rt == nullptr || array == nullptr) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "array_write_back: null runtime or array");
    }
    return to_c(rt->rt->write_back(unwrap(array)));
  });
}

int bbmm_rank(const bbmm_runtime* rt) {
  return rt == nullptr ? 0 : const_cast<bbmm_runtime*>(rt)->rt->core()->rank();
}

int bbmm_rank_count(const bbmm_runtime* rt) {
  return rt == nullptr ? 1 : const_cast<bbmm_runtime*>(rt)->rt->core()->rank_count();
}

bbmm_status bbmm_array_send(bbmm_runtime* rt, bbmm_array* array, const int64_t* lo,
                            const int64_t* hi, int to_rank, int tag) {
  return guarded([&] {
    if (rt == nullptr || array == nullptr) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "array_send: null runtime or array");
    }
    absl::StatusOr<bbmm::Box> box = make_box(lo, hi, array_rank(array));
    if (!box.ok()) return to_c(box.status());
    return to_c(rt->rt->core()->send_box(unwrap(array), *box, to_rank, tag));
  });
}

bbmm_status bbmm_array_receive(bbmm_runtime* rt, bbmm_array* array, const int64_t* lo,
                               const int64_t* hi, int from_rank, int tag) {
  return guarded([&] {
    if (rt == nullptr || array == nullptr) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "array_receive: null runtime or array");
    }
    absl::StatusOr<bbmm::Box> box = make_box(lo, hi, array_rank(array));
    if (!box.ok()) return to_c(box.status());
    return to_c(rt->rt->core()->receive_box(unwrap(array), *box, from_rank, tag));
  });
}

bbmm_status bbmm_sync_to_host(bbmm_runtime* rt, bbmm_array* array) {
  return guarded([&] {
    if (rt == nullptr || array == nullptr) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "sync_to_host: null runtime or array");
    }
    return to_c(rt->rt->sync_to_host(unwrap(array)));
  });
}

bbmm_status bbmm_synchronize(bbmm_runtime* rt) {
  return guarded([&] {
    if (rt == nullptr) return fail(BBMM_ERROR_INVALID_ARGUMENT, "synchronize: null runtime");
    return to_c(rt->rt->synchronize());
  });
}

bbmm_status bbmm_phase_boundary(bbmm_runtime* rt) {
  return guarded([&] {
    if (rt == nullptr) return fail(BBMM_ERROR_INVALID_ARGUMENT, "phase_boundary: null runtime");
    return to_c(rt->rt->phase_boundary());
  });
}

bbmm_status bbmm_stats_get(const bbmm_runtime* rt, int device, bbmm_stats* out) {
  return guarded([&] {
    if (rt == nullptr || out == nullptr) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "stats_get: null runtime or out");
    }
    if (device < -1 || device >= rt->rt->device_count()) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT,
                  "stats_get: device " + std::to_string(device) + " does not exist");
    }
    *out = rt->rt->stats(device);
    return BBMM_OK;
  });
}

bbmm_status bbmm_stats_print(const bbmm_runtime* rt, FILE* out) {
  return guarded([&] {
    if (rt == nullptr || out == nullptr) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "stats_print: null runtime or file");
    }
    std::fputs(rt->rt->stats_table().c_str(), out);
    return BBMM_OK;
  });
}

bbmm_status bbmm_stats_print_json(const bbmm_runtime* rt, FILE* out) {
  return guarded([&] {
    if (rt == nullptr || out == nullptr) {
      return fail(BBMM_ERROR_INVALID_ARGUMENT, "stats_print_json: null runtime or file");
    }
    std::fputs((rt->rt->stats_json() + "\n").c_str(), out);
    return BBMM_OK;
  });
}

}  // extern "C"

namespace bbmm::detail {

namespace {
// A function-local static: bbmm_mpi_use_by_default may run in a program's
// constructor, before this file's global objects would be initialised.
struct DefaultTransport {
  std::mutex mu;
  TransportMaker make;
  bool global_tiles = true;
  bool gather_all = false;
};
DefaultTransport& default_transport_state() {
  static DefaultTransport* s = new DefaultTransport;  // never destroyed: used at exit too
  return *s;
}
}  // namespace

void set_default_transport(TransportMaker make, bool global_tiles, bool gather_all) {
  DefaultTransport& d = default_transport_state();
  std::lock_guard<std::mutex> lock(d.mu);
  d.make = std::move(make);
  d.global_tiles = global_tiles;
  d.gather_all = gather_all;
}

// The transport of a new runtime, when a default is set (null otherwise).
absl::StatusOr<std::unique_ptr<Transport>> default_transport(bool* global_tiles,
                                                             bool* gather_all) {
  DefaultTransport& d = default_transport_state();
  std::lock_guard<std::mutex> lock(d.mu);
  *global_tiles = d.global_tiles;
  *gather_all = d.gather_all;
  if (!d.make) return std::unique_ptr<Transport>();
  return d.make();
}

void set_fatal_hook(FatalHook hook) { g_fatal_hook.store(hook); }

RuntimeCore* core_of(bbmm_runtime* rt) { return rt == nullptr ? nullptr : rt->rt->core(); }

bbmm_status c_status(const absl::Status& s) { return to_c(s); }

}  // namespace bbmm::detail
