// The public C++ API (bbmm/runtime.h): thin handles over RuntimeCore.
#include "bbmm/runtime.h"

#include <chrono>
#include <cstdio>

#include "api/backend_factory.h"
#include "api/warm_up.h"
#include "core/runtime_core.h"

namespace bbmm {

Tile::Tile(Tile&& other) noexcept : state_(other.state_), generation_(other.generation_) {
  other.state_ = nullptr;
}

Tile& Tile::operator=(Tile&& other) noexcept {
  if (this != &other) {
    if (state_ != nullptr && state_->generation.load(std::memory_order_relaxed) == generation_) {
      (void)state_->core->release(*state_);
    }
    state_ = other.state_;
    generation_ = other.generation_;
    other.state_ = nullptr;
  }
  return *this;
}

Tile::~Tile() {
  if (state_ != nullptr && state_->generation.load(std::memory_order_relaxed) == generation_) {
    (void)state_->core->release(*state_);
  }
}

int Tile::device() const { return state_ == nullptr ? -1 : state_->device; }

// Each call checks the handle first (a moved-from or released handle is an
// error, not a crash).
#define BBMM_TILE_CHECK(what)                                                           \
  do {                                                                                  \
    if (state_ == nullptr) {                                                            \
      return absl::FailedPreconditionError(what ": empty tile handle (moved from)");    \
    }                                                                                   \
    absl::Status bbmm_s_ = state_->core->check_handle(state_, generation_, what);       \
    if (!bbmm_s_.ok()) return bbmm_s_;                                                  \
  } while (0)

absl::Status Tile::require(Array* array, const Box& box, Access access) {
  BBMM_TILE_CHECK("require");
  return state_->core->require(*state_, array, box, access);
}

absl::Status Tile::acquire() {
  BBMM_TILE_CHECK("acquire");
  return state_->core->acquire(*state_);
}

absl::StatusOr<bbmm_view> Tile::view(Array* array) const {
  BBMM_TILE_CHECK("view");
  return state_->core->view(*state_, array);
}

absl::Status Tile::launch(std::function<void(const bbmm_launch_info&)> fn) {
  BBMM_TILE_CHECK("launch");
  return state_->core->launch(*state_, std::move(fn));
}

absl::Status Tile::flow_out(Array* array, const Box& box) {
  BBMM_TILE_CHECK("flow_out");
  return state_->core->flow_out(*state_, array, box);
}

absl::Status Tile::release() {
  BBMM_TILE_CHECK("release");
  return state_->core->release(*state_);
}

#undef BBMM_TILE_CHECK

Runtime::Runtime(std::unique_ptr<detail::RuntimeCore> core) : core_(std::move(core)) {}

Runtime::~Runtime() {
  absl::Status s = core_->shutdown();
  if (!s.ok()) std::fprintf(stderr, "bbmm: %s\n", std::string(s.message()).c_str());
}

absl::Status Runtime::shutdown() { return core_->shutdown(); }

absl::StatusOr<std::unique_ptr<Runtime>> Runtime::create(const RuntimeOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const double waited = detail::finish_warm_up();  // bbmm_warm_up's thread, if any
  absl::StatusOr<std::unique_ptr<Backend>> backend = detail::make_backend(options);
  if (!backend.ok()) return backend.status();
  absl::StatusOr<std::unique_ptr<Runtime>> rt = create_with_backend(*std::move(backend), options);
  if (rt.ok()) {
    (*rt)->core_->set_create_seconds(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), waited);
  }
  return rt;
}

absl::StatusOr<std::unique_ptr<Runtime>> Runtime::create_with_backend(
    std::unique_ptr<Backend> backend, const RuntimeOptions& options) {
  absl::StatusOr<std::unique_ptr<detail::RuntimeCore>> core =
      detail::RuntimeCore::create(std::move(backend), options);
  if (!core.ok()) return core.status();
  return std::unique_ptr<Runtime>(new Runtime(*std::move(core)));
}

int Runtime::device_count() const { return core_->device_count(); }

size_t Runtime::device_memory(int device) const {
  if (device < 0 || device >= core_->device_count()) return 0;
  return core_->device_memory(device);
}

std::string Runtime::backend_name() const { return core_->backend().name(); }

absl::StatusOr<Array*> Runtime::register_array(std::string name, void* host, size_t elem_size,
                                               std::span<const int64_t> extents,
                                               std::span<const int64_t> strides,
                                               bool read_only) {
  return core_->register_array(std::move(name), host, elem_size, extents, strides, read_only);
}

absl::Status Runtime::unregister_array(Array* array) { return core_->unregister_array(array); }

absl::Status Runtime::reserve(int device, Array* array, const Box& box) {
  return core_->reserve(device, array, box);
}

absl::StatusOr<Tile> Runtime::begin_tile(int device) {
  absl::StatusOr<detail::TileState*> state = core_->begin_tile(device);
  if (!state.ok()) return state.status();
  return Tile(*state, (*state)->generation.load(std::memory_order_relaxed));
}

absl::Status Runtime::write_back(Array* array) { return core_->write_back(array); }
absl::Status Runtime::discard(Array* array) { return core_->discard(array); }
absl::Status Runtime::sync_to_host(Array* array) { return core_->sync_to_host(array); }

absl::Status Runtime::synchronize() { return core_->synchronize(); }

absl::Status Runtime::phase_boundary() { return core_->phase_boundary(); }

bbmm_stats Runtime::stats(int device) const { return core_->stats(device); }

std::string Runtime::stats_table() const { return core_->stats_table(); }

std::string Runtime::stats_json() const { return core_->stats_json(); }

}  // namespace bbmm
