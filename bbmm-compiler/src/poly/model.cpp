#include "poly/model.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "frontend/parser.h"
#include "poly/budget.h"

namespace bbmm::compiler {

Program::~Program() {
  scops.clear();  // isl objects die before the context
}

isl::union_set Scop::domains() const {
  isl::union_set u = isl::union_set::empty(context.ctx());
  for (const Statement& s : statements) u = u.unite(isl::union_set(s.domain));
  return u;
}

isl::union_map Scop::schedule() const {
  isl::union_map u = isl::union_map::empty(context.ctx());
  for (const Statement& s : statements) u = u.unite(isl::union_map(s.schedule));
  return u;
}

isl::union_map Scop::reads(bool tagged) const {
  isl::union_map u = isl::union_map::empty(context.ctx());
  for (const Access& a : accesses)
    if (a.kind == AccessKind::kRead) u = u.unite(isl::union_map(tagged ? a.tagged : a.relation));
  return u;
}

isl::union_map Scop::writes(bool tagged) const {
  isl::union_map u = isl::union_map::empty(context.ctx());
  for (const Access& a : accesses)
    if (a.kind == AccessKind::kWrite) u = u.unite(isl::union_map(tagged ? a.tagged : a.relation));
  return u;
}

isl::union_map Scop::tagged_schedule() const {
  isl::union_map u = isl::union_map::empty(context.ctx());
  for (const Access& a : accesses) {
    // [S -> ref] -> S, then S -> the schedule.
    isl::map proj = isl::manage(isl_set_unwrap(a.tagged.domain().release()));  // S -> ref
    isl::map to_s = isl::manage(isl_map_domain_map(proj.release()));          // [S -> ref] -> S
    // One more dimension orders the accesses of one instance: reads (0), then the write (1).
    isl_map* sched = isl_map_add_dims(statements[a.statement].schedule.copy(), isl_dim_out, 1);
    sched = isl_map_fix_si(sched, isl_dim_out, schedule_dims, a.kind == AccessKind::kWrite ? 1 : 0);
    u = u.unite(isl::union_map(to_s.apply_range(isl::manage(sched))));
  }
  return u;
}

const std::string& Scop::c_iterator(int stmt, int d) const {
  const Statement& st = statements[stmt];
  if (st.to_source.empty()) return loops[st.loops[d]].c_name;
  return st.source_c_names[st.to_source[d]];
}

int Scop::statement_index(const std::string& name) const {
  for (const Statement& s : statements)
    if (s.name == name) return s.index;
  return -1;
}

bool Scop::is_private(int phase, int array) const {
  if (phase < 0 || phase >= static_cast<int>(phases.size())) return false;
  const std::vector<int>& v = phases[phase].private_scalars;
  return std::binary_search(v.begin(), v.end(), array);
}

bool Scop::in_memory(int access) const {
  const Access& a = accesses[access];
  const ArrayInfo& arr = arrays[a.array];
  if (is_private(statements[a.statement].phase, a.array)) return false;
  return !arr.is_scalar || arr.promoted;
}

isl::map Scop::memory_relation(int access) const {
  const Access& a = accesses[access];
  if (!arrays[a.array].is_scalar) return a.relation;
  isl_map* m = isl_map_add_dims(a.relation.copy(), isl_dim_out, 1);
  m = isl_map_fix_si(m, isl_dim_out, 0, 0);
  return isl::manage(m);
}

int Scop::access_index_of_tag(const std::string& tag) const {
  if (tag.size() < 4 || tag.compare(0, 3, "ref") != 0) return -1;
  int id = std::atoi(tag.c_str() + 3);
  return id >= 0 && id < static_cast<int>(accesses.size()) ? id : -1;
}

namespace {

struct LoopFrame {
  int loop = -1;
  std::string c_name;
  std::string isl_name;
};

struct AffVal {
  isl::pw_aff pa;
  std::optional<int64_t> cst;
};

// Where an affine expression is being converted: the set space (params + the visible
// iterators as set dims) and which iterators are visible.
struct AffEnv {
  isl::space space;
  std::vector<LoopFrame> frames;  // visible iterators, dim i = frames[i]
  std::string what;               // "subscript of 'A'", "loop bound", ...
  const Expr* whole = nullptr;
  std::string hint;
  bool failed = false;
};

// A set space with the parameters of "sp", "n" dims and tuple "name".
isl_space* range_space(const isl::space& sp, size_t n, const std::string& name) {
  isl_space* r = isl_space_set_from_params(isl_space_params(sp.copy()));
  r = isl_space_add_dims(r, isl_dim_set, n);
  if (!name.empty()) r = isl_space_set_tuple_name(r, isl_dim_set, name.c_str());
  return r;
}

bool is_affine_fn(const std::string& n) {
  return n == "min" || n == "max" || n == "floord" || n == "ceild" || n == "MIN" ||
         n == "MAX" || n == "floor_div" || n == "ceil_div";
}

class ModelBuilder {
 public:
  ModelBuilder(const TranslationUnit& tu, const ScopAst& ast, int index, SourceManager& sm,
               Diagnostics& diag, IslContext& isl)
      : tu_(tu), ast_(ast), sm_(sm), diag_(diag), ctx_(isl.ctx()) {
    scop_.index = index;
    // isl's C++ objects cannot be copied while null: start every member non-null.
    scop_.context = isl::set::universe(make_set_space(ctx_, {}, "", {}).params());
    scop_.deps.raw = scop_.deps.war = scop_.deps.waw = scop_.deps.raw_asserted =
        isl::union_map::empty(ctx_);
    scop_.deps.live_in = isl::union_set::empty(ctx_);
    fn_ = ast.function >= 0 ? tu.functions[ast.function].get() : nullptr;
  }

  std::optional<Scop> build();

 private:
  SourceLoc loc(size_t off) { return sm_.resolve(off); }
  Diagnostics::Builder error(size_t off) {
    ok_ = false;
    return diag_.error(loc(off));
  }
  // The source spelling of bytes [b, e) with runs of blanks folded into one space.
  std::string spelling(size_t b, size_t e) const {
    std::string out;
    bool space = false;
    for (size_t i = b; i < e && i < sm_.text().size(); ++i) {
      char ch = sm_.text()[i];
      if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
        space = !out.empty();
        continue;
      }
      if (space) out += ' ';
      space = false;
      out += ch;
    }
    return out;
  }
  std::string text(const Expr& e) const {
    return std::string(sm_.text().substr(e.begin, e.end - e.begin));
  }

  // --- names ---------------------------------------------------------------------------
  const Decl* lookup(const std::string& name) const;
  // The declaration of undeclared "name" with an unknown type before the scop, if any.
  const UnknownTypeDecl* unknown_type_decl(const std::string& name) const {
    for (size_t j = tu_.unknown_types.size(); j-- > 0;) {
      const UnknownTypeDecl& u = tu_.unknown_types[j];
      if (u.name == name && u.type_offset < ast_.begin_offset &&
          (u.function < 0 || u.function == ast_.function))
        return &u;
    }
    return nullptr;
  }
  const LoopFrame* frame_of(const std::string& name, const std::vector<LoopFrame>& f) const {
    for (size_t i = f.size(); i-- > 0;)
      if (f[i].c_name == name) return &f[i];
    return nullptr;
  }
  bool is_written(const std::string& name, const Decl* d) const {
    return d ? written_decls_.count(d) > 0 : written_names_.count(name) > 0;
  }

  // --- pass 0: writes and parameter candidates ----------------------------------------
  void collect_stmt(const Stmt& s);
  void collect_affine(const Expr* e);
  void collect_expr(const Expr* e);
  void note_written(const Expr& lhs);
  void add_candidate(const std::string& name);

  // --- pass 1 --------------------------------------------------------------------------
  isl::space space_for(const std::vector<LoopFrame>& frames, const std::string& tuple) const {
    std::vector<std::string> dims;
    for (const LoopFrame& f : frames) dims.push_back(f.isl_name);
    return make_set_space(ctx_, scop_.params, tuple, dims);
  }
  std::optional<AffVal> aff(const Expr& e, AffEnv& env);
  std::optional<isl::set> cond_set(const Expr& e, AffEnv& env);
  void nonaffine(AffEnv& env, const Expr& sub, const std::string& reason);

  struct BuildCtx {
    std::vector<LoopFrame> frames;
    std::vector<std::pair<isl::set, int>> conds;  // constraint set and its dim count
    std::vector<int> pos;                          // positions of the enclosing loops
    int loop = -1;
  };
  void build_list(const std::vector<const Stmt*>& stmts, BuildCtx& c, std::vector<Node>& out);
  void build_stmt(const Stmt& s, BuildCtx& c, std::vector<Node>& out);
  void build_for(const Stmt& s, BuildCtx& c, std::vector<Node>& out);
  void build_if(const Stmt& s, BuildCtx& c, std::vector<Node>& out);
  void build_statement(const Stmt& s, const Expr* assign, const Decl* decl, BuildCtx& c,
                       std::vector<Node>& out, const Expr* rhs_value = nullptr,
                       bool link = false);
  void build_assignment_chain(const Stmt& s, const Expr* assign, BuildCtx& c,
                              std::vector<Node>& out);

  // Accesses of the statement being built.
  struct PendingAccess {
    AccessKind kind;
    int array;
    std::vector<const Expr*> subscripts;
    const Expr* expr;
  };
  void rhs_reads(const Expr& e, std::vector<PendingAccess>& acc, const std::vector<LoopFrame>& f,
                 int depth);
  bool lvalue(const Expr& e, std::vector<PendingAccess>& acc, const std::vector<LoopFrame>& f,
              bool also_read);
  bool array_access(const Expr& e, AccessKind kind, std::vector<PendingAccess>& acc,
                    const std::vector<LoopFrame>& f);
  int array_for_decl(const Decl* d, const std::string& name, size_t use_offset, bool scalar);

  const TranslationUnit& tu_;
  const ScopAst& ast_;
  const Function* fn_ = nullptr;
  SourceManager& sm_;
  Diagnostics& diag_;
  isl::ctx ctx_;
  Scop scop_;
  bool ok_ = true;

  std::vector<std::vector<const Decl*>> scopes_;  // scop-local declarations
  std::vector<LoopFrame> frames0_;                // pass-0 loop frames
  std::set<const Decl*> written_decls_;
  std::set<std::string> written_names_;
  std::set<const Decl*> iterator_decls_;
  std::set<const UnknownTypeDecl*> reported_unknown_types_;
  std::vector<std::string> candidates_;
  std::vector<const Decl*> arrays_seen_;
  std::map<std::pair<const Decl*, std::string>, int> array_index_;
  int next_stmt_ = 1;
};

const Decl* ModelBuilder::lookup(const std::string& name) const {
  for (size_t i = scopes_.size(); i-- > 0;)
    for (size_t j = scopes_[i].size(); j-- > 0;)
      if (scopes_[i][j]->name == name) return scopes_[i][j];
  if (fn_) {
    for (size_t j = std::min(ast_.locals_visible, fn_->locals.size()); j-- > 0;)
      if (fn_->locals[j].name == name) return &fn_->locals[j];
    for (const Decl& d : fn_->params)
      if (d.name == name) return &d;
  }
  for (size_t j = tu_.globals.size(); j-- > 0;)
    if (tu_.globals[j].name == name) return &tu_.globals[j];
  return nullptr;
}

// --- pass 0 ----------------------------------------------------------------------------

void ModelBuilder::add_candidate(const std::string& name) {
  if (std::find(candidates_.begin(), candidates_.end(), name) == candidates_.end())
    candidates_.push_back(name);
}

void ModelBuilder::collect_affine(const Expr* e) {
  if (!e) return;
  if (e->kind == Expr::Kind::kIdent) {
    if (!frame_of(e->text, frames0_)) add_candidate(e->text);
    return;
  }
  size_t first = e->kind == Expr::Kind::kCall ? 1 : 0;
  for (size_t i = first; i < e->kids.size(); ++i) collect_affine(e->kids[i].get());
}

void ModelBuilder::note_written(const Expr& lhs0) {
  const Expr* lhs = &lhs0;
  while (lhs->kind == Expr::Kind::kIndex) lhs = lhs->kids[0].get();
  if (lhs->kind != Expr::Kind::kIdent) return;
  if (frame_of(lhs->text, frames0_)) return;
  const Decl* d = lookup(lhs->text);
  if (d) written_decls_.insert(d);
  else written_names_.insert(lhs->text);
}

void ModelBuilder::collect_expr(const Expr* e) {
  if (!e) return;
  switch (e->kind) {
    case Expr::Kind::kAssign:
      note_written(*e->kids[0]);
      break;
    case Expr::Kind::kPostfix:
    case Expr::Kind::kUnary:
      if (e->text == "++" || e->text == "--") note_written(*e->kids[0]);
      break;
    case Expr::Kind::kIndex: {
      collect_affine(e->kids[1].get());
      const Expr* base = e->kids[0].get();
      while (base->kind == Expr::Kind::kIndex) base = base->kids[0].get();
      if (base->kind == Expr::Kind::kIdent) {
        const Decl* d = lookup(base->text);
        if (d && std::find(arrays_seen_.begin(), arrays_seen_.end(), d) == arrays_seen_.end()) {
          arrays_seen_.push_back(d);
          for (const ExprPtr& x : d->dims) collect_affine(x.get());
        }
      }
      break;
    }
    default:
      break;
  }
  for (const ExprPtr& k : e->kids) collect_expr(k.get());
}

void ModelBuilder::collect_stmt(const Stmt& s) {
  switch (s.kind) {
    case Stmt::Kind::kBlock:
      scopes_.emplace_back();
      for (const StmtPtr& c : s.body) collect_stmt(*c);
      scopes_.pop_back();
      break;
    case Stmt::Kind::kDecl:
      for (const Decl& d : s.decls) {
        if (d.init) collect_expr(d.init.get());
        scopes_.back().push_back(&d);
        if (d.has_init) written_decls_.insert(&d);
      }
      break;
    case Stmt::Kind::kFor: {
      collect_affine(s.init.get());
      std::string iter = s.init_decl_var;
      if (iter.empty() && s.init && s.init->kind == Expr::Kind::kAssign &&
          s.init->kids[0]->kind == Expr::Kind::kIdent)
        iter = s.init->kids[0]->text;
      if (s.init && s.init->kind == Expr::Kind::kAssign) collect_affine(s.init->kids[1].get());
      if (!iter.empty() && s.init_decl_var.empty())
        if (const Decl* d = lookup(iter)) iterator_decls_.insert(d);
      frames0_.push_back({-1, iter, iter});
      scopes_.emplace_back();
      collect_affine(s.cond.get());
      collect_affine(s.inc.get());
      for (const StmtPtr& c : s.body) collect_stmt(*c);
      scopes_.pop_back();
      frames0_.pop_back();
      break;
    }
    case Stmt::Kind::kIf:
      collect_affine(s.expr.get());
      for (const StmtPtr& c : s.body) {
        scopes_.emplace_back();
        collect_stmt(*c);
        scopes_.pop_back();
      }
      break;
    case Stmt::Kind::kExpr:
      collect_expr(s.expr.get());
      break;
    case Stmt::Kind::kEmpty:
      break;
  }
}

// --- affine expressions ----------------------------------------------------------------

void ModelBuilder::nonaffine(AffEnv& env, const Expr& sub, const std::string& reason) {
  if (env.failed) return;
  env.failed = true;
  auto b = error(sub.begin);
  b << env.what;
  if (env.whole) b << " '" << text(*env.whole) << "'";
  b << " is not affine: " << reason;
  if (!env.hint.empty()) b.hint(env.hint);
}

std::optional<AffVal> ModelBuilder::aff(const Expr& e, AffEnv& env) {
  auto constant = [&](int64_t v) {
    isl::set uni = isl::manage(isl_set_universe(env.space.copy()));
    return AffVal{isl::manage(isl_pw_aff_val_on_domain(uni.release(), isl_val_int_from_si(ctx_.get(), v))), v};
  };
  switch (e.kind) {
    case Expr::Kind::kInt:
      if (e.overflow) {
        nonaffine(env, e, "integer literal '" + e.text + "' is too large");
        return std::nullopt;
      }
      return constant(static_cast<int64_t>(e.int_value));
    case Expr::Kind::kIdent: {
      for (size_t i = env.frames.size(); i-- > 0;)
        if (env.frames[i].c_name == e.text) {
          isl_local_space* ls = isl_local_space_from_space(env.space.copy());
          return AffVal{isl::manage(isl_pw_aff_var_on_domain(ls, isl_dim_set, i)), std::nullopt};
        }
      auto it = std::find(scop_.params.begin(), scop_.params.end(), e.text);
      if (it != scop_.params.end()) {
        isl_local_space* ls = isl_local_space_from_space(env.space.copy());
        return AffVal{isl::manage(isl_pw_aff_var_on_domain(ls, isl_dim_param, it - scop_.params.begin())),
                      std::nullopt};
      }
      const Decl* d = lookup(e.text);
      if (d && iterator_decls_.count(d) && !is_written(e.text, d))
        nonaffine(env, e, "'" + e.text + "' is a loop iterator used outside its loop");
      else if (is_written(e.text, d) || (d && iterator_decls_.count(d)))
        nonaffine(env, e, "'" + e.text + "' is assigned inside the scop, so it is not a parameter");
      else if (d && d->is_array())
        nonaffine(env, e, "'" + e.text + "' is an array");
      else if (d && d->is_pointer())
        nonaffine(env, e, "'" + e.text + "' is a pointer");
      else if (d && d->is_floating)
        nonaffine(env, e, "'" + e.text + "' has floating type '" + d->base_type + "'");
      else
        nonaffine(env, e, "'" + e.text + "' is not an integer parameter");
      return std::nullopt;
    }
    case Expr::Kind::kCast: {
      static const std::set<std::string> ints = {"int", "long", "unsigned", "long long", "unsigned int",
                                                 "unsigned long", "short", "signed", "size_t"};
      if (!ints.count(e.text)) {
        nonaffine(env, e, "cast to '" + e.text + "'");
        return std::nullopt;
      }
      return aff(*e.kids[0], env);
    }
    case Expr::Kind::kUnary: {
      if (e.text != "-" && e.text != "+") break;
      auto a = aff(*e.kids[0], env);
      if (!a) return std::nullopt;
      if (e.text == "+") return a;
      std::optional<int64_t> c;
      if (a->cst && *a->cst != INT64_MIN) c = -*a->cst;
      return AffVal{a->pa.neg(), c};
    }
    case Expr::Kind::kBinary: {
      const std::string& op = e.text;
      if (op != "+" && op != "-" && op != "*" && op != "/" && op != "%") break;
      auto a = aff(*e.kids[0], env);
      if (!a) return std::nullopt;
      auto b = aff(*e.kids[1], env);
      if (!b) return std::nullopt;
      std::optional<int64_t> c;
      int64_t r = 0;
      if (op == "+") {
        if (a->cst && b->cst && !__builtin_add_overflow(*a->cst, *b->cst, &r)) c = r;
        return AffVal{a->pa.add(b->pa), c};
      }
      if (op == "-") {
        if (a->cst && b->cst && !__builtin_sub_overflow(*a->cst, *b->cst, &r)) c = r;
        return AffVal{a->pa.sub(b->pa), c};
      }
      if (op == "*") {
        if (!a->cst && !b->cst &&
            !isl_pw_aff_is_cst(a->pa.get()) && !isl_pw_aff_is_cst(b->pa.get())) {
          nonaffine(env, e, "'" + text(e) + "' multiplies two variables");
          return std::nullopt;
        }
        if (a->cst && b->cst && !__builtin_mul_overflow(*a->cst, *b->cst, &r)) c = r;
        return AffVal{a->pa.mul(b->pa), c};
      }
      // `/` and `%`: C semantics (truncation) by a positive constant.
      if (!b->cst) {
        nonaffine(env, e, "'" + text(e) + "' divides by a non-constant");
        return std::nullopt;
      }
      if (*b->cst <= 0) {
        nonaffine(env, e, "'" + text(e) + "' divides by " + std::to_string(*b->cst) +
                              " (the divisor must be a positive constant)");
        return std::nullopt;
      }
      if (a->cst) {
        int64_t v = op == "/" ? *a->cst / *b->cst : *a->cst % *b->cst;
        return constant(v);
      }
      return AffVal{op == "/" ? a->pa.tdiv_q(b->pa) : a->pa.tdiv_r(b->pa), std::nullopt};
    }
    case Expr::Kind::kTernary: {
      auto s = cond_set(*e.kids[0], env);
      if (!s) return std::nullopt;
      auto a = aff(*e.kids[1], env);
      if (!a) return std::nullopt;
      auto b = aff(*e.kids[2], env);
      if (!b) return std::nullopt;
      return AffVal{s->indicator_function().cond(a->pa, b->pa), std::nullopt};
    }
    case Expr::Kind::kCall: {
      const Expr& callee = *e.kids[0];
      if (callee.kind != Expr::Kind::kIdent || !is_affine_fn(callee.text)) {
        nonaffine(env, e, "'" + text(e) + "' calls a function (only min, max, floord and ceild are affine)");
        return std::nullopt;
      }
      const std::string& fn = callee.text;
      size_t nargs = e.kids.size() - 1;
      bool is_div = fn == "floord" || fn == "ceild" || fn == "floor_div" || fn == "ceil_div";
      if ((is_div && nargs != 2) || (!is_div && nargs < 2)) {
        nonaffine(env, e, "'" + fn + "' needs " + (is_div ? "2 arguments" : "at least 2 arguments"));
        return std::nullopt;
      }
      auto a = aff(*e.kids[1], env);
      if (!a) return std::nullopt;
      if (is_div) {
        auto b = aff(*e.kids[2], env);
        if (!b) return std::nullopt;
        if (!b->cst || *b->cst <= 0) {
          nonaffine(env, *e.kids[2], "the divisor of '" + fn + "' must be a positive constant");
          return std::nullopt;
        }
        isl::pw_aff q = a->pa.div(b->pa);
        return AffVal{fn[0] == 'f' ? q.floor() : q.ceil(), std::nullopt};
      }
      isl::pw_aff r = a->pa;
      for (size_t i = 2; i < e.kids.size(); ++i) {
        auto b = aff(*e.kids[i], env);
        if (!b) return std::nullopt;
        r = (fn == "min" || fn == "MIN") ? r.min(b->pa) : r.max(b->pa);
      }
      return AffVal{r, std::nullopt};
    }
    case Expr::Kind::kIndex:
      nonaffine(env, e, "'" + text(e) + "' reads an array (the value is only known at run time)");
      return std::nullopt;
    case Expr::Kind::kFloat:
      nonaffine(env, e, "'" + e.text + "' is a floating-point constant");
      return std::nullopt;
    default:
      break;
  }
  nonaffine(env, e, "'" + text(e) + "' is not an affine expression");
  return std::nullopt;
}

std::optional<isl::set> ModelBuilder::cond_set(const Expr& e, AffEnv& env) {
  if (e.kind == Expr::Kind::kBinary) {
    const std::string& op = e.text;
    if (op == "&&" || op == "||") {
      auto a = cond_set(*e.kids[0], env);
      if (!a) return std::nullopt;
      auto b = cond_set(*e.kids[1], env);
      if (!b) return std::nullopt;
      return op == "&&" ? a->intersect(*b) : a->unite(*b);
    }
    if (op == "<" || op == "<=" || op == ">" || op == ">=" || op == "==" || op == "!=") {
      auto a = aff(*e.kids[0], env);
      if (!a) return std::nullopt;
      auto b = aff(*e.kids[1], env);
      if (!b) return std::nullopt;
      if (op == "<") return a->pa.lt_set(b->pa);
      if (op == "<=") return a->pa.le_set(b->pa);
      if (op == ">") return a->pa.gt_set(b->pa);
      if (op == ">=") return a->pa.ge_set(b->pa);
      if (op == "==") return a->pa.eq_set(b->pa);
      return a->pa.ne_set(b->pa);
    }
  }
  if (e.kind == Expr::Kind::kUnary && e.text == "!") {
    auto a = cond_set(*e.kids[0], env);
    if (!a) return std::nullopt;
    return a->complement();
  }
  auto a = aff(e, env);
  if (!a) return std::nullopt;
  isl::set uni = isl::manage(isl_set_universe(env.space.copy()));
  isl::pw_aff zero = isl::manage(isl_pw_aff_val_on_domain(uni.release(), isl_val_zero(ctx_.get())));
  return a->pa.ne_set(zero);
}

// --- statements ------------------------------------------------------------------------

int ModelBuilder::array_for_decl(const Decl* d, const std::string& name, size_t use_offset,
                                 bool scalar) {
  auto key = std::make_pair(d, d ? std::string() : name);
  auto it = array_index_.find(key);
  if (it != array_index_.end()) return it->second;
  ArrayInfo a;
  a.c_name = name;
  a.name = name;
  for (int k = 1; std::any_of(scop_.arrays.begin(), scop_.arrays.end(),
                              [&](const ArrayInfo& o) { return o.name == a.name; });
       ++k)
    a.name = name + "_" + std::to_string(k);
  a.is_scalar = scalar;
  if (d) {
    a.elem_type = d->base_type;
    a.elem_size = d->elem_size;
    a.where = d->where;
    a.decl_loc = loc(d->offset);
    if (!scalar) {
      AffEnv env;
      env.space = make_set_space(ctx_, scop_.params, "", {});
      for (size_t k = 0; k < d->dims.size(); ++k) {
        const Expr* x = d->dims[k].get();
        if (!x) continue;  // reported by the caller
        env.what = "extent of array '" + name + "'";
        env.whole = x;
        env.hint = "array extents must be affine in the integer parameters (like 'n' or 'N + 2')";
        env.failed = false;
        a.extent_text.push_back(text(*x));
        auto v = aff(*x, env);
        if (v) {
          // Extents are parameter-only: drop the (empty) set tuple.
          a.extents.push_back(v->pa);
        }
      }
    }
  } else {
    a.elem_type = "?";
    a.where = Decl::Where::kGlobal;
    a.decl_loc = loc(use_offset);
    if (const UnknownTypeDecl* u = unknown_type_decl(name)) {
      a.unknown_type = u->type;
      a.decl_loc = loc(u->type_offset);
    }
  }
  int idx = static_cast<int>(scop_.arrays.size());
  scop_.arrays.push_back(std::move(a));
  array_index_[key] = idx;
  return idx;
}

bool ModelBuilder::array_access(const Expr& e, AccessKind kind, std::vector<PendingAccess>& acc,
                                const std::vector<LoopFrame>& f) {
  std::vector<const Expr*> subs;
  const Expr* base = &e;
  while (base->kind == Expr::Kind::kIndex) {
    subs.push_back(base->kids[1].get());
    base = base->kids[0].get();
  }
  std::reverse(subs.begin(), subs.end());
  if (base->kind != Expr::Kind::kIdent) {
    error(base->begin) << "subscripted expression '" << text(*base) << "' is not an array name";
    diag_.set_last_hint("pointer arithmetic is not supported inside a scop; index the array directly, as in A[i + 1]");
    return false;
  }
  const std::string& name = base->text;
  if (frame_of(name, f)) {
    error(base->begin) << "loop iterator '" << name << "' is subscripted like an array";
    return false;
  }
  const Decl* d = lookup(name);
  if (!d && unknown_type_decl(name)) {
    const UnknownTypeDecl* u = unknown_type_decl(name);
    if (reported_unknown_types_.insert(u).second) {
      error(u->type_offset) << "unknown type name '" << u->type << "'";
      diag_.set_last_hint("'" + name + "' is declared with it: declare '" + u->type +
                          "' before (for example 'typedef double " + u->type +
                          ";') or include the header that defines it");
      diag_.note(loc(base->begin)) << "'" << name << "' is used in the scop here";
    }
    ok_ = false;
    return false;
  }
  if (!d) {
    error(base->begin) << "unknown array extent: '" << name << "' is not declared";
    diag_.set_last_hint("declare the array with its extents before the scop, e.g. as a C99 array parameter 'double " +
        name + "[n][m]'");
    return false;
  }
  if (d->is_pointer()) {
    if (d->where == Decl::Where::kParam || d->where == Decl::Where::kGlobal || !d->has_init) {
      error(base->begin) << "unknown array extent: '" << name << "' is declared as a pointer";
      diag_.set_last_hint("declare it with its extents, e.g. as a C99 array parameter '" + d->base_type + " " + name +
          "[n]' instead of '" + d->base_type + " *" + name + "'");
    } else {
      error(base->begin) << (kind == AccessKind::kWrite ? "write" : "read") << " through pointer '"
                         << name << "', which may alias another array";
      const Expr* init = d->init.get();
      while (init && init->kind == Expr::Kind::kCast) init = init->kids[0].get();
      if (init && init->kind == Expr::Kind::kCall)  // `double *A = malloc(...)`
        diag_.set_last_hint("bbmmc cannot see the extent of memory from '" + text(*init->kids[0]) +
                            "': put the loop nest in a function with a C99 array parameter, e.g. "
                            "'void kernel(int n, " + d->base_type + " " + name +
                            "[n])', and call it with the pointer");
      else
        diag_.set_last_hint("index the array it points to directly; bbmmc cannot see which array a pointer designates");
    }
    return false;
  }
  if (!d->is_array()) {
    error(base->begin) << "'" << name << "' is not an array but is subscripted";
    return false;
  }
  for (size_t k = 0; k < d->dims.size(); ++k)
    if (!d->dims[k] && !d->sized_by_accesses) {
      error(base->begin) << "unknown array extent: dimension " << k + 1 << " of '" << name
                         << "' has no size";
      diag_.set_last_hint("give every dimension an extent, e.g. '" + d->base_type + " " + name +
          "[n][m]' (a C99 array parameter) instead of '[]' or a pointer");
      return false;
    }
  if (subs.size() != d->dims.size()) {
    error(e.begin) << "array '" << name << "' has " << d->dims.size() << " dimension"
                   << (d->dims.size() == 1 ? "" : "s") << " but is used with " << subs.size()
                   << " subscript" << (subs.size() == 1 ? "" : "s");
    return false;
  }
  if (d->where == Decl::Where::kScop && !d->sized_by_accesses) {
    error(base->begin) << "arrays declared inside a scop are not supported";
    return false;
  }
  int ai = array_for_decl(d, name, base->begin, false);
  acc.push_back({kind, ai, subs, &e});
  return true;
}

bool ModelBuilder::lvalue(const Expr& e, std::vector<PendingAccess>& acc,
                          const std::vector<LoopFrame>& f, bool also_read) {
  if (e.kind == Expr::Kind::kIndex) {
    if (also_read && !array_access(e, AccessKind::kRead, acc, f)) return false;
    return array_access(e, AccessKind::kWrite, acc, f);
  }
  if (e.kind == Expr::Kind::kIdent) {
    if (frame_of(e.text, f)) {
      error(e.begin) << "loop iterator '" << e.text << "' is assigned inside its loop";
      diag_.set_last_hint("the iterator may only change in the for header; use another variable");
      return false;
    }
    const Decl* d = lookup(e.text);
    if (d && d->is_array()) {
      error(e.begin) << "cannot assign to array '" << e.text << "' as a whole";
      return false;
    }
    if (d && d->is_pointer()) {
      error(e.begin) << "pointer '" << e.text << "' is assigned inside the scop";
      diag_.set_last_hint("pointers cannot be analysed; index arrays directly");
      return false;
    }
    if (d && iterator_decls_.count(d)) {
      error(e.begin) << "'" << e.text << "' is used as a loop iterator and assigned outside its loop";
      return false;
    }
    int ai = array_for_decl(d, e.text, e.begin, true);
    if (also_read) acc.push_back({AccessKind::kRead, ai, {}, &e});
    acc.push_back({AccessKind::kWrite, ai, {}, &e});
    return true;
  }
  if (e.kind == Expr::Kind::kUnary && e.text == "*") {
    error(e.begin) << "write through a pointer dereference '" << text(e) << "', which may alias any array";
    diag_.set_last_hint("index the array itself, as in A[i] = ...");
    return false;
  }
  if (e.kind == Expr::Kind::kMember) {
    error(e.begin) << "struct members are not supported inside a scop";
    return false;
  }
  error(e.begin) << "cannot assign to '" << text(e) << "'";
  return false;
}

void ModelBuilder::rhs_reads(const Expr& e, std::vector<PendingAccess>& acc,
                             const std::vector<LoopFrame>& f, int depth) {
  switch (e.kind) {
    case Expr::Kind::kInt:
    case Expr::Kind::kFloat:
    case Expr::Kind::kChar:
    case Expr::Kind::kString:
    case Expr::Kind::kSizeof:
      return;
    case Expr::Kind::kIdent: {
      if (frame_of(e.text, f)) return;
      const Decl* d = lookup(e.text);
      if (d && d->is_array()) {
        error(e.begin) << "array '" << e.text << "' is used without subscripts";
        diag_.set_last_hint("inside a scop arrays may only be accessed element by element, as in " + e.text + "[i]");
        return;
      }
      if (d && d->is_pointer()) {
        error(e.begin) << "pointer '" << e.text << "' is used inside the scop";
        diag_.set_last_hint("index arrays directly; pointers cannot be analysed");
        return;
      }
      if (d && d->is_function) return;
      if (d && iterator_decls_.count(d)) {
        error(e.begin) << "'" << e.text << "' is a loop iterator used outside its loop";
        diag_.set_last_hint("its value after the loop is not modelled; use the bound expression instead");
        return;
      }
      int ai = array_for_decl(d, e.text, e.begin, true);
      acc.push_back({AccessKind::kRead, ai, {}, &e});
      return;
    }
    case Expr::Kind::kIndex:
      array_access(e, AccessKind::kRead, acc, f);
      return;
    case Expr::Kind::kCall: {
      const Expr& callee = *e.kids[0];
      if (callee.kind != Expr::Kind::kIdent) {
        error(callee.begin) << "call through a function pointer is not supported inside a scop";
        return;
      }
      for (size_t i = 1; i < e.kids.size(); ++i) rhs_reads(*e.kids[i], acc, f, depth + 1);
      return;
    }
    case Expr::Kind::kUnary:
      if (e.text == "*" || e.text == "&") {
        error(e.begin) << (e.text == "*" ? "pointer dereference" : "address-of") << " '" << text(e)
                       << "' is not supported inside a scop";
        diag_.set_last_hint("pointer arithmetic cannot be analysed; use array subscripts, as in A[i + 1]");
        return;
      }
      if (e.text == "++" || e.text == "--") {
        error(e.begin) << "'" << e.text << "' inside an expression is not supported";
        diag_.set_last_hint("make the increment a statement of its own");
        return;
      }
      rhs_reads(*e.kids[0], acc, f, depth + 1);
      return;
    case Expr::Kind::kPostfix:
      error(e.op) << "'" << e.text << "' inside an expression is not supported";
      diag_.set_last_hint("make the increment a statement of its own");
      return;
    case Expr::Kind::kAssign:
      error(e.op) << "assignment inside an expression is not supported";
      diag_.set_last_hint("split it into separate statements");
      return;
    case Expr::Kind::kComma:
      error(e.op) << "the comma operator is not supported inside a scop";
      diag_.set_last_hint("split it into separate statements");
      return;
    case Expr::Kind::kMember:
      error(e.begin) << "struct members are not supported inside a scop";
      return;
    case Expr::Kind::kBinary:
      if (e.text == "+" || e.text == "-") {
        for (const ExprPtr& k : e.kids)
          if (k->kind == Expr::Kind::kIdent) {
            const Decl* d = lookup(k->text);
            if (d && (d->is_array() || d->is_pointer()) && !frame_of(k->text, f)) {
              error(e.begin) << "pointer arithmetic on '" << k->text << "' is not supported";
              diag_.set_last_hint("use array subscripts: write " + k->text + "[i] instead of *(" + k->text + " + i)");
              return;
            }
          }
      }
      [[fallthrough]];
    case Expr::Kind::kTernary:
    case Expr::Kind::kCast:
      for (const ExprPtr& k : e.kids) rhs_reads(*k, acc, f, depth + 1);
      return;
  }
}

// `a = b = e` (possibly longer, any assignment operators): C assigns b first and a then
// gets the value b holds, so the chain is the statements `b = e;` then `a = b;`, innermost
// first. Each link's text is its own assignment.
void ModelBuilder::build_assignment_chain(const Stmt& s, const Expr* assign, BuildCtx& c,
                                          std::vector<Node>& out) {
  const Expr* rhs = assign->kind == Expr::Kind::kAssign ? assign->kids[1].get() : nullptr;
  if (!rhs || rhs->kind != Expr::Kind::kAssign) {
    build_statement(s, assign, nullptr, c, out, nullptr, assign != s.expr.get());
    return;
  }
  size_t errors_before = diag_.error_count();
  build_assignment_chain(s, rhs, c, out);
  if (static_cast<size_t>(diag_.error_count()) != errors_before) return;
  build_statement(s, assign, nullptr, c, out, rhs->kids[0].get(), true);
}

void ModelBuilder::build_statement(const Stmt& s, const Expr* assign, const Decl* decl,
                                   BuildCtx& c, std::vector<Node>& out, const Expr* rhs_value,
                                   bool link) {
  std::vector<PendingAccess> acc;
  bool good = true;
  size_t errors_before = diag_.error_count();
  if (decl) {
    int ai = array_for_decl(decl, decl->name, decl->offset, true);
    acc.push_back({AccessKind::kWrite, ai, {}, nullptr});
    rhs_reads(*decl->init, acc, c.frames, 0);
  } else {
    const Expr& e = *assign;
    if (e.kind == Expr::Kind::kAssign) {
      bool compound = e.text != "=";
      good = lvalue(*e.kids[0], acc, c.frames, compound);
      rhs_reads(rhs_value ? *rhs_value : *e.kids[1], acc, c.frames, 0);
      // The write comes last in `acc` when compound; keep the write first.
    } else if ((e.kind == Expr::Kind::kPostfix || e.kind == Expr::Kind::kUnary) &&
               (e.text == "++" || e.text == "--")) {
      good = lvalue(*e.kids[0], acc, c.frames, true);
    } else if (e.kind == Expr::Kind::kCall) {
      error(e.begin) << "call '" << text(*e.kids[0]) << "(...)' as a statement";
      diag_.set_last_hint("bbmmc treats calls as pure functions, so only their results can be used: assign the "
          "result, or move the call outside the scop");
      good = false;
    } else if (e.kind == Expr::Kind::kComma) {
      error(e.op) << "the comma operator is not supported inside a scop";
      diag_.set_last_hint("split it into separate statements");
      good = false;
    } else {
      error(e.begin) << "statement '" << text(e) << "' has no effect";
      diag_.set_last_hint("statements inside a scop are assignments to array elements or scalars");
      good = false;
    }
  }
  if (!good || static_cast<size_t>(diag_.error_count()) != errors_before) return;

  Statement st;
  st.index = static_cast<int>(scop_.statements.size());
  st.name = "S" + std::to_string(next_stmt_++);
  for (const LoopFrame& f : c.frames) {
    st.iterators.push_back(f.isl_name);
    st.loops.push_back(f.loop);
  }
  st.position = c.pos;
  st.position.push_back(static_cast<int>(out.size()));
  st.loc = loc(s.begin);
  st.ast = &s;
  st.expr = assign;
  st.decl = decl;
  st.rhs_value = rhs_value;
  st.text = spelling(s.begin, s.end);
  if (assign && link) {
    // One link of a chained assignment: its own text.
    const Expr& lhs = *assign->kids[0];
    st.loc = loc(assign->begin);
    st.text = spelling(lhs.begin, lhs.end) + " " + assign->text + " " +
              (rhs_value ? spelling(rhs_value->begin, rhs_value->end)
                         : spelling(assign->kids[1]->begin, assign->kids[1]->end)) + ";";
  }
  int depth = static_cast<int>(c.frames.size());
  isl::space sp = space_for(c.frames, st.name);
  isl::set dom = isl::manage(isl_set_universe(sp.copy()));
  for (auto& [cs, k] : c.conds) {
    isl_set* x = isl_set_add_dims(cs.copy(), isl_dim_set, depth - k);
    for (int i = 0; i < depth; ++i) x = isl_set_set_dim_name(x, isl_dim_set, i, st.iterators[i].c_str());
    x = isl_set_set_tuple_name(x, st.name.c_str());
    dom = dom.intersect(isl::manage(x));
  }
  st.domain = dom.coalesce();

  // Schedule: [c0, s0*x0, c1, ..., c_d].
  {
    isl_space* msp = isl_space_map_from_domain_and_range(sp.copy(), range_space(sp, 2 * depth + 1, ""));
    isl_multi_aff* ma = isl_multi_aff_zero(isl_space_copy(msp));
    isl_local_space* ls = isl_local_space_from_space(sp.copy());
    for (int k = 0; k <= depth; ++k) {
      isl_aff* ck = isl_aff_val_on_domain(isl_local_space_copy(ls), isl_val_int_from_si(ctx_.get(), st.position[k]));
      ma = isl_multi_aff_set_aff(ma, 2 * k, ck);
      if (k < depth) {
        isl_aff* v = isl_aff_var_on_domain(isl_local_space_copy(ls), isl_dim_set, k);
        if (scop_.loops[c.frames[k].loop].step < 0) v = isl_aff_neg(v);
        ma = isl_multi_aff_set_aff(ma, 2 * k + 1, v);
      }
    }
    isl_local_space_free(ls);
    isl_space_free(msp);
    st.schedule = isl::manage(isl_map_from_multi_aff(ma)).intersect_domain(st.domain);
  }

  // Accesses: the write first, then reads in source order.
  std::stable_partition(acc.begin(), acc.end(),
                        [](const PendingAccess& p) { return p.kind == AccessKind::kWrite; });
  for (const PendingAccess& p : acc) {
    Access a;
    a.id = static_cast<int>(scop_.accesses.size());
    a.kind = p.kind;
    a.array = p.array;
    a.statement = st.index;
    a.expr = p.expr;
    a.loc = p.expr ? loc(p.expr->begin) : (decl ? loc(decl->offset) : st.loc);
    a.text = p.expr ? spelling(p.expr->begin, p.expr->end) : (decl ? decl->name : "");
    ArrayInfo& arr = scop_.arrays[p.array];
    (p.kind == AccessKind::kWrite ? arr.written : arr.read) = true;
    isl_space* rsp = range_space(sp, p.subscripts.size(), arr.name);
    isl::map rel;
    if (p.subscripts.empty()) {
      rel = isl::manage(isl_map_from_domain_and_range(
          st.domain.copy(), isl_set_universe(rsp)));
    } else {
      isl_space* msp = isl_space_map_from_domain_and_range(sp.copy(), rsp);
      isl_pw_aff_list* list = isl_pw_aff_list_alloc(ctx_.get(), p.subscripts.size());
      bool sub_ok = true;
      for (size_t k = 0; k < p.subscripts.size(); ++k) {
        AffEnv env;
        env.space = sp;
        env.frames = c.frames;
        env.what = "subscript of '" + arr.c_name + "'";
        env.whole = p.subscripts[k];
        env.hint = "subscripts must be affine in the loop iterators and integer parameters, like " +
                   arr.c_name + "[2*i + j - 1]; linearised accesses such as A[i*n + j] need a "
                   "multi-dimensional array";
        auto v = aff(*p.subscripts[k], env);
        if (!v) {
          sub_ok = false;
          break;
        }
        list = isl_pw_aff_list_add(list, v->pa.release());
      }
      if (!sub_ok) {
        isl_pw_aff_list_free(list);
        isl_space_free(msp);
        return;
      }
      rel = isl::manage(isl_map_from_multi_pw_aff(isl_multi_pw_aff_from_pw_aff_list(msp, list)))
                .intersect_domain(st.domain);
    }
    a.relation = rel;
    // Tag: [S -> ref] -> A.
    isl_set* tag_set = isl_set_universe(isl_space_set_from_params(isl_space_params(sp.copy())));
    tag_set = isl_set_set_tuple_name(tag_set, a.tag().c_str());
    isl::map tagger = isl::manage(isl_map_reverse(isl_map_domain_map(
        isl_map_from_domain_and_range(st.domain.copy(), tag_set))));
    a.tagged = rel.apply_domain(tagger);
    st.accesses.push_back(a.id);
    scop_.accesses.push_back(std::move(a));
  }
  out.push_back({false, st.index});
  for (int l : st.loops) scop_.loops[l].statements.push_back(st.index);
  scop_.statements.push_back(std::move(st));
}

void ModelBuilder::build_list(const std::vector<const Stmt*>& stmts, BuildCtx& c,
                              std::vector<Node>& out) {
  for (const Stmt* s : stmts) {
    if (diag_.too_many()) return;
    build_stmt(*s, c, out);
  }
}

void ModelBuilder::build_stmt(const Stmt& s, BuildCtx& c, std::vector<Node>& out) {
  switch (s.kind) {
    case Stmt::Kind::kBlock: {
      scopes_.emplace_back();
      std::vector<const Stmt*> v;
      for (const StmtPtr& k : s.body) v.push_back(k.get());
      build_list(v, c, out);
      scopes_.pop_back();
      return;
    }
    case Stmt::Kind::kDecl:
      for (const Decl& d : s.decls) {
        if (d.is_array() && !d.sized_by_accesses) {
          error(d.offset) << "arrays declared inside a scop are not supported";
          diag_.set_last_hint("declare '" + d.name + "' before '#pragma scop'");
        } else if (d.pointer_depth > 0) {
          error(d.offset) << "pointer '" << d.name << "' declared inside a scop";
          diag_.set_last_hint("pointers may alias arrays, which bbmmc cannot analyse; index arrays directly");
        }
        scopes_.back().push_back(&d);
        if (d.init && !d.is_array() && d.pointer_depth == 0) build_statement(s, nullptr, &d, c, out);
      }
      return;
    case Stmt::Kind::kFor:
      build_for(s, c, out);
      return;
    case Stmt::Kind::kIf:
      build_if(s, c, out);
      return;
    case Stmt::Kind::kExpr:
      build_assignment_chain(s, s.expr.get(), c, out);
      return;
    case Stmt::Kind::kEmpty:
      return;
  }
}

void ModelBuilder::build_if(const Stmt& s, BuildCtx& c, std::vector<Node>& out) {
  int depth = static_cast<int>(c.frames.size());
  AffEnv env;
  env.space = space_for(c.frames, "");
  env.frames = c.frames;
  env.what = "if condition";
  env.whole = s.expr.get();
  env.hint = "conditions inside a scop must be affine comparisons of loop iterators and integer "
             "parameters (combined with &&, || and !); data-dependent tests belong in the "
             "right-hand side, e.g. x = c ? a : b";
  auto cs = cond_set(*s.expr, env);
  isl::set cond = cs ? *cs : isl::manage(isl_set_universe(env.space.copy()));
  for (size_t b = 0; b < s.body.size(); ++b) {
    c.conds.emplace_back(b == 0 ? cond : cond.complement(), depth);
    scopes_.emplace_back();
    build_list({s.body[b].get()}, c, out);
    scopes_.pop_back();
    c.conds.pop_back();
  }
}

void ModelBuilder::build_for(const Stmt& s, BuildCtx& c, std::vector<Node>& out) {
  int depth = static_cast<int>(c.frames.size());
  Loop L;
  L.id = static_cast<int>(scop_.loops.size());
  L.depth = depth;
  L.parent = c.loop;
  L.loc = loc(s.begin);
  L.ast = &s;
  L.asserted_parallel = s.asserted_parallel;
  if (s.asserted_parallel) L.pragma_loc = loc(s.pragma_offset);

  // Iterator and lower bound.
  std::string iter;
  const Expr* lb = nullptr;
  bool header_ok = true;
  if (!s.init_decl_var.empty()) {
    iter = s.init_decl_var;
    lb = s.init.get();
    if (!s.init_decl_integer) {
      error(s.init_decl_offset) << "loop iterator '" << iter << "' must have an integer type";
      header_ok = false;
    }
  } else if (s.init && s.init->kind == Expr::Kind::kAssign && s.init->text == "=" &&
             s.init->kids[0]->kind == Expr::Kind::kIdent) {
    iter = s.init->kids[0]->text;
    lb = s.init->kids[1].get();
    const Decl* d = lookup(iter);
    if (d && !d->is_integer) {
      error(s.init->begin) << "loop iterator '" << iter << "' must have an integer type";
      header_ok = false;
    }
  } else {
    error(s.init ? s.init->begin : s.begin)
        << "loop initialization must assign the loop iterator, as in 'i = 0'";
    header_ok = false;
  }

  // Step.
  int64_t step = 0;
  if (!s.inc) {
    error(s.begin) << "loop without an increment";
    diag_.set_last_hint("loops inside a scop need a constant step, e.g. 'i++'");
    header_ok = false;
  } else {
    const Expr& inc = *s.inc;
    std::string var;
    if ((inc.kind == Expr::Kind::kPostfix || inc.kind == Expr::Kind::kUnary) &&
        (inc.text == "++" || inc.text == "--") && inc.kids[0]->kind == Expr::Kind::kIdent) {
      var = inc.kids[0]->text;
      step = inc.text == "++" ? 1 : -1;
    } else if (inc.kind == Expr::Kind::kAssign && inc.kids[0]->kind == Expr::Kind::kIdent) {
      var = inc.kids[0]->text;
      const Expr* amount = nullptr;
      int sign = 1;
      if (inc.text == "+=" || inc.text == "-=") {
        amount = inc.kids[1].get();
        sign = inc.text == "+=" ? 1 : -1;
      } else if (inc.text == "=" && inc.kids[1]->kind == Expr::Kind::kBinary &&
                 (inc.kids[1]->text == "+" || inc.kids[1]->text == "-")) {
        const Expr& r = *inc.kids[1];
        if (r.kids[0]->kind == Expr::Kind::kIdent && r.kids[0]->text == var) {
          amount = r.kids[1].get();
          sign = r.text == "+" ? 1 : -1;
        } else if (r.text == "+" && r.kids[1]->kind == Expr::Kind::kIdent && r.kids[1]->text == var) {
          amount = r.kids[0].get();
        }
      }
      if (amount && amount->kind == Expr::Kind::kInt && !amount->overflow && amount->int_value > 0 &&
          amount->int_value < (1u << 30))
        step = sign * static_cast<int64_t>(amount->int_value);
    }
    if (!var.empty() && !iter.empty() && var != iter) {
      error(inc.begin) << "loop increments '" << var << "' but its iterator is '" << iter << "'";
      header_ok = false;
    } else if (step == 0) {
      error(inc.begin) << "loop step '" << text(inc) << "' is not a constant increment of the iterator";
      diag_.set_last_hint("use i++, i--, i += c or i -= c with a positive integer constant c");
      header_ok = false;
    }
  }
  L.step = step == 0 ? 1 : step;
  L.c_name = iter;
  std::string iname = iter.empty() ? "it" + std::to_string(depth) : iter;
  for (int k = 1; std::any_of(c.frames.begin(), c.frames.end(),
                              [&](const LoopFrame& f) { return f.isl_name == iname; });
       ++k)
    iname = iter + "_" + std::to_string(k);
  L.iterator = iname;
  scop_.loops.push_back(L);

  std::vector<LoopFrame> inner = c.frames;
  inner.push_back({L.id, iter, iname});
  isl::space sp = space_for(inner, "");
  isl::set dom = isl::manage(isl_set_universe(sp.copy()));
  isl_local_space* ls0 = isl_local_space_from_space(sp.copy());
  isl::pw_aff x = isl::manage(isl_pw_aff_var_on_domain(ls0, isl_dim_set, depth));
  if (header_ok && lb) {
    AffEnv env;
    env.space = sp;
    env.frames = c.frames;  // the iterator itself is not visible in its initializer
    env.what = "loop bound";
    env.whole = lb;
    env.hint = "loop bounds must be affine in the outer iterators and integer parameters; "
               "min, max, floord, ceild and division by a constant are allowed";
    auto lbv = aff(*lb, env);
    if (lbv) {
      dom = dom.intersect(step > 0 ? x.ge_set(lbv->pa) : x.le_set(lbv->pa));
      if (step > 1 || step < -1) {
        isl::pw_aff diff = x.sub(lbv->pa);
        dom = dom.intersect(diff.mod(isl::val(ctx_, std::abs(step))).eq_set(
            isl::manage(isl_pw_aff_val_on_domain(isl_set_universe(sp.copy()), isl_val_zero(ctx_.get())))));
      }
    } else {
      header_ok = false;
    }
  }
  if (!s.cond) {
    if (header_ok) {
      error(s.begin) << "loop without a condition";
      diag_.set_last_hint("give the loop an affine bound, e.g. 'i < n'");
    }
    header_ok = false;
  } else if (header_ok) {
    AffEnv env;
    env.space = sp;
    env.frames = inner;
    env.what = "loop bound";
    env.whole = s.cond.get();
    env.hint = "loop bounds must be affine in the outer iterators and integer parameters; "
               "min, max, floord, ceild and division by a constant are allowed";
    auto cs = cond_set(*s.cond, env);
    if (cs) {
      // The loop runs while the condition holds: it must only ever turn false once, i.e.
      // be monotone in the iterator, and must bound the iterator in the step's direction.
      isl::set start = dom;
      isl::set fail = start.subtract(*cs);
      isl_map* m = isl_map_from_domain_and_range(fail.copy(), cs->copy());
      for (int k = 0; k < depth; ++k) m = isl_map_equate(m, isl_dim_in, k, isl_dim_out, k);
      m = step > 0 ? isl_map_order_lt(m, isl_dim_in, depth, isl_dim_out, depth)
                   : isl_map_order_gt(m, isl_dim_in, depth, isl_dim_out, depth);
      isl::map bad = isl::manage(m);
      isl::set full = dom.intersect(*cs);
      bool bounded = step > 0 ? isl_set_dim_has_upper_bound(full.get(), isl_dim_set, depth) == isl_bool_true
                              : isl_set_dim_has_lower_bound(full.get(), isl_dim_set, depth) == isl_bool_true;
      if (!bad.is_empty()) {
        error(s.cond->begin) << "loop condition '" << text(*s.cond) << "' is not a bound on '" << iter
                             << "': it can become false and then true again";
        diag_.set_last_hint(std::string("write the condition as ") + (step > 0 ? "upper" : "lower") +
            " bounds on the iterator, e.g. '" + iter + (step > 0 ? " < n" : " >= 0") +
            "'; put other tests in an if statement");
        header_ok = false;
      } else if (!bounded && !full.is_empty()) {
        error(s.cond->begin) << "loop condition '" << text(*s.cond) << "' does not bound '" << iter
                             << "' from " << (step > 0 ? "above" : "below") << ", but the loop "
                             << (step > 0 ? "counts up" : "counts down");
        header_ok = false;
      } else {
        dom = full;
      }
    } else {
      header_ok = false;
    }
  }
  (void)header_ok;

  int pos = static_cast<int>(out.size());
  out.push_back({true, L.id});
  c.frames.push_back(inner.back());
  c.conds.emplace_back(dom.coalesce(), depth + 1);
  c.pos.push_back(pos);
  int saved_loop = c.loop;
  c.loop = L.id;
  scopes_.emplace_back();
  std::vector<Node> body;
  build_list({s.body[0].get()}, c, body);
  scopes_.pop_back();
  c.loop = saved_loop;
  c.pos.pop_back();
  c.conds.pop_back();
  c.frames.pop_back();
  scop_.loops[L.id].body = std::move(body);
  if (c.loop >= 0) {
    // statements of the child were already added to every enclosing loop
  }
}

std::optional<Scop> ModelBuilder::build() {
  scop_.function = fn_ ? fn_->name : "";
  scop_.begin_loc = loc(ast_.begin_offset);
  scop_.end_loc = loc(ast_.end_offset);
  scop_.file = scop_.begin_loc.file;
  if (auto b = sm_.line_start_offset(scop_.file, scop_.begin_loc.line)) scop_.begin_byte = *b;
  if (auto e = sm_.line_start_offset(scop_.file, scop_.end_loc.line + 1)) {
    scop_.end_byte = *e;
  } else if (const std::string* f = sm_.file_contents(scop_.file)) {
    scop_.end_byte = f->size();
  }

  // Pass 0.
  scopes_.emplace_back();
  for (const StmtPtr& s : ast_.body) collect_stmt(*s);
  scopes_.clear();
  std::vector<std::string> params;
  auto is_param = [&](const std::string& n) {
    const Decl* d = lookup(n);
    if (is_written(n, d) || (d && iterator_decls_.count(d))) return false;
    if (!d) return true;
    return d->is_integer && !d->is_array() && d->pointer_depth == 0 && !d->is_function;
  };
  if (fn_)
    for (const Decl& d : fn_->params)
      if (std::find(candidates_.begin(), candidates_.end(), d.name) != candidates_.end() && is_param(d.name))
        params.push_back(d.name);
  for (const std::string& n : candidates_)
    if (std::find(params.begin(), params.end(), n) == params.end() && is_param(n)) params.push_back(n);
  scop_.params = params;
  scop_.context = isl::manage(isl_set_universe(make_set_space(ctx_, params, "", {}).release())).params();

  // Pass 1.
  BuildCtx c;
  scopes_.emplace_back();
  std::vector<const Stmt*> top;
  for (const StmtPtr& s : ast_.body) top.push_back(s.get());
  build_list(top, c, scop_.body);
  scopes_.clear();

  if (ok_ && scop_.statements.empty() && !ast_.syntax_errors) {
    error(ast_.begin_offset) << "scop contains no statements";
    diag_.set_last_hint("put the loop nest between '#pragma scop' and '#pragma endscop', or remove the pragmas");
  }
  if (!ok_) return std::nullopt;

  int maxd = 0;
  for (const Statement& s : scop_.statements) maxd = std::max(maxd, static_cast<int>(s.iterators.size()));
  scop_.schedule_dims = 2 * maxd + 1;
  for (Statement& s : scop_.statements) {
    int have = 2 * static_cast<int>(s.iterators.size()) + 1;
    if (have < scop_.schedule_dims) {
      isl_map* m = isl_map_add_dims(s.schedule.copy(), isl_dim_out, scop_.schedule_dims - have);
      for (int k = have; k < scop_.schedule_dims; ++k) m = isl_map_fix_si(m, isl_dim_out, k, 0);
      s.schedule = isl::manage(m);
    }
  }
  // Arrays bbmmc declared in the scop (Decl::sized_by_accesses): each extent is one past
  // the largest subscript any access uses, over the scop's parameters.
  for (size_t a = 0; a < scop_.arrays.size(); ++a) {
    ArrayInfo& arr = scop_.arrays[a];
    if (arr.is_scalar || arr.where != Decl::Where::kScop || !arr.extents.empty()) continue;
    isl::set used;
    for (const Access& acc : scop_.accesses) {
      if (acc.array != static_cast<int>(a)) continue;
      isl::set r = acc.relation.range();
      used = used.is_null() ? r : used.unite(r);
    }
    if (used.is_null()) continue;
    used = used.coalesce();
    const int rank = static_cast<int>(isl_set_dim(used.get(), isl_dim_set));
    for (int d = 0; d < rank; ++d) {
      isl_pw_aff* mx = isl_set_dim_max(used.copy(), d);
      mx = isl_pw_aff_add_constant_val(mx, isl_val_one(ctx_.get()));
      isl::pw_aff ext = isl::manage(mx).coalesce();
      arr.extents.push_back(ext);
      arr.extent_text.push_back(str(ext));
    }
  }
  // Live-out: values that code after the scop (or the caller) may see.
  std::set<std::string> after(ast_.names_after.begin(), ast_.names_after.end());
  for (ArrayInfo& a : scop_.arrays) {
    if (!a.written) continue;
    if (a.where == Decl::Where::kScop) continue;
    if (a.where == Decl::Where::kLocal) a.live_out = after.count(a.c_name) > 0;
    else a.live_out = true;
  }
  // `#pragma bbmm scratch(...)`: the program does not use these values after the scop.
  for (const ScratchName& n : ast_.scratch) {
    auto it = std::find_if(scop_.arrays.begin(), scop_.arrays.end(),
                           [&](const ArrayInfo& a) { return a.c_name == n.name; });
    if (it == scop_.arrays.end()) {
      error(n.offset) << "'#pragma bbmm scratch' names '" << n.name
                      << "', which the scop does not access";
      diag_.set_last_hint("name arrays the scop accesses; their values after it are not used");
      continue;
    }
    it->live_out = false;
  }
  if (!ok_) return std::nullopt;
  return std::move(scop_);
}

}  // namespace

std::vector<Scop> build_models(const TranslationUnit& tu, SourceManager& sm, Diagnostics& diag,
                               IslContext& isl) {
  std::vector<Scop> out;
  for (size_t i = 0; i < tu.scops.size(); ++i) {
    if (!tu.scops[i].terminated) continue;
    if (diag.too_many()) break;
    try {
      const bool within = run_within_isl_budget(isl, [&] {
        ModelBuilder b(tu, tu.scops[i], static_cast<int>(i), sm, diag, isl);
        auto s = b.build();
        if (s) out.push_back(std::move(*s));
      });
      if (!within) {
        const ScopAst& a = tu.scops[i];
        report_scop_too_complex(diag, sm.resolve(a.begin_offset), sm.resolve(a.end_offset),
                                a.function >= 0 ? tu.functions[a.function]->name : "",
                                "building its polyhedral model", isl.budget());
      }
    } catch (const isl::exception& e) {
      diag.internal_error("poly/model", std::string("isl: ") + e.what());
    }
  }
  return out;
}

void rebuild_schedules(Scop& s) {
  std::function<void(const std::vector<Node>&, std::vector<int>&)> walk =
      [&](const std::vector<Node>& body, std::vector<int>& pos) {
        for (size_t k = 0; k < body.size(); ++k) {
          pos.push_back(static_cast<int>(k));
          if (body[k].is_loop) {
            walk(s.loops[body[k].index].body, pos);
          } else {
            s.statements[body[k].index].position = pos;
          }
          pos.pop_back();
        }
      };
  std::vector<int> pos;
  walk(s.body, pos);
  for (const Statement& st : s.statements)
    s.schedule_dims = std::max(s.schedule_dims, 2 * static_cast<int>(st.loops.size()) + 1);
  for (Statement& st : s.statements) {
    const int depth = static_cast<int>(st.loops.size());
    isl_space* sp = isl_set_get_space(st.domain.get());
    isl_space* rsp =
        isl_space_add_dims(isl_space_params(isl_space_copy(sp)), isl_dim_set, s.schedule_dims);
    isl_space* msp = isl_space_map_from_domain_and_range(isl_space_copy(sp), rsp);
    isl_multi_aff* ma = isl_multi_aff_zero(msp);
    isl_local_space* ls = isl_local_space_from_space(sp);
    for (int k = 0; k <= depth; ++k) {
      isl_aff* ck = isl_aff_val_on_domain(isl_local_space_copy(ls),
                                          isl_val_int_from_si(s.context.ctx().get(), st.position[k]));
      ma = isl_multi_aff_set_aff(ma, 2 * k, ck);
      if (k < depth) {
        isl_aff* v = isl_aff_var_on_domain(isl_local_space_copy(ls), isl_dim_set, k);
        if (s.loops[st.loops[k]].step < 0) v = isl_aff_neg(v);
        ma = isl_multi_aff_set_aff(ma, 2 * k + 1, v);
      }
    }
    isl_local_space_free(ls);
    st.schedule = isl::manage(isl_map_from_multi_aff(ma)).intersect_domain(st.domain);
  }
}

void map_statement(Scop& s, Statement& st, const isl::map& t) {
  st.domain = st.domain.apply(t);
  for (int a : st.accesses) {
    Access& acc = s.accesses[a];
    acc.relation = acc.relation.apply_domain(t);
    isl_space* tsp = isl_space_unwrap(isl_space_domain(isl_map_get_space(acc.tagged.get())));
    isl_space* ref = isl_space_range(tsp);
    isl_map* id = isl_map_identity(isl_space_map_from_set(ref));
    acc.tagged = acc.tagged.apply_domain(isl::manage(isl_map_product(t.copy(), id)));
  }
}

isl::map source_map(const Statement& st) {
  if (st.source_rows.empty()) return isl::map();
  return matrix_map(st.domain, st.source_rows, {}).intersect_domain(st.domain);
}

}  // namespace bbmm::compiler
