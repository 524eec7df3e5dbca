// Host tiles (BBMM_DEVICE_HOST): a tile run by the calling thread on the
// program's own host arrays, for serial code that one GPU thread would run far
// slower than a CPU core (bbmmc's serial regions).
//
// Acquire makes every required box current in the host array: what devices
// hold newer is written back (every access: a written box may be written only
// in part), then it waits for the copies writing the host boxes (write-backs,
// flow-outs to the host) and, for written boxes, also for those still reading
// them (read-ins). The written boxes become the host's alone in the directory
// right away: device copies are stale from here on, and the next device tile
// reading them reads them in again after the host code has run (program
// order: the calling thread runs the kernel before it issues anything else).
// The views are the host arrays themselves, one piece each. Launch runs the
// kernel function on the calling thread, outside the core's lock.
#include <chrono>

#include "absl/strings/str_cat.h"
#include "core/runtime_core.h"

namespace bbmm::detail {

absl::Status RuntimeCore::acquire_host(TileState& tile) {
  std::vector<Event> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ManagerTimer timer(&host_stats_.manager_seconds, tracer_.get(), "acquire host tile");
    if (tile.phase != TileState::Phase::kOpen) {
      return absl::FailedPreconditionError("acquire: the tile was already acquired or released");
    }
    group_requirements(tile);
    if (options_.check) {
      if (absl::Status s = check_conflicts(tile); !s.ok()) return s;
    }
    for (const TileState::ArrayPart& part : tile.live_parts()) {
      Array& a = *part.array;
      // `all` holds the transient boxes too (group_requirements); which of
      // them the tile writes, by a sweep (hundreds of row boxes).
      boxes_of(part.all, piece_boxes_);
      boxes_of(part.write, set_boxes_);
      written_.assign(piece_boxes_.size(), 0);
      for_each_overlapping_pair(piece_boxes_, set_boxes_, pair_scratch_,
                                [&](size_t i, size_t) { written_[i] = 1; });
      for (size_t i = 0; i < piece_boxes_.size(); ++i) {
        const Box& b = piece_boxes_[i];
        if (!a.read_only) {
          if (absl::Status s = coherency_->write_back(a, b); !s.ok()) return s;
        }
        // Copies writing the host box; for written boxes, also those reading it.
        a.host_hazards.before(b, written_[i] != 0, pending);
      }
    }
    // The written boxes' values are the host's from now on.
    for (TileState::ArrayPart& part : tile.live_parts()) {
      for (size_t w = 0; w < part.write.size(); ++w) {
        part.array->directory.set(part.write[w], kHostBit);
        if (options_.check) {
          part.array->open_writes.push_back({kHostDevice, part.write[w], &tile});
          part.array->epoch_writes.push_back({kHostDevice, part.write[w], nullptr});
        }
      }
      // The view: the whole host array, one piece.
      const Array& a = *part.array;
      bbmm_piece p = {};
      for (int d = 0; d < a.rank(); ++d) {
        p.lo[d] = a.whole.lo(d);
        p.hi[d] = a.whole.hi(d);
        p.stride[d] = a.host_strides[d];
      }
      p.data = a.host;
      p.offset = 0;
      part.view.assign(1, p);
    }
    tile.phase = TileState::Phase::kAcquired;
  }
  // Outside the lock: other threads' tiles go on meanwhile.
  const auto start = std::chrono::steady_clock::now();
  absl::Status status;
  for (const Event& e : pending) {
    absl::Status s = e.wait();
    if (status.ok()) status = s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  host_stats_.manager_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat("acquire of a host tile: a copy to the host failed: ",
                                     status.message()));
  }
  return absl::OkStatus();
}

absl::Status RuntimeCore::launch_host(TileState& tile,
                                      std::function<void(const bbmm_launch_info&)> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (tile.phase != TileState::Phase::kAcquired) {
      return absl::FailedPreconditionError("launch: the tile is not acquired");
    }
  }
  const int64_t start_us = tracer_ != nullptr ? tracer_->now_us() : 0;
  const auto start = std::chrono::steady_clock::now();
  bbmm_launch_info info = {};
  info.device = kHostDevice;
  info.queue = nullptr;
  fn(info);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard<std::mutex> lock(mu_);
  host_tile_seconds_ += seconds;
  if (tracer_ != nullptr) {
    tracer_->slice(kHost, "host tile", start_us, tracer_->now_us() - start_us, "");
  }
  return absl::OkStatus();
}

}  // namespace bbmm::detail
