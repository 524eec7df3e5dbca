// The dependence verdicts checked against a brute-force oracle. For small concrete
// parameter values the oracle enumerates every statement instance (isl only lists the
// points of the domains and evaluates the schedule and access functions at a point),
// runs them in schedule order, records every memory access, and derives per loop
// which arrays carry a dependence: two accesses to the same element, at least one a
// write, from instances with equal outer iterators and different iterators at that
// loop. Scalars are privatised by the oracle's own rule (every iteration writes the
// scalar before reading it, and no later read outside the loop sees a value written
// inside). The oracle never looks at isl's dependence computation.

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <sstream>

#include "driver/pipeline.h"
#include "poly/deps.h"
#include "test_util.h"

namespace bbmm::compiler {
namespace {

std::vector<long> coords(isl_point* pt, isl_dim_type type, int n) {
  std::vector<long> v;
  for (int k = 0; k < n; ++k) {
    isl_val* x = isl_point_get_coordinate_val(pt, type, k);
    v.push_back(isl_val_get_num_si(x));
    isl_val_free(x);
  }
  return v;
}

// All points of "s" (which must be bounded).
std::vector<std::vector<long>> points(const isl::set& s) {
  std::vector<std::vector<long>> out;
  int n = static_cast<int>(isl_set_dim(s.get(), isl_dim_set));
  struct Ctx {
    std::vector<std::vector<long>>* out;
    int n;
  } c{&out, n};
  isl_set_foreach_point(
      s.get(),
      [](isl_point* pt, void* user) -> isl_stat {
        auto* c = static_cast<Ctx*>(user);
        c->out->push_back(coords(pt, isl_dim_set, c->n));
        isl_point_free(pt);
        return isl_stat_ok;
      },
      &c);
  std::sort(out.begin(), out.end());
  return out;
}

isl::set point_set(const isl::set& space_of, const std::vector<long>& p) {
  isl_set* s = space_of.copy();  // the domain, with its parameters fixed
  for (size_t k = 0; k < p.size(); ++k) s = isl_set_fix_si(s, isl_dim_set, k, p[k]);
  return isl::manage(s);
}

struct Instance {
  int stmt;
  std::vector<long> it;
  std::vector<long> sched;
};

struct Event {
  int inst;
  int array;
  std::vector<long> elem;
  bool write;
};

// Oracle verdicts per loop: the arrays with carried dependences after privatisation.
std::vector<std::set<std::string>> oracle(const Scop& scop, const isl::set& fixed) {
  std::vector<Instance> inst;
  for (const Statement& st : scop.statements) {
    isl::set dom = st.domain.intersect_params(fixed);
    for (const std::vector<long>& p : points(dom)) {
      isl::set ps = point_set(dom, p);
      std::vector<std::vector<long>> sched = points(ps.apply(st.schedule));
      EXPECT_EQ(sched.size(), 1u);
      inst.push_back({st.index, p, sched.empty() ? std::vector<long>() : sched[0]});
    }
  }
  std::sort(inst.begin(), inst.end(), [](const Instance& a, const Instance& b) { return a.sched < b.sched; });
  for (size_t i = 1; i < inst.size(); ++i) EXPECT_NE(inst[i - 1].sched, inst[i].sched) << "schedule not injective";

  std::vector<Event> ev;
  for (size_t i = 0; i < inst.size(); ++i) {
    const Statement& st = scop.statements[inst[i].stmt];
    isl::set dom = st.domain.intersect_params(fixed);
    isl::set ps = point_set(dom, inst[i].it);
    for (int pass = 0; pass < 2; ++pass)  // reads happen before the write
      for (int ai : st.accesses) {
        const Access& a = scop.accesses[ai];
        if ((a.kind == AccessKind::kWrite) != (pass == 1)) continue;
        std::vector<std::vector<long>> el = points(ps.apply(a.relation));
        EXPECT_EQ(el.size(), 1u) << a.text;
        if (el.empty()) continue;
        ev.push_back({static_cast<int>(i), a.array, el[0], a.kind == AccessKind::kWrite});
      }
  }

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

  // Privatisation of scalars, loop by loop.
  for (const Loop& L : scop.loops) {
    auto inside = [&](int inst_index) {
      const Statement& st = scop.statements[inst[inst_index].stmt];
      return std::find(st.loops.begin(), st.loops.end(), L.id) != st.loops.end();
    };
    for (size_t a = 0; a < scop.arrays.size(); ++a) {
      const ArrayInfo& arr = scop.arrays[a];
      if (!arr.is_scalar || !carried[L.id].count(arr.name)) continue;
      bool ok = !arr.live_out;
      bool written_inside = false;
      std::set<std::vector<long>> seen;  // iterations that touched the scalar
      int last_write = -1;
      for (const Event& e : ev) {
        if (e.array != static_cast<int>(a)) continue;
        bool in = inside(e.inst);
        if (in) {
          std::vector<long> k(inst[e.inst].it.begin(), inst[e.inst].it.begin() + L.depth + 1);
          if (seen.insert(k).second && !e.write) ok = false;  // first access of an iteration reads
          written_inside = written_inside || e.write;
        } else if (!e.write && last_write >= 0 && inside(last_write)) {
          ok = false;  // a value written inside flows out
        }
        if (e.write) last_write = e.inst;
      }
      if (ok && written_inside) carried[L.id].erase(arr.name);
    }
  }
  return carried;
}

isl::set fix_params(const Scop& scop, const std::vector<long>& values) {
  isl::set s = scop.context;
  isl_set* x = s.copy();
  for (size_t k = 0; k < scop.params.size(); ++k) x = isl_set_fix_si(x, isl_dim_param, k, values[k % values.size()]);
  return isl::manage(x);
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

// Random affine loop nests: two arrays, a scalar, subscripts with small coefficients,
// bounds that depend on outer iterators. Deterministic seed.
std::string random_program(std::mt19937& rng) {
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* it[] = {"i", "j", "k"};
  std::ostringstream os;
  os << "void f(int N, int M, double A[20][20], double B[20][20], double s) {\n#pragma scop\n";
  int nests = r(1, 2);
  for (int n = 0; n < nests; ++n) {
    int depth = r(1, 3);
    for (int d = 0; d < depth; ++d) {
      std::string lb = d > 0 && r(0, 2) == 0 ? it[d - 1] : std::to_string(r(0, 2));
      std::string ub = r(0, 1) ? "N" : "M";
      if (d > 0 && r(0, 3) == 0) ub = std::string(it[d - 1]) + " + 2";
      if (r(0, 4) == 0)
        os << "for (int " << it[d] << " = " << ub << " - 1; " << it[d] << " >= " << lb << "; " << it[d] << "--)\n";
      else
        os << "for (int " << it[d] << " = " << lb << "; " << it[d] << " < " << ub << "; " << it[d] << "++)\n";
    }
    auto sub = [&]() {
      std::ostringstream e;
      e << r(1, 3);
      for (int d = 0; d < depth; ++d) {
        int c = r(-1, 1);
        if (c) e << (c > 0 ? " + " : " - ") << it[d];
      }
      return e.str();
    };
    int stmts = r(1, 2);
    os << "{\n";
    for (int k = 0; k < stmts; ++k) {
      int kind = r(0, 5);
      const char* X = r(0, 1) ? "A" : "B";
      const char* Y = r(0, 1) ? "A" : "B";
      if (kind == 0) {
        os << "s = " << Y << "[" << sub() << "][" << sub() << "] + 1.0;\n";
        os << X << "[" << sub() << "][" << sub() << "] = s;\n";
      } else if (kind == 1) {
        os << "s = s + " << Y << "[" << sub() << "][" << sub() << "];\n";
      } else {
        os << X << "[" << sub() << "][" << sub() << "] = " << Y << "[" << sub() << "][" << sub() << "] * 0.5;\n";
      }
    }
    os << "}\n";
  }
  os << "#pragma endscop\n}\n";
  return os.str();
}

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
