// The public C++ API (bbmm/runtime.h): thin RAII wrappers over RuntimeCore.
#include "bbmm/runtime.h"

#include "core/backend_factory.h"
#include "core/runtime_core.h"

namespace bbmm {

Tile::Tile(std::unique_ptr<detail::TileState> state) : state_(std::move(state)) {}

Tile::~Tile() {
  if (state_ != nullptr && !state_->released) (void)state_->core->release(*state_);
}

int Tile::device() const { return state_->device; }

absl::Status Tile::require(Array* array, const Box& box, Access access) {
  return state_->core->require(*state_, array, box, access);
}

absl::Status Tile::acquire() { return state_->core->acquire(*state_); }

absl::StatusOr<bbmm_view> Tile::view(Array* array) const {
  return state_->core->view(*state_, array);
}

absl::Status Tile::launch(std::function<void(const bbmm_launch_info&)> fn) {
  return state_->core->launch(*state_, std::move(fn));
}

absl::Status Tile::flow_out(Array* array, const Box& box) {
  return state_->core->flow_out(*state_, array, box);
}

absl::Status Tile::release() { return state_->core->release(*state_); }

Runtime::Runtime(std::unique_ptr<detail::RuntimeCore> core) : core_(std::move(core)) {}

Runtime::~Runtime() = default;

absl::StatusOr<std::unique_ptr<Runtime>> Runtime::create(const RuntimeOptions& options) {
  absl::StatusOr<std::unique_ptr<Backend>> backend = detail::make_backend(options);
  if (!backend.ok()) return backend.status();
  return create_with_backend(*std::move(backend), options);
}

absl::StatusOr<std::unique_ptr<Runtime>> Runtime::create_with_backend(
    std::unique_ptr<Backend> backend, const RuntimeOptions& options) {
  absl::StatusOr<std::unique_ptr<detail::RuntimeCore>> core =
      detail::RuntimeCore::create(std::move(backend), options);
  if (!core.ok()) return core.status();
  return std::unique_ptr<Runtime>(new Runtime(*std::move(core)));
}

int Runtime::device_count() const { return core_->device_count(); }

std::string Runtime::backend_name() const { return core_->backend().name(); }

absl::StatusOr<Array*> Runtime::register_array(std::string name, void* host, size_t elem_size,
                                               std::span<const int64_t> extents,
                                               std::span<const int64_t> strides,
                                               bool read_only) {
  return core_->register_array(std::move(name), host, elem_size, extents, strides, read_only);
}

absl::Status Runtime::unregister_array(Array* array) { return core_->unregister_array(array); }

absl::StatusOr<std::unique_ptr<Tile>> Runtime::begin_tile(int device) {
  absl::StatusOr<std::unique_ptr<detail::TileState>> state = core_->begin_tile(device);
  if (!state.ok()) return state.status();
  return std::unique_ptr<Tile>(new Tile(*std::move(state)));
}

absl::Status Runtime::sync_to_host(Array* array) { return core_->sync_to_host(array); }

absl::Status Runtime::synchronize() { return core_->synchronize(); }

bbmm_stats Runtime::stats(int device) const { return core_->stats(device); }

std::string Runtime::stats_table() const { return core_->stats_table(); }

std::string Runtime::stats_json() const { return core_->stats_json(); }

}  // namespace bbmm
