#include "poly/reductions.h"

#include <algorithm>
#include <functional>
#include <memory>

namespace bbmm::compiler {
namespace {

// Whether "e" names "var" anywhere, or has a side effect (an assignment, ++ or --).
bool mentions_or_writes(const Expr& e, const std::string& var) {
  if (e.kind == Expr::Kind::kIdent && e.text == var) return true;
  if (e.kind == Expr::Kind::kAssign || e.kind == Expr::Kind::kPostfix) return true;
  if (e.kind == Expr::Kind::kUnary && (e.text == "++" || e.text == "--")) return true;
  for (const ExprPtr& k : e.kids)
    if (k && mentions_or_writes(*k, var)) return true;
  return false;
}

bool is_ident(const Expr* e, const std::string& name) {
  return e && e->kind == Expr::Kind::kIdent && e->text == name;
}

// The reduction "x" is of: `s op= e` or `s = s op e` (`s = e op s` for + and *); fills
// var, op and the right-hand side "rhs". False for any other shape.
bool reduction_shape(const Expr& x, std::string& var, char& op, const Expr*& rhs) {
  if (x.kind != Expr::Kind::kAssign || x.kids.size() != 2) return false;
  const Expr* lhs = x.kids[0].get();
  if (!lhs || lhs->kind != Expr::Kind::kIdent) return false;
  var = lhs->text;
  if (x.text == "+=" || x.text == "-=" || x.text == "*=") {
    op = x.text[0];
    rhs = x.kids[1].get();
    return rhs != nullptr;
  }
  const Expr* r = x.kids[1].get();
  if (x.text != "=" || !r || r->kind != Expr::Kind::kBinary || r->kids.size() != 2) return false;
  if (r->text != "+" && r->text != "-" && r->text != "*") return false;
  op = r->text[0];
  if (is_ident(r->kids[0].get(), var)) {
    rhs = r->kids[1].get();
    return true;
  }
  if (op != '-' && is_ident(r->kids[1].get(), var)) {
    rhs = r->kids[0].get();
    return true;
  }
  return false;
}

// The one expression statement of a loop body ({x;} or x;), else nullptr.
const Expr* only_expression(const Stmt& loop) {
  if (loop.body.size() != 1 || !loop.body[0]) return nullptr;
  const Stmt* b = loop.body[0].get();
  while (b->kind == Stmt::Kind::kBlock && b->body.size() == 1 && b->body[0]) b = b->body[0].get();
  return b->kind == Stmt::Kind::kExpr ? b->expr.get() : nullptr;
}

// The loop's iterator, lower bound L, comparison ("<" or "<=") and upper bound U from its
// header `for (i = L; i < U; ...)` or `for (int i = L; i <= U; ...)`.
bool header(const Stmt& loop, std::string& iter, const Expr*& lo, std::string& cmp,
            const Expr*& hi) {
  if (!loop.init || !loop.cond) return false;
  if (!loop.init_decl_var.empty()) {
    iter = loop.init_decl_var;
    lo = loop.init.get();
  } else if (loop.init->kind == Expr::Kind::kAssign && loop.init->text == "=" &&
             loop.init->kids.size() == 2 && loop.init->kids[0]->kind == Expr::Kind::kIdent) {
    iter = loop.init->kids[0]->text;
    lo = loop.init->kids[1].get();
  } else {
    return false;
  }
  const Expr& c = *loop.cond;
  if (c.kind != Expr::Kind::kBinary || (c.text != "<" && c.text != "<=") || c.kids.size() != 2 ||
      !is_ident(c.kids[0].get(), iter))
    return false;
  cmp = c.text;
  hi = c.kids[1].get();
  return lo && hi;
}

// --- building trees ---------------------------------------------------------------------

ExprPtr node(Expr::Kind k, size_t at, std::string text = "") {
  ExprPtr e = std::make_unique<Expr>(k, at);
  e->text = std::move(text);
  return e;
}

ExprPtr clone(const Expr& e) {
  ExprPtr c = std::make_unique<Expr>(e.kind, e.begin);
  c->text = e.text;
  c->end = e.end;
  c->op = e.op;
  c->int_value = e.int_value;
  c->overflow = e.overflow;
  c->parenthesized = e.parenthesized;
  for (const ExprPtr& k : e.kids) c->kids.push_back(k ? clone(*k) : nullptr);
  return c;
}

ExprPtr ident(const std::string& name, size_t at) { return node(Expr::Kind::kIdent, at, name); }

ExprPtr integer(long v, size_t at) {
  ExprPtr e = node(Expr::Kind::kInt, at, std::to_string(v));
  e->int_value = static_cast<uint64_t>(v);
  return e;
}

// An operator "op" of kind "k" (kBinary, kAssign) over "a" and "b".
ExprPtr operation(Expr::Kind k, const std::string& op, ExprPtr a, ExprPtr b, size_t at) {
  ExprPtr e = node(k, at, op);
  e->kids.push_back(std::move(a));
  e->kids.push_back(std::move(b));
  return e;
}

ExprPtr binary(const std::string& op, ExprPtr a, ExprPtr b, size_t at) {
  return operation(Expr::Kind::kBinary, op, std::move(a), std::move(b), at);
}

ExprPtr paren(ExprPtr e) {
  e->parenthesized = true;
  return e;
}

ExprPtr assign(const std::string& op, ExprPtr lhs, ExprPtr rhs, size_t at) {
  return operation(Expr::Kind::kAssign, op, std::move(lhs), std::move(rhs), at);
}

ExprPtr index(const std::string& base, const std::string& sub, size_t at) {
  ExprPtr e = node(Expr::Kind::kIndex, at);
  e->kids.push_back(ident(base, at));
  e->kids.push_back(ident(sub, at));
  return e;
}

StmtPtr expr_stmt(ExprPtr x, size_t at) {
  StmtPtr s = std::make_unique<Stmt>(Stmt::Kind::kExpr, at);
  s->expr = std::move(x);
  return s;
}

// for (int "var" = 0; B * var < count; var++) "body"
StmtPtr block_loop(const std::string& var, const Expr& count, long block, StmtPtr body, size_t at) {
  StmtPtr f = std::make_unique<Stmt>(Stmt::Kind::kFor, at);
  f->init_decl_var = var;
  f->init_decl_offset = at;
  f->init = integer(0, at);
  f->cond = binary("<", binary("*", integer(block, at), ident(var, at), at), clone(count), at);
  ExprPtr inc = node(Expr::Kind::kPostfix, at, "++");
  inc->kids.push_back(ident(var, at));
  f->inc = std::move(inc);
  f->body.push_back(std::move(body));
  return f;
}

// The statement list of "tu" holding "target", and its position; false when not found.
bool find_stmt(std::vector<StmtPtr>& list, const Stmt* target, std::vector<StmtPtr>*& where,
               size_t& pos) {
  for (size_t k = 0; k < list.size(); ++k) {
    if (!list[k]) continue;
    if (list[k].get() == target) {
      where = &list;
      pos = k;
      return true;
    }
    if (find_stmt(list[k]->body, target, where, pos)) return true;
  }
  return false;
}

}  // namespace

std::vector<Reduction> find_reductions(const Scop& scop) {
  std::vector<Reduction> out;
  for (const Loop& l : scop.loops) {
    if (l.verdict.parallel || !l.verdict.carries || l.step != 1 || !l.ast) continue;
    if (l.body.size() != 1 || l.body[0].is_loop) continue;
    const Statement& st = scop.statements[l.body[0].index];
    if (st.phase < 0) continue;
    const Phase& ph = scop.phases[st.phase];
    if (ph.parallel_loop >= 0 ||
        std::find(ph.serial_loops.begin(), ph.serial_loops.end(), l.id) != ph.serial_loops.end())
      continue;
    const Expr* x = only_expression(*l.ast);
    if (!x || x != st.expr) continue;
    Reduction r;
    if (!reduction_shape(*x, r.var, r.op, r.rhs) || mentions_or_writes(*r.rhs, r.var)) continue;
    // Every dependence the loop carries is on s.
    if (l.verdict.blocking_scalars != std::vector<std::string>{r.var}) continue;
    const std::string on = " on " + r.var + ":";
    if (!std::all_of(l.verdict.reasons.begin(), l.verdict.reasons.end(),
                     [&](const std::string& why) { return why.find(on) != std::string::npos; }))
      continue;
    std::string iter;
    if (!header(*l.ast, iter, r.lo, r.cmp, r.hi) || iter != l.c_name) continue;
    const auto arr = std::find_if(scop.arrays.begin(), scop.arrays.end(),
                                  [&](const ArrayInfo& a) { return a.is_scalar && a.c_name == r.var; });
    if (arr == scop.arrays.end() || arr->elem_type == "?") continue;
    r.loop = l.ast;
    r.elem_type = arr->elem_type;
    r.elem_size = arr->elem_size;
    out.push_back(r);
  }
  return out;
}

int block_reductions(TranslationUnit& tu, const std::vector<Reduction>& found, int block) {
  int done = 0;
  for (const Reduction& r : found) {
    std::vector<StmtPtr>* where = nullptr;
    size_t pos = 0;
    for (ScopAst& s : tu.scops)
      if (find_stmt(s.body, r.loop, where, pos)) break;
    if (!where) continue;
    const Stmt& loop = *r.loop;
    const std::string& iter = loop.init_decl_var.empty() ? loop.init->kids[0]->text : loop.init_decl_var;
    const Expr *lo = r.lo, *hi = r.hi, *rhs = r.rhs;
    const std::string& cmp = r.cmp;
    const std::string& var = r.var;
    const char op = r.op;
    const size_t at = loop.begin;
    const std::string n = std::to_string(done);
    const std::string rb = "bbmm_rb" + n, red = "bbmm_red" + n;
    // The iterations: U - L (+ 1 for <=).
    ExprPtr count = binary("-", paren(clone(*hi)), paren(clone(*lo)), at);
    if (cmp == "<=") count = binary("+", std::move(count), integer(1, at), at);
    // The block's first iteration: L + B * rb.
    auto first = [&] {
      return binary("+", paren(clone(*lo)), binary("*", integer(block, at), ident(rb, at), at), at);
    };
    // The partial sums.
    StmtPtr init = expr_stmt(assign("=", index(red, rb, at), integer(op == '*' ? 1 : 0, at), at), at);
    StmtPtr inner = std::make_unique<Stmt>(Stmt::Kind::kFor, at);
    if (!loop.init_decl_var.empty()) {
      inner->init_decl_var = iter;
      inner->init_decl_offset = loop.init_decl_offset;
      inner->init_decl_integer = loop.init_decl_integer;
      inner->init = first();
    } else {
      inner->init = assign("=", ident(iter, at), first(), at);
    }
    inner->cond = binary("&&", binary(cmp, ident(iter, at), clone(*hi), at),
                         binary("<", ident(iter, at), binary("+", first(), integer(block, at), at), at),
                         at);
    inner->inc = loop.inc ? clone(*loop.inc) : nullptr;
    inner->body.push_back(
        expr_stmt(assign(op == '*' ? "*=" : "+=", index(red, rb, at), paren(clone(*rhs)), at), at));
    StmtPtr body = std::make_unique<Stmt>(Stmt::Kind::kBlock, at);
    body->body.push_back(std::move(init));
    body->body.push_back(std::move(inner));
    StmtPtr partials = block_loop(rb, *count, block, std::move(body), at);
    // The sum of the partials, in block order.
    const std::string combine = op == '*' ? "*=" : op == '-' ? "-=" : "+=";
    StmtPtr sum = block_loop(rb, *count, block,
                             expr_stmt(assign(combine, ident(var, at), index(red, rb, at), at), at), at);
    sum->sums_partials = true;
    // Declared in a block with both loops: bbmm_redN[] sized by its accesses.
    StmtPtr decl = std::make_unique<Stmt>(Stmt::Kind::kDecl, at);
    Decl d;
    d.name = red;
    d.offset = at;
    d.spec_offset = at;
    d.base_type = r.elem_type;
    d.elem_size = r.elem_size;
    d.is_floating = r.elem_type == "double" || r.elem_type == "float" || r.elem_type == "long double";
    d.is_integer = !d.is_floating;
    d.dims.push_back(nullptr);
    d.where = Decl::Where::kScop;
    d.sized_by_accesses = true;
    decl->decls.push_back(std::move(d));
    StmtPtr blk = std::make_unique<Stmt>(Stmt::Kind::kBlock, at);
    blk->end = loop.end;
    blk->body.push_back(std::move(decl));
    blk->body.push_back(std::move(partials));
    blk->body.push_back(std::move(sum));
    (*where)[pos] = std::move(blk);  // frees the loop
    ++done;
  }
  return done;
}

}  // namespace bbmm::compiler
