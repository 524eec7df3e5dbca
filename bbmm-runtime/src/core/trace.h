// Chrome/Perfetto trace of copies, kernels and evictions (BBMM_TRACE=file.json).
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace bbmm {

class Tracer {
 public:
  // Starts a trace that `close` (or the destructor) writes to `path`.
  explicit Tracer(std::string path);
  // Writes to `path` instead (a run over several ranks: one file per rank).
  void set_path(std::string path) { path_ = std::move(path); }
  ~Tracer();

  // Microseconds since the tracer was created, for slice timestamps.
  int64_t now_us() const;

  // One complete slice ("ph":"X") on the track of `device` (kHost = -1 is the
  // host/manager track): `name` (e.g. "copy H2D", "kernel", "evict") from
  // `start_us` lasting `duration_us`, with `args_json` the body of a JSON
  // object (e.g. "\"array\":\"A\",\"box\":\"[0,4)x[0,8)\""), may be empty.
  void slice(int device, std::string_view name, int64_t start_us, int64_t duration_us,
             std::string_view args_json);

  // Writes the JSON file; later slices are dropped. Idempotent.
  absl::Status close();

  // What the operations the calling thread issues next are for, as JSON
  // object members (e.g. "\"array\":\"A\",\"box\":\"[0,4)x[0,8)\""): the
  // runtime core sets it around each copy and launch, and a backend adds it to
  // the args of the slices of operations it enqueues meanwhile. Empty outside
  // a Label's scope.
  class Label {
   public:
    explicit Label(std::string args);
    ~Label();
    Label(const Label&) = delete;
    Label& operator=(const Label&) = delete;

   private:
    std::string saved_;
  };
  static const std::string& current_label();

 private:
  struct Slice {
    int device;
    std::string name;
    int64_t start_us;
    int64_t duration_us;
    std::string args_json;
  };
  std::string path_;
  int64_t origin_ns_;
  std::mutex mu_;
  std::vector<Slice> slices_;
  bool closed_ = false;
};

// Escapes `s` for use inside a JSON string.
std::string json_escape(std::string_view s);

}  // namespace bbmm
