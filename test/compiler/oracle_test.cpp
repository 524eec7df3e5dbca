// The dependence verdicts checked against a brute-force oracle. For small concrete
// parameter values the oracle enumerates every statement instance (isl only lists the
// points of the domains and evaluates the schedule and access functions at a point),
// runs them in schedule order, records every memory access, and derives per loop
// which arrays carry a dependence: two accesses to the same element, at least one a
// write, from instances with equal outer iterators and different iterators at that
// loop. Scalars and small arrays are privatised by the oracle's own rule (every
// iteration writes an element before reading it, and no later read outside the loop sees
// a value written inside). The oracle never looks at isl's dependence computation.

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <sstream>

#include "brute_force.h"
#include "driver/pipeline.h"
#include "poly/deps.h"
#include "poly/scalars.h"
#include "test_util.h"

namespace bbmm::compiler {
namespace {

using testing::Event;
using testing::Execution;
using testing::Instance;
using testing::execute;
using testing::fix_params;
using testing::random_program;

// May "arr" have a private copy (the policy of poly/scalars.h, read here from the
// declaration's text, not from isl): a scalar, or an array whose extents are integer
// literals, of at most kMaxPrivateArrayBytes.
bool small_enough_to_privatise(const ArrayInfo& arr) {
  if (arr.is_scalar) return true;
  if (arr.elem_size <= 0 || arr.extent_text.empty()) return false;
  long bytes = arr.elem_size;
  for (const std::string& t : arr.extent_text) {
    if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos || t.size() > 6) {
      return false;
    }
    bytes *= std::stol(t);
  }
  return bytes <= kMaxPrivateArrayBytes;
}

// Oracle verdicts per loop: the arrays with carried dependences after privatisation.
std::vector<std::set<std::string>> oracle(const Scop& scop, const isl::set& fixed) {
  Execution run = execute(scop, fixed);
  const std::vector<Instance>& inst = run.inst;
  const std::vector<Event>& ev = run.ev;

  std::vector<std::set<std::string>> carried(scop.loops.size());
  std::map<std::pair<int, std::vector<long>>, std::vector<int>> per_elem;
  for (size_t e = 0; e < ev.size(); ++e) per_elem[{ev[e].array, ev[e].elem}].push_back(static_cast<int>(e));
  for (auto& [key, list] : per_elem)
    for (size_t x = 0; x < list.size(); ++x)
      for (size_t y = x + 1; y < list.size(); ++y) {
        const Event& a = ev[list[x]];
        const Event& b = ev[list[y]];
        if (!a.write && !b.write) continue;
        const Instance& ia = inst[a.inst];
        const Instance& ib = inst[b.inst];
        const Statement& sa = scop.statements[ia.stmt];
        const Statement& sb = scop.statements[ib.stmt];
        for (size_t k = 0; k < sa.loops.size() && k < sb.loops.size() && sa.loops[k] == sb.loops[k]; ++k)
          if (ia.it[k] != ib.it[k]) {
            carried[sa.loops[k]].insert(scop.arrays[key.first].name);
            break;
          }
      }

  // Privatisation of scalars and small arrays, loop by loop, element by element.
  for (const Loop& L : scop.loops) {
    auto inside = [&](int inst_index) {
      const Statement& st = scop.statements[inst[inst_index].stmt];
      return std::find(st.loops.begin(), st.loops.end(), L.id) != st.loops.end();
    };
    for (size_t a = 0; a < scop.arrays.size(); ++a) {
      const ArrayInfo& arr = scop.arrays[a];
      if (!small_enough_to_privatise(arr) || !carried[L.id].count(arr.name)) continue;
      // Live-out is fine: the phase copies the last values out (poly/scalars.h).
      bool ok = true;
      bool written_inside = false;
      // (iteration of L, element) pairs already touched, and each element's last writer.
      std::set<std::pair<std::vector<long>, std::vector<long>>> seen;
      std::map<std::vector<long>, int> last_write;
      for (const Event& e : ev) {
        if (e.array != static_cast<int>(a)) continue;
        const bool in = inside(e.inst);
        if (in) {
          std::vector<long> k(inst[e.inst].it.begin(), inst[e.inst].it.begin() + L.depth + 1);
          // The first access of an element in an iteration reads it.
          if (seen.insert({k, e.elem}).second && !e.write) ok = false;
          written_inside = written_inside || e.write;
        } else if (!e.write) {
          auto lw = last_write.find(e.elem);
          if (lw != last_write.end() && inside(lw->second)) ok = false;  // flows out of L
        }
        if (e.write) last_write[e.elem] = e.inst;
      }
      if (ok && written_inside) carried[L.id].erase(arr.name);
    }
  }
  return carried;
}

struct Tally {
  int carried = 0;
  int free = 0;
};

void compare(const Scop& scop, const std::vector<long>& values, const std::string& what, Tally& t) {
  isl::set fixed = fix_params(scop, values);
  std::vector<std::set<std::string>> want = oracle(scop, fixed);
  std::vector<LoopAnalysis> got = analyse_loops(scop, &fixed);
  for (const Loop& L : scop.loops) {
    std::ostringstream vs;
    for (long v : values) vs << v << " ";
    EXPECT_EQ(want[L.id], got[L.id].arrays)
        << what << ": loop L" << L.id << " (" << L.iterator << ") with parameters " << vs.str()
        << "(left: oracle, right: isl)";
    (want[L.id].empty() ? t.free : t.carried)++;
  }
}

class OracleTest : public ::testing::TestWithParam<std::filesystem::path> {};

TEST_P(OracleTest, VerdictsMatchBruteForce) {
  Diagnostics diag;
  PipelineOptions opts;
  auto prog = analyze_file(GetParam().string(), opts, diag);
  ASSERT_FALSE(diag.has_errors());
  ASSERT_FALSE(prog->scops.empty());
  Tally t;
  for (const Scop& s : prog->scops)
    for (const std::vector<long>& values : {std::vector<long>{5}, std::vector<long>{4, 6, 3, 7},
                                            std::vector<long>{3, 2}, std::vector<long>{1}})
      compare(s, values, GetParam().filename().string(), t);
  EXPECT_GT(t.carried + t.free, 0);
}

INSTANTIATE_TEST_SUITE_P(Golden, OracleTest,
                         ::testing::ValuesIn(testing::files_in(BBMM_GOLDEN_DIR, ".c")),
                         [](const auto& info) { return testing::test_name(info.param); });

TEST(OracleRandom, RandomNestsMatchBruteForce) {
  std::mt19937 rng(20261122);
  Tally t;
  int modelled = 0;
  for (int n = 0; n < 150; ++n) {
    std::string src = random_program(rng);
    Diagnostics diag;
    PipelineOptions opts;
    auto prog = analyze_text(src, "random.c", opts, diag);
    if (diag.has_errors()) {
      std::ostringstream os;
      diag.render(os, prog->sm.get());
      ADD_FAILURE() << src << os.str();
      continue;
    }
    for (const Scop& s : prog->scops) {
      ++modelled;
      for (const std::vector<long>& values : {std::vector<long>{4, 5}, std::vector<long>{5, 3}}) {
        int before = ::testing::Test::HasFailure();
        compare(s, values, "random program", t);
        if (!before && ::testing::Test::HasFailure()) ADD_FAILURE() << "program:\n" << src;
      }
    }
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(modelled, 100);
  EXPECT_GT(t.carried, 50);
  EXPECT_GT(t.free, 50);
}

}  // namespace
}  // namespace bbmm::compiler
