// RuntimeCore's exchanges with other ranks (a run over several hosts): a box
// of a registered array sent to or received from another rank through the
// transport (core/transport.h), staged through the host copy of the array.
#include <algorithm>
#include <bit>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/runtime_core.h"

namespace bbmm::detail {

absl::Status RuntimeCore::set_transport(std::unique_ptr<Transport> transport, bool global_tiles,
                                        bool gather_all) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!arrays_.empty() || transport_ != nullptr) {
    return absl::FailedPreconditionError(
        "set_transport: set it once, before the first array is registered");
  }
  if (transport == nullptr) return absl::InvalidArgumentError("set_transport: null transport");
  // BBMM_RANK_SENDS: "auto" (the default: from device memory where the transport
  // reads it) or "staged" (always through the host copies).
  bool from_devices = true;
  if (const char* v = std::getenv("BBMM_RANK_SENDS"); v != nullptr && *v != '\0') {
    const std::string mode = v;
    if (mode == "staged") {
      from_devices = false;
    } else if (mode != "auto") {
      return absl::InvalidArgumentError(absl::StrCat(
          "BBMM_RANK_SENDS='", mode, "': use 'auto' (send from device memory where the "
          "transport can) or 'staged' (through the host arrays)"));
    }
  }
  // Every rank's device count and least device memory (collectives: every
  // rank calls set_transport).
  size_t least = SIZE_MAX;
  for (int d = 0; d < device_count(); ++d) least = std::min(least, device_memory(d));
  absl::StatusOr<std::vector<int64_t>> counts = transport->all_gather(device_count());
  if (!counts.ok()) return counts.status();
  absl::StatusOr<std::vector<int64_t>> memories =
      transport->all_gather(static_cast<int64_t>(std::min<size_t>(least, INT64_MAX)));
  if (!memories.ok()) return memories.status();
  rank_first_device_.clear();
  rank_devices_.clear();
  int first = 0;
  global_memory_ = SIZE_MAX;
  for (size_t r = 0; r < counts->size(); ++r) {
    rank_first_device_.push_back(first);
    rank_devices_.push_back(static_cast<int>((*counts)[r]));
    first += static_cast<int>((*counts)[r]);
    global_memory_ = std::min(global_memory_, static_cast<size_t>((*memories)[r]));
  }
  sends_from_devices_ = from_devices && transport->sends_from_device_memory(backend_->kind());
  transport_ = std::move(transport);
  global_tiles_ = global_tiles;
  gather_all_ = gather_all;
  // One trace per rank: "t.json" becomes "t.rank1.json" on rank 1.
  if (tracer_ != nullptr && transport_->size() > 1) {
    std::string path = options_.trace_file;
    const size_t dot = path.rfind('.');
    const size_t slash = path.rfind('/');
    const std::string tag = absl::StrCat(".rank", transport_->rank());
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
      path.insert(dot, tag);
    } else {
      path += tag;
    }
    tracer_->set_path(std::move(path));
    // The shared name was only created to check that it can be written.
    std::error_code ec;
    if (std::filesystem::is_regular_file(options_.trace_file, ec) &&
        std::filesystem::file_size(options_.trace_file, ec) == 0) {
      std::filesystem::remove(options_.trace_file, ec);
    }
  }
  return absl::OkStatus();
}

int RuntimeCore::global_device_count() const {
  if (!global_tiles()) return device_count();
  return rank_first_device_.back() + rank_devices_.back();
}

size_t RuntimeCore::global_device_memory(int device) const {
  if (!global_tiles()) return device_memory(device);
  return device >= 0 && device < global_device_count() ? global_memory_ : 0;
}

namespace {
// The rank of global device `device` (valid) and its index there.
std::pair<int, int> owner_of(const std::vector<int>& first, int device) {
  int r = static_cast<int>(first.size()) - 1;
  while (first[r] > device) --r;
  return {r, device - first[r]};
}
// The tag of the runtime's own exchanges (tiles' reads, the gather): the
// largest every MPI allows; programs use smaller ones.
constexpr int kRuntimeTag = 32767;
}  // namespace

absl::StatusOr<TileState*> RuntimeCore::begin_global_tile(int device) {
  if (!global_tiles()) return begin_tile(device);
  if (device == kHostDevice) {
    // Every rank would have to run it on its own host copy, made current from
    // all ranks first: not built.
    if (rank_count() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "begin tile: host tiles (BBMM_DEVICE_HOST) do not run over several ranks (",
          rank_count(), " here); use a device"));
    }
    return begin_tile(device);
  }
  if (device < 0 || device >= global_device_count()) {
    return absl::InvalidArgumentError(absl::StrCat("begin tile: device ", device,
                                                   " is outside 0..", global_device_count() - 1,
                                                   " (the devices of all ranks)"));
  }
  const auto [owner, local] = owner_of(rank_first_device_, device);
  if (owner == rank()) return begin_tile(local);
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_down_) return absl::FailedPreconditionError("begin tile: the runtime was shut down");
  TileState* t = tiles_.take();
  t->open(0, owner);
  return t;
}

absl::Status RuntimeCore::reserve_global(int device, Array* array, const Box& box) {
  if (!global_tiles()) return reserve(device, array, box);
  if (device < 0 || device >= global_device_count()) {
    return absl::InvalidArgumentError(absl::StrCat("reserve: device ", device, " is outside 0..",
                                                   global_device_count() - 1));
  }
  const auto [owner, local] = owner_of(rank_first_device_, device);
  return owner == rank() ? reserve(local, array, box) : absl::OkStatus();
}

absl::Status RuntimeCore::exchange_for_tile(const TileState& tile, int owner) {
  const int me = rank();
  const HolderMask owner_bit = HolderMask{1} << owner;
  for (const TileState::Requirement& req : tile.requirements) {
    if (req.access == Access::kWrite) continue;
    Directory& rd = req.array->rank_directory;
    rank_moves_.clear();
    if (rd.all_valid(req.box, owner_bit)) continue;  // the owner holds it all
    rd.compact();  // one message per merged region, not per unmerged piece
    rd.for_each(req.box, [&](const Directory::Region& g) {
      if (!(g.valid & owner_bit)) rank_moves_.push_back({g.box, std::countr_zero(g.valid)});
    });
    for (const auto& [box, from] : rank_moves_) {  // from the lowest holder
      absl::Status s;
      if (me == owner) {
        s = receive_locked(req.array, box, from, kRuntimeTag);
      } else if (me == from) {
        s = send_locked(req.array, box, owner, kRuntimeTag);
      }
      if (!s.ok()) return s;
    }
    rd.add(req.box, owner_bit);
  }
  for (const TileState::Requirement& req : tile.requirements) {
    if (req.access == Access::kWrite || req.access == Access::kReadWrite) {
      req.array->rank_directory.set(req.box, owner_bit);
    }
  }
  return absl::OkStatus();
}

absl::Status RuntimeCore::gather(Array& array) {
  const int me = rank();
  const int roots = gather_all_ ? rank_count() : 1;
  for (int root = 0; root < roots; ++root) {
    const HolderMask bit = HolderMask{1} << root;
    rank_moves_.clear();
    array.rank_directory.compact();  // one message per merged region
    array.rank_directory.for_each(array.whole, [&](const Directory::Region& g) {
      if (!(g.valid & bit)) rank_moves_.push_back({g.box, std::countr_zero(g.valid)});
    });
    for (const auto& [box, from] : rank_moves_) {
      absl::Status s;
      if (me == root) {
        s = receive_locked(&array, box, from, kRuntimeTag);
      } else if (me == from) {
        s = send_locked(&array, box, root, kRuntimeTag);
      }
      if (!s.ok()) return s;
    }
    array.rank_directory.add(array.whole, bit);
  }
  return absl::OkStatus();
}

absl::StatusOr<HostArrayRef> RuntimeCore::host_ref(const Array& array, const Box& box,
                                                  const char* op) const {
  if (transport_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        op, " of array '", array.name, "': the runtime has no transport (one rank only)"));
  }
  if (box.rank() != array.whole.rank() || box.empty() || !is_subset(box, array.whole)) {
    return absl::InvalidArgumentError(absl::StrCat(op, " of array '", array.name, "' box ",
                                                   box.to_string(), ": empty or outside ",
                                                   array.whole.to_string()));
  }
  HostArrayRef ref;
  ref.name = array.name;
  ref.base = array.host;
  ref.elem_size = array.elem_size;
  const int r = array.whole.rank();
  int64_t dense = 1;
  for (int d = r - 1; d >= 0; --d) {
    if (array.host_strides[d] != dense) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, " of array '", array.name, "': the transport needs a dense row-major host array "
          "(dimension ", d, " has stride ", array.host_strides[d], ", dense is ", dense, ")"));
    }
    dense *= array.whole.extent(d);
  }
  for (int d = 0; d < r; ++d) ref.extents.push_back(array.whole.extent(d));
  return ref;
}

namespace {
// What send_box and receive_box (`op`: "send", "receive") accept from a program.
absl::Status check_explicit(const Array* array, int tag, bool global_tiles, const char* op) {
  if (array == nullptr) return absl::InvalidArgumentError(absl::StrCat(op, ": null array"));
  if (tag == kRuntimeTag) {
    return absl::InvalidArgumentError(absl::StrCat(op, " of array '", array->name, "': tag ",
                                                   tag, " is the runtime's own"));
  }
  if (global_tiles) {
    return absl::FailedPreconditionError(absl::StrCat(
        op, " of array '", array->name, "': with global tiles the runtime moves the data "
        "between ranks itself"));
  }
  return absl::OkStatus();
}
}  // namespace

absl::Status RuntimeCore::send_box(Array* array, const Box& box, int to, int tag) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = check_explicit(array, tag, global_tiles_, "send"); !s.ok()) return s;
  return send_locked(array, box, to, tag);
}

Instance* RuntimeCore::sole_device_source(const Array& array, const Box& box) const {
  if (!sends_from_devices_ || array.read_only || array.directory.all_valid(box, kHostBit)) {
    return nullptr;  // (the host copy is current: nothing to save)
  }
  Instance* found = nullptr;
  for (int d = 0; d < device_count() && found == nullptr; ++d) {
    if (!array.directory.all_valid(box, device_bit(d))) continue;
    array.for_each_overlapping(d, box, [&](Instance* inst) {
      if (found == nullptr && is_subset(box, inst->box)) found = inst;
    });
  }
  return found;
}

absl::Status RuntimeCore::send_from_instance(Instance& inst, const Box& box, int to, int tag) {
  const Array& array = *inst.array;
  // The instance's memory as a dense array of its padded rows.
  HostArrayRef ref;
  ref.name = array.name;
  ref.base = static_cast<char*>(inst.buffer.base) + inst.buffer.offset;
  ref.elem_size = array.elem_size;
  const int r = inst.box.rank();
  for (int d = 0; d < r; ++d) {
    ref.extents.push_back(d == 0 ? inst.box.extent(0) : inst.strides[d - 1] / inst.strides[d]);
  }
  int64_t lo[Box::kMaxRank], hi[Box::kMaxRank];
  for (int d = 0; d < r; ++d) {
    lo[d] = box.lo(d) - inst.box.lo(d);
    hi[d] = box.hi(d) - inst.box.lo(d);
  }
  const Box local = *Box::create(std::span<const int64_t>(lo, r), std::span<const int64_t>(hi, r));
  // After what writes the box there (its kernel, its read-in); what writes it
  // next, and the instance's free, wait for the send.
  waits_.clear();
  inst.hazards.before(box, /*write=*/false, waits_);
  absl::StatusOr<Event> sent = transport_->send(ref, local, to, tag, waits_);
  if (!sent.ok()) return sent.status();
  inst.hazards.after(box, /*write=*/false, *sent);
  const uint64_t bytes = static_cast<uint64_t>(box.volume()) * array.elem_size;
  bytes_sent_ranks_ += bytes;
  bytes_sent_from_devices_ += bytes;
  return absl::OkStatus();
}

absl::Status RuntimeCore::send_locked(Array* array, const Box& box, int to, int tag) {
  ManagerTimer timer(&stats_[0].manager_seconds, tracer_.get(), "send box");
  absl::StatusOr<HostArrayRef> ref = host_ref(*array, box, "send");  // (checks the box)
  if (!ref.ok()) return ref.status();
  // From the device instance holding all of it, where the transport reads it.
  if (Instance* src = sole_device_source(*array, box); src != nullptr) {
    return send_from_instance(*src, box, to, tag);
  }
  // The host copy of the box first: what only devices hold is written back.
  if (!array->read_only) {
    if (absl::Status s = coherency_->write_back(*array, box); !s.ok()) return s;
  }
  waits_.clear();
  array->host_hazards.before(box, /*write=*/false, waits_);
  absl::StatusOr<Event> sent = transport_->send(*ref, box, to, tag, waits_);
  if (!sent.ok()) return sent.status();
  array->host_hazards.after(box, /*write=*/false, *sent);
  bytes_sent_ranks_ += static_cast<uint64_t>(box.volume()) * array->elem_size;
  return absl::OkStatus();
}

absl::Status RuntimeCore::receive_box(Array* array, const Box& box, int from, int tag) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = check_explicit(array, tag, global_tiles_, "receive"); !s.ok()) return s;
  return receive_locked(array, box, from, tag);
}

absl::Status RuntimeCore::receive_locked(Array* array, const Box& box, int from, int tag) {
  ManagerTimer timer(&stats_[0].manager_seconds, tracer_.get(), "receive box");
  absl::StatusOr<HostArrayRef> ref = host_ref(*array, box, "receive");
  if (!ref.ok()) return ref.status();
  if (array->read_only) {
    return absl::InvalidArgumentError(absl::StrCat("receive of array '", array->name, "' box ",
                                                   box.to_string(), ": the array is read-only"));
  }
  waits_.clear();
  array->host_hazards.before(box, /*write=*/true, waits_);
  absl::StatusOr<Event> got = transport_->receive(*ref, box, from, tag, waits_);
  if (!got.ok()) return got.status();
  array->host_hazards.after(box, /*write=*/true, *got);
  // The received values are the array's: only the host holds them.
  array->directory.set(box, kHostBit);
  bytes_received_ranks_ += static_cast<uint64_t>(box.volume()) * array->elem_size;
  return absl::OkStatus();
}

}  // namespace bbmm::detail
