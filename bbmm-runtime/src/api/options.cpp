// Runtime options from the environment, and byte-count parsing.
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bbmm/runtime.h"

namespace bbmm {

absl::StatusOr<uint64_t> parse_bytes(std::string_view text_in) {
  // Debian's Abseil has its own string_view type.
  const absl::string_view text(text_in.data(), text_in.size());
  absl::string_view t = absl::StripAsciiWhitespace(text);
  size_t i = 0;
  while (i < t.size() && (absl::ascii_isdigit(t[i]) || t[i] == '.')) ++i;
  double number = 0;
  if (i == 0 || !absl::SimpleAtod(t.substr(0, i), &number)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a byte count (examples: 4096, 64KiB, 512MiB, 2GiB)"));
  }
  std::string unit = absl::AsciiStrToLower(absl::StripAsciiWhitespace(t.substr(i)));
  struct Unit {
    const char* name;
    double factor;
  };
  static constexpr Unit kUnits[] = {
      {"", 1},          {"b", 1},
      {"k", 1024.0},    {"kib", 1024.0},    {"kb", 1e3},
      {"m", 1048576.0}, {"mib", 1048576.0}, {"mb", 1e6},
      {"g", 1073741824.0}, {"gib", 1073741824.0}, {"gb", 1e9},
      {"t", 1099511627776.0}, {"tib", 1099511627776.0}, {"tb", 1e12},
  };
  for (const Unit& u : kUnits) {
    if (unit == u.name) {
      const double bytes = std::floor(number * u.factor);
      if (bytes > 1.8e19) return absl::InvalidArgumentError(absl::StrCat("'", text, "' is too large"));
      return static_cast<uint64_t>(bytes);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("'", text, "': unknown unit '", unit,
                                                 "' (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"));
}

namespace {

// Sets `*out` from the on/off variable `name` (1/on/true/yes, 0/off/false/no) when it is
// set and not empty.
absl::Status env_flag(const char* name, bool* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return absl::OkStatus();
  const std::string s = absl::AsciiStrToLower(v);
  if (s == "1" || s == "on" || s == "true" || s == "yes") {
    *out = true;
  } else if (s == "0" || s == "off" || s == "false" || s == "no") {
    *out = false;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(name, "='", v, "': use 0 or 1"));
  }
  return absl::OkStatus();
}

// Sets `*out` from the integer variable `name` when it is set and not empty: lo..hi, else
// an error "NAME='v': expected lo..hi" followed by `note`.
absl::Status env_int(const char* name, int lo, int hi, const char* note, int* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return absl::OkStatus();
  int n = 0;
  if (!absl::SimpleAtoi(v, &n) || n < lo || n > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "='", v, "': expected ", lo, "..", hi, note));
  }
  *out = n;
  return absl::OkStatus();
}

// Sets `*out` from the variable `name` when it is set and not empty: one of
// `choices`' names (any case), else an error listing `hint`.
template <typename E>
absl::Status env_choice(const char* name, std::initializer_list<std::pair<const char*, E>> choices,
                        const char* hint, E* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return absl::OkStatus();
  const std::string s = absl::AsciiStrToLower(v);
  for (const auto& [choice, value] : choices) {
    if (s == choice) {
      *out = value;
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(name, "='", v, "': use ", hint));
}

}  // namespace

absl::StatusOr<RuntimeOptions> RuntimeOptions::from_env() {
  RuntimeOptions o;
  if (absl::Status s = env_choice("BBMM_BACKEND",
                                   {std::pair{"auto", BBMM_BACKEND_AUTO},
                                    std::pair{"host", BBMM_BACKEND_HOST},
                                    std::pair{"cuda", BBMM_BACKEND_CUDA},
                                    std::pair{"opencl", BBMM_BACKEND_OPENCL}},
                                   "host, cuda, opencl or auto", &o.backend);
      !s.ok()) {
    return s;
  }
  if (const char* v = std::getenv("BBMM_DEVICES"); v != nullptr && *v != '\0') {
    if (!absl::SimpleAtoi(v, &o.devices) || o.devices < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("BBMM_DEVICES='", v, "': expected a positive device count"));
    }
  }
  if (const char* v = std::getenv("BBMM_DEVICE_MEMORY"); v != nullptr && *v != '\0') {
    absl::StatusOr<uint64_t> bytes = parse_bytes(v);
    if (!bytes.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("BBMM_DEVICE_MEMORY: ", bytes.status().message()));
    }
    o.device_memory = *bytes;
  }
  if (const char* v = std::getenv("BBMM_TRACE"); v != nullptr) o.trace_file = v;
  if (absl::Status s = env_flag("BBMM_CHECK", &o.check); !s.ok()) return s;
  if (absl::Status s = env_flag("BBMM_HOST_POISON", &o.host_poison); !s.ok()) return s;
  if (absl::Status s = env_flag("BBMM_PEER_ACCESS", &o.peer_access); !s.ok()) return s;
  if (absl::Status s = env_flag("BBMM_MERGE_COPIES", &o.merge_copies); !s.ok()) return s;
  if (absl::Status s = env_flag("BBMM_TILE_PLANS", &o.tile_plans); !s.ok()) return s;
  if (absl::Status s = env_int("BBMM_CUDA_DEVICES_PER_GPU", 1, 16, "", &o.cuda_devices_per_gpu);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = env_flag("BBMM_CUDA_COPY_KERNEL", &o.cuda_copy_kernel); !s.ok()) return s;
  if (absl::Status s = env_flag("BBMM_CUDA_PEER_COPY_KERNEL", &o.cuda_peer_copy_kernel); !s.ok()) {
    return s;
  }
  if (absl::Status s = env_flag("BBMM_CUDA_PEER_PUSH", &o.cuda_peer_push); !s.ok()) return s;
  if (absl::Status s = env_choice("BBMM_CUDA_HOST_COPIES",
                                   {std::pair{"auto", BBMM_HOST_COPIES_AUTO},
                                    std::pair{"pinned", BBMM_HOST_COPIES_PINNED},
                                    std::pair{"staged", BBMM_HOST_COPIES_STAGED}},
                                   "auto, pinned or staged", &o.cuda_host_copies);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = env_int("BBMM_CUDA_COPY_STREAMS", 1, 8, "", &o.cuda_copy_streams);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = env_int("BBMM_CUDA_STAGING_THREADS", 0, 64, " (0: the default)",
                               &o.cuda_staging_threads);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = env_choice("BBMM_WRITE_BACK",
                                   {std::pair{"auto", BBMM_WRITE_BACK_AUTO},
                                    std::pair{"eager", BBMM_WRITE_BACK_EAGER},
                                    std::pair{"lazy", BBMM_WRITE_BACK_LAZY}},
                                   "auto, eager or lazy", &o.write_back);
      !s.ok()) {
    return s;
  }
  return o;
}

}  // namespace bbmm
