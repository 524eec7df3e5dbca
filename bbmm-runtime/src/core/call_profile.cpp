#include "core/call_profile.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/str_format.h"

namespace bbmm::detail {
namespace {

struct Row {
  const char* what;
  uint64_t calls;
  double seconds;
};

// One thread's scopes. The mutex is only contended by a report or a reset.
struct Table {
  std::mutex mu;
  std::vector<Row> rows;
};

struct Registry {
  std::mutex mu;
  // Every table ever made; never freed, so that a report still finds the rows
  // of threads that have exited (a worker of a destroyed runtime).
  std::vector<Table*> tables;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: threads may outlive statics
  return *r;
}

Table& this_thread_table() {
  thread_local Table* table = [] {
    auto* t = new Table;
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.tables.push_back(t);
    return t;
  }();
  return *table;
}

}  // namespace

bool call_profile_on() {
  static const bool on = [] {
    const char* v = std::getenv("BBMM_CALL_PROFILE");
    return v != nullptr && *v != '\0' && std::atoi(v) != 0;
  }();
  return on;
}

void call_profile_add(const char* what, double seconds) {
  Table& t = this_thread_table();
  std::lock_guard<std::mutex> lock(t.mu);
  for (Row& r : t.rows) {
    if (r.what == what) {
      r.calls++;
      r.seconds += seconds;
      return;
    }
  }
  t.rows.push_back({what, 1, seconds});
}

std::string call_profile_report() {
  std::vector<Row> merged;
  {
    Registry& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mu);
    for (Table* t : reg.tables) {
      std::lock_guard<std::mutex> tl(t->mu);
      for (const Row& r : t->rows) {
        auto it = std::find_if(merged.begin(), merged.end(),
                               [&](const Row& m) { return m.what == r.what; });
        if (it == merged.end()) {
          merged.push_back(r);
        } else {
          it->calls += r.calls;
          it->seconds += r.seconds;
        }
      }
    }
  }
  if (merged.empty()) return "";
  std::sort(merged.begin(), merged.end(),
            [](const Row& a, const Row& b) { return a.seconds > b.seconds; });
  std::string out = "| scope | calls | total us | us per call |\n|---|---|---|---|\n";
  for (const Row& r : merged) {
    absl::StrAppendFormat(&out, "| %s | %d | %.1f | %.3f |\n", r.what, r.calls, r.seconds * 1e6,
                          r.seconds * 1e6 / static_cast<double>(r.calls));
  }
  return out;
}

void call_profile_reset() {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  for (Table* t : reg.tables) {
    std::lock_guard<std::mutex> tl(t->mu);
    t->rows.clear();
  }
}

}  // namespace bbmm::detail
