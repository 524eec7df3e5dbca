// Fault injection: a fixed scenario (3 devices, small capacities so that
// box-out and write-back happen, peer copies, flow-outs, pieces, a padded
// host array, a read-only array, sync_to_host in the middle) runs once per
// k with the k-th allocation / copy / launch failing (FaultyBackend).
//
// Required for every k: no crash and no exception; an injected failure
// surfaces as an error of some API call (except an allocation failing as
// out-of-memory, which the runtime may absorb by boxing out and retrying);
// and afterwards, with the fault disarmed, sync_to_host succeeds and every
// host array holds exactly the effects of the tiles whose launch succeeded
// (applied in order), nothing else: a tile that failed before or at its
// launch leaves no trace. Kernels also check that what they read is that
// same state. Finally one more tile per device must still work.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "faulty_backend.h"
#include "runtime_test_util.h"

namespace bbmm::testing {
namespace {

struct ArraySpec {
  const char* name;
  std::vector<int64_t> ext;
  std::vector<int64_t> strides;  // host strides (empty: dense)
  bool read_only;
};

// The scenario's arrays: A (1-D), M (2-D with padded host rows), R (read-only).
const ArraySpec kArrays[] = {
    {"A", {48}, {}, false},
    {"M", {6, 8}, {10, 1}, false},
    {"R", {16}, {}, true},
};
constexpr int kA = 0, kM = 1, kR = 2;

struct Req {
  int array;
  Box box;
  Access access;
};
struct TileStep {
  TileStep() = default;
  TileStep(int device, std::vector<Req> reqs, std::vector<std::pair<int, Box>> flows = {})
      : device(device), reqs(std::move(reqs)), flows(std::move(flows)) {}
  int device = 0;
  std::vector<Req> reqs;
  std::vector<std::pair<int, Box>> flows;
};
struct Step {
  enum Kind { kTile, kPair, kSync, kSynchronize };
  Step(Kind kind, TileStep a = {}, TileStep b = {}, int array = 0)
      : kind(kind), a(std::move(a)), b(std::move(b)), array(array) {}
  Kind kind;
  TileStep a, b;  // kPair: a is acquired first, b while a is held
  int array = 0;  // kSync
};

std::vector<Step> scenario() {
  using S = Step;
  return {
      {S::kTile, {0, {{kA, B({0}, {16}), Access::kWrite}, {kR, B({0}, {16}), Access::kRead}},
                  {{kA, B({0}, {8})}}}},
      {S::kTile, {1, {{kA, B({8}, {24}), Access::kReadWrite}, {kR, B({0}, {8}), Access::kRead}}}},
      {S::kTile, {0, {{kM, B({0, 0}, {3, 8}), Access::kWrite}}}},
      {S::kTile, {2, {{kA, B({16}, {40}), Access::kRead}}}},
      {S::kTile, {1, {{kM, B({2, 1}, {5, 7}), Access::kReadWrite}}, {{kM, B({2, 1}, {3, 7})}}}},
      {S::kSync, {}, {}, kA},
      {S::kTile, {0, {{kA, B({4}, {20}), Access::kReadWrite}, {kM, B({0, 0}, {2, 4}), Access::kRead}},
                  {{kA, B({4}, {20})}}}},
      {S::kTile, {2, {{kA, B({40}, {48}), Access::kWrite}, {kM, B({4, 0}, {6, 8}), Access::kReadWrite}}}},
      {S::kPair, {1, {{kA, B({24}, {32}), Access::kRead}}},
                 {1, {{kA, B({32}, {40}), Access::kReadWrite}, {kA, B({26}, {34}), Access::kRead}}}},
      {S::kSynchronize},
      {S::kTile, {0, {{kM, B({0, 0}, {4, 8}), Access::kReadWrite}, {kA, B({0}, {8}), Access::kWrite}}}},
      {S::kTile, {2, {{kA, B({0}, {24}), Access::kRead}, {kR, B({8}, {16}), Access::kRead}}}},
  };
}

double written(int tile, int64_t linear) { return 1000.0 * (tile + 1) + static_cast<double>(linear); }
double updated(double x) { return std::fmod(3 * x + 1, 1e7); }

struct Outcome {
  int errors = 0;
  bool saw_injected = false;
  std::string first_error;
};

class Scenario {
 public:
  Scenario(bool peer, FaultyBackend::Kind kind, int k, absl::StatusCode code)
      : peer_(peer), kind_(kind), k_(k), code_(code) {}
  // The runtime goes first: queued copies may still read the host arrays.
  // Arrays stay registered to the end on purpose: shut down explicitly, which
  // skips the destructor's message about them.
  ~Scenario() {
    if (rt_ != nullptr) (void)rt_->shutdown();
    rt_.reset();
  }

  void run() {
    absl::StatusOr<std::unique_ptr<Backend>> host = make_host_backend(
        {.devices = 3, .capacity_bytes = 320, .pitch_alignment = 1, .peer_access = peer_});
    ASSERT_TRUE(host.ok()) << host.status();
    auto faulty = std::make_unique<FaultyBackend>(*std::move(host));
    faulty_ = faulty.get();
    absl::StatusOr<std::unique_ptr<Runtime>> rt =
        Runtime::create_with_backend(std::move(faulty), RuntimeOptions{});
    ASSERT_TRUE(rt.ok()) << rt.status();
    rt_ = *std::move(rt);
    for (const ArraySpec& s : kArrays) {
      int64_t vol = 1, host_elems = 1;
      for (size_t d = 0; d < s.ext.size(); ++d) vol *= s.ext[d];
      host_elems = s.strides.empty() ? vol : s.strides[0] * s.ext[0];
      host_.emplace_back(host_elems, -7.0);  // -7: padding
      model_.emplace_back(vol);
      for (int64_t l = 0; l < vol; ++l) model_.back()[l] = static_cast<double>(l % 97) + 0.25;
      const size_t i = host_.size() - 1;
      for_each_point(whole(i), [&](const int64_t* idx) { host_[i][host_offset(i, idx)] = model_[i][linear(i, idx)]; });
      absl::StatusOr<Array*> a =
          rt_->register_array(s.name, host_[i].data(), sizeof(double), s.ext, s.strides, s.read_only);
      ASSERT_TRUE(a.ok()) << a.status();
      arrays_.push_back(*a);
    }
    bad_ = std::make_shared<std::atomic<int>>(0);

    faulty_->arm(kind_, k_, code_);
    int tile_no = 0;
    for (const Step& st : scenario()) {
      switch (st.kind) {
        case Step::kTile:
          run_pair(st.a, nullptr, tile_no);
          break;
        case Step::kPair:
          run_pair(st.a, &st.b, tile_no);
          break;
        case Step::kSync:
          note(rt_->sync_to_host(arrays_[st.array]));
          break;
        case Step::kSynchronize:
          note(rt_->synchronize());
          break;
      }
    }
    injected_ = faulty_->injected();
    armed_count_ = faulty_->count();
    faulty_->disarm();
    if (k_ == 0) {
      EXPECT_EQ(outcome_.errors, 0) << outcome_.first_error;
    }

    // Afterwards: one more tile per device must work.
    for (int d = 0; d < 3; ++d) {
      TileStep extra{d, {{kA, B({8 * d}, {8 * d + 8}), Access::kReadWrite}}};
      Outcome before = outcome_;
      run_pair(extra, nullptr, tile_no);
      EXPECT_EQ(outcome_.errors, before.errors)
          << "a tile after the fault failed: " << outcome_.first_error;
    }
    for (size_t i = 0; i < arrays_.size(); ++i) {
      absl::Status s = rt_->sync_to_host(arrays_[i]);
      ASSERT_TRUE(s.ok()) << "sync_to_host after the fault: " << s;
      bool same = true;
      for_each_point(whole(i), [&](const int64_t* idx) {
        if (!same) return;
        same = host_[i][host_offset(i, idx)] == model_[i][linear(i, idx)];
        EXPECT_TRUE(same) << kArrays[i].name << " element " << linear(i, idx) << ": host "
                          << host_[i][host_offset(i, idx)] << ", model "
                          << model_[i][linear(i, idx)];
      });
      for (size_t h = 0; h < host_[i].size(); ++h) {
        if (!kArrays[i].strides.empty() && static_cast<int64_t>(h) % kArrays[i].strides[0] >= kArrays[i].ext[1]) {
          ASSERT_EQ(host_[i][h], -7.0) << "padding of " << kArrays[i].name;
        }
      }
    }
    EXPECT_EQ(*bad_, 0) << "a kernel read data that differs from the model";
    EXPECT_TRUE(rt_->synchronize().ok());
    (void)rt_->shutdown();
    rt_.reset();
  }

  const Outcome& outcome() const { return outcome_; }
  int injected() const { return injected_; }
  int armed_count() const { return armed_count_; }

 private:
  Box whole(size_t i) const {
    std::vector<int64_t> lo(kArrays[i].ext.size(), 0);
    return *Box::create(lo, kArrays[i].ext);
  }
  int64_t linear(size_t i, const int64_t* idx) const {
    int64_t l = 0;
    for (size_t d = 0; d < kArrays[i].ext.size(); ++d) l = l * kArrays[i].ext[d] + idx[d];
    return l;
  }
  int64_t host_offset(size_t i, const int64_t* idx) const {
    if (kArrays[i].strides.empty()) return linear(i, idx);
    int64_t o = 0;
    for (size_t d = 0; d < kArrays[i].ext.size(); ++d) o += idx[d] * kArrays[i].strides[d];
    return o;
  }

  void note(const absl::Status& s) {
    if (s.ok()) return;
    if (outcome_.errors++ == 0) outcome_.first_error = s.ToString();
    if (s.message().find(FaultyBackend::kMessage) != absl::string_view::npos) outcome_.saw_injected = true;
  }

  struct Open {
    const TileStep* step;
    std::optional<Tile> tile;
    bool acquired = false;
    int number = 0;
  };

  bool begin(Open& o) {
    absl::StatusOr<Tile> t = rt_->begin_tile(o.step->device);
    if (!t.ok()) {
      note(t.status());
      return false;
    }
    o.tile = *std::move(t);
    for (const Req& r : o.step->reqs) {
      absl::Status s = o.tile->require(arrays_[r.array], r.box, r.access);
      if (!s.ok()) {
        note(s);
        return false;
      }
    }
    absl::Status s = o.tile->acquire();
    note(s);
    o.acquired = s.ok();
    return s.ok();
  }

  // Builds the kernel from the model; on a successful launch applies it to
  // the model, flows out.
  void launch_and_flow(Open& o) {
    if (!o.acquired) return;
    struct Action {
      int kind;  // 0 check, 1 update, 2 write
      int64_t idx[2];
      double value;
    };
    struct Part {
      PieceCopy view;
      std::vector<Action> actions;
    };
    auto parts = std::make_shared<std::vector<Part>>();
    std::vector<std::vector<double>> after = model_;
    for (size_t i = 0; i < arrays_.size(); ++i) {
      std::vector<int> mark(model_[i].size(), 0);
      bool any = false;
      for (const Req& r : o.step->reqs) {
        if (r.array != static_cast<int>(i)) continue;
        any = true;
        const int bits = r.access == Access::kRead ? 1 : r.access == Access::kWrite ? 4 : 3;
        for_each_point(r.box, [&](const int64_t* idx) { mark[linear(i, idx)] |= bits; });
      }
      if (!any) continue;
      Part p;
      p.view = PieceCopy(*o.tile->view(arrays_[i]));
      for (int pass = 0; pass < 3; ++pass) {
        for_each_point(whole(i), [&](const int64_t* idx) {
          const int64_t l = linear(i, idx);
          Action a{pass, {idx[0], kArrays[i].ext.size() > 1 ? idx[1] : 0}, 0};
          if (pass == 0 && (mark[l] & 1)) {
            a.value = model_[i][l];
          } else if (pass == 1 && (mark[l] & 2)) {
            a.value = after[i][l];
            after[i][l] = updated(after[i][l]);
          } else if (pass == 2 && (mark[l] & 4)) {
            a.value = after[i][l] = written(o.number, l);
          } else {
            return;
          }
          p.actions.push_back(a);
        });
      }
      parts->push_back(std::move(p));
    }
    auto bad = bad_;
    absl::Status s = o.tile->launch([parts, bad](const bbmm_launch_info&) {
      for (const Part& p : *parts) {
        for (const Action& a : p.actions) {
          double* x = static_cast<double*>(p.view.at(a.idx));
          if (x == nullptr) {
            ++*bad;
          } else if (a.kind == 2) {
            *x = a.value;
          } else if (*x != a.value) {
            ++*bad;
          } else if (a.kind == 1) {
            *x = updated(*x);
          }
        }
      }
    });
    note(s);
    if (!s.ok()) return;
    model_ = std::move(after);
    for (const auto& [arr, box] : o.step->flows) note(o.tile->flow_out(arrays_[arr], box));
  }

  void finish(Open& o) {
    if (o.tile.has_value()) note(o.tile->release());
  }

  void run_pair(const TileStep& a, const TileStep* b, int& tile_no) {
    Open oa{&a, std::nullopt, false, tile_no++};
    Open ob{b, std::nullopt, false, b != nullptr ? tile_no++ : 0};
    begin(oa);
    if (b != nullptr) begin(ob);
    launch_and_flow(oa);
    if (b != nullptr) launch_and_flow(ob);
    finish(oa);
    if (b != nullptr) finish(ob);
  }

  const bool peer_;
  const FaultyBackend::Kind kind_;
  const int k_;
  const absl::StatusCode code_;
  FaultyBackend* faulty_ = nullptr;
  std::unique_ptr<Runtime> rt_;
  std::vector<std::vector<double>> host_, model_;
  std::vector<Array*> arrays_;
  std::shared_ptr<std::atomic<int>> bad_;
  Outcome outcome_;
  int injected_ = 0, armed_count_ = 0;
};

struct FaultCase {
  const char* name;
  FaultyBackend::Kind kind;
  absl::StatusCode code;
  bool peer;
};

void PrintTo(const FaultCase& c, std::ostream* os) { *os << c.name; }

class RuntimeFault : public ::testing::TestWithParam<FaultCase> {};

TEST_P(RuntimeFault, EveryKthFailureLeavesTheHostDataConsistent) {
  const FaultCase c = GetParam();
  // The fault-free run counts the operations of the kind under test.
  Scenario clean(c.peer, c.kind, 0, c.code);
  clean.run();
  if (HasFatalFailure()) return;
  ASSERT_EQ(clean.outcome().errors, 0) << clean.outcome().first_error;
  ASSERT_EQ(clean.injected(), 0);
  const int n = clean.armed_count();
  ASSERT_GT(n, 0) << "the scenario never performs this operation";
  int surfaced = 0;
  for (int k = 1; k <= n; ++k) {
    SCOPED_TRACE(absl::StrCat(c.name, ": failing operation #", k, " of ", n));
    Scenario s(c.peer, c.kind, k, c.code);
    s.run();
    if (HasFatalFailure()) return;
    ASSERT_EQ(s.injected(), 1) << "the k-th operation was not reached";
    if (s.outcome().errors > 0) ++surfaced;
    if (c.code != absl::StatusCode::kResourceExhausted) {
      EXPECT_TRUE(s.outcome().saw_injected)
          << "the injected failure did not surface as an API error; first error: "
          << s.outcome().first_error;
    }
  }
  std::printf("%s: %d operations, %d failures injected, %d surfaced as API errors\n", c.name, n, n,
              surfaced);
}

INSTANTIATE_TEST_SUITE_P(
    Host, RuntimeFault,
    ::testing::Values(
        FaultCase{"allocate_peer", FaultyBackend::Kind::kAllocate, absl::StatusCode::kUnavailable, true},
        FaultCase{"allocate_oom_peer", FaultyBackend::Kind::kAllocate,
                  absl::StatusCode::kResourceExhausted, true},
        FaultCase{"copy_peer", FaultyBackend::Kind::kCopy, absl::StatusCode::kUnavailable, true},
        FaultCase{"copy_nopeer", FaultyBackend::Kind::kCopy, absl::StatusCode::kInternal, false},
        FaultCase{"launch_peer", FaultyBackend::Kind::kLaunch, absl::StatusCode::kUnavailable, true},
        FaultCase{"launch_nopeer", FaultyBackend::Kind::kLaunch, absl::StatusCode::kUnavailable, false}),
    [](const ::testing::TestParamInfo<FaultCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace bbmm::testing
