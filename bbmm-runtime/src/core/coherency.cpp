#include "core/coherency.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "bbmm/box_set.h"
#include "core/slow_calls.h"

namespace bbmm::detail {

absl::Status Coherency::flush_and_apply() {
  std::optional<SlowScope> slow(std::in_place, "coherency: queueing copies (hazards, backend)");
  absl::Status s = planner_.flush();
  slow.emplace("coherency: directory updates after queueing copies");
  if (s.ok()) {
    for (const Update& u : updates_) u.array->directory.add(u.box, u.bits);
  }
  updates_.clear();
  return s;
}

absl::Status Coherency::read_in(std::span<const Target> targets) {
  for (const Target& t : targets) {
    Instance& dst = *t.inst;
    Array& a = *dst.array;
    const int d = dst.device;
    const HolderMask mine = device_bit(d);
    if (a.directory.all_valid(t.box, mine)) continue;  // the hit path: nothing to copy
    // Copies go per region: merged first, so that regions the directory has not
    // merged yet (it merges lazily) do not split them. A copy of the regions:
    // write_back below updates the directory.
    a.directory.compact();
    std::vector<Directory::Region> regions = a.directory.query(t.box);
    for (const Directory::Region& g : regions) {
      if (g.valid & mine) continue;
      // From a device that holds it, unless the host holds it too, ready, while that
      // device's copy is still being written (typically its own read-in from the host at
      // the start): then from the host, so that this read-in does not wait for the other
      // device's. (A host copy still being written back is not ready: then the peer.) Not
      // when the host's copies are staged (Backend::host_copies_staged): they share the
      // host's copier threads, so every device reading the same box from the host at once
      // (gemm's B on 4 GPUs: 4 x 128 MB) is slower than one read-in and peer copies
      // behind it.
      const bool host_ready = (g.valid & kHostBit) && !a.host_hazards.writes_in_flight(g.box);
      int peer = -1;
      for (int e = 0; e < device_count() && peer < 0; ++e) {
        if (e != d && (g.valid & device_bit(e)) && backend_.can_access_peer(d, e) &&
            !(host_ready && being_written(a, e, g.box) && !backend_.host_copies_staged(a.host))) {
          peer = e;
        }
      }
      absl::Status s;
      if (peer >= 0) {
        a.for_each_overlapping(peer, g.box, [&](Instance* src) {
          if (s.ok()) s = planner_.add(Place::of(dst), Place::of(*src), *intersection(g.box, src->box));
        });
      } else {
        // Only the host, or devices this one cannot reach, hold it: through
        // the host.
        if (!(g.valid & kHostBit)) s = write_back(a, g.box);
        if (s.ok()) s = planner_.add(Place::of(dst), Place::host(a), g.box);
      }
      if (!s.ok()) {
        updates_.clear();
        return s;
      }
      updates_.push_back(Update{&a, g.box, mine});
    }
  }
  return flush_and_apply();
}

bool Coherency::being_written(Array& a, int device, const Box& box) const {
  bool pending = false;
  a.for_each_overlapping(device, box, [&](Instance* src) {
    pending = pending || src->hazards.writes_in_flight(box);
  });
  return pending;
}

absl::Status Coherency::write_back(Array& a, const Box& box) {
  absl::Status s;
  a.directory.compact();  // one copy per merged region (see read_in)
  a.directory.for_each(box, [&](const Directory::Region& g) {
    if (!s.ok() || (g.valid & kHostBit)) return;
    int from = -1;
    for (int e = 0; e < device_count() && from < 0; ++e) {
      if (g.valid & device_bit(e)) from = e;
    }
    if (from < 0) {
      s = absl::InternalError(absl::StrCat("coherency: array '", a.name, "' box ",
                                           g.box.to_string(), " has no valid copy"));
      return;
    }
    a.for_each_overlapping(from, g.box, [&](Instance* src) {
      if (!s.ok()) return;
      const Box part = *intersection(g.box, src->box);
      s = planner_.add(Place::host(a), Place::of(*src), part);
      stats_[from].writebacks++;
      stats_[from].bytes_written_back += part.volume() * a.elem_size;
    });
    updates_.push_back(Update{&a, g.box, kHostBit});
  });
  if (!s.ok()) {
    updates_.clear();
    return s;
  }
  return flush_and_apply();
}

absl::Status Coherency::save_sole_copies(Instance& inst) {
  Array& a = *inst.array;
  if (a.read_only) return absl::OkStatus();
  const HolderMask mine = device_bit(inst.device);
  absl::Status s;
  a.directory.compact();  // one copy per merged region (see read_in)
  a.directory.for_each(inst.box, [&](const Directory::Region& g) {
    if (!s.ok() || (g.valid & ~mine) != 0) return;  // another copy stays valid
    s = planner_.add(Place::host(a), Place::of(inst), g.box);
    stats_[inst.device].writebacks++;
    stats_[inst.device].bytes_written_back += g.box.volume() * a.elem_size;
    updates_.push_back(Update{&a, g.box, kHostBit});
  });
  if (!s.ok()) {
    updates_.clear();
    return s;
  }
  return flush_and_apply();
}

absl::Status Coherency::flow_out(Array& a, int device, const Box& box, bool to_host) {
  std::optional<SlowScope> slow(std::in_place, "flow_out: finding the copies (directory, instances)");
  const int d = device;
  const HolderMask mine = device_bit(d);
  absl::Status s;
  bool unreachable = false;  // some device cannot read this one's memory
  for (int e = 0; e < device_count(); ++e) {
    if (e == d) continue;
    if (!backend_.can_access_peer(e, d)) unreachable = true;
    const HolderMask theirs = device_bit(e);
    a.for_each_overlapping(e, box, [&](Instance* dst) {
      // Only where that device's tiles read and write (Instance::used).
      if (!overlaps(box, dst->used)) return;
      const Box part = *intersection(box, dst->used);
      a.directory.for_each(part, [&](const Directory::Region& g) {
        if (!s.ok() || !(g.valid & mine) || (g.valid & theirs)) return;
        a.for_each_overlapping(d, g.box, [&](Instance* src) {
          if (!s.ok()) return;
          const Box piece = *intersection(g.box, src->box);
          if (backend_.can_access_peer(e, d)) {
            s = planner_.add(Place::of(*dst), Place::of(*src), piece);
          } else {
            // The devices cannot reach each other: through the host, which
            // then holds a valid copy too (the planner orders the two).
            s = planner_.add(Place::host(a), Place::of(*src), piece);
            if (s.ok()) s = planner_.add(Place::of(*dst), Place::host(a), piece);
            updates_.push_back(Update{&a, piece, kHostBit});
          }
          updates_.push_back(Update{&a, piece, theirs});
        });
      });
    });
  }
  if (s.ok() && (unreachable || to_host)) {
    // Readers on devices that cannot reach this one, or on other ranks, go
    // through the host: push there what no other device holds, now, under the
    // compute.
    BoxSet to_host(box.rank());
    to_host.append_unchecked(box);
    for (int e = 0; e < device_count(); ++e) {
      if (e == d) continue;
      a.for_each_overlapping(e, box, [&](Instance* dst) {
        if (!dst->used.empty()) (void)to_host.remove(dst->used);
      });
    }
    for (size_t i = 0; i < to_host.size() && s.ok(); ++i) {
      a.directory.for_each(to_host[i], [&](const Directory::Region& g) {
        if (!s.ok() || !(g.valid & mine) || (g.valid & kHostBit)) return;
        a.for_each_overlapping(d, g.box, [&](Instance* src) {
          if (!s.ok()) return;
          const Box piece = *intersection(g.box, src->box);
          s = planner_.add(Place::host(a), Place::of(*src), piece);
          updates_.push_back(Update{&a, piece, kHostBit});
        });
      });
    }
  }
  if (!s.ok()) {
    updates_.clear();
    return s;
  }
  slow.reset();
  return flush_and_apply();
}

}  // namespace bbmm::detail
