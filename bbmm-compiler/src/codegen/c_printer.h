#pragma once
// Re-prints a statement's expression tree as C, replacing every array access by the code
// the caller chooses (box-local addressing in a kernel). Parentheses written by the user are
// kept; the tree's shape already encodes precedence elsewhere.

#include <functional>
#include <string>
#include <vector>

#include "frontend/ast.h"

namespace bbmm::compiler {

// Returns the replacement for access expression "e" (a chain of kIndex nodes, or an
// identifier naming a scalar), or nullopt-like empty string to print it unchanged.
using AccessRewriter = std::function<std::string(const Expr& e)>;

// C text of "e" with accesses rewritten by "rewrite".
std::string print_c_expr(const Expr& e, const AccessRewriter& rewrite);

// The subscripts of access "e" (A[x][y] -> {x, y}), outermost first, and its base name.
void access_subscripts(const Expr& e, std::string& base, std::vector<const Expr*>& subscripts);

// The strings of "v" separated by "sep".
std::string join(const std::vector<std::string>& v, const std::string& sep);

// "text" made safe inside a C block comment.
std::string comment_safe(const std::string& text);

}  // namespace bbmm::compiler
