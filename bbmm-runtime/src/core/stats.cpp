// Statistics of the runtime core: per device, in total, as a table and JSON.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/runtime_core.h"

namespace bbmm::detail {
namespace {

// Every integer counter of bbmm_stats, in print order.
struct Field {
  const char* name;
  uint64_t bbmm_stats::*member;
};
constexpr Field kFields[] = {
    {"bytes_allocated", &bbmm_stats::bytes_allocated},
    {"peak_bytes_allocated", &bbmm_stats::peak_bytes_allocated},
    {"instances", &bbmm_stats::instances},
    {"reservations", &bbmm_stats::reservations},
    {"bytes_reserved", &bbmm_stats::bytes_reserved},
    {"hits_exact", &bbmm_stats::hits_exact},
    {"hits_contained", &bbmm_stats::hits_contained},
    {"hits_grown", &bbmm_stats::hits_grown},
    {"misses", &bbmm_stats::misses},
    {"pieces", &bbmm_stats::pieces},
    {"multi_piece_views", &bbmm_stats::multi_piece_views},
    {"evictions", &bbmm_stats::evictions},
    {"bytes_evicted", &bbmm_stats::bytes_evicted},
    {"writebacks", &bbmm_stats::writebacks},
    {"bytes_written_back", &bbmm_stats::bytes_written_back},
    {"bytes_h2d", &bbmm_stats::bytes_h2d},
    {"bytes_d2h", &bbmm_stats::bytes_d2h},
    {"bytes_d2d", &bbmm_stats::bytes_d2d},
    {"bytes_peer", &bbmm_stats::bytes_peer},
    {"copies", &bbmm_stats::copies},
    {"boxes_copied", &bbmm_stats::boxes_copied},
    {"kernels", &bbmm_stats::kernels},
    {"tiles", &bbmm_stats::tiles},
    {"planned_tiles", &bbmm_stats::planned_tiles},
    {"bytes_host_pinned", &bbmm_stats::bytes_host_pinned},
    {"bytes_sent_ranks", &bbmm_stats::bytes_sent_ranks},
    {"bytes_received_ranks", &bbmm_stats::bytes_received_ranks},
    {"bytes_sent_from_devices", &bbmm_stats::bytes_sent_from_devices},
    {"host_tiles", &bbmm_stats::host_tiles},
};
struct SecondsField {
  const char* name;
  double bbmm_stats::*member;
};
constexpr SecondsField kSeconds[] = {
    {"manager_seconds", &bbmm_stats::manager_seconds},
    {"host_pin_seconds", &bbmm_stats::host_pin_seconds},
    {"reserve_seconds", &bbmm_stats::reserve_seconds},
    {"host_unpin_seconds", &bbmm_stats::host_unpin_seconds},
    {"host_tile_seconds", &bbmm_stats::host_tile_seconds},
    {"create_seconds", &bbmm_stats::create_seconds},
};

}  // namespace

bbmm_stats RuntimeCore::stats(int device) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto of = [&](int d) {
    bbmm_stats s = stats_[d];
    const TransferCounters& c = backend_->counters(d);
    s.bytes_h2d = c.bytes_h2d;
    s.bytes_d2h = c.bytes_d2h;
    s.bytes_d2d = c.bytes_d2d;
    s.bytes_peer = c.bytes_peer;
    s.copies = c.copies;
    s.boxes_copied = c.boxes;
    s.kernels = c.kernels;
    return s;
  };
  if (device >= 0) return device < device_count() ? of(device) : bbmm_stats{};
  bbmm_stats total = {};
  for (int d = 0; d < device_count(); ++d) {
    const bbmm_stats s = of(d);
    for (const Field& f : kFields) total.*f.member += s.*f.member;
    for (const SecondsField& f : kSeconds) total.*f.member += s.*f.member;
  }
  // The runtime's own counters, not a device's.
  total.bytes_host_pinned = bytes_host_pinned_;
  total.host_pin_seconds = host_pin_seconds_;
  total.host_unpin_seconds = host_unpin_seconds_;
  total.create_seconds = create_seconds_;
  total.bytes_sent_ranks = bytes_sent_ranks_;
  total.bytes_received_ranks = bytes_received_ranks_;
  total.bytes_sent_from_devices = bytes_sent_from_devices_;
  // Host tiles (BBMM_DEVICE_HOST): the calling threads' time in their calls too.
  total.host_tiles = host_stats_.tiles;
  total.host_tile_seconds = host_tile_seconds_;
  total.manager_seconds += host_stats_.manager_seconds;
  return total;
}

std::string RuntimeCore::creation_report() const {
  std::string r = backend_->creation_report();
  if (warm_up_wait_seconds_ > 0) {
    r = absl::StrFormat("waiting for bbmm_warm_up %.3f s%s%s", warm_up_wait_seconds_,
                        r.empty() ? "" : ", ", r);
  }
  return r;
}

std::string RuntimeCore::stats_table() const {
  std::vector<bbmm_stats> cols;
  for (int d = 0; d < device_count(); ++d) cols.push_back(stats(d));
  cols.push_back(stats(-1));
  std::string out = absl::StrFormat("%-22s", "counter");
  for (int d = 0; d < device_count(); ++d) absl::StrAppendFormat(&out, " %14s", absl::StrCat("dev", d));
  absl::StrAppendFormat(&out, " %14s\n", "total");
  for (const Field& f : kFields) {
    absl::StrAppendFormat(&out, "%-22s", f.name);
    for (const bbmm_stats& s : cols) absl::StrAppendFormat(&out, " %14u", s.*f.member);
    out += "\n";
  }
  for (const SecondsField& f : kSeconds) {
    absl::StrAppendFormat(&out, "%-22s", f.name);
    for (const bbmm_stats& s : cols) absl::StrAppendFormat(&out, " %14.6f", s.*f.member);
    out += "\n";
  }
  if (const std::string r = creation_report(); !r.empty()) {
    absl::StrAppend(&out, "created: ", r, "\n");
  }
  return out;
}

std::string RuntimeCore::stats_json() const {
  auto one = [](const bbmm_stats& s) {
    std::string o = "{";
    for (const Field& f : kFields) absl::StrAppend(&o, "\"", f.name, "\":", s.*f.member, ",");
    for (size_t k = 0; k < std::size(kSeconds); ++k) {
      absl::StrAppend(&o, k > 0 ? "," : "", "\"", kSeconds[k].name, "\":",
                      absl::StrFormat("%.9f", s.*kSeconds[k].member));
    }
    return o + "}";
  };
  std::string out = absl::StrCat("{\"backend\":\"", json_escape(backend_->name()),
                                 "\",\"devices\":[");
  for (int d = 0; d < device_count(); ++d) {
    if (d > 0) out += ",";
    out += one(stats(d));
  }
  absl::StrAppend(&out, "],\"total\":", one(stats(-1)), ",\"created\":\"",
                  json_escape(creation_report()), "\"}");
  return out;
}

}  // namespace bbmm::detail
