// The Chrome trace writer, and the slices the host backend records in it. The
// files are read back with a small strict JSON parser, so a stray comma or an
// unescaped quote fails the test.
#include "core/trace.h"

#include "bbmm/runtime.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "host/host_backend.h"

namespace bbmm {
namespace {

// ---------------------------------------------------------------------------
// A minimal strict JSON reader (RFC 8259 syntax; numbers kept as text).

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  std::string text;  // string value, or the number as written
  bool boolean = false;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  const Json* get(const std::string& key) const {
    for (const auto& [k, v] : members) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  std::string str(const std::string& key) const {
    const Json* v = get(key);
    return v != nullptr && v->kind == kString ? v->text : "<missing " + key + ">";
  }
  long long num(const std::string& key) const {
    const Json* v = get(key);
    return v != nullptr && v->kind == kNumber ? std::stoll(v->text) : -999999;
  }
};

class JsonReader {
 public:
  explicit JsonReader(std::string_view s) : s_(s) {}

  std::optional<Json> parse() {
    Json v;
    if (!value(v)) return std::nullopt;
    ws();
    if (pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) {
      ++pos_;
    }
  }
  bool eat(char c) {
    ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  bool string(std::string& out) {
    if (!eat('"')) return false;
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) return false;
      char e = s_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          if (pos_ + 4 > s_.size()) return false;
          unsigned code = 0;
          for (int i = 0; i < 4; ++i) {
            char h = s_[pos_++];
            code <<= 4;
            if (h >= '0' && h <= '9') {
              code |= h - '0';
            } else if (h >= 'a' && h <= 'f') {
              code |= h - 'a' + 10;
            } else if (h >= 'A' && h <= 'F') {
              code |= h - 'A' + 10;
            } else {
              return false;
            }
          }
          if (code >= 0x80) return false;  // the writer only escapes control bytes
          out += static_cast<char>(code);
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }
  bool number(std::string& out) {
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    size_t digits = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    if (pos_ == digits) return false;
    if (s_[digits] == '0' && pos_ - digits > 1) return false;  // no leading zeros
    out = std::string(s_.substr(start, pos_ - start));
    return true;
  }
  bool value(Json& v) {
    ws();
    if (pos_ >= s_.size()) return false;
    char c = s_[pos_];
    if (c == '{') {
      v.kind = Json::kObject;
      ++pos_;
      if (eat('}')) return true;
      do {
        std::string key;
        Json member;
        if (!string(key) || !eat(':') || !value(member)) return false;
        v.members.emplace_back(std::move(key), std::move(member));
      } while (eat(','));
      return eat('}');
    }
    if (c == '[') {
      v.kind = Json::kArray;
      ++pos_;
      if (eat(']')) return true;
      do {
        Json item;
        if (!value(item)) return false;
        v.items.push_back(std::move(item));
      } while (eat(','));
      return eat(']');
    }
    if (c == '"') {
      v.kind = Json::kString;
      return string(v.text);
    }
    if (literal("true")) {
      v.kind = Json::kBool;
      v.boolean = true;
      return true;
    }
    if (literal("false")) {
      v.kind = Json::kBool;
      return true;
    }
    if (literal("null")) return true;
    v.kind = Json::kNumber;
    return number(v.text);
  }

  std::string_view s_;
  size_t pos_ = 0;
};

TEST(JsonReaderSelfTest, RejectsWhatTheTracerMustNeverWrite) {
  EXPECT_TRUE(JsonReader(R"({"a":[1,-2,{"b":"x\"y"}],"c":true})").parse().has_value());
  EXPECT_FALSE(JsonReader(R"({"a":[1,2,]})").parse().has_value());
  EXPECT_FALSE(JsonReader(R"({"a":"x"y"})").parse().has_value());
  EXPECT_FALSE(JsonReader("{\"a\":\"x\ny\"}").parse().has_value());
  EXPECT_FALSE(JsonReader(R"({"a":1})"
                          "]")
                   .parse()
                   .has_value());
  EXPECT_FALSE(JsonReader(R"({"a":01})").parse().has_value());
}

// ---------------------------------------------------------------------------

// A file name in the test's temporary directory (ctest sets TEST_TMPDIR to a
// folder of the build tree; never /tmp), removed when the test ends.
std::string temp_path(const std::string& name) {
  const std::string path = ::testing::TempDir() + "bbmm_" + name + "_" +
                           std::to_string(getpid()) + ".json";
  class Remover : public ::testing::EmptyTestEventListener {
   public:
    explicit Remover(std::string path) : path_(std::move(path)) {}
    void OnTestEnd(const ::testing::TestInfo&) override { std::remove(path_.c_str()); }

   private:
    std::string path_;
  };
  // Removed at the end of the current test, even when it fails early.
  ::testing::UnitTest::GetInstance()->listeners().Append(new Remover(path));
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Parses `path`, checks the envelope, returns traceEvents.
std::vector<Json> read_trace(const std::string& path) {
  std::string text = read_file(path);
  std::optional<Json> doc = JsonReader(text).parse();
  EXPECT_TRUE(doc.has_value()) << "not valid JSON:\n" << text;
  if (!doc.has_value()) return {};
  EXPECT_EQ(doc->kind, Json::kObject);
  const Json* events = doc->get("traceEvents");
  EXPECT_TRUE(events != nullptr && events->kind == Json::kArray) << text;
  return events != nullptr ? events->items : std::vector<Json>{};
}

std::vector<Json> slices_of(const std::vector<Json>& events) {
  std::vector<Json> out;
  for (const Json& e : events) {
    if (e.str("ph") == "X") out.push_back(e);
  }
  return out;
}

std::map<long long, std::string> thread_names(const std::vector<Json>& events) {
  std::map<long long, std::string> names;
  for (const Json& e : events) {
    if (e.str("ph") == "M" && e.str("name") == "thread_name") {
      const Json* args = e.get("args");
      names[e.num("tid")] = args != nullptr ? args->str("name") : "";
    }
  }
  return names;
}

TEST(JsonEscape, EscapesQuotesBackslashesAndControlBytes) {
  EXPECT_EQ(json_escape("plain A-z 0_9"), "plain A-z 0_9");
  EXPECT_EQ(json_escape("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(json_escape("\n\r\t\b\f"), "\\n\\r\\t\\b\\f");
  EXPECT_EQ(json_escape(std::string_view("\x01\x1f\0", 3)), "\\u0001\\u001f\\u0000");
  EXPECT_EQ(json_escape("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 passes through
  EXPECT_EQ(json_escape(""), "");
}

TEST(Tracer, WritesSlicesOnPerDeviceTracksWithThreadNames) {
  const std::string path = temp_path("tracer_basic");
  Tracer t(path);
  t.slice(kHost, "evict", 5, 3, "\"array\":\"A\"");
  t.slice(2, "copy H2D", 10, 7, "\"bytes\":64,\"shape\":\"8x8x1\"");
  t.slice(0, "name \"with\" quotes\n", 1, 2, "");
  t.slice(1, "kernel", 4, -5, "");  // a negative duration is clamped
  ASSERT_TRUE(t.close().ok());

  std::vector<Json> events = read_trace(path);
  EXPECT_EQ(thread_names(events),
            (std::map<long long, std::string>{
                {0, "host"}, {1, "device 0"}, {2, "device 1"}, {3, "device 2"}}));
  std::vector<Json> slices = slices_of(events);
  ASSERT_EQ(slices.size(), 4u);
  // Sorted by start time.
  EXPECT_EQ(slices[0].str("name"), "name \"with\" quotes\n");
  EXPECT_EQ(slices[0].num("tid"), 1);
  EXPECT_EQ(slices[1].str("name"), "kernel");
  EXPECT_EQ(slices[1].num("dur"), 0);
  EXPECT_EQ(slices[2].str("name"), "evict");
  EXPECT_EQ(slices[2].num("tid"), 0);
  EXPECT_EQ(slices[2].get("args")->str("array"), "A");
  EXPECT_EQ(slices[3].str("name"), "copy H2D");
  EXPECT_EQ(slices[3].num("pid"), 1);
  EXPECT_EQ(slices[3].num("tid"), 3);
  EXPECT_EQ(slices[3].num("ts"), 10);
  EXPECT_EQ(slices[3].num("dur"), 7);
  EXPECT_EQ(slices[3].get("args")->num("bytes"), 64);
  EXPECT_EQ(slices[3].get("args")->str("shape"), "8x8x1");
  std::remove(path.c_str());
}

TEST(Tracer, EmptyTraceIsValidAndCloseIsIdempotent) {
  const std::string path = temp_path("tracer_empty");
  Tracer t(path);
  ASSERT_TRUE(t.close().ok());
  std::vector<Json> events = read_trace(path);
  EXPECT_TRUE(slices_of(events).empty());
  EXPECT_EQ(thread_names(events), (std::map<long long, std::string>{{0, "host"}}));
  // Slices after close are dropped; closing again does not rewrite the file.
  t.slice(0, "late", 1, 1, "");
  std::remove(path.c_str());
  EXPECT_TRUE(t.close().ok());
  EXPECT_TRUE(read_file(path).empty());
}

TEST(Tracer, DestructorWritesTheFile) {
  const std::string path = temp_path("tracer_dtor");
  {
    Tracer t(path);
    t.slice(0, "kernel", t.now_us(), 1, "");
  }
  EXPECT_EQ(slices_of(read_trace(path)).size(), 1u);
  std::remove(path.c_str());
}

TEST(Tracer, UnwritablePathIsAnErrorNamingThePath) {
  const std::string path = "/nonexistent-bbmm-dir/trace.json";
  Tracer t(path);
  t.slice(0, "kernel", 0, 1, "");
  absl::Status s = t.close();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string_view::npos) << s;
}

TEST(Tracer, NowIsMonotonicMicroseconds) {
  Tracer t(temp_path("tracer_now"));
  int64_t a = t.now_us();
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  int64_t b = t.now_us();
  EXPECT_GE(a, 0);
  EXPECT_GE(b - a, 2000);
  EXPECT_LT(b - a, 10'000'000);
  EXPECT_TRUE(t.close().ok());
  std::remove(temp_path("tracer_now").c_str());
}

TEST(Tracer, ConcurrentSlicesAreAllKept) {
  const std::string path = temp_path("tracer_threads");
  Tracer t(path);
  std::vector<std::thread> threads;
  for (int d = 0; d < 4; ++d) {
    threads.emplace_back([&t, d] {
      for (int i = 0; i < 250; ++i) t.slice(d, "kernel", t.now_us(), 1, "\"i\":1");
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(t.close().ok());
  std::vector<Json> slices = slices_of(read_trace(path));
  EXPECT_EQ(slices.size(), 1000u);
  std::remove(path.c_str());
}

// ---------------------------------------------------------------------------
// What the host backend records.

TEST(HostBackendTrace, EveryExecutedOpKindLeavesASlice) {
  const std::string path = temp_path("host_backend_trace");
  Tracer tracer(path);
  absl::StatusOr<std::unique_ptr<Backend>> made =
      make_host_backend({.devices = 3, .peer_access = false});
  ASSERT_TRUE(made.ok());
  Backend& b = **made;
  b.set_tracer(&tracer);

  std::vector<unsigned char> h(4 * 64, 1);
  DeviceBuffer d0 = *b.allocate(0, 256), d1 = *b.allocate(1, 256), d2 = *b.allocate(2, 256);
  const Endpoint host{kHost, h.data(), 0, 64, 256};
  const Endpoint e0{0, d0.base, 0, 64, 256}, e1{1, d1.base, 0, 64, 256};
  const CopyShape shape{64, 4, 1};
  ASSERT_TRUE(b.copy(e0, host, shape, {}).ok());  // H2D on device 0
  ASSERT_TRUE(b.synchronize(0).ok());
  ASSERT_TRUE(b.copy(e1, e0, shape, {}).ok());  // peer (staged) on device 1
  ASSERT_TRUE(b.synchronize(1).ok());
  ASSERT_TRUE(b.copy(e1, e1, {64, 1, 1}, {}).ok());  // D2D on device 1
  ASSERT_TRUE(b.launch(2, [](const LaunchContext&) {}, {}).ok());
  ASSERT_TRUE(b.synchronize(1).ok());
  ASSERT_TRUE(b.copy(host, e1, shape, {}).ok());  // D2H on device 1
  ASSERT_TRUE(b.free(2, d2, {}).ok());
  // A failed kernel still gets its slice; an op whose event failed does not run.
  absl::StatusOr<Event> bad =
      b.launch(0, [](const LaunchContext&) { throw std::runtime_error("x"); }, {});
  ASSERT_TRUE(bad.ok());
  for (int d = 0; d < 3; ++d) (void)b.synchronize(d);
  ASSERT_TRUE(b.free(0, d0, {}).ok());
  ASSERT_TRUE(b.free(1, d1, {}).ok());
  made->reset();  // drains the queues: every slice is in before close
  ASSERT_TRUE(tracer.close().ok());

  std::vector<Json> events = read_trace(path);
  std::multiset<std::pair<std::string, long long>> seen;  // (name, tid)
  for (const Json& s : slices_of(events)) {
    seen.insert({s.str("name"), s.num("tid")});
    EXPECT_GE(s.num("dur"), 0);
    EXPECT_GE(s.num("ts"), 0);
    const Json* args = s.get("args");
    ASSERT_NE(args, nullptr);
    if (s.str("name").rfind("copy", 0) == 0) {
      EXPECT_NE(args->get("bytes"), nullptr) << s.str("name");
      EXPECT_NE(args->get("shape"), nullptr) << s.str("name");
    }
    if (s.str("name") == "copy peer") {
      EXPECT_EQ(args->num("bytes"), 256);
      EXPECT_EQ(args->str("shape"), "64x4x1");
      EXPECT_EQ(args->str("src"), "device 0");
      EXPECT_EQ(args->str("dst"), "device 1");
      ASSERT_NE(args->get("staged"), nullptr);
      EXPECT_TRUE(args->get("staged")->boolean);
    }
    if (s.str("name") == "free") {
      EXPECT_EQ(args->num("bytes"), 256);
    }
  }
  const std::multiset<std::pair<std::string, long long>> want = {
      {"copy H2D", 1}, {"copy peer", 2}, {"copy D2D", 2}, {"kernel", 3}, {"copy D2H", 2},
      {"free", 3},     {"kernel", 1},    {"free", 1},     {"free", 2}};
  EXPECT_EQ(seen, want);
  std::map<long long, std::string> names = thread_names(events);
  EXPECT_EQ(names[0], "host");
  EXPECT_EQ(names[1], "device 0");
  EXPECT_EQ(names[3], "device 2");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace bbmm

namespace bbmm {
namespace {

// Through the runtime, every copy and kernel slice names what it is for: the
// array and box of a copy, the tile's boxes of a kernel; evictions too.
TEST(RuntimeTrace, CopiesKernelsAndEvictionsNameTheirArrayAndBox) {
  const std::string path = temp_path("runtime_trace");
  std::vector<double> host(64 * 8, 1.0);
  {
    RuntimeOptions o;
    o.backend = BBMM_BACKEND_HOST;
    o.devices = 2;
    o.device_memory = 16 * 8 * 8;  // two 8x8 tiles of doubles: forces box-out
    o.trace_file = path;
    absl::StatusOr<std::unique_ptr<Runtime>> rt = Runtime::create(o);
    ASSERT_TRUE(rt.ok()) << rt.status();
    const int64_t ext[2] = {64, 8};
    Array* a = *(*rt)->register_array("Grid", host.data(), sizeof(double), ext);
    for (int64_t lo = 0; lo < 64; lo += 8) {
      auto t = *(*rt)->begin_tile(static_cast<int>(lo / 8) % 2);
      ASSERT_TRUE(t.require(a, *Box::create({lo, 0}, {lo + 8, 8}), Access::kReadWrite).ok());
      ASSERT_TRUE(t.acquire().ok());
      ASSERT_TRUE(t.launch([](const bbmm_launch_info&) {}).ok());
      ASSERT_TRUE(t.release().ok());
    }
    ASSERT_TRUE((*rt)->sync_to_host(a).ok());
  }  // the runtime writes the trace
  int copies = 0, kernels = 0, evictions = 0;
  for (const Json& s : slices_of(read_trace(path))) {
    const Json* args = s.get("args");
    ASSERT_NE(args, nullptr);
    const std::string name = s.str("name");
    if (name.rfind("copy", 0) == 0) {
      ++copies;
      EXPECT_EQ(args->str("array"), "Grid") << name;
      EXPECT_EQ(args->str("box").rfind("[", 0), 0u) << name;
    } else if (name == "kernel") {
      ++kernels;
      EXPECT_EQ(args->str("tile").rfind("Grid{[", 0), 0u) << args->str("tile");
    } else if (name == "evict") {
      ++evictions;
      EXPECT_EQ(args->str("array"), "Grid");
    }
  }
  EXPECT_EQ(kernels, 8);
  EXPECT_GE(copies, 8 + 8);  // every tile read in and written back
  EXPECT_GE(evictions, 4);
}

}  // namespace
}  // namespace bbmm
