#pragma once
// Small helpers over isl's C++ interface (isl 0.25): an owning context, spaces with
// named dimensions, and deterministic printing of union maps/sets.

#include <isl/cpp.h>

#include <string>
#include <vector>

namespace bbmm::compiler {

// Owns one isl_ctx. Every isl object made in it must be destroyed first, so holders
// declare their IslContext member before any isl member. Not thread-safe.
class IslContext {
 public:
  IslContext();
  ~IslContext();
  IslContext(const IslContext&) = delete;
  IslContext& operator=(const IslContext&) = delete;
  isl::ctx ctx() const { return isl::ctx(ctx_); }
  isl_ctx* get() const { return ctx_; }
  // Limits the work of one isl call sequence; 0 means unlimited. Exceeding it makes isl
  // fail with isl::exception_quota (reported as "too complex").
  void set_max_operations(unsigned long n);
  void reset_operations();
  // The operations each pass may spend on one scop (0: unlimited); armed by
  // run_within_isl_budget (poly/budget.h).
  void set_budget(unsigned long n) { budget_ = n; }
  unsigned long budget() const { return budget_; }

 private:
  isl_ctx* ctx_;
  unsigned long budget_ = 0;
};

// A set space with parameters "params", tuple "tuple" (may be empty) and dims "dims".
isl::space make_set_space(isl::ctx ctx, const std::vector<std::string>& params,
                          const std::string& tuple, const std::vector<std::string>& dims);

// S[x] -> S[y] over "dom"'s space with y_d = sum_k m[d][k] x_k (m has a row per output
// dimension and a column per dimension of "dom"), output dimensions named "names".
isl::map matrix_map(const isl::set& dom, const std::vector<std::vector<long>>& m,
                    const std::vector<std::string>& names);

// Printing of isl objects with the C printer (isl::cpp prints the same).
std::string str(const isl::set& s);
std::string str(const isl::map& m);
std::string str(const isl::pw_aff& a);

// The maps of "umap", sorted by their printed form: isl's own order depends on hashes.
std::vector<isl::map> sorted_maps(const isl::union_map& umap);
std::vector<isl::set> sorted_sets(const isl::union_set& uset);

// Name of the tuple of "space"'s domain wrapped pair [S[...] -> ref[]]'s range ("ref")
// and domain ("S"): helpers for tagged dependences.
std::string tagged_statement(const isl::space& wrapped_set_space);
std::string tagged_ref(const isl::space& wrapped_set_space);

// The S -> T statement-instance map of a tagged dependence [S -> ref] -> [T -> ref'].
isl::map untag(const isl::map& tagged_dependence);

}  // namespace bbmm::compiler
