#include "frontend/parser.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

namespace bbmm::compiler {
namespace {

constexpr int kMaxNesting = 200;
// Bounds the size (and so the depth) of one statement's trees: recursion stays shallow.
constexpr int kMaxNodes = 4000;

std::string_view trim_view(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The words after `#pragma` of a `#pragma bbmm scratch(...)`: what follows "scratch", or
// nullopt for another pragma.
std::optional<std::string_view> scratch_pragma_args(std::string_view text) {
  if (text.substr(0, 4) != "bbmm") return std::nullopt;
  text = trim_view(text.substr(4));
  if (text.substr(0, 7) != "scratch") return std::nullopt;
  text.remove_prefix(7);
  if (!text.empty() && (std::isalnum(static_cast<unsigned char>(text.front())) || text.front() == '_')) {
    return std::nullopt;
  }
  return trim_view(text);
}

bool is_type_keyword(std::string_view s) {
  static const std::set<std::string_view> k = {
      "void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
      "_Bool", "struct", "union", "enum", "__int128", "_Complex"};
  return k.count(s) > 0;
}
bool is_qualifier(std::string_view s) {
  static const std::set<std::string_view> k = {
      "const", "volatile", "restrict", "static", "extern", "register", "auto", "inline",
      "typedef", "__restrict", "__restrict__", "__inline", "__inline__", "__extension__",
      "_Noreturn", "__const", "__volatile__", "_Thread_local", "__thread", "_Alignas"};
  return k.count(s) > 0;
}

struct TypeInfo {
  std::string base;
  bool is_integer = false;
  bool is_floating = false;
  int size = 0;
};

class Parser {
 public:
  Parser(const std::vector<Token>& toks, SourceManager& sm, Diagnostics& diag)
      : t_(toks), sm_(sm), diag_(diag) {}

  TranslationUnit run();

 private:
  // --- token helpers -------------------------------------------------------------------
  const Token& cur() const { return t_[p_]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  bool at_eof() const { return cur().kind == Tok::kEof; }
  bool is(std::string_view s) const { return cur().is(s); }
  void advance() {
    if (!at_eof()) ++p_;
  }
  bool accept(std::string_view s) {
    if (is(s)) {
      advance();
      return true;
    }
    return false;
  }
  size_t prev_end() const {
    if (p_ == 0) return 0;
    const Token& pr = t_[p_ - 1];
    return pr.offset + pr.text.size();
  }
  bool is_pragma(std::string_view word) const {
    return cur().kind == Tok::kPragma && cur().text == word;
  }
  bool is_scop_end() const { return is_pragma("endscop"); }
  // `#pragma endscope`, `#pragma end scop`, ...: meant to end the scop.
  bool is_misspelled_scop_end() const {
    if (cur().kind != Tok::kPragma || cur().text == "endscop") return false;
    std::string w;
    for (char c : cur().text)
      if (std::isalpha(static_cast<unsigned char>(c))) w += static_cast<char>(std::tolower(c));
    return w.rfind("endscop", 0) == 0 || (w.size() >= 5 && edit_distance(w, "endscop") <= 2);
  }

  Diagnostics::Builder error_at(size_t offset) {
    failed_ = true;
    if (quiet_ > 0) return sink_.error({});
    return diag_.error(sm_.resolve(offset));
  }
  bool expect(std::string_view s, const char* context) {
    if (accept(s)) return true;
    if (!failed_) {
      // Point just past the previous token, where the missing token belongs.
      auto b = error_at(prev_end());
      b << "expected '" << s << "' " << context;
      if (!at_eof() && cur().kind != Tok::kPragma) b << ", found '" << cur().text << "'";
    }
    failed_ = true;
    return false;
  }

  // Skips a balanced (), [] or {} group starting at the current opener.
  void skip_balanced() {
    int depth = 0;
    do {
      if (is("(") || is("[") || is("{")) ++depth;
      else if (is(")") || is("]") || is("}")) --depth;
      advance();
    } while (depth > 0 && !at_eof());
  }

  // --- declarations --------------------------------------------------------------------
  bool is_decl_start() const {
    const Token& c = cur();
    if (c.kind != Tok::kIdent) return false;
    if (is_type_keyword(c.text) || is_qualifier(c.text)) return true;
    if (typedefs_.count(std::string(c.text))) {
      const Token& n = peek();
      return n.kind == Tok::kIdent || n.is("*") || n.is("(");
    }
    return false;
  }
  bool is_type_name_start() const {
    const Token& c = cur();
    if (c.kind != Tok::kIdent) return false;
    return is_type_keyword(c.text) || (is_qualifier(c.text) && c.text != "typedef") ||
           typedefs_.count(std::string(c.text)) > 0;
  }
  // At `T name`, `T *name`: T an identifier that is neither a type nor a keyword, so this
  // can only be a declaration of "name" with a type bbmmc does not know.
  bool at_unknown_type_decl() const {
    static const std::set<std::string_view> statement_words = {
        "return", "goto", "else", "case", "do", "sizeof", "break", "continue", "default",
        "if", "for", "while", "switch"};
    const Token& t = cur();
    if (t.kind != Tok::kIdent || is_type_keyword(t.text) || is_qualifier(t.text) ||
        statement_words.count(t.text) || typedefs_.count(std::string(t.text)))
      return false;
    size_t k = 1;
    while (peek(k).is("*")) ++k;
    const Token& n = peek(k);
    return n.kind == Tok::kIdent && !is_type_keyword(n.text) && !is_qualifier(n.text);
  }
  void record_unknown_type(int function) {
    if (!at_unknown_type_decl()) return;
    size_t k = 1;
    while (peek(k).is("*")) ++k;
    tu_.unknown_types.push_back(
        {std::string(cur().text), cur().offset, std::string(peek(k).text), function});
  }
  void report_unknown_type() {
    error_at(cur().offset) << "unknown type name '" << cur().text << "'";
    diag_.set_last_hint("declare it before the function (for example 'typedef double " +
                        std::string(cur().text) + ";') or include the header that defines it");
  }
  bool parse_specifiers(Decl& d);
  bool parse_declarator(Decl& d, bool allow_abstract);
  bool parse_declaration(std::vector<Decl>& out, Decl::Where where, bool in_scop);
  std::string parse_type_name();
  void skip_attributes() {
    while (cur().kind == Tok::kIdent &&
           (cur().text == "__attribute__" || cur().text == "__asm__" || cur().text == "__asm" ||
            cur().text == "asm" || cur().text == "__attribute")) {
      advance();
      if (is("(")) skip_balanced();
    }
  }

  // --- top level -----------------------------------------------------------------------
  void parse_external();
  void parse_function_body(Function& f, size_t open, size_t close, int fn_index);
  void parse_scop(Function& f, int fn_index, size_t close);
  // `#pragma bbmm scratch(A, B)` at the top level of scop `s` (the current token).
  void parse_scratch(ScopAst& s, std::string_view args);

  // --- scop statements -----------------------------------------------------------------
  StmtPtr parse_stmt();
  StmtPtr parse_for();
  StmtPtr parse_if();
  StmtPtr parse_block();
  void sync_statement();
  StmtPtr reject_statement(std::string_view keyword);

  // --- expressions ---------------------------------------------------------------------
  ExprPtr parse_expr();
  ExprPtr parse_assign();
  ExprPtr parse_ternary();
  ExprPtr parse_binary(int min_prec);
  ExprPtr parse_unary();
  ExprPtr parse_postfix();
  ExprPtr parse_primary();

  const std::vector<Token>& t_;
  size_t p_ = 0;
  SourceManager& sm_;
  Diagnostics& diag_;
  Diagnostics sink_;
  int quiet_ = 0;
  bool failed_ = false;
  int depth_ = 0;
  int nodes_ = 0;
  bool too_big() {
    if (++nodes_ <= kMaxNodes) return false;
    if (nodes_ == kMaxNodes + 1) error_at(cur().offset) << "expression too large (more than " << kMaxNodes << " operands)";
    failed_ = true;
    return true;
  }
  std::unordered_map<std::string, TypeInfo> typedefs_;
  TranslationUnit tu_;
};

struct DepthGuard {
  int& d;
  explicit DepthGuard(int& x) : d(x) { ++d; }
  ~DepthGuard() { --d; }
};

// ---------------------------------------------------------------------------------------

bool Parser::parse_specifiers(Decl& d) {
  int longs = 0;
  bool is_unsigned = false, is_signed = false, saw_type = false;
  std::string kw;
  TypeInfo named;
  bool have_named = false;
  d.spec_offset = cur().offset;
  while (cur().kind == Tok::kIdent) {
    std::string_view s = cur().text;
    if (s == "typedef") {
      d.is_typedef = true;
      advance();
    } else if (s == "const" || s == "__const") {
      d.is_const = true;
      advance();
    } else if (s == "_Alignas") {
      advance();
      if (is("(")) skip_balanced();
    } else if (is_qualifier(s)) {
      advance();
    } else if (s == "__attribute__" || s == "__attribute") {
      skip_attributes();
    } else if (s == "unsigned") {
      is_unsigned = saw_type = true;
      advance();
    } else if (s == "signed") {
      is_signed = saw_type = true;
      advance();
    } else if (s == "long") {
      ++longs;
      saw_type = true;
      advance();
    } else if (s == "struct" || s == "union" || s == "enum") {
      bool is_enum = s == "enum";
      kw = std::string(s);
      advance();
      if (cur().kind == Tok::kIdent) {
        kw += " " + std::string(cur().text);
        advance();
      }
      if (is("{")) skip_balanced();
      saw_type = true;
      if (is_enum) {
        named = {kw, true, false, 4};
        have_named = true;
      }
    } else if (is_type_keyword(s)) {
      if (!kw.empty() && kw != "int") kw += " ";
      if (kw == "int") kw.clear();
      kw += std::string(s);
      saw_type = true;
      advance();
    } else if (!saw_type && typedefs_.count(std::string(s))) {
      named = typedefs_[std::string(s)];
      have_named = true;
      saw_type = true;
      advance();
    } else {
      break;
    }
  }
  if (!saw_type) return false;
  if (have_named) {
    d.base_type = named.base;
    d.is_integer = named.is_integer;
    d.is_floating = named.is_floating;
    d.elem_size = named.size;
    return true;
  }
  if (kw == "double") {
    d.base_type = longs ? "long double" : "double";
    d.is_floating = true;
    d.elem_size = longs ? 16 : 8;
  } else if (kw == "float") {
    d.base_type = "float";
    d.is_floating = true;
    d.elem_size = 4;
  } else if (kw == "char") {
    d.base_type = is_unsigned ? "unsigned char" : (is_signed ? "signed char" : "char");
    d.is_integer = true;
    d.elem_size = 1;
  } else if (kw == "short") {
    d.base_type = is_unsigned ? "unsigned short" : "short";
    d.is_integer = true;
    d.elem_size = 2;
  } else if (kw == "_Bool") {
    d.base_type = "_Bool";
    d.is_integer = true;
    d.elem_size = 1;
  } else if (kw == "void") {
    d.base_type = "void";
  } else if (kw.empty() || kw == "int") {
    std::string b = longs >= 2 ? "long long" : longs == 1 ? "long" : "int";
    d.base_type = is_unsigned ? "unsigned " + b : b;
    d.is_integer = true;
    d.elem_size = longs ? 8 : 4;
  } else {
    d.base_type = kw;  // struct X, __int128, ...
  }
  return true;
}

bool Parser::parse_declarator(Decl& d, bool allow_abstract) {
  while (is("*")) {
    ++d.pointer_depth;
    advance();
    while (cur().kind == Tok::kIdent && is_qualifier(cur().text)) advance();
  }
  skip_attributes();
  bool paren_ptr = false;
  if (is("(") && peek().is("*")) {
    advance();
    while (accept("*")) paren_ptr = true;
    while (cur().kind == Tok::kIdent && is_qualifier(cur().text)) advance();
    if (cur().kind == Tok::kIdent) {
      d.name = std::string(cur().text);
      d.offset = cur().offset;
      advance();
    }
    if (!accept(")")) return false;
  } else if (cur().kind == Tok::kIdent && !is_type_keyword(cur().text) &&
             !is_qualifier(cur().text)) {
    d.name = std::string(cur().text);
    d.offset = cur().offset;
    advance();
  } else if (!allow_abstract) {
    return false;
  }
  skip_attributes();
  if (is("(")) {
    d.is_function = !paren_ptr;
    skip_balanced();
    if (paren_ptr) d.pointer_depth++;  // pointer to function
    skip_attributes();
    return true;
  }
  if (paren_ptr) d.dims.push_back(nullptr);
  d.pointer_to_array = paren_ptr;
  while (is("[")) {
    advance();
    while (cur().kind == Tok::kIdent && (is_qualifier(cur().text))) advance();
    if (is("]")) {
      d.dims.push_back(nullptr);
      advance();
      continue;
    }
    if (is("*") && peek().is("]")) {  // VLA `[*]`
      advance();
      advance();
      d.dims.push_back(nullptr);
      continue;
    }
    ExprPtr e = parse_assign();
    if (!e || !accept("]")) return false;
    d.dims.push_back(std::move(e));
  }
  skip_attributes();
  return true;
}

// Parses `specifiers declarator [= init] (, declarator [= init])* ;`. Returns false
// (and leaves the position somewhere inside) when the tokens are no declaration.
bool Parser::parse_declaration(std::vector<Decl>& out, Decl::Where where, bool in_scop) {
  nodes_ = 0;
  Decl spec;
  if (!parse_specifiers(spec)) return false;
  if (is(";")) {  // `struct X {...};`
    advance();
    return true;
  }
  while (true) {
    Decl d;
    d.spec_offset = spec.spec_offset;
    d.base_type = spec.base_type;
    d.is_integer = spec.is_integer;
    d.is_floating = spec.is_floating;
    d.elem_size = spec.elem_size;
    d.is_typedef = spec.is_typedef;
    d.is_const = spec.is_const;
    d.where = where;
    if (!parse_declarator(d, false)) return false;
    if (accept("=")) {
      d.has_init = true;
      if (is("{")) {
        skip_balanced();
      } else {
        d.init = parse_assign();
        if (!d.init) return false;
      }
    }
    if (d.is_typedef && !d.name.empty()) {
      TypeInfo ti{d.base_type, d.is_integer && d.pointer_depth == 0 && d.dims.empty(),
                  d.is_floating && d.pointer_depth == 0 && d.dims.empty(),
                  d.pointer_depth == 0 && d.dims.empty() ? d.elem_size : 0};
      if (d.pointer_depth || !d.dims.empty()) ti.base = d.base_type + "*";
      typedefs_[d.name] = ti;
    }
    out.push_back(std::move(d));
    if (accept(",")) continue;
    if (in_scop) return expect(";", "after the declaration");
    return accept(";");
  }
}

std::string Parser::parse_type_name() {
  size_t b = cur().offset;
  Decl d;
  parse_specifiers(d);
  parse_declarator(d, true);
  return std::string(sm_.text().substr(b, prev_end() - b));
}

// ---------------------------------------------------------------------------------------

TranslationUnit Parser::run() {
  while (!at_eof()) {
    if (cur().kind == Tok::kPragma) {
      if (cur().text == "scop" || cur().text == "endscop")
        error_at(cur().offset) << "'#pragma " << cur().text << "' outside a function";
      failed_ = false;
      advance();
      continue;
    }
    if (accept(";")) continue;
    parse_external();
  }
  return std::move(tu_);
}

void Parser::parse_external() {
  size_t start = p_;
  // Find the `;` or `{` that ends the declaration or starts a body.
  int depth = 0;
  size_t k = p_;
  bool saw_assign = false;
  for (; t_[k].kind != Tok::kEof; ++k) {
    const Token& x = t_[k];
    if (x.kind == Tok::kPragma && depth == 0) break;
    if (x.is("(") || x.is("[")) ++depth;
    else if (x.is(")") || x.is("]")) depth = std::max(0, depth - 1);
    else if (depth == 0 && x.is("=")) saw_assign = true;
    else if (depth == 0 && (x.is(";") || x.is("{"))) break;
  }
  const Token& end = t_[k];
  if (end.is("{") && !saw_assign && k > start && t_[k - 1].is(")")) {
    // Function definition: name before the `(` that matches the last `)`.
    size_t rp = k - 1;
    int d = 0;
    size_t lp = rp;
    for (size_t j = rp + 1; j-- > start;) {
      if (t_[j].is(")")) ++d;
      else if (t_[j].is("(")) {
        if (--d == 0) {
          lp = j;
          break;
        }
      }
    }
    auto fn = std::make_unique<Function>();
    if (lp > start && t_[lp - 1].kind == Tok::kIdent) {
      fn->name = std::string(t_[lp - 1].text);
      fn->offset = t_[lp - 1].offset;
    }
    // Parameters.
    p_ = lp + 1;
    ++quiet_;
    while (p_ < rp && !at_eof()) {
      size_t pstart = p_;
      Decl d;
      d.where = Decl::Where::kParam;
      nodes_ = 0;
      bool ok = parse_specifiers(d) && parse_declarator(d, true);
      if (!ok && d.base_type.empty()) record_unknown_type(static_cast<int>(tu_.functions.size()));
      if (ok && (is(",") || p_ == rp) && !d.name.empty()) fn->params.push_back(std::move(d));
      // Skip to the next comma at depth 0.
      int dd = 0;
      while (p_ < rp && !(dd == 0 && is(","))) {
        if (is("(") || is("[")) ++dd;
        else if (is(")") || is("]")) --dd;
        advance();
      }
      if (p_ < rp) advance();
      if (p_ == pstart) advance();
    }
    --quiet_;
    failed_ = false;
    // Body.
    p_ = k;
    skip_balanced();
    size_t close = p_ - 1;
    int idx = static_cast<int>(tu_.functions.size());
    tu_.functions.push_back(std::move(fn));
    parse_function_body(*tu_.functions.back(), k, close, idx);
    p_ = close + 1;
    return;
  }
  if (end.kind == Tok::kPragma || end.kind == Tok::kEof) {
    p_ = k;
    return;
  }
  if (end.is("{")) {
    // struct/enum definition or brace initializer: skip to the `;` after it.
    bool is_typedef = t_[start].is("typedef");
    p_ = k;
    skip_balanced();
    // `= { ... }` initialisers and `struct {...} x;` may still declare arrays: retry the
    // whole thing as a declaration, quietly.
    size_t after = p_;
    p_ = start;
    ++quiet_;
    std::vector<Decl> decls;
    bool ok = parse_declaration(decls, Decl::Where::kGlobal, false);
    --quiet_;
    failed_ = false;
    if (ok) {
      for (Decl& d : decls)
        if (!d.is_typedef && !d.is_function && !d.name.empty()) tu_.globals.push_back(std::move(d));
      return;
    }
    p_ = after;
    while (!at_eof() && !is(";") && cur().kind != Tok::kPragma) {
      if (is_typedef && cur().kind == Tok::kIdent) typedefs_[std::string(cur().text)] = {std::string(cur().text)};
      if (is("{") || is("(") || is("[")) skip_balanced();
      else advance();
    }
    accept(";");
    return;
  }
  // Declaration ending in `;`.
  p_ = start;
  ++quiet_;
  std::vector<Decl> decls;
  bool ok = parse_declaration(decls, Decl::Where::kGlobal, false);
  --quiet_;
  failed_ = false;
  if (ok) {
    for (Decl& d : decls)
      if (!d.is_typedef && !d.is_function && !d.name.empty()) tu_.globals.push_back(std::move(d));
  } else {
    p_ = start;
    while (cur().kind == Tok::kIdent && is_qualifier(cur().text) && !is("typedef")) advance();
    record_unknown_type(-1);
  }
  p_ = k + 1;
}

void Parser::parse_function_body(Function& f, size_t open, size_t close, int fn_index) {
  f.body_begin = open;
  f.body_offset = t_[open].offset;
  f.body_end = close;
  p_ = open + 1;
  bool stmt_start = true;
  while (p_ < close && !at_eof()) {
    const Token& x = cur();
    if (x.kind == Tok::kPragma) {
      if (x.text == "scop") {
        parse_scop(f, fn_index, close);
      } else if (x.text == "endscop") {
        error_at(x.offset) << "'#pragma endscop' without a matching '#pragma scop'";
        failed_ = false;
        advance();
      } else {
        advance();
      }
      stmt_start = true;
      continue;
    }
    if (stmt_start && is_decl_start()) {
      size_t save = p_;
      ++quiet_;
      std::vector<Decl> decls;
      bool ok = parse_declaration(decls, Decl::Where::kLocal, false);
      --quiet_;
      failed_ = false;
      if (ok && p_ <= close) {
        for (Decl& d : decls)
          if (!d.is_typedef && !d.is_function && !d.name.empty()) f.locals.push_back(std::move(d));
        stmt_start = true;
        continue;
      }
      p_ = save;
    }
    if (stmt_start) {  // not a declaration bbmmc understands: `[const] foo_t x;`?
      const size_t save = p_;
      while (cur().kind == Tok::kIdent && is_qualifier(cur().text) && !is("typedef")) advance();
      record_unknown_type(fn_index);
      p_ = save;
    }
    stmt_start = x.is(";") || x.is("{") || x.is("}") || x.is(")");
    advance();
  }
}

void Parser::parse_scop(Function& f, int fn_index, size_t close) {
  ScopAst s;
  s.begin_offset = cur().offset;
  s.function = fn_index;
  s.locals_visible = f.locals.size();
  const int errors_before = diag_.error_count();
  advance();
  while (true) {
    if (is_scop_end()) {
      s.end_offset = cur().offset;
      s.terminated = true;
      advance();
      break;
    }
    if (at_eof() || p_ >= close || is("}")) {
      error_at(s.begin_offset) << "'#pragma scop' has no matching '#pragma endscop' in the same block";
      diag_.note(sm_.resolve(at_eof() ? prev_end() : cur().offset))
          << "the block containing the scop ends here";
      s.end_offset = cur().offset;
      break;
    }
    if (is_misspelled_scop_end()) {
      // Taken as the end: one error, not a second one for the missing '#pragma endscop'.
      error_at(cur().offset) << "'#pragma " << cur().text << "' is not '#pragma endscop'";
      diag_.set_last_hint("end the scop with '#pragma endscop'");
      s.end_offset = cur().offset;
      s.terminated = true;
      advance();
      break;
    }
    if (is_pragma("scop")) {
      error_at(cur().offset) << "'#pragma scop' inside another scop";
      advance();
      continue;
    }
    if (cur().kind == Tok::kPragma) {
      if (std::optional<std::string_view> args = scratch_pragma_args(cur().text)) {
        parse_scratch(s, *args);
        advance();
        continue;
      }
    }
    failed_ = false;
    size_t before = p_;
    StmtPtr st = parse_stmt();
    if (st) s.body.push_back(std::move(st));
    if (p_ == before) advance();  // always make progress
  }
  failed_ = false;
  s.syntax_errors = diag_.error_count() > errors_before;
  for (size_t j = p_; j < close && j < t_.size(); ++j)
    if (t_[j].kind == Tok::kIdent) s.names_after.emplace_back(t_[j].text);
  tu_.scops.push_back(std::move(s));
}

void Parser::parse_scratch(ScopAst& s, std::string_view args) {
  const size_t off = cur().offset;
  auto malformed = [&](std::string_view what) {
    error_at(off) << "malformed '#pragma bbmm scratch': " << what;
    diag_.set_last_hint(
        "write '#pragma bbmm scratch(A, B)' with the arrays whose values after the scop are "
        "not used");
  };
  if (args.size() < 2 || args.front() != '(' || args.back() != ')') {
    malformed("expected a parenthesised list of array names");
    return;
  }
  args = args.substr(1, args.size() - 2);
  if (trim_view(args).empty()) {
    malformed("the list of array names is empty");
    return;
  }
  std::vector<std::string> names;
  while (true) {
    const size_t comma = args.find(',');
    const std::string_view name = trim_view(args.substr(0, comma));
    const bool ident = !name.empty() && !std::isdigit(static_cast<unsigned char>(name.front())) &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                       });
    if (!ident) {
      malformed("'" + std::string(name) + "' is not a name");
      return;
    }
    names.emplace_back(name);
    if (comma == std::string_view::npos) break;
    args.remove_prefix(comma + 1);
  }
  for (std::string& n : names) s.scratch.push_back(ScratchName{std::move(n), off});
}

// ---------------------------------------------------------------------------------------

void Parser::sync_statement() {
  int depth = 0;
  while (!at_eof() && !is_scop_end()) {
    if (cur().kind == Tok::kPragma && depth == 0) return;
    if (is("(") || is("[") || is("{")) ++depth;
    else if (is(")") || is("]")) depth = std::max(0, depth - 1);
    else if (is("}")) {
      if (depth == 0) return;
      --depth;
      if (depth == 0) {
        advance();
        return;
      }
    } else if (is(";") && depth == 0) {
      advance();
      return;
    }
    advance();
  }
}

StmtPtr Parser::reject_statement(std::string_view kw) {
  size_t off = cur().offset;
  std::string hint;
  std::string what;
  if (kw == "while" || kw == "do") {
    what = "'" + std::string(kw) + "' loops are not supported inside a scop";
    hint = "write the loop as a 'for' loop with affine bounds and a constant step";
  } else if (kw == "goto") {
    what = "'goto' is not supported inside a scop";
    hint = "restructure the control flow as for loops and affine if statements";
  } else if (kw == "break" || kw == "continue" || kw == "return") {
    what = "'" + std::string(kw) + "' is not supported inside a scop";
    hint = "a scop needs static control flow; move the early exit outside the scop or express "
           "it as an affine loop bound";
  } else if (kw == "switch" || kw == "case" || kw == "default") {
    what = "'switch' is not supported inside a scop";
    hint = "use if statements with affine conditions";
  } else {
    what = "labels are not supported inside a scop";
    hint = "remove the label; 'goto' is not supported inside a scop";
  }
  error_at(off) << what;
  if (!diag_.all().empty()) diag_.set_last_hint(hint);
  // Recovery: skip the header, parse (and drop) the body so later errors still show.
  if (kw == "while") {
    advance();
    if (is("(")) skip_balanced();
    failed_ = false;
    parse_stmt();
  } else if (kw == "switch") {
    advance();
    if (is("(")) skip_balanced();
    if (is("{")) skip_balanced();
    else sync_statement();
  } else if (kw == "do") {
    advance();
    failed_ = false;
    parse_stmt();
    if (accept("while") && is("(")) skip_balanced();
    accept(";");
  } else if (kw == "case" || kw == "default" || kw == "label") {
    while (!at_eof() && !is(":") && !is(";") && !is_scop_end()) advance();
    accept(":");
  } else {
    sync_statement();
  }
  failed_ = false;
  return nullptr;
}

StmtPtr Parser::parse_stmt() {
  DepthGuard g(depth_);
  nodes_ = 0;
  if (depth_ > kMaxNesting) {
    error_at(cur().offset) << "statements nested too deeply (more than " << kMaxNesting << " levels)";
    while (!at_eof() && !is_scop_end()) advance();
    return nullptr;
  }
  const Token& x = cur();
  if (x.kind == Tok::kPragma) {
    if (x.text == "bbmm parallel") {
      size_t off = x.offset;
      advance();
      while (cur().kind == Tok::kPragma && cur().text != "endscop" && cur().text != "scop") advance();
      if (!is("for")) {
        error_at(off) << "'#pragma bbmm parallel' must be followed by a for loop";
        return nullptr;
      }
      StmtPtr s = parse_for();
      if (s) {
        s->asserted_parallel = true;
        s->pragma_offset = off;
      }
      return s;
    }
    if (scratch_pragma_args(x.text)) {
      error_at(x.offset) << "'#pragma bbmm scratch' inside a statement";
      diag_.set_last_hint(
          "put it at the top level of the scop, between its statements (it is about the "
          "values the arrays hold after the scop)");
      advance();
      return nullptr;
    }
    if (x.text.substr(0, 4) == "bbmm") {
      error_at(x.offset) << "unknown bbmm pragma '#pragma " << x.text << "'";
      diag_.set_last_hint(
          "the bbmm pragmas are '#pragma bbmm parallel' (before a for loop) and '#pragma "
          "bbmm scratch(A, ...)' (in a scop: arrays whose values after it are not used)");
      advance();
      return nullptr;
    }
    advance();  // other pragmas (omp, ivdep, ...) are ignored
    return nullptr;
  }
  if (x.is("{")) return parse_block();
  if (x.is(";")) {
    auto s = std::make_unique<Stmt>(Stmt::Kind::kEmpty, x.offset);
    advance();
    s->end = prev_end();
    return s;
  }
  if (x.kind == Tok::kIdent) {
    if (x.text == "for") return parse_for();
    if (x.text == "if") return parse_if();
    if (x.text == "while" || x.text == "do" || x.text == "goto" || x.text == "break" ||
        x.text == "continue" || x.text == "return" || x.text == "switch" ||
        x.text == "case" || x.text == "default")
      return reject_statement(x.text);
    if (peek().is(":") && !is_decl_start()) return reject_statement("label");
    if (at_unknown_type_decl()) {
      report_unknown_type();
      sync_statement();
      return nullptr;
    }
    if (is_decl_start()) {
      auto s = std::make_unique<Stmt>(Stmt::Kind::kDecl, x.offset);
      if (!parse_declaration(s->decls, Decl::Where::kScop, true)) {
        if (!failed_) error_at(cur().offset) << "cannot parse this declaration";
        sync_statement();
        return nullptr;
      }
      s->end = prev_end();
      return s;
    }
  }
  auto s = std::make_unique<Stmt>(Stmt::Kind::kExpr, x.offset);
  s->expr = parse_expr();
  if (!s->expr || !expect(";", "after the statement")) {
    sync_statement();
    return nullptr;
  }
  s->end = prev_end();
  return s;
}

StmtPtr Parser::parse_block() {
  auto s = std::make_unique<Stmt>(Stmt::Kind::kBlock, cur().offset);
  advance();
  while (!is("}")) {
    if (at_eof() || is_scop_end() || is_pragma("scop")) {
      error_at(at_eof() ? prev_end() : cur().offset) << "expected '}' to close the block";
      return s;
    }
    failed_ = false;
    size_t before = p_;
    StmtPtr st = parse_stmt();
    if (st) s->body.push_back(std::move(st));
    if (p_ == before) advance();
  }
  advance();
  s->end = prev_end();
  return s;
}

StmtPtr Parser::parse_for() {
  auto s = std::make_unique<Stmt>(Stmt::Kind::kFor, cur().offset);
  advance();
  if (!expect("(", "after 'for'")) {
    sync_statement();
    return nullptr;
  }
  if (!is(";")) {
    if (is_decl_start()) {
      Decl d;
      parse_specifiers(d);
      if (cur().kind != Tok::kIdent) {
        error_at(cur().offset) << "expected the loop iterator's name";
        sync_statement();
        return nullptr;
      }
      s->init_decl_var = std::string(cur().text);
      s->init_decl_offset = cur().offset;
      s->init_decl_integer = d.is_integer;
      advance();
      if (!expect("=", "after the loop iterator")) {
        sync_statement();
        return nullptr;
      }
      s->init = parse_assign();
      if (is(",")) {
        error_at(cur().offset) << "a for loop may declare only one iterator inside a scop";
        sync_statement();
        return nullptr;
      }
    } else if (at_unknown_type_decl()) {
      report_unknown_type();
      // Skip the rest of the header, check and drop the body: no follow-on errors.
      while (!at_eof() && !is(")") && !is_scop_end()) {
        if (is("(") || is("[") || is("{")) skip_balanced();
        else advance();
      }
      accept(")");
      failed_ = false;
      if (!at_eof() && !is_scop_end()) parse_stmt();
      failed_ = false;
      return nullptr;
    } else {
      s->init = parse_expr();
    }
    if (!s->init) {
      sync_statement();
      return nullptr;
    }
  }
  if (!expect(";", "after the loop initialization")) {
    sync_statement();
    return nullptr;
  }
  if (!is(";")) {
    s->cond = parse_expr();
    if (!s->cond) {
      sync_statement();
      return nullptr;
    }
  }
  if (!expect(";", "after the loop condition")) {
    sync_statement();
    return nullptr;
  }
  if (!is(")")) {
    s->inc = parse_expr();
    if (!s->inc) {
      sync_statement();
      return nullptr;
    }
  }
  if (!expect(")", "after the loop increment")) {
    sync_statement();
    return nullptr;
  }
  if (at_eof() || is_scop_end()) {
    error_at(prev_end()) << "expected the loop body";
    return nullptr;
  }
  StmtPtr body = parse_stmt();
  if (!body) body = std::make_unique<Stmt>(Stmt::Kind::kEmpty, prev_end());
  s->body.push_back(std::move(body));
  s->end = prev_end();
  return s;
}

StmtPtr Parser::parse_if() {
  auto s = std::make_unique<Stmt>(Stmt::Kind::kIf, cur().offset);
  advance();
  if (!expect("(", "after 'if'")) {
    sync_statement();
    return nullptr;
  }
  s->expr = parse_expr();
  if (!s->expr || !expect(")", "after the if condition")) {
    sync_statement();
    return nullptr;
  }
  if (at_eof() || is_scop_end()) {
    error_at(prev_end()) << "expected a statement after the if condition";
    return nullptr;
  }
  StmtPtr then = parse_stmt();
  if (!then) then = std::make_unique<Stmt>(Stmt::Kind::kEmpty, prev_end());
  s->body.push_back(std::move(then));
  if (accept("else")) {
    failed_ = false;
    StmtPtr els = parse_stmt();
    if (!els) els = std::make_unique<Stmt>(Stmt::Kind::kEmpty, prev_end());
    s->body.push_back(std::move(els));
  }
  s->end = prev_end();
  return s;
}

// ---------------------------------------------------------------------------------------

ExprPtr Parser::parse_expr() {
  ExprPtr e = parse_assign();
  while (e && is(",")) {
    auto c = std::make_unique<Expr>(Expr::Kind::kComma, e->begin);
    c->op = cur().offset;
    advance();
    ExprPtr r = parse_assign();
    if (!r) return nullptr;
    c->kids.push_back(std::move(e));
    c->kids.push_back(std::move(r));
    c->end = prev_end();
    e = std::move(c);
  }
  return e;
}

ExprPtr Parser::parse_assign() {
  DepthGuard g(depth_);
  if (depth_ > kMaxNesting) {
    error_at(cur().offset) << "expression nested too deeply";
    return nullptr;
  }
  ExprPtr lhs = parse_ternary();
  if (!lhs) return nullptr;
  static const std::set<std::string_view> ops = {"=",  "+=", "-=", "*=", "/=", "%=",
                                                 "&=", "|=", "^=", "<<=", ">>="};
  if (cur().kind == Tok::kPunct && ops.count(cur().text)) {
    auto a = std::make_unique<Expr>(Expr::Kind::kAssign, lhs->begin);
    a->text = std::string(cur().text);
    a->op = cur().offset;
    advance();
    ExprPtr rhs = parse_assign();
    if (!rhs) return nullptr;
    a->kids.push_back(std::move(lhs));
    a->kids.push_back(std::move(rhs));
    a->end = prev_end();
    return a;
  }
  return lhs;
}

ExprPtr Parser::parse_ternary() {
  ExprPtr c = parse_binary(1);
  if (!c || !is("?")) return c;
  auto t = std::make_unique<Expr>(Expr::Kind::kTernary, c->begin);
  t->op = cur().offset;
  advance();
  ExprPtr a = parse_expr();
  if (!a || !expect(":", "in the conditional expression")) return nullptr;
  ExprPtr b = parse_ternary();
  if (!b) return nullptr;
  t->kids.push_back(std::move(c));
  t->kids.push_back(std::move(a));
  t->kids.push_back(std::move(b));
  t->end = prev_end();
  return t;
}

int binary_prec(const Token& x) {
  if (x.kind != Tok::kPunct) return 0;
  std::string_view s = x.text;
  if (s == "||") return 1;
  if (s == "&&") return 2;
  if (s == "|") return 3;
  if (s == "^") return 4;
  if (s == "&") return 5;
  if (s == "==" || s == "!=") return 6;
  if (s == "<" || s == ">" || s == "<=" || s == ">=") return 7;
  if (s == "<<" || s == ">>") return 8;
  if (s == "+" || s == "-") return 9;
  if (s == "*" || s == "/" || s == "%") return 10;
  return 0;
}

ExprPtr Parser::parse_binary(int min_prec) {
  ExprPtr lhs = parse_unary();
  while (lhs) {
    int prec = binary_prec(cur());
    if (prec == 0 || prec < min_prec) break;
    auto b = std::make_unique<Expr>(Expr::Kind::kBinary, lhs->begin);
    b->text = std::string(cur().text);
    b->op = cur().offset;
    advance();
    DepthGuard g(depth_);
    if (depth_ > kMaxNesting) {
      error_at(cur().offset) << "expression nested too deeply";
      return nullptr;
    }
    ExprPtr rhs = parse_binary(prec + 1);
    if (!rhs) return nullptr;
    b->kids.push_back(std::move(lhs));
    b->kids.push_back(std::move(rhs));
    b->end = prev_end();
    lhs = std::move(b);
  }
  return lhs;
}

ExprPtr Parser::parse_unary() {
  if (too_big()) return nullptr;
  DepthGuard g(depth_);
  if (depth_ > kMaxNesting) {
    error_at(cur().offset) << "expression nested too deeply";
    return nullptr;
  }
  const Token& x = cur();
  if (x.kind == Tok::kPunct &&
      (x.text == "-" || x.text == "+" || x.text == "!" || x.text == "~" || x.text == "*" ||
       x.text == "&" || x.text == "++" || x.text == "--")) {
    auto u = std::make_unique<Expr>(Expr::Kind::kUnary, x.offset);
    u->text = std::string(x.text);
    advance();
    ExprPtr e = parse_unary();
    if (!e) return nullptr;
    u->kids.push_back(std::move(e));
    u->end = prev_end();
    return u;
  }
  if (x.is("sizeof")) {
    auto s = std::make_unique<Expr>(Expr::Kind::kSizeof, x.offset);
    advance();
    size_t b = cur().offset;
    if (is("(")) {
      skip_balanced();
    } else if (!parse_unary()) {
      return nullptr;
    }
    s->text = std::string(sm_.text().substr(b, prev_end() - b));
    s->end = prev_end();
    return s;
  }
  if (x.is("(")) {
    size_t save = p_;
    advance();
    if (is_type_name_start()) {
      auto c = std::make_unique<Expr>(Expr::Kind::kCast, x.offset);
      c->text = parse_type_name();
      if (!expect(")", "after the type in the cast")) return nullptr;
      ExprPtr e = parse_unary();
      if (!e) return nullptr;
      c->kids.push_back(std::move(e));
      c->end = prev_end();
      return c;
    }
    p_ = save;
  }
  return parse_postfix();
}

ExprPtr Parser::parse_postfix() {
  ExprPtr e = parse_primary();
  while (e) {
    if (too_big()) return nullptr;
    if (is("[")) {
      auto ix = std::make_unique<Expr>(Expr::Kind::kIndex, e->begin);
      ix->op = cur().offset;
      advance();
      ExprPtr sub = parse_expr();
      if (!sub || !expect("]", "after the subscript")) return nullptr;
      ix->kids.push_back(std::move(e));
      ix->kids.push_back(std::move(sub));
      ix->end = prev_end();
      e = std::move(ix);
    } else if (is("(")) {
      auto call = std::make_unique<Expr>(Expr::Kind::kCall, e->begin);
      call->op = e->op;
      advance();
      call->kids.push_back(std::move(e));
      if (!is(")")) {
        while (true) {
          ExprPtr a = parse_assign();
          if (!a) return nullptr;
          call->kids.push_back(std::move(a));
          if (!accept(",")) break;
        }
      }
      if (!expect(")", "after the call arguments")) return nullptr;
      call->end = prev_end();
      e = std::move(call);
    } else if (is("++") || is("--")) {
      auto pf = std::make_unique<Expr>(Expr::Kind::kPostfix, e->begin);
      pf->text = std::string(cur().text);
      pf->op = cur().offset;
      advance();
      pf->kids.push_back(std::move(e));
      pf->end = prev_end();
      e = std::move(pf);
    } else if (is(".") || is("->")) {
      auto m = std::make_unique<Expr>(Expr::Kind::kMember, e->begin);
      m->op = cur().offset;
      m->text = std::string(cur().text);
      advance();
      if (cur().kind != Tok::kIdent) {
        error_at(cur().offset) << "expected a member name";
        return nullptr;
      }
      m->text += std::string(cur().text);
      advance();
      m->kids.push_back(std::move(e));
      m->end = prev_end();
      e = std::move(m);
    } else {
      break;
    }
  }
  return e;
}

ExprPtr Parser::parse_primary() {
  const Token& x = cur();
  ExprPtr e;
  switch (x.kind) {
    case Tok::kIdent:
      if (is_type_keyword(x.text) || (is_qualifier(x.text) && x.text != "__extension__")) {
        error_at(x.offset) << "expected an expression, found '" << x.text << "'";
        return nullptr;
      }
      if (x.text == "__extension__") {
        advance();
        return parse_unary();
      }
      e = std::make_unique<Expr>(Expr::Kind::kIdent, x.offset);
      e->text = std::string(x.text);
      break;
    case Tok::kInt:
      e = std::make_unique<Expr>(Expr::Kind::kInt, x.offset);
      e->text = std::string(x.text);
      e->int_value = x.int_value;
      e->overflow = x.overflow;
      break;
    case Tok::kFloat:
      e = std::make_unique<Expr>(Expr::Kind::kFloat, x.offset);
      e->text = std::string(x.text);
      break;
    case Tok::kChar:
      e = std::make_unique<Expr>(Expr::Kind::kChar, x.offset);
      e->text = std::string(x.text);
      break;
    case Tok::kString: {
      e = std::make_unique<Expr>(Expr::Kind::kString, x.offset);
      e->text = std::string(x.text);
      advance();
      while (cur().kind == Tok::kString) {
        e->text += " " + std::string(cur().text);
        advance();
      }
      e->end = prev_end();
      return e;
    }
    case Tok::kPunct:
      if (x.is("(")) {
        size_t b = x.offset;
        advance();
        ExprPtr inner = parse_expr();
        if (!inner || !expect(")", "to close the parenthesis")) return nullptr;
        inner->parenthesized = true;
        inner->begin = b;
        inner->end = prev_end();
        return inner;
      }
      [[fallthrough]];
    default:
      if (x.kind == Tok::kEof || x.kind == Tok::kPragma)
        error_at(x.kind == Tok::kEof ? prev_end() : x.offset) << "expected an expression";
      else
        error_at(x.offset) << "expected an expression, found '" << x.text << "'";
      return nullptr;
  }
  advance();
  e->end = prev_end();
  return e;
}

void print_expr(const Expr& e, std::string& out) {
  auto kid = [&](size_t i) {
    const Expr& k = *e.kids[i];
    bool paren = k.kind == Expr::Kind::kBinary || k.kind == Expr::Kind::kTernary ||
                 k.kind == Expr::Kind::kAssign || k.kind == Expr::Kind::kComma ||
                 k.kind == Expr::Kind::kCast;
    if (paren) out += "(";
    print_expr(k, out);
    if (paren) out += ")";
  };
  switch (e.kind) {
    case Expr::Kind::kInt:
    case Expr::Kind::kFloat:
    case Expr::Kind::kChar:
    case Expr::Kind::kString:
    case Expr::Kind::kIdent:
      out += e.text;
      break;
    case Expr::Kind::kIndex:
      kid(0);
      out += "[";
      print_expr(*e.kids[1], out);
      out += "]";
      break;
    case Expr::Kind::kCall:
      kid(0);
      out += "(";
      for (size_t i = 1; i < e.kids.size(); ++i) {
        if (i > 1) out += ", ";
        print_expr(*e.kids[i], out);
      }
      out += ")";
      break;
    case Expr::Kind::kUnary:
      out += e.text;
      kid(0);
      break;
    case Expr::Kind::kPostfix:
      kid(0);
      out += e.text;
      break;
    case Expr::Kind::kBinary:
      kid(0);
      out += " " + e.text + " ";
      kid(1);
      break;
    case Expr::Kind::kTernary:
      kid(0);
      out += " ? ";
      kid(1);
      out += " : ";
      kid(2);
      break;
    case Expr::Kind::kCast:
      out += "(" + e.text + ")";
      kid(0);
      break;
    case Expr::Kind::kAssign:
      print_expr(*e.kids[0], out);
      out += " " + e.text + " ";
      print_expr(*e.kids[1], out);
      break;
    case Expr::Kind::kSizeof:
      out += "sizeof " + e.text;
      break;
    case Expr::Kind::kMember:
      kid(0);
      out += e.text;
      break;
    case Expr::Kind::kComma:
      kid(0);
      out += ", ";
      kid(1);
      break;
  }
}

}  // namespace

TranslationUnit parse_translation_unit(const std::vector<Token>& tokens, SourceManager& sm,
                                       Diagnostics& diag) {
  Parser p(tokens, sm, diag);
  return p.run();
}

std::string expr_to_string(const Expr& e) {
  std::string s;
  print_expr(e, s);
  return s;
}

}  // namespace bbmm::compiler
