#include "core/trace.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"

namespace bbmm {
namespace {

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Chrome's trace viewer draws one row per (pid, tid); the host/manager track is
// tid 0 and device d is tid d + 1, so the host is always the top row.
int track_of(int device) { return device < 0 ? 0 : device + 1; }

void append_thread_name(std::string& out, int tid, std::string_view name) {
  absl::StrAppend(&out, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":", tid,
                  ",\"args\":{\"name\":\"", json_escape(name), "\"}},\n");
  // Without a sort index the viewer orders rows by first appearance.
  absl::StrAppend(&out, "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":", tid,
                  ",\"args\":{\"sort_index\":", tid, "}},\n");
}

// ErrnoToStatus maps 0 to OK, but a short write may leave errno unset.
absl::Status io_error(int error_number, const std::string& message) {
  if (error_number == 0) return absl::UnknownError(message);
  return absl::ErrnoToStatus(error_number, message);
}

}  // namespace

Tracer::Tracer(std::string path) : path_(std::move(path)), origin_ns_(steady_now_ns()) {}

// The destructor cannot report a failed write; callers that care call close()
// first and look at its status.
Tracer::~Tracer() { (void)close(); }

int64_t Tracer::now_us() const { return (steady_now_ns() - origin_ns_) / 1000; }

void Tracer::slice(int device, std::string_view name, int64_t start_us, int64_t duration_us,
                   std::string_view args_json) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return;
  slices_.push_back(Slice{device, std::string(name), start_us, std::max<int64_t>(duration_us, 0),
                          std::string(args_json)});
}

absl::Status Tracer::close() {
  std::vector<Slice> slices;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return absl::OkStatus();
    closed_ = true;
    slices.swap(slices_);
  }
  // Slices arrive in completion order from several threads; sorting makes the
  // file deterministic for a given set of slices.
  std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
    if (a.start_us != b.start_us) return a.start_us < b.start_us;
    return track_of(a.device) < track_of(b.device);
  });
  int max_device = -1;
  for (const Slice& s : slices) max_device = std::max(max_device, s.device);

  std::string out = "{\"traceEvents\":[\n";
  absl::StrAppend(&out,
                  "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
                  "\"args\":{\"name\":\"bbmm\"}},\n");
  append_thread_name(out, 0, "host");
  for (int d = 0; d <= max_device; ++d) {
    append_thread_name(out, track_of(d), absl::StrCat("device ", d));
  }
  for (const Slice& s : slices) {
    absl::StrAppend(&out, "{\"name\":\"", json_escape(s.name),
                    "\",\"cat\":\"bbmm\",\"ph\":\"X\",\"pid\":1,\"tid\":", track_of(s.device),
                    ",\"ts\":", s.start_us, ",\"dur\":", s.duration_us, ",\"args\":{", s.args_json,
                    "}},\n");
  }
  // Every event above ends in ",\n"; JSON forbids the trailing comma.
  out.resize(out.size() - 2);
  out += "\n]}\n";

  errno = 0;
  std::FILE* f = std::fopen(path_.c_str(), "wb");
  if (f == nullptr) {
    return io_error(errno, absl::StrCat("trace: cannot open '", path_, "' for writing"));
  }
  size_t written = std::fwrite(out.data(), 1, out.size(), f);
  int write_errno = errno;
  bool write_ok = written == out.size();
  bool close_ok = std::fclose(f) == 0;
  if (!write_ok || !close_ok) {
    return io_error(write_ok ? errno : write_errno,
                    absl::StrCat("trace: cannot write '", path_, "'"));
  }
  return absl::OkStatus();
}

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[(c >> 4) & 0xf];
          out += kHex[c & 0xf];
        } else {
          // Bytes >= 0x80 pass through: names are UTF-8 and JSON allows it raw.
          out += c;
        }
    }
  }
  return out;
}

namespace {
thread_local std::string g_trace_label;
}  // namespace

Tracer::Label::Label(std::string args) : saved_(std::move(g_trace_label)) {
  g_trace_label = std::move(args);
}

Tracer::Label::~Label() { g_trace_label = std::move(saved_); }

const std::string& Tracer::current_label() { return g_trace_label; }

}  // namespace bbmm
