#pragma once
// Tokens of the preprocessed translation unit. Directive lines become line-map entries
// (`# 12 "file.c"`) or pragma tokens (`#pragma scop`); everything else is C tokens.

#include <cstdint>
#include <string_view>
#include <vector>

#include "frontend/source.h"

namespace bbmm::compiler {

enum class Tok { kIdent, kInt, kFloat, kChar, kString, kPunct, kPragma, kEof };

struct Token {
  Tok kind = Tok::kEof;
  std::string_view text;  // spelling; for kPragma the words after `pragma`, trimmed
  size_t offset = 0;      // byte offset in the preprocessed text
  uint64_t int_value = 0; // for kInt
  bool overflow = false;  // kInt literal does not fit in 63 bits

  bool is(std::string_view s) const {
    return (kind == Tok::kPunct || kind == Tok::kIdent) && text == s;
  }
};

// Tokenizes "sm.text()" and fills sm's line map. Never fails: bytes that are no C token
// become one-character punctuation tokens that the parser rejects. The last token is kEof.
std::vector<Token> lex(SourceManager& sm);

}  // namespace bbmm::compiler
