#include "codegen/split_weights.h"

#include <isl/aff.h>
#include <isl/id.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/stride_info.h>

#include <cctype>
#include <sstream>

#include "codegen/c_printer.h"
#include "codegen/loop_ast.h"

namespace bbmm::compiler {
namespace {

// The loops a work function may enumerate per statement (see row_work_function).
constexpr int kMaxCountedLoops = 1;

// "set" with one more parameter, "name", unconstrained (or equal to set dimension "dim"
// when dim >= 0).
isl_set* add_param(isl_set* set, const char* name, int dim = -1) {
  const int np = static_cast<int>(isl_set_dim(set, isl_dim_param));
  set = isl_set_add_dims(set, isl_dim_param, 1);
  set = isl_set_set_dim_name(set, isl_dim_param, np, name);
  if (dim >= 0) set = isl_set_equate(set, isl_dim_param, np, isl_dim_set, dim);
  return set;
}

// The domain of "st" as a map from its split iterator (dimension "dim") to its other
// iterators, tuples anonymous.
isl::map row_map(const Statement& st, int dim) {
  isl_set* d = isl_set_reset_tuple_id(st.domain.copy());
  isl_map* m = isl_map_from_range(d);
  m = isl_map_move_dims(m, isl_dim_in, 0, isl_dim_out, dim, 1);
  return isl::manage(m);
}

// Whether every iteration of "range" carries the same instances of every statement.
bool uniform(const Scop& scop, const std::vector<SplitStatement>& sts, const isl::set& range) {
  for (const SplitStatement& s : sts) {
    const isl::map m = row_map(scop.statements[s.statement], s.dim);
    const isl::set dom = m.domain();
    if (!dom.is_equal(range)) return false;
    const isl::map product = isl::manage(isl_map_from_domain_and_range(dom.copy(), isl_map_range(m.copy())));
    if (!product.is_equal(m)) return false;
  }
  return true;
}

// Whether C expression "expr" names identifier "name".
bool uses(const std::string& expr, const std::string& name) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = expr.find(name); at != std::string::npos; at = expr.find(name, at + 1)) {
    const size_t end = at + name.size();
    if ((at == 0 || !ident(expr[at - 1])) && (end == expr.size() || !ident(expr[end]))) return true;
  }
  return false;
}

// "pa" (over a set of "n" dimensions) as a C expression in parameters bbmm_o0..bbmm_o<n-1>
// standing for those dimensions, simplified inside "where" (the same set).
std::string expr_over_outer(isl_pw_aff* pa, isl_set* where, int n, const isl::set& context) {
  const int np = static_cast<int>(isl_pw_aff_dim(pa, isl_dim_param));
  pa = isl_pw_aff_move_dims(pa, isl_dim_param, np, isl_dim_in, 0, n);
  where = isl_set_move_dims(where, isl_dim_param, np, isl_dim_set, 0, n);
  for (int j = 0; j < n; ++j) {
    const std::string name = "bbmm_o" + std::to_string(j);
    pa = isl_pw_aff_set_dim_id(pa, isl_dim_param, np + j,
                                isl_id_alloc(isl_pw_aff_get_ctx(pa), name.c_str(), nullptr));
    where = isl_set_set_dim_name(where, isl_dim_param, np + j, name.c_str());
  }
  pa = isl_pw_aff_project_domain_on_params(pa);
  isl::set ctx = context.intersect_params(isl::manage(isl_set_params(where)));
  return rename_isl_macros(c_expr_from_pw_aff(isl::manage(pa), ctx));
}

// Lines adding to bbmm_w the instances of "st" with split iterator bbmm_row ("dim" its
// position), indented by "indent" spaces. "tag" names the loops' tuple. "loops" is set to
// the number of loops the lines enumerate.
std::string count_statement(const Scop& scop, const Statement& st, int dim, int indent,
                            const std::string& tag, int& loops) {
  isl::set context = isl::manage(add_param(scop.context.copy(), "bbmm_row"));
  isl_set* x = isl_set_reset_tuple_id(st.domain.copy());
  x = add_param(x, "bbmm_row", dim);
  x = isl_set_project_out(x, isl_dim_set, dim, 1);
  const int m = static_cast<int>(isl_set_dim(x, isl_dim_set));
  const std::string ind(static_cast<size_t>(indent), ' ');
  std::ostringstream os;
  os << ind << "/* " << st.name << ": " << comment_safe(st.text) << " */\n";
  loops = 0;
  if (m == 0) {
    const std::string guard =
        rename_isl_macros(c_condition_from_set(isl::manage(isl_set_params(x)), context));
    os << ind << "if (" << guard << ") bbmm_w += 1;\n";
    return os.str();
  }
  // The innermost iterator as a function of the others: where every value between its
  // minimum and its maximum is an instance, the count is max - min + 1.
  isl_map* mp = isl_map_from_range(x);
  mp = isl_map_move_dims(mp, isl_dim_in, 0, isl_dim_out, 0, m - 1);
  isl_pw_multi_aff* lexmin = isl_map_lexmin_pw_multi_aff(isl_map_copy(mp));
  isl_pw_multi_aff* lexmax = isl_map_lexmax_pw_multi_aff(isl_map_copy(mp));
  isl_pw_aff* lo = isl_pw_multi_aff_get_pw_aff(lexmin, 0);  // keeps its argument
  isl_pw_aff* hi = isl_pw_multi_aff_get_pw_aff(lexmax, 0);
  isl_pw_multi_aff_free(lexmin);
  isl_pw_multi_aff_free(lexmax);
  isl_space* one = isl_space_set_alloc(isl_map_get_ctx(mp), 0, 1);
  isl_map* above = isl_map_apply_range(isl_map_from_pw_aff(isl_pw_aff_copy(lo)),
                                       isl_map_lex_le(isl_space_copy(one)));
  isl_map* below = isl_map_apply_range(isl_map_from_pw_aff(isl_pw_aff_copy(hi)), isl_map_lex_ge(one));
  isl_map* between = isl_map_intersect(above, below);
  const bool convex = isl_map_is_equal(between, mp) == isl_bool_true;
  isl_map_free(between);
  isl_set* outer;
  isl_pw_aff* count;
  int n;
  if (convex) {
    outer = isl_map_domain(mp);
    count = isl_pw_aff_add_constant_val(isl_pw_aff_sub(hi, lo), isl_val_one(isl_set_get_ctx(outer)));
    n = m - 1;
  } else {
    // A hole along the innermost iterator (a stride, a union): every instance counts one.
    isl_pw_aff_free(lo);
    isl_pw_aff_free(hi);
    outer = isl_map_range(isl_map_move_dims(mp, isl_dim_out, 0, isl_dim_in, 0, m - 1));
    count = isl_pw_aff_val_on_domain(isl_set_copy(outer), isl_val_one(isl_set_get_ctx(outer)));
    n = m;
  }
  loops = n;
  const std::string expr = expr_over_outer(count, isl_set_copy(outer), n, context);
  if (n == 0) {
    const std::string guard =
        rename_isl_macros(c_condition_from_set(isl::manage(isl_set_params(outer)), context));
    os << ind << "if (" << guard << ") bbmm_w += " << expr << ";\n";
    return os.str();
  }
  outer = isl_set_set_tuple_name(outer, tag.c_str());
  isl_map* sched = isl_map_identity(isl_space_map_from_set(isl_set_get_space(outer)));
  sched = isl_map_intersect_domain(sched, outer);
  sched = isl_map_reset_tuple_id(sched, isl_dim_out);
  const PrintInstance print = [&](const std::string&, const std::vector<std::string>& args,
                                  std::vector<std::string>& lines) {
    std::string line = "{";
    for (size_t j = 0; j < args.size(); ++j) {
      const std::string name = "bbmm_o" + std::to_string(j);
      if (uses(expr, name)) line += " const int64_t " + name + " = " + args[j] + ";";
    }
    line += " bbmm_w += " + expr + "; }";
    lines.push_back(line);
  };
  os << rename_isl_macros(
      print_loops(isl::union_map(isl::manage(sched)), context, "bbmm_q", indent, print));
  return os.str();
}

}  // namespace

std::vector<SplitStatement> split_statements(const Scop& scop, const Partition& part, size_t d) {
  std::vector<SplitStatement> r;
  for (size_t slot = 0; slot < part.phases.size(); ++slot) {
    if (slot >= part.dims[d].loops.size()) continue;
    for (int st_i : scop.phases[part.phases[slot]].statements) {
      const int dd = split_dim(scop.statements[st_i], part.dims[d].loops[slot]);
      if (dd >= 0) r.push_back({st_i, dd});
    }
  }
  return r;
}

isl::set split_range(const Scop& scop, const Partition& part, size_t d) {
  isl::set vals;
  for (const SplitStatement& s : split_statements(scop, part, d)) {
    const Statement& st = scop.statements[s.statement];
    const int depth = static_cast<int>(st.iterators.size());
    isl_set* x = isl_set_project_out(st.domain.copy(), isl_dim_set, s.dim + 1, depth - s.dim - 1);
    x = isl_set_project_out(x, isl_dim_set, 0, s.dim);
    x = isl_set_reset_tuple_id(x);
    isl::set v = isl::manage(x);
    vals = vals.is_null() ? v : vals.unite(v);
  }
  return vals.is_null() ? vals : vals.coalesce();
}

int64_t split_stride(const isl::set& range, const isl::set& context, std::string& offset) {
  offset = "0";
  isl_stride_info* si = isl_set_get_stride_info(range.get(), 0);
  if (!si) return 1;
  isl_val* v = isl_stride_info_get_stride(si);
  int64_t stride = 1;
  if (v && isl_val_is_int(v) && isl_val_get_num_si(v) > 1) {
    stride = isl_val_get_num_si(v);
    isl_pw_aff* off = isl_pw_aff_from_aff(isl_stride_info_get_offset(si));
    off = isl_pw_aff_project_domain_on_params(off);
    offset = rename_isl_macros(c_expr_from_pw_aff(isl::manage(off), context));
  }
  isl_val_free(v);
  isl_stride_info_free(si);
  return stride;
}

bool uniform_work(const Scop& scop, const Partition& part) {
  if (part.dims.size() != 1 && !part.rows_first) return false;
  const std::vector<SplitStatement> sts = split_statements(scop, part, 0);
  const isl::set range = split_range(scop, part, 0);
  return sts.empty() || range.is_null() || uniform(scop, sts, range);
}

std::string row_work_function(const Scop& scop, const Partition& part, const std::string& fn,
                              const std::string& ctx_struct, const std::string& locals) {
  if (part.dims.size() != 1 && !part.rows_first) return "";
  if (uniform_work(scop, part)) return "";
  const std::vector<SplitStatement> sts = split_statements(scop, part, 0);
  std::ostringstream os;
  os << "/* Partition " << part.id << ": the statement instances of iteration bbmm_row of its split\n"
        "   loop, over all its phases and serial iterations (split points weighted by work). */\n";
  os << "static int64_t " << fn << "(const void* bbmm_xv, int64_t bbmm_row) {\n";
  os << "  const " << ctx_struct << "* bbmm_x = (const " << ctx_struct << "*)bbmm_xv;\n";
  os << "  (void)bbmm_x;\n";
  os << locals;
  os << "  int64_t bbmm_w = 0;\n";
  int k = 0;
  for (const SplitStatement& s : sts) {
    int loops = 0;
    os << count_statement(scop, scop.statements[s.statement], s.dim, 2, "W" + std::to_string(k++),
                          loops);
    // Counting an iteration's instances enumerates at most one loop (the innermost becomes
    // its trip count): the generated code's counting then costs at most 256 times the
    // longest loop. Deeper, it could cost as much as running the nest serially (a 4-deep
    // triangular nest in a time loop: 256 x T x N per partition), so the split stays even.
    if (loops > kMaxCountedLoops) return "";
  }
  os << "  return bbmm_w;\n";
  os << "}\n\n";
  return os.str();
}

}  // namespace bbmm::compiler
