#pragma once
// Reductions summed in blocks (issue 13; `--reductions=reassociate`, opt-in). A loop of a
// serial region whose iterations only a reduction orders (durbin's `sum += r[k-i-1] * y[i]`
// over i) stays serial by default: its additions run in source order, so the results are
// the sequential program's bit for bit. With the option, bbmmc rewrites the loop's syntax
// tree before building the model again:
//
//   for (int bbmm_rbN = 0; B * bbmm_rbN < U - L; bbmm_rbN++) {      // parallel
//     bbmm_redN[bbmm_rbN] = 0;                                       // (1 for *)
//     for (i = L + B * bbmm_rbN; i < U && i < L + B * bbmm_rbN + B; i++)
//       bbmm_redN[bbmm_rbN] += e;                                    // (*= for *)
//   }
//   for (int bbmm_rbN = 0; B * bbmm_rbN < U - L; bbmm_rbN++)        // serial, in order
//     s += bbmm_redN[bbmm_rbN];                                      // (-=, *=)
//
// where the loop was `for (i = L; i < U; i++) s op= e;` (`<=` gives U - L + 1 iterations),
// B the block (`--reduction-block`, default 4) and bbmm_redN an array of partial sums bbmmc
// declares in the scop, sized by its accesses (Decl::sized_by_accesses; the generated host
// code allocates it). The block loop is parallel (each block writes its own partial), so it
// is partitioned like any other loop; the sum of the partials stays a serial step. The
// additions are reassociated: floating-point results may differ from the sequential
// program's in their last bits (PolyBench's durbin prints the same dump at MINI to
// EXTRALARGE for blocks of 2 to 64, measured), which is why it is opt-in.

#include <string>
#include <vector>

#include "frontend/ast.h"
#include "poly/model.h"

namespace bbmm::compiler {

// A loop of a serial region (not one of its phase's serial loops) with step 1 whose body is
// one statement `s op= e` (op +, - or *; or `s = s + e`, `s = e + s`, `s = s - e`,
// `s = s * e`, `s = e * s`) on a scalar s that e neither reads nor writes, where every
// dependence the loop carries is on s.
struct Reduction {
  const Stmt* loop = nullptr;  // the for statement
  std::string var;             // s
  char op = '+';               // '+', '-' or '*'
  const Expr* rhs = nullptr;   // e, in the loop's tree
  const Expr* lo = nullptr;    // L, from the loop's header
  const Expr* hi = nullptr;    // U
  std::string cmp;             // "<" or "<="
  std::string elem_type;       // s's type
  int elem_size = 0;
};

// The reductions of "scop" (dependences computed), in loop order.
std::vector<Reduction> find_reductions(const Scop& scop);

// Rewrites the loop of each of "found" in the scops of "tu" as above, with blocks of
// "block" (> 0) iterations; returns how many it rewrote. The models built from "tu" before
// point into the replaced trees: build them again.
int block_reductions(TranslationUnit& tu, const std::vector<Reduction>& found, int block);

}  // namespace bbmm::compiler
