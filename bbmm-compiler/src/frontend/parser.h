#pragma once
// The front end's parser: finds the functions and declarations of a preprocessed
// translation unit, and parses every `#pragma scop` region into statement trees.
// Code outside scops is only skimmed for declarations (and never rejected).

#include <vector>

#include "frontend/ast.h"
#include "frontend/diagnostics.h"
#include "frontend/lexer.h"
#include "frontend/source.h"

namespace bbmm::compiler {

// Parses "tokens" (from lex(sm)); syntax errors inside scops go to "diag".
TranslationUnit parse_translation_unit(const std::vector<Token>& tokens, SourceManager& sm,
                                       Diagnostics& diag);

// Re-prints an expression from its tree, fully parenthesised where needed (used for
// messages and for the original statement text in the model).
std::string expr_to_string(const Expr& e);

}  // namespace bbmm::compiler
