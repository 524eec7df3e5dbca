#pragma once
// Syntax trees of the C subset inside scops, and the declarations bbmmc learns from the
// rest of the file (globals, function parameters, locals). Positions are byte offsets in
// the preprocessed text; SourceManager::resolve turns them into file:line:col.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace bbmm::compiler {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kInt,      // text = spelling, int_value
    kFloat,    // text = spelling
    kChar,     // text = spelling
    kString,   // text = spelling
    kIdent,    // text = name
    kIndex,    // kids = {base, subscript}
    kCall,     // kids = {callee, args...}
    kUnary,    // text = op (- + ! ~ * & ++ --), kids = {operand}
    kPostfix,  // text = op (++ --), kids = {operand}
    kBinary,   // text = op, kids = {lhs, rhs}
    kTernary,  // kids = {cond, then, else}
    kCast,     // text = type spelling, kids = {operand}
    kAssign,   // text = op (= += -= ...), kids = {lhs, rhs}
    kSizeof,   // text = spelling of the operand
    kMember,   // text = "." or "->" followed by the member name, kids = {base}
    kComma,    // kids = {lhs, rhs}
  };
  Kind kind;
  std::string text;
  std::vector<ExprPtr> kids;
  size_t begin = 0;  // first byte
  size_t end = 0;    // one past the last byte
  size_t op = 0;     // the operator or name, for carets
  uint64_t int_value = 0;
  bool overflow = false;
  bool parenthesized = false;

  Expr(Kind k, size_t b) : kind(k), begin(b), end(b), op(b) {}
};

// One declarator with its specifiers, e.g. `double A[n][m]`, `int i`, `double *p = A[0]`.
struct Decl {
  enum class Where { kGlobal, kParam, kLocal, kScop };
  std::string name;
  size_t offset = 0;         // the name
  size_t spec_offset = 0;    // the first specifier
  std::string base_type;     // canonical spelling: "double", "int", "unsigned long", ...
  bool is_integer = false;
  bool is_floating = false;
  int elem_size = 0;         // bytes, 0 if unknown (struct, typedef of unknown)
  int pointer_depth = 0;     // number of `*`
  bool pointer_to_array = false;  // `double (*A)[N]`
  bool is_function = false;
  bool is_typedef = false;
  bool is_const = false;
  std::vector<ExprPtr> dims;  // extents; nullptr for `[]`
  ExprPtr init;               // scalar initializer; nullptr if none or a brace list
  bool has_init = false;
  Where where = Where::kGlobal;
  // An array bbmmc declares itself inside a scop (the partial sums of a blocked reduction,
  // poly/reductions.h): one dimension of unknown extent, sized by its accesses.
  bool sized_by_accesses = false;

  bool is_array() const { return !dims.empty() || pointer_to_array; }
  bool is_pointer() const { return pointer_depth > 0 && dims.empty() && !pointer_to_array; }
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

struct Stmt {
  enum class Kind { kExpr, kFor, kIf, kBlock, kDecl, kEmpty };
  Kind kind;
  size_t begin = 0;
  size_t end = 0;
  ExprPtr expr;  // kExpr: the expression; kIf: the condition
  // kFor
  ExprPtr init;            // `i = 0` (assignment) or, with a declaration, the initializer
  std::string init_decl_var;  // set when the init declares the iterator (`int i = 0`)
  size_t init_decl_offset = 0;
  bool init_decl_integer = true;
  ExprPtr cond;
  ExprPtr inc;
  bool asserted_parallel = false;  // `#pragma bbmm parallel` before the loop
  bool sums_partials = false;      // bbmmc's sum of a blocked reduction's partials (poly/reductions.h)
  size_t pragma_offset = 0;
  std::vector<StmtPtr> body;  // kFor: {body}; kIf: {then[, else]}; kBlock: statements
  std::vector<Decl> decls;    // kDecl

  Stmt(Kind k, size_t b) : kind(k), begin(b), end(b) {}
};

struct Function {
  std::string name;
  size_t offset = 0;
  std::vector<Decl> params;
  std::vector<Decl> locals;  // declared anywhere in the body outside scops
  size_t body_begin = 0;     // token index of `{`
  size_t body_offset = 0;    // byte offset of that `{` in the preprocessed text
  size_t body_end = 0;       // token index of the matching `}`
};

// An array named by `#pragma bbmm scratch(...)`: its values after the scop are not used.
struct ScratchName {
  std::string name;
  size_t offset = 0;  // the pragma
};

struct ScopAst {
  size_t begin_offset = 0;  // `#pragma scop` (byte of its `#`)
  size_t end_offset = 0;    // `#pragma endscop`
  bool terminated = false;
  bool syntax_errors = false;  // the parser reported errors inside: no follow-on errors
  int function = -1;        // index into TranslationUnit::functions
  size_t locals_visible = 0;  // how many of the function's locals precede the scop
  std::vector<StmtPtr> body;
  std::vector<std::string> names_after;  // identifiers used after the scop in the function
  std::vector<ScratchName> scratch;      // `#pragma bbmm scratch(...)` in the scop
};

// A declaration whose type is an identifier bbmmc does not know as a type (`foo_t A[n]` with
// no typedef of foo_t in sight). Skimming never rejects it; a scop that needs the declaration
// of "name" reports the unknown type instead of an undeclared name.
struct UnknownTypeDecl {
  std::string type;
  size_t type_offset = 0;
  std::string name;
  int function = -1;  // index into TranslationUnit::functions; -1: a global
};

struct TranslationUnit {
  std::vector<Decl> globals;
  std::vector<UnknownTypeDecl> unknown_types;  // in source order
  std::vector<std::unique_ptr<Function>> functions;
  std::vector<ScopAst> scops;
};

}  // namespace bbmm::compiler
