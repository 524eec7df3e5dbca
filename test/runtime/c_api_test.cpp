// The C API (bbmm/bbmm.h): every function, its status codes and
// bbmm_last_error_message for bad arguments, options from the environment
// (well-formed and malformed), and the statistics printers.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bbmm/bbmm.h"

// c_api_test_caller.c: calls from C, where an enum argument may hold any int.
extern "C" bbmm_status c_caller_tile_require(bbmm_tile* tile, bbmm_array* array,
                                             const int64_t* lo, const int64_t* hi, int access);

namespace {

const char* const kEnv[] = {"BBMM_BACKEND", "BBMM_DEVICES", "BBMM_DEVICE_MEMORY", "BBMM_TRACE",
                            "BBMM_CHECK", "BBMM_HOST_POISON", "BBMM_PEER_ACCESS",
                            "BBMM_CUDA_COPY_KERNEL", "BBMM_CUDA_COPY_STREAMS",
                            "BBMM_CUDA_PEER_COPY_KERNEL", "BBMM_CUDA_PEER_PUSH",
                            "BBMM_CUDA_HOST_COPIES", "BBMM_MERGE_COPIES", "BBMM_TILE_PLANS"};

std::string last() { return bbmm_last_error_message(); }
bool mentions(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// An on/off variable: `*field` is `by_default` without it and `expected` with `var`=`value`;
// `bad` is refused with a message naming it. Unsets `var`.
void check_flag(const char* var, int bbmm_options::*field, int by_default, const char* value,
                int expected, const char* bad) {
  bbmm_options o;
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK) << last();
  EXPECT_EQ(o.*field, by_default) << var;
  setenv(var, value, 1);
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK) << last();
  EXPECT_EQ(o.*field, expected) << var << "=" << value;
  setenv(var, bad, 1);
  EXPECT_EQ(bbmm_options_init(&o), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), (std::string(var) + "='" + bad + "'").c_str())) << last();
  unsetenv(var);
}

// Every test starts from an environment without BBMM_ variables.
class CApi : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kEnv) unsetenv(v);
  }
  void TearDown() override {
    for (const char* v : kEnv) unsetenv(v);
    if (rt_ == nullptr) return;
    // Destroying a runtime with arrays registered is an error (their host
    // copies are not made valid): unregister what the test left.
    for (bbmm_array* a : arrays_) EXPECT_EQ(bbmm_array_unregister(rt_, a), BBMM_OK) << last();
    EXPECT_EQ(bbmm_runtime_destroy(rt_), BBMM_OK) << last();
  }

  // A host runtime of `devices` devices of `memory` bytes each.
  bbmm_runtime* make(int devices = 2, uint64_t memory = 0, int check = 0) {
    bbmm_options o;
    EXPECT_EQ(bbmm_options_init(&o), BBMM_OK) << last();
    o.backend = BBMM_BACKEND_HOST;
    o.devices = devices;
    o.device_memory = memory;
    o.check = check;
    EXPECT_EQ(bbmm_runtime_create(&o, &rt_), BBMM_OK) << last();
    return rt_;
  }

  bbmm_array* reg(const char* name, double* host, int64_t n) {
    bbmm_array* a = nullptr;
    EXPECT_EQ(bbmm_array_register(rt_, name, host, sizeof(double), 1, &n, nullptr, 0, &a), BBMM_OK)
        << last();
    if (a != nullptr) arrays_.push_back(a);
    return a;
  }
  // Unregisters `a` (registered by reg()).
  bbmm_status unreg(bbmm_array* a) {
    const bbmm_status s = bbmm_array_unregister(rt_, a);
    if (s == BBMM_OK) arrays_.erase(std::find(arrays_.begin(), arrays_.end(), a));
    return s;
  }

  // Host data owned by the fixture, so that it outlives the runtime (queued
  // copies may read it until bbmm_runtime_destroy in TearDown).
  std::vector<double>& host(size_t n, double v) { return hosts_.emplace_back(n, v); }

  std::deque<std::vector<double>> hosts_;
  bbmm_runtime* rt_ = nullptr;
  std::vector<bbmm_array*> arrays_;
};

// ------------------------------------------------------------------ options

TEST_F(CApi, OptionsDefaults) {
  bbmm_options o;
  std::memset(&o, 0x7f, sizeof o);
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK);
  EXPECT_EQ(o.backend, BBMM_BACKEND_AUTO);
  EXPECT_EQ(o.devices, 0);
  EXPECT_EQ(o.device_memory, 0u);
  EXPECT_EQ(o.trace_file, nullptr);
  EXPECT_EQ(o.eviction_policy, BBMM_EVICT_LRU);
  EXPECT_DOUBLE_EQ(o.growth_threshold, 0.25);
  EXPECT_EQ(o.check, 0);
  EXPECT_EQ(o.peer_access, 1);
  EXPECT_EQ(o.host_poison, 1);
  EXPECT_EQ(bbmm_options_init(nullptr), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "null")) << last();
}

TEST_F(CApi, OptionsFromEnvironment) {
  setenv("BBMM_BACKEND", "Host", 1);
  setenv("BBMM_DEVICES", "3", 1);
  setenv("BBMM_DEVICE_MEMORY", "64MiB", 1);
  setenv("BBMM_TRACE", "bbmm_c_api_test_unused.json", 1);  // parsed, never written
  setenv("BBMM_CHECK", "1", 1);
  bbmm_options o;
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK) << last();
  EXPECT_EQ(o.backend, BBMM_BACKEND_HOST);
  EXPECT_EQ(o.devices, 3);
  EXPECT_EQ(o.device_memory, 64u << 20);
  ASSERT_NE(o.trace_file, nullptr);
  EXPECT_STREQ(o.trace_file, "bbmm_c_api_test_unused.json");
  EXPECT_EQ(o.check, 1);

  const struct {
    const char* value;
    uint64_t bytes;
  } sizes[] = {{"4096", 4096}, {"1.5KiB", 1536}, {"2GiB", 2ull << 30}, {"3MB", 3000000},
               {" 16 kib ", 16384}};
  for (const auto& s : sizes) {
    setenv("BBMM_DEVICE_MEMORY", s.value, 1);
    ASSERT_EQ(bbmm_options_init(&o), BBMM_OK) << s.value << ": " << last();
    EXPECT_EQ(o.device_memory, s.bytes) << s.value;
  }
  const struct {
    const char* value;
    bbmm_backend_kind kind;
  } backends[] = {{"auto", BBMM_BACKEND_AUTO}, {"cuda", BBMM_BACKEND_CUDA},
                  {"OpenCL", BBMM_BACKEND_OPENCL}, {"host", BBMM_BACKEND_HOST}};
  for (const auto& b : backends) {
    setenv("BBMM_BACKEND", b.value, 1);
    ASSERT_EQ(bbmm_options_init(&o), BBMM_OK) << b.value << ": " << last();
    EXPECT_EQ(o.backend, b.kind) << b.value;
  }
  for (const char* v : {"0", "off", "false", "no"}) {
    setenv("BBMM_CHECK", v, 1);
    ASSERT_EQ(bbmm_options_init(&o), BBMM_OK) << v;
    EXPECT_EQ(o.check, 0) << v;
    setenv("BBMM_HOST_POISON", v, 1);
    ASSERT_EQ(bbmm_options_init(&o), BBMM_OK) << v;
    EXPECT_EQ(o.host_poison, 0) << v;
    setenv("BBMM_PEER_ACCESS", v, 1);
    ASSERT_EQ(bbmm_options_init(&o), BBMM_OK) << v;
    EXPECT_EQ(o.peer_access, 0) << v;
  }
  setenv("BBMM_PEER_ACCESS", "on", 1);
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK);
  EXPECT_EQ(o.peer_access, 1);
  setenv("BBMM_PEER_ACCESS", "maybe", 1);
  EXPECT_EQ(bbmm_options_init(&o), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("BBMM_PEER_ACCESS='maybe'"), std::string::npos) << last();
  unsetenv("BBMM_PEER_ACCESS");
  setenv("BBMM_HOST_POISON", "1", 1);
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK);
  EXPECT_EQ(o.host_poison, 1);
  // The CUDA copy paths (the backend is not created here: any machine).
  EXPECT_EQ(o.cuda_copy_kernel, 1);
  EXPECT_EQ(o.cuda_copy_streams, 2);
  setenv("BBMM_CUDA_COPY_KERNEL", "off", 1);
  setenv("BBMM_CUDA_COPY_STREAMS", "1", 1);
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK) << last();
  EXPECT_EQ(o.cuda_copy_kernel, 0);
  EXPECT_EQ(o.cuda_copy_streams, 1);
  EXPECT_EQ(o.cuda_staging_threads, 0);  // the default
  setenv("BBMM_CUDA_STAGING_THREADS", "24", 1);
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK) << last();
  EXPECT_EQ(o.cuda_staging_threads, 24);
  setenv("BBMM_CUDA_STAGING_THREADS", "65", 1);
  EXPECT_EQ(bbmm_options_init(&o), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "BBMM_CUDA_STAGING_THREADS='65'")) << last();
  unsetenv("BBMM_CUDA_STAGING_THREADS");
  setenv("BBMM_CUDA_COPY_KERNEL", "sometimes", 1);
  EXPECT_EQ(bbmm_options_init(&o), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "BBMM_CUDA_COPY_KERNEL='sometimes'")) << last();
  unsetenv("BBMM_CUDA_COPY_KERNEL");
  EXPECT_EQ(o.cuda_peer_copy_kernel, 0);  // the copy engines between GPUs by default
  setenv("BBMM_CUDA_PEER_COPY_KERNEL", "1", 1);
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK) << last();
  EXPECT_EQ(o.cuda_peer_copy_kernel, 1);
  EXPECT_EQ(o.cuda_copy_kernel, 1);  // same-device boxes keep the kernel
  setenv("BBMM_CUDA_PEER_COPY_KERNEL", "perhaps", 1);
  EXPECT_EQ(bbmm_options_init(&o), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "BBMM_CUDA_PEER_COPY_KERNEL='perhaps'")) << last();
  unsetenv("BBMM_CUDA_PEER_COPY_KERNEL");
  // The source's worker issues copies between devices by default.
  check_flag("BBMM_CUDA_PEER_PUSH", &bbmm_options::cuda_peer_push, 1, "0", 0, "source");
  // Boxes of a batch that continue one another are merged into one copy by default.
  check_flag("BBMM_MERGE_COPIES", &bbmm_options::merge_copies, 1, "off", 0, "sometimes");
  // Recurring tiles reuse their plan by default.
  check_flag("BBMM_TILE_PLANS", &bbmm_options::tile_plans, 1, "0", 0, "maybe");
  // Host copies: auto by default; each name; a bad one named.
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK) << last();
  EXPECT_EQ(o.cuda_host_copies, BBMM_HOST_COPIES_AUTO);
  for (auto [name, want] : {std::pair{"pinned", BBMM_HOST_COPIES_PINNED},
                            std::pair{"Staged", BBMM_HOST_COPIES_STAGED},
                            std::pair{"auto", BBMM_HOST_COPIES_AUTO}}) {
    setenv("BBMM_CUDA_HOST_COPIES", name, 1);
    ASSERT_EQ(bbmm_options_init(&o), BBMM_OK) << last();
    EXPECT_EQ(o.cuda_host_copies, want) << name;
  }
  setenv("BBMM_CUDA_HOST_COPIES", "mapped", 1);
  EXPECT_EQ(bbmm_options_init(&o), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "BBMM_CUDA_HOST_COPIES='mapped'") && mentions(last(), "staged"))
      << last();
  unsetenv("BBMM_CUDA_HOST_COPIES");
  for (const char* v : {"0", "9", "two"}) {
    setenv("BBMM_CUDA_COPY_STREAMS", v, 1);
    EXPECT_EQ(bbmm_options_init(&o), BBMM_ERROR_INVALID_ARGUMENT) << v;
    EXPECT_TRUE(mentions(last(), "BBMM_CUDA_COPY_STREAMS=") && mentions(last(), "1..8")) << last();
  }
}

TEST_F(CApi, PhaseBoundaryRejectsANullRuntime) {
  EXPECT_EQ(bbmm_phase_boundary(nullptr), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "phase_boundary")) << last();
}

// bbmm_warm_up: nothing to start for the host backend, bad options named (as
// bbmm_runtime_create names them), and a runtime created after it works.
TEST_F(CApi, WarmUp) {
  bbmm_options o;
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK);
  o.backend = BBMM_BACKEND_HOST;
  o.devices = 2;
  EXPECT_EQ(bbmm_warm_up(&o), BBMM_OK) << last();
  ASSERT_EQ(bbmm_runtime_create(&o, &rt_), BBMM_OK) << last();
  EXPECT_EQ(bbmm_device_count(rt_), 2);
  o.backend = static_cast<bbmm_backend_kind>(99);
  EXPECT_EQ(bbmm_warm_up(&o), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "unknown backend kind 99")) << last();
}

TEST_F(CApi, WriteBackRejectsNullArguments) {
  EXPECT_EQ(bbmm_array_write_back(nullptr, nullptr), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("array_write_back"), std::string::npos) << last();
  EXPECT_EQ(bbmm_array_discard(nullptr, nullptr), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("array_discard"), std::string::npos) << last();
}

TEST_F(CApi, MalformedEnvironmentVariablesAreNamed) {
  const struct {
    const char* var;
    const char* value;
  } bad[] = {{"BBMM_BACKEND", "tpu"},        {"BBMM_DEVICES", "0"},
             {"BBMM_DEVICES", "-2"},         {"BBMM_DEVICES", "four"},
             {"BBMM_DEVICES", "3x"},         {"BBMM_DEVICE_MEMORY", "lots"},
             {"BBMM_DEVICE_MEMORY", "12 bananas"}, {"BBMM_DEVICE_MEMORY", "-5MiB"},
             {"BBMM_CHECK", "maybe"},        {"BBMM_HOST_POISON", "2"}};
  for (const auto& b : bad) {
    SCOPED_TRACE(std::string(b.var) + "=" + b.value);
    for (const char* v : kEnv) unsetenv(v);
    setenv(b.var, b.value, 1);
    bbmm_options o;
    EXPECT_EQ(bbmm_options_init(&o), BBMM_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(mentions(last(), b.var)) << last();
    // bbmm_runtime_create(NULL options) reads the same environment.
    bbmm_runtime* rt = reinterpret_cast<bbmm_runtime*>(1);
    EXPECT_EQ(bbmm_runtime_create(nullptr, &rt), BBMM_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(rt, nullptr);
  }
}

// ------------------------------------------------------------------ runtime

TEST_F(CApi, RuntimeCreateAndDestroy) {
  EXPECT_EQ(bbmm_runtime_create(nullptr, nullptr), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "null")) << last();
  setenv("BBMM_BACKEND", "host", 1);
  setenv("BBMM_DEVICES", "3", 1);
  bbmm_runtime* rt = nullptr;
  ASSERT_EQ(bbmm_runtime_create(nullptr, &rt), BBMM_OK) << last();  // from the environment
  EXPECT_EQ(bbmm_device_count(rt), 3);
  EXPECT_EQ(bbmm_runtime_destroy(rt), BBMM_OK);
  EXPECT_EQ(bbmm_runtime_destroy(nullptr), BBMM_OK);
  EXPECT_EQ(bbmm_device_count(nullptr), 0);

  bbmm_options o;
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK);
  o.backend = BBMM_BACKEND_HOST;
  o.growth_threshold = 1.5;
  EXPECT_EQ(bbmm_runtime_create(&o, &rt), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "growth_threshold")) << last();
  o.growth_threshold = 0.25;
  // Out-of-range enum values, as a C caller may pass them (stored as ints:
  // in C++ the cast itself would be undefined).
  const int bad_backend = 42, bad_policy = 5;
  std::memcpy(&o.backend, &bad_backend, sizeof bad_backend);
  EXPECT_EQ(bbmm_runtime_create(&o, &rt), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "backend") && mentions(last(), "42")) << last();
  o.backend = BBMM_BACKEND_HOST;
  std::memcpy(&o.eviction_policy, &bad_policy, sizeof bad_policy);
  EXPECT_EQ(bbmm_runtime_create(&o, &rt), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "eviction policy") && mentions(last(), "5")) << last();
  o.eviction_policy = BBMM_EVICT_LRU;
  o.cuda_staging_threads = 100;
  EXPECT_EQ(bbmm_runtime_create(&o, &rt), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "cuda_staging_threads 100")) << last();
}

TEST_F(CApi, ErrorMessagesArePerThread) {
  EXPECT_EQ(bbmm_options_init(nullptr), BBMM_ERROR_INVALID_ARGUMENT);
  const std::string mine = last();
  ASSERT_FALSE(mine.empty());
  std::string other = "unset";
  std::thread([&] { other = bbmm_last_error_message(); }).join();
  EXPECT_EQ(other, "");
  // A successful call does not clear it.
  bbmm_options o;
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK);
  EXPECT_EQ(last(), mine);
}

// ------------------------------------------------------------------ arrays

TEST_F(CApi, ArrayRegisterRejectsBadArguments) {
  make();
  std::vector<double> h(64);
  const int64_t ext[2] = {8, 8};
  bbmm_array* a = nullptr;
  EXPECT_EQ(bbmm_array_register(nullptr, "a", h.data(), 8, 2, ext, nullptr, 0, &a),
            BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_array_register(rt_, "a", h.data(), 8, 2, nullptr, nullptr, 0, &a),
            BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_array_register(rt_, "a", h.data(), 8, 2, ext, nullptr, 0, nullptr),
            BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_array_register(rt_, "a", nullptr, 8, 2, ext, nullptr, 0, &a),
            BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "'a'") && mentions(last(), "null")) << last();
  EXPECT_EQ(bbmm_array_register(rt_, "a", h.data(), 0, 2, ext, nullptr, 0, &a),
            BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "element size")) << last();
  for (int rank : {0, -1, 9}) {
    EXPECT_EQ(bbmm_array_register(rt_, "r", h.data(), 8, rank, ext, nullptr, 0, &a),
              BBMM_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(mentions(last(), "rank")) << last();
  }
  const int64_t neg[2] = {8, -1};
  EXPECT_EQ(bbmm_array_register(rt_, "n", h.data(), 8, 2, neg, nullptr, 0, &a),
            BBMM_ERROR_INVALID_ARGUMENT);
  const int64_t not_contiguous[2] = {8, 2};
  EXPECT_EQ(bbmm_array_register(rt_, "s", h.data(), 8, 2, ext, not_contiguous, 0, &a),
            BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "contiguous")) << last();
  const int64_t overlapping[2] = {4, 1};
  EXPECT_EQ(bbmm_array_register(rt_, "s", h.data(), 8, 2, ext, overlapping, 0, &a),
            BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "overlap")) << last();
  EXPECT_EQ(bbmm_array_unregister(rt_, nullptr), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_array_unregister(nullptr, nullptr), BBMM_ERROR_INVALID_ARGUMENT);
}

// ------------------------------------------------------------------ tiles

struct AddArgs {
  bbmm_piece piece;  // copied by value: the view's pieces die at release
  int64_t lo, hi;
  double add;
};

void add_kernel(const bbmm_launch_info* info, void* args) {
  const AddArgs* a = static_cast<const AddArgs*>(args);
  (void)info;
  for (int64_t i = a->lo; i < a->hi; ++i) {
    *static_cast<double*>(bbmm_piece_at(&a->piece, sizeof(double), 1, &i)) += a->add;
  }
}

TEST_F(CApi, TileLifecycleAndStatistics) {
  make(2);
  std::vector<double>& h = host(32, 1.0);
  bbmm_array* a = reg("x", h.data(), 32);
  bbmm_tile* t = nullptr;
  ASSERT_EQ(bbmm_tile_begin(rt_, 1, &t), BBMM_OK) << last();
  const int64_t lo = 4, hi = 20;
  ASSERT_EQ(bbmm_tile_require(t, a, &lo, &hi, BBMM_READ_WRITE), BBMM_OK) << last();
  ASSERT_EQ(bbmm_tile_acquire(t), BBMM_OK) << last();
  bbmm_view v;
  ASSERT_EQ(bbmm_tile_view(t, a, &v), BBMM_OK) << last();
  ASSERT_EQ(v.npieces, 1);
  EXPECT_EQ(v.rank, 1);
  EXPECT_EQ(v.elem_size, sizeof(double));
  EXPECT_EQ(v.pieces[0].lo[0], 4);
  EXPECT_EQ(v.pieces[0].hi[0], 20);
  AddArgs args{v.pieces[0], lo, hi, 41.0};
  ASSERT_EQ(bbmm_tile_launch(t, add_kernel, &args, sizeof args), BBMM_OK) << last();
  args.add = -1000;  // the runtime copied the arguments
  const int64_t flo = 4, fhi = 8;
  ASSERT_EQ(bbmm_tile_flow_out(t, a, &flo, &fhi), BBMM_OK) << last();
  ASSERT_EQ(bbmm_tile_release(t), BBMM_OK) << last();
  ASSERT_EQ(bbmm_synchronize(rt_), BBMM_OK) << last();
  // No other device holds the box and every device reaches device 1: the
  // flow-out moves nothing (a later reader gets it from device 1).
  for (int i = 4; i < 8; ++i) EXPECT_EQ(h[i], 1.0) << "flow-out went to the host: " << i;
  ASSERT_EQ(bbmm_sync_to_host(rt_, a), BBMM_OK) << last();
  for (int i = 0; i < 32; ++i) EXPECT_EQ(h[i], (i >= 4 && i < 20) ? 42.0 : 1.0) << i;

  bbmm_stats s;
  ASSERT_EQ(bbmm_stats_get(rt_, 1, &s), BBMM_OK);
  EXPECT_EQ(s.tiles, 1u);
  EXPECT_EQ(s.kernels, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.bytes_h2d, 16u * 8);
  EXPECT_EQ(s.bytes_d2h, 16u * 8);
  EXPECT_EQ(s.bytes_allocated, 16u * 8);
  ASSERT_EQ(bbmm_stats_get(rt_, 0, &s), BBMM_OK);
  EXPECT_EQ(s.tiles, 0u);
  ASSERT_EQ(bbmm_stats_get(rt_, -1, &s), BBMM_OK);
  EXPECT_EQ(s.tiles, 1u);
  EXPECT_EQ(bbmm_stats_get(rt_, 2, &s), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "device 2")) << last();
  EXPECT_EQ(bbmm_stats_get(rt_, -2, &s), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_stats_get(rt_, 0, nullptr), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_stats_get(nullptr, 0, &s), BBMM_ERROR_INVALID_ARGUMENT);

  // Unregister writes back and frees the instances.
  ASSERT_EQ(bbmm_tile_begin(rt_, 0, &t), BBMM_OK);
  ASSERT_EQ(bbmm_tile_require(t, a, &lo, &hi, BBMM_WRITE), BBMM_OK);
  ASSERT_EQ(bbmm_tile_acquire(t), BBMM_OK);
  ASSERT_EQ(bbmm_tile_view(t, a, &v), BBMM_OK);
  AddArgs set{v.pieces[0], lo, hi, 0.0};
  // WRITE: the kernel must write every element; add to uninitialised
  // memory would be wrong, so use a kernel that stores.
  ASSERT_EQ(bbmm_tile_launch(
                t,
                [](const bbmm_launch_info*, void* p) {
                  const AddArgs* a = static_cast<const AddArgs*>(p);
                  for (int64_t i = a->lo; i < a->hi; ++i)
                    *static_cast<double*>(bbmm_piece_at(&a->piece, 8, 1, &i)) = 7.0;
                },
                &set, sizeof set),
            BBMM_OK);
  ASSERT_EQ(bbmm_tile_release(t), BBMM_OK);
  ASSERT_EQ(unreg(a), BBMM_OK) << last();
  for (int i = 0; i < 32; ++i) EXPECT_EQ(h[i], (i >= 4 && i < 20) ? 7.0 : 1.0) << i;
  ASSERT_EQ(bbmm_stats_get(rt_, -1, &s), BBMM_OK);
  EXPECT_EQ(s.bytes_allocated, 0u);
  EXPECT_EQ(s.instances, 0u);
}

TEST_F(CApi, TileCallsRejectBadArguments) {
  make(2);
  std::vector<double>& h = host(32, 0.0);
  std::vector<double>& g = host(8, 0.0);
  bbmm_array* a = reg("x", h.data(), 32);
  bbmm_array* other = reg("other", g.data(), 8);
  bbmm_tile* t = nullptr;
  EXPECT_EQ(bbmm_tile_begin(nullptr, 0, &t), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_begin(rt_, 0, nullptr), BBMM_ERROR_INVALID_ARGUMENT);
  for (int d : {-1, 2, 99}) {
    EXPECT_EQ(bbmm_tile_begin(rt_, d, &t), BBMM_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(mentions(last(), "device")) << last();
  }
  ASSERT_EQ(bbmm_tile_begin(rt_, 0, &t), BBMM_OK);
  int64_t lo = 0, hi = 8;
  EXPECT_EQ(bbmm_tile_require(nullptr, a, &lo, &hi, BBMM_READ), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_require(t, nullptr, &lo, &hi, BBMM_READ), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_require(t, a, nullptr, &hi, BBMM_READ), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_require(t, a, &lo, nullptr, BBMM_READ), BBMM_ERROR_INVALID_ARGUMENT);
  const int64_t out_lo = 30, out_hi = 40;
  EXPECT_EQ(bbmm_tile_require(t, a, &out_lo, &out_hi, BBMM_READ), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "'x'") && mentions(last(), "[30,40)") && mentions(last(), "outside"))
      << last();
  const int64_t neg_lo = -1;
  EXPECT_EQ(bbmm_tile_require(t, a, &neg_lo, &hi, BBMM_READ), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(c_caller_tile_require(t, a, &lo, &hi, 7), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "access")) << last();
  // Calls out of order.
  bbmm_view v;
  EXPECT_EQ(bbmm_tile_view(t, a, &v), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "not acquired")) << last();
  EXPECT_EQ(bbmm_tile_launch(t, add_kernel, nullptr, 0), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_flow_out(t, a, &lo, &hi), BBMM_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(bbmm_tile_require(t, a, &lo, &hi, BBMM_READ_WRITE), BBMM_OK);
  ASSERT_EQ(bbmm_tile_acquire(t), BBMM_OK);
  EXPECT_EQ(bbmm_tile_acquire(t), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_require(t, a, &lo, &hi, BBMM_READ), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "already acquired")) << last();
  EXPECT_EQ(bbmm_tile_view(t, other, &v), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "'other'")) << last();
  EXPECT_EQ(bbmm_tile_view(t, a, nullptr), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_view(nullptr, a, &v), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_launch(t, nullptr, nullptr, 0), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_launch(t, add_kernel, nullptr, 16), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_launch(nullptr, add_kernel, nullptr, 0), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_flow_out(t, a, &out_lo, &out_hi), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_flow_out(t, nullptr, &lo, &hi), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_flow_out(t, a, nullptr, &hi), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_flow_out(nullptr, a, &lo, &hi), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_acquire(nullptr), BBMM_ERROR_INVALID_ARGUMENT);
  // Unregistering an array a tile holds fails (and leaves it registered).
  EXPECT_EQ(unreg(a), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "held")) << last();
  ASSERT_EQ(bbmm_tile_release(t), BBMM_OK);
  EXPECT_EQ(bbmm_tile_release(nullptr), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_sync_to_host(rt_, nullptr), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_sync_to_host(nullptr, a), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_synchronize(nullptr), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(unreg(a), BBMM_OK) << last();
}

TEST_F(CApi, OutOfMemoryIsReportedAndTheTileCanBeReleased) {
  make(1, 128);
  std::vector<double>& h = host(100, 2.0);
  bbmm_array* a = reg("huge", h.data(), 100);
  bbmm_tile* t = nullptr;
  ASSERT_EQ(bbmm_tile_begin(rt_, 0, &t), BBMM_OK);
  const int64_t lo = 0, hi = 100;
  ASSERT_EQ(bbmm_tile_require(t, a, &lo, &hi, BBMM_READ), BBMM_OK);
  EXPECT_EQ(bbmm_tile_acquire(t), BBMM_ERROR_OUT_OF_MEMORY);
  EXPECT_TRUE(mentions(last(), "device 0") && mentions(last(), "'huge'") &&
              mentions(last(), "[0,100)") && mentions(last(), "800"))
      << last();
  EXPECT_EQ(bbmm_tile_release(t), BBMM_OK) << last();
  ASSERT_EQ(bbmm_sync_to_host(rt_, a), BBMM_OK);
  for (double x : h) EXPECT_EQ(x, 2.0);
}

TEST_F(CApi, CheckingModeReportsAConflict) {
  make(2, 0, /*check=*/1);
  std::vector<double>& h = host(32, 0.0);
  bbmm_array* a = reg("shared", h.data(), 32);
  auto write_tile = [&](int device, int64_t lo, int64_t hi) {
    bbmm_tile* t = nullptr;
    EXPECT_EQ(bbmm_tile_begin(rt_, device, &t), BBMM_OK);
    EXPECT_EQ(bbmm_tile_require(t, a, &lo, &hi, BBMM_READ_WRITE), BBMM_OK);
    const bbmm_status s = bbmm_tile_acquire(t);
    const std::string msg = last();
    EXPECT_EQ(bbmm_tile_release(t), BBMM_OK);
    return std::make_pair(s, msg);
  };
  EXPECT_EQ(write_tile(0, 0, 16).first, BBMM_OK);
  const auto [s, msg] = write_tile(1, 10, 20);
  EXPECT_EQ(s, BBMM_ERROR_CONFLICT);
  EXPECT_TRUE(mentions(msg, "'shared'") && mentions(msg, "[10,20)") && mentions(msg, "[0,16)"))
      << msg;
  ASSERT_EQ(bbmm_synchronize(rt_), BBMM_OK);
  EXPECT_EQ(write_tile(1, 10, 20).first, BBMM_OK);
}

// ------------------------------------------------------------------ output

std::string read_file(std::FILE* f) {
  std::rewind(f);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  return out;
}

TEST_F(CApi, StatsPrintTableAndJson) {
  make(2);
  std::vector<double>& h = host(16, 0.0);
  bbmm_array* a = reg("x", h.data(), 16);
  bbmm_tile* t = nullptr;
  const int64_t lo = 0, hi = 16;
  ASSERT_EQ(bbmm_tile_begin(rt_, 1, &t), BBMM_OK);
  ASSERT_EQ(bbmm_tile_require(t, a, &lo, &hi, BBMM_READ), BBMM_OK);
  ASSERT_EQ(bbmm_tile_acquire(t), BBMM_OK);
  ASSERT_EQ(bbmm_tile_release(t), BBMM_OK);

  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(bbmm_stats_print(rt_, f), BBMM_OK);
  const std::string table = read_file(f);
  std::fclose(f);
  for (const char* w : {"counter", "dev0", "dev1", "total", "hits_exact", "misses",
                        "bytes_h2d", "manager_seconds"}) {
    EXPECT_TRUE(mentions(table, w)) << w << " in\n" << table;
  }
  // The misses row: 0 on dev0, 1 on dev1, 1 in total.
  std::istringstream rows(table);
  std::string line;
  bool found = false;
  while (std::getline(rows, line)) {
    std::istringstream cols(line);
    std::string name;
    uint64_t d0, d1, total;
    if (cols >> name >> d0 >> d1 >> total && name == "misses") {
      found = true;
      EXPECT_EQ(d0, 0u);
      EXPECT_EQ(d1, 1u);
      EXPECT_EQ(total, 1u);
    }
  }
  EXPECT_TRUE(found) << table;

  f = std::tmpfile();
  ASSERT_EQ(bbmm_stats_print_json(rt_, f), BBMM_OK);
  const std::string json = read_file(f);
  std::fclose(f);
  ASSERT_FALSE(json.empty());
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.back(), '\n');
  EXPECT_TRUE(mentions(json, "\"backend\":\"host\"")) << json;
  EXPECT_TRUE(mentions(json, "\"devices\":[{")) << json;
  EXPECT_TRUE(mentions(json, "\"total\":{")) << json;
  EXPECT_TRUE(mentions(json, "\"misses\":1")) << json;
  int depth = 0, objects = 0;
  for (char c : json) {
    if (c == '{') ++depth, ++objects;
    if (c == '}') --depth;
    ASSERT_GE(depth, 0) << json;
  }
  EXPECT_EQ(depth, 0) << json;
  EXPECT_EQ(objects, 4) << "outer, two devices, total: " << json;
  EXPECT_TRUE(mentions(json, "\"create_seconds\":")) << json;
  bbmm_stats total, dev0;
  ASSERT_EQ(bbmm_stats_get(rt_, -1, &total), BBMM_OK);
  ASSERT_EQ(bbmm_stats_get(rt_, 0, &dev0), BBMM_OK);
  EXPECT_GT(total.create_seconds, 0.0) << "bbmm_runtime_create took some time";
  EXPECT_EQ(dev0.create_seconds, 0.0) << "the runtime's figure, in the total only";

  EXPECT_EQ(bbmm_stats_print(nullptr, stdout), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_stats_print(rt_, nullptr), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_stats_print_json(nullptr, stdout), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_stats_print_json(rt_, nullptr), BBMM_ERROR_INVALID_ARGUMENT);
}

TEST_F(CApi, TraceFileIsWrittenAtDestroy) {
  const std::string path = ::testing::TempDir() + "bbmm_c_api_trace.json";
  std::remove(path.c_str());
  setenv("BBMM_TRACE", path.c_str(), 1);
  setenv("BBMM_BACKEND", "host", 1);
  setenv("BBMM_DEVICES", "1", 1);
  setenv("BBMM_DEVICE_MEMORY", "128", 1);
  ASSERT_EQ(bbmm_runtime_create(nullptr, &rt_), BBMM_OK) << last();
  std::vector<double>& h = host(32, 0.0);
  bbmm_array* a = reg("traced", h.data(), 32);
  for (int64_t k = 0; k < 2; ++k) {  // the second tile evicts the first
    bbmm_tile* t = nullptr;
    const int64_t lo = 16 * k, hi = 16 * k + 16;
    ASSERT_EQ(bbmm_tile_begin(rt_, 0, &t), BBMM_OK);
    ASSERT_EQ(bbmm_tile_require(t, a, &lo, &hi, BBMM_READ), BBMM_OK);
    ASSERT_EQ(bbmm_tile_acquire(t), BBMM_OK) << last();
    ASSERT_EQ(bbmm_tile_release(t), BBMM_OK);
  }
  ASSERT_EQ(unreg(a), BBMM_OK) << last();
  ASSERT_EQ(bbmm_runtime_destroy(rt_), BBMM_OK) << last();
  rt_ = nullptr;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string trace = ss.str();
  EXPECT_TRUE(mentions(trace, "traceEvents")) << trace;
  EXPECT_TRUE(mentions(trace, "evict")) << trace;
  EXPECT_TRUE(mentions(trace, "traced")) << trace;
  std::remove(path.c_str());
}

TEST_F(CApi, ReserveThenTilesHitTheReservedInstance) {
  make(2);
  std::vector<double>& h = host(64, 2.0);
  bbmm_array* a = reg("r", h.data(), 64);
  const int64_t lo = 0, hi = 40;
  ASSERT_EQ(bbmm_reserve(rt_, 1, a, &lo, &hi), BBMM_OK) << last();
  for (int64_t k = 0; k < 4; ++k) {
    bbmm_tile* t = nullptr;
    const int64_t tlo = 10 * k, thi = 10 * k + 10;
    ASSERT_EQ(bbmm_tile_begin(rt_, 1, &t), BBMM_OK) << last();
    ASSERT_EQ(bbmm_tile_require(t, a, &tlo, &thi, BBMM_READ_WRITE), BBMM_OK) << last();
    ASSERT_EQ(bbmm_tile_acquire(t), BBMM_OK) << last();
    bbmm_view v;
    ASSERT_EQ(bbmm_tile_view(t, a, &v), BBMM_OK) << last();
    AddArgs args{v.pieces[0], tlo, thi, 1.0};
    ASSERT_EQ(bbmm_tile_launch(t, add_kernel, &args, sizeof args), BBMM_OK) << last();
    ASSERT_EQ(bbmm_tile_release(t), BBMM_OK) << last();
  }
  ASSERT_EQ(bbmm_sync_to_host(rt_, a), BBMM_OK) << last();
  for (int i = 0; i < 64; ++i) EXPECT_EQ(h[i], i < 40 ? 3.0 : 2.0) << i;
  bbmm_stats s;
  ASSERT_EQ(bbmm_stats_get(rt_, 1, &s), BBMM_OK);
  EXPECT_EQ(s.reservations, 1u);
  EXPECT_EQ(s.bytes_reserved, 40u * 8);
  EXPECT_EQ(s.misses, 0u);
  EXPECT_EQ(s.hits_contained, 4u);
  EXPECT_EQ(s.bytes_d2d, 0u);
  // Errors.
  const int64_t bad_hi = 65;
  EXPECT_EQ(bbmm_reserve(rt_, 0, a, &lo, &bad_hi), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "'r'")) << last();
  EXPECT_EQ(bbmm_reserve(rt_, 5, a, &lo, &hi), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_reserve(nullptr, 0, a, &lo, &hi), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_reserve(rt_, 0, a, nullptr, &hi), BBMM_ERROR_INVALID_ARGUMENT);
}

TEST_F(CApi, StaleTileHandlesAreReportedNotCrashes) {
  make(1);
  std::vector<double>& h = host(16, 0.0);
  bbmm_array* a = reg("s", h.data(), 16);
  bbmm_tile* t = nullptr;
  const int64_t lo = 0, hi = 8;
  ASSERT_EQ(bbmm_tile_begin(rt_, 0, &t), BBMM_OK);
  ASSERT_EQ(bbmm_tile_require(t, a, &lo, &hi, BBMM_READ), BBMM_OK);
  ASSERT_EQ(bbmm_tile_acquire(t), BBMM_OK);
  ASSERT_EQ(bbmm_tile_release(t), BBMM_OK);
  EXPECT_EQ(bbmm_tile_release(t), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "stale tile handle")) << last();
  EXPECT_EQ(bbmm_tile_require(t, a, &lo, &hi, BBMM_READ), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "stale tile handle")) << last();
  bbmm_view v;
  EXPECT_EQ(bbmm_tile_view(t, a, &v), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_acquire(t), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bbmm_tile_flow_out(t, a, &lo, &hi), BBMM_ERROR_INVALID_ARGUMENT);
  // The state is recycled by later tiles; the stale handle stays stale.
  for (int k = 0; k < 20; ++k) {
    bbmm_tile* u = nullptr;
    ASSERT_EQ(bbmm_tile_begin(rt_, 0, &u), BBMM_OK);
    EXPECT_EQ(bbmm_tile_release(t), BBMM_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ(bbmm_tile_release(u), BBMM_OK) << last();
  }
}

// What a generated program does when a runtime call fails inside a tile: it exits, and
// its atexit handler destroys the runtime with the tile still open and the arrays still
// registered. That is an error with a message, never a crash or a double free.
TEST_F(CApi, DeviceMemoryIsTheCapacityOption) {
  make(3, 123456);
  for (int d = 0; d < 3; ++d) EXPECT_EQ(bbmm_device_memory(rt_, d), 123456u);
  EXPECT_EQ(bbmm_device_memory(rt_, 3), 0u);
  EXPECT_EQ(bbmm_device_memory(rt_, -1), 0u);
  EXPECT_EQ(bbmm_device_memory(nullptr, 0), 0u);
}

TEST_F(CApi, DestroyWithATileOpenAndArraysRegisteredIsAnError) {
  bbmm_options o;
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK);
  o.backend = BBMM_BACKEND_HOST;
  o.devices = 2;
  bbmm_runtime* rt = nullptr;
  ASSERT_EQ(bbmm_runtime_create(&o, &rt), BBMM_OK) << last();
  std::vector<double>& h = host(64, 1.0);
  const int64_t n = 64;
  bbmm_array* a = nullptr;
  ASSERT_EQ(bbmm_array_register(rt, "open", h.data(), sizeof(double), 1, &n, nullptr, 0, &a),
            BBMM_OK);
  for (int acquired = 0; acquired < 2; ++acquired) {
    bbmm_tile* t = nullptr;
    ASSERT_EQ(bbmm_tile_begin(rt, acquired, &t), BBMM_OK);
    const int64_t lo = 8 * acquired, hi = lo + 8;
    ASSERT_EQ(bbmm_tile_require(t, a, &lo, &hi, BBMM_READ_WRITE), BBMM_OK);
    if (acquired) {
      ASSERT_EQ(bbmm_tile_acquire(t), BBMM_OK) << last();
    }
  }
  EXPECT_NE(bbmm_runtime_destroy(rt), BBMM_OK);
  EXPECT_TRUE(mentions(last(), "open")) << last();
}

// The same through exit(): a generated program's failed call exits with the tile open and
// its atexit handler destroys the runtime; the process must end with the status exit()
// was given (42: not the 1 of AddressSanitizer's reports), with no abort at exit (the
// last-error message used to be a thread_local std::string, destroyed by exit() before
// the handler wrote to it).
static bbmm_runtime* g_exit_rt = nullptr;
static void destroy_at_exit() {
  if (g_exit_rt != nullptr) (void)bbmm_runtime_destroy(g_exit_rt);
}

TEST(CApiExit, ExitWithATileOpenEndsCleanly) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    bbmm_options o;
    bbmm_options_init(&o);
    o.backend = BBMM_BACKEND_HOST;
    o.devices = 2;
    if (bbmm_runtime_create(&o, &g_exit_rt) != BBMM_OK) _exit(10);
    atexit(destroy_at_exit);
    static double h[64];
    const int64_t n = 64;
    bbmm_array* a = nullptr;
    if (bbmm_array_register(g_exit_rt, "open", h, sizeof(double), 1, &n, nullptr, 0, &a) != BBMM_OK) {
      _exit(11);
    }
    bbmm_tile* t = nullptr;
    const int64_t lo = 0, hi = 8;
    if (bbmm_tile_begin(g_exit_rt, 1, &t) != BBMM_OK ||
        bbmm_tile_require(t, a, &lo, &hi, BBMM_READ_WRITE) != BBMM_OK ||
        bbmm_tile_acquire(t) != BBMM_OK) {
      _exit(12);
    }
    // A failed call leaves a long message (on the heap, were it a std::string).
    if (bbmm_array_register(g_exit_rt, "a-name-long-enough-for-the-heap", h, sizeof(double), 0, &n,
                            nullptr, 0, &a) == BBMM_OK) {
      _exit(13);
    }
    exit(42);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 42);
}

TEST_F(CApi, DestroyWithArraysStillRegisteredNamesThem) {
  make(1);
  std::vector<double>& h = host(16, 0.0);
  bbmm_array* a = reg("forgotten", h.data(), 16);
  (void)a;
  arrays_.clear();  // the test destroys with it registered
  EXPECT_EQ(bbmm_runtime_destroy(rt_), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(last(), "'forgotten'")) << last();
  EXPECT_TRUE(mentions(last(), "still registered")) << last();
  rt_ = nullptr;  // destroyed all the same
}

TEST_F(CApi, UnwritableTraceFileIsAnErrorAtCreate) {
  setenv("BBMM_TRACE", "/nonexistent-bbmm-dir/trace.json", 1);
  setenv("BBMM_BACKEND", "host", 1);
  bbmm_runtime* rt = nullptr;
  EXPECT_EQ(bbmm_runtime_create(nullptr, &rt), BBMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(rt, nullptr);
  EXPECT_TRUE(mentions(last(), "/nonexistent-bbmm-dir/trace.json")) << last();
  EXPECT_TRUE(mentions(last(), "BBMM_TRACE")) << last();
  EXPECT_TRUE(mentions(last(), "No such file")) << last();
}

}  // namespace
