#pragma once
// Loops from isl's AST generator, printed as C: the serial loops of the host code and the
// intra-tile loops of the kernels. Expressions use bbmm_min/bbmm_max/bbmm_floord (defined by
// include/bbmm/generated_support.h) instead of isl's min/max/floord macros.

#include <functional>
#include <string>
#include <vector>

#include <isl/ast.h>

#include "poly/isl_util.h"

namespace bbmm::compiler {

// Prints one statement instance: "name" is the domain tuple name, "args" the C expressions
// of its domain dimensions; append lines (without the indentation) to "lines".
using PrintInstance =
    std::function<void(const std::string& name, const std::vector<std::string>& args,
                       std::vector<std::string>& lines)>;

// The context the functions below hand to isl's AST generator for "context": "context"
// itself when it is a union of at most kMaxAstContextPieces convex pieces, else its
// simple hull (the smallest convex set bounded by constraints of
// its pieces). A context only lets isl drop conditions it implies, so a larger one is
// always correct (the code may test a little more); a disjunctive one makes isl's AST
// generation and gist exponential in its pieces: a CUDA kernel's context of thread
// coordinates over min/max/floord tile bounds (golden/minmax_bound.c) had dozens, and
// its loops took 3.7 s to build instead of 0.02 s.
constexpr int kMaxAstContextPieces = 8;
isl::set ast_context(const isl::set& context);

// A loop whose iterations the threads of a group share (a CUDA thread block running a
// wavefront, poly/block_wavefronts.h): thread k of n runs the iterations init + k * inc,
// init + (k + n) * inc, ... ("thread" is k, "threads" n, C expressions), and "after" (a
// barrier) follows the loop, executed by every thread. A statement instance outside such a
// loop runs on the thread where "single" holds, and "after" follows it too. Every thread
// runs the loops outside the shared one, whose bounds are the same for all, so each
// reaches every "after".
struct SharedLoop {
  std::string iterator;  // the loop's iterator, as LoopAst names it ("bbmm_k3")
  std::string thread, threads, single, after;
};

// The loops executing the domain of "schedule" (S[...] -> [time...]) in the order of its
// range, under parameter constraints "context", as isl's AST: built once, printed as C any
// number of times (the kernel variants of one phase differ only in their statements). Loop
// iterators are "<iterator_prefix>0", ... (declared int64_t in the loops). Throws
// std::runtime_error when isl fails. Not thread-safe (the isl context).
class LoopAst {
 public:
  LoopAst(const isl::union_map& schedule, const isl::set& context,
          const std::string& iterator_prefix);
  ~LoopAst();
  LoopAst(const LoopAst&) = delete;
  LoopAst& operator=(const LoopAst&) = delete;
  // The C loops, every line indented by "indent" spaces. Deterministic.
  std::string print(int indent, const PrintInstance& print_instance) const;
  // The same, the loop "shared" names shared by the threads of a group (null: none).
  std::string print(int indent, const PrintInstance& print_instance, const SharedLoop* shared) const;

 private:
  isl_ast_node* tree_ = nullptr;
};

// LoopAst(schedule, context, iterator_prefix).print(indent, print_instance).
std::string print_loops(const isl::union_map& schedule, const isl::set& context,
                        const std::string& iterator_prefix, int indent,
                        const PrintInstance& print_instance);

// A C expression for "pa" (defined over "context"'s parameters) valid where "context" holds.
std::string c_expr_from_pw_aff(const isl::pw_aff& pa, const isl::set& context);

// A C condition for the parameter set "set", valid where "context" holds ("1" if always).
std::string c_condition_from_set(const isl::set& set, const isl::set& context);

// "text" with the C macros of isl's printer (min, max, floord) renamed to bbmm_min,
// bbmm_max, bbmm_floord, so generated code never defines macros with common names.
std::string rename_isl_macros(const std::string& text);

}  // namespace bbmm::compiler
