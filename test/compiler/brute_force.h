#pragma once
// The brute-force executions behind the compiler oracles (dependence verdicts, boxes): for
// concrete parameter values, every statement instance in schedule order with the array
// elements it reads and then writes. isl is used only to list the points of a domain and
// to evaluate the schedule and the access functions at one point; nothing here looks at
// bbmmc's dependence, partition or box computations.
//
// Also the random affine loop nests shared by the oracles.

#include <gtest/gtest.h>
#include <isl/point.h>
#include <isl/set.h>
#include <isl/val.h>

#include <algorithm>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "poly/model.h"

namespace bbmm::compiler::testing {

inline std::vector<long> point_coords(isl_point* pt, isl_dim_type type, int n) {
  std::vector<long> v;
  for (int k = 0; k < n; ++k) {
    isl_val* x = isl_point_get_coordinate_val(pt, type, k);
    v.push_back(isl_val_get_num_si(x));
    isl_val_free(x);
  }
  return v;
}

// All points of "s" (which must be bounded), sorted.
inline std::vector<std::vector<long>> points(const isl::set& s) {
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
        c->out->push_back(point_coords(pt, isl_dim_set, c->n));
        isl_point_free(pt);
        return isl_stat_ok;
      },
      &c);
  std::sort(out.begin(), out.end());
  return out;
}

// "like" (a set whose parameters are fixed) restricted to the single point "p".
inline isl::set point_set(const isl::set& like, const std::vector<long>& p) {
  isl_set* s = like.copy();
  for (size_t k = 0; k < p.size(); ++k) s = isl_set_fix_si(s, isl_dim_set, k, p[k]);
  return isl::manage(s);
}

// The scop's context with parameter k fixed to values[k % values.size()].
inline isl::set fix_params(const Scop& scop, const std::vector<long>& values) {
  isl_set* x = scop.context.copy();
  for (size_t k = 0; k < scop.params.size(); ++k) x = isl_set_fix_si(x, isl_dim_param, k, values[k % values.size()]);
  return isl::manage(x);
}

struct Instance {
  int stmt;
  std::vector<long> it;     // iterator values, outermost first
  std::vector<long> sched;  // the schedule point (original order)
};

struct Event {
  int inst;  // index into Execution::inst
  int array;
  std::vector<long> elem;
  bool write;
};

// A sequential execution: instances in schedule order; per instance its reads, then its
// write (a statement reads its operands before it assigns).
struct Execution {
  std::vector<Instance> inst;
  std::vector<Event> ev;
};

// Runs "scop" with its parameters fixed by "fixed" (a parameter set of one point).
inline Execution execute(const Scop& scop, const isl::set& fixed) {
  Execution x;
  for (const Statement& st : scop.statements) {
    isl::set dom = st.domain.intersect_params(fixed);
    for (const std::vector<long>& p : points(dom)) {
      std::vector<std::vector<long>> sched = points(point_set(dom, p).apply(st.schedule));
      EXPECT_EQ(sched.size(), 1u);
      x.inst.push_back({st.index, p, sched.empty() ? std::vector<long>() : sched[0]});
    }
  }
  std::sort(x.inst.begin(), x.inst.end(), [](const Instance& a, const Instance& b) { return a.sched < b.sched; });
  for (size_t i = 1; i < x.inst.size(); ++i) EXPECT_NE(x.inst[i - 1].sched, x.inst[i].sched) << "schedule not injective";
  for (size_t i = 0; i < x.inst.size(); ++i) {
    const Statement& st = scop.statements[x.inst[i].stmt];
    isl::set ps = point_set(st.domain.intersect_params(fixed), x.inst[i].it);
    for (int pass = 0; pass < 2; ++pass)
      for (int ai : st.accesses) {
        const Access& a = scop.accesses[ai];
        if ((a.kind == AccessKind::kWrite) != (pass == 1)) continue;
        std::vector<std::vector<long>> el = points(ps.apply(a.relation));
        EXPECT_EQ(el.size(), 1u) << a.text;
        if (el.empty()) continue;
        x.ev.push_back({static_cast<int>(i), a.array, el[0], a.kind == AccessKind::kWrite});
      }
  }
  return x;
}

// Random affine loop nests: two arrays, a scalar, subscripts with small coefficients,
// bounds that depend on outer iterators, some decreasing loops. Deterministic for a seed.
// With "time_loop", the nests sit in a serial loop `for (t = 0; t < 3; t++)`, so that
// values flow between its iterations (and between tiles). With "local_scalar", the scalar
// s is a local of the function that is not used after the scop (not live-out) instead of
// a parameter (live-out); the programs are the same otherwise.
inline std::string random_program(std::mt19937& rng, bool time_loop = false, bool local_scalar = false) {
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* it[] = {"i", "j", "k"};
  std::ostringstream os;
  if (local_scalar) {
    os << "void f(int N, int M, double A[20][20], double B[20][20]) {\ndouble s;\n#pragma scop\n";
  } else {
    os << "void f(int N, int M, double A[20][20], double B[20][20], double s) {\n#pragma scop\n";
  }
  if (time_loop) os << "for (int t = 0; t < 3; t++) {\n";
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
  if (time_loop) os << "}\n";
  os << "#pragma endscop\n}\n";
  return os.str();
}

}  // namespace bbmm::compiler::testing
