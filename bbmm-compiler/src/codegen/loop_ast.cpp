#include "codegen/loop_ast.h"

#include <isl/ast.h>
#include <isl/ast_build.h>
#include <isl/id.h>
#include <isl/options.h>
#include <isl/printer.h>

#include <cctype>
#include <sstream>
#include <stdexcept>

namespace bbmm::compiler {
namespace {

struct UserData {
  const PrintInstance* print = nullptr;
  const SharedLoop* shared = nullptr;
  int inside = 0;  // shared loops being printed around the current node
};

isl_printer* set_names(isl_printer* p) {
  p = isl_ast_expr_op_type_set_print_name(p, isl_ast_expr_op_min, "bbmm_min");
  p = isl_ast_expr_op_type_set_print_name(p, isl_ast_expr_op_max, "bbmm_max");
  p = isl_ast_expr_op_type_set_print_name(p, isl_ast_expr_op_fdiv_q, "bbmm_floord");
  return p;
}

std::string expr_str(isl_ast_expr* e) {
  isl_printer* p = isl_printer_to_str(isl_ast_expr_get_ctx(e));
  p = isl_printer_set_output_format(p, ISL_FORMAT_C);
  p = set_names(p);
  p = isl_printer_print_ast_expr(p, e);
  char* s = isl_printer_get_str(p);
  isl_printer_free(p);
  std::string r = s ? s : "";
  free(s);
  return r;
}

isl_printer* print_user(isl_printer* p, isl_ast_print_options* options, isl_ast_node* node,
                        void* user) {
  auto* data = static_cast<UserData*>(user);
  isl_ast_expr* call = isl_ast_node_user_get_expr(node);
  isl_ast_expr* fn = isl_ast_expr_get_op_arg(call, 0);
  isl_id* id = isl_ast_expr_get_id(fn);
  std::string name = isl_id_get_name(id);
  isl_id_free(id);
  isl_ast_expr_free(fn);
  std::vector<std::string> args;
  int n = isl_ast_expr_get_op_n_arg(call);
  for (int k = 1; k < n; ++k) {
    isl_ast_expr* a = isl_ast_expr_get_op_arg(call, k);
    args.push_back(expr_str(a));
    isl_ast_expr_free(a);
  }
  isl_ast_expr_free(call);
  std::vector<std::string> lines;
  (*data->print)(name, args, lines);
  const bool single = data->shared && data->inside == 0;
  auto line = [&](const std::string& l) {
    p = isl_printer_start_line(p);
    p = isl_printer_print_str(p, l.c_str());
    p = isl_printer_end_line(p);
  };
  // (Braces around the instance and "after": the body of an unbraced loop or if.)
  if (single) {
    line("{");
    line("  if (" + data->shared->single + ") {");
    p = isl_printer_indent(p, 4);
  }
  for (const std::string& l : lines) line(l);
  if (single) {
    p = isl_printer_indent(p, -4);
    line("  }");
    line("  " + data->shared->after);
    line("}");
  }
  isl_ast_print_options_free(options);
  return p;
}

std::string id_name(isl_ast_expr* e) {
  isl_id* id = isl_ast_expr_get_id(e);
  std::string r = id && isl_id_get_name(id) ? isl_id_get_name(id) : "";
  isl_id_free(id);
  isl_ast_expr_free(e);
  return r;
}

std::string take_str(isl_ast_expr* e) {
  std::string r = expr_str(e);
  isl_ast_expr_free(e);
  return r;
}

// A for node: the shared loop spread over the threads (see SharedLoop), any other as isl
// prints it.
isl_printer* print_for(isl_printer* p, isl_ast_print_options* options, isl_ast_node* node,
                       void* user) {
  auto* data = static_cast<UserData*>(user);
  const SharedLoop& sh = *data->shared;
  if (data->inside > 0 || id_name(isl_ast_node_for_get_iterator(node)) != sh.iterator)
    return isl_ast_node_for_print(node, p, options);
  auto line = [&](const std::string& l) {
    p = isl_printer_start_line(p);
    p = isl_printer_print_str(p, l.c_str());
    p = isl_printer_end_line(p);
  };
  // Braces around the loop and "after": the body of an unbraced loop or if.
  line("{");
  p = isl_printer_indent(p, 2);
  ++data->inside;
  if (isl_ast_node_for_is_degenerate(node) == isl_bool_true) {
    // One iteration: one thread runs it.
    line("if (" + sh.single + ") {");
    p = isl_printer_indent(p, 2);
    p = isl_ast_node_for_print(node, p, options);
    p = isl_printer_indent(p, -2);
    line("}");
  } else {
    const std::string it = sh.iterator;
    const std::string init = take_str(isl_ast_node_for_get_init(node));
    const std::string cond = take_str(isl_ast_node_for_get_cond(node));
    const std::string inc = take_str(isl_ast_node_for_get_inc(node));
    line("for (int64_t " + it + " = " + init + " + (int64_t)(" + sh.thread + ") * " + inc + "; " +
         cond + "; " + it + " += (int64_t)(" + sh.threads + ") * " + inc + ") {");
    p = isl_printer_indent(p, 2);
    isl_ast_node* body = isl_ast_node_for_get_body(node);
    p = isl_ast_node_print(body, p, options);
    isl_ast_node_free(body);
    p = isl_printer_indent(p, -2);
    line("}");
  }
  --data->inside;
  line(sh.after);
  p = isl_printer_indent(p, -2);
  line("}");
  return p;
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::string rename_isl_macros(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (ident_char(text[i]) && (i == 0 || !ident_char(text[i - 1]))) {
      size_t j = i;
      while (j < text.size() && ident_char(text[j])) ++j;
      std::string word = text.substr(i, j - i);
      size_t k = j;
      while (k < text.size() && text[k] == ' ') ++k;
      bool call = k < text.size() && text[k] == '(';
      if (call && (word == "min" || word == "max" || word == "floord")) out += "bbmm_";
      out += word;
      i = j;
    } else {
      out += text[i++];
    }
  }
  return out;
}

isl::set ast_context(const isl::set& context) {
  if (isl_set_n_basic_set(context.get()) <= kMaxAstContextPieces) return context;
  return isl::manage(isl_set_from_basic_set(isl_set_simple_hull(context.copy())));
}

LoopAst::LoopAst(const isl::union_map& schedule, const isl::set& context,
                 const std::string& iterator_prefix) {
  isl_ctx* ctx = schedule.ctx().get();
  isl_options_set_ast_iterator_type(ctx, "int64_t");
  isl_ast_build* build = isl_ast_build_from_context(ast_context(context).release());
  int dims = 0;
  for (const isl::map& m : sorted_maps(schedule)) {
    dims = std::max(dims, static_cast<int>(isl_map_dim(m.get(), isl_dim_out)));
  }
  isl_id_list* iters = isl_id_list_alloc(ctx, dims);
  for (int k = 0; k < dims; ++k) {
    iters = isl_id_list_add(iters,
                            isl_id_alloc(ctx, (iterator_prefix + std::to_string(k)).c_str(), nullptr));
  }
  build = isl_ast_build_set_iterators(build, iters);
  tree_ = isl_ast_build_node_from_schedule_map(build, schedule.copy());
  isl_ast_build_free(build);
  if (!tree_) throw std::runtime_error("codegen: isl's AST generator failed");
}

LoopAst::~LoopAst() { isl_ast_node_free(tree_); }

std::string LoopAst::print(int indent, const PrintInstance& print_instance) const {
  return print(indent, print_instance, nullptr);
}

std::string LoopAst::print(int indent, const PrintInstance& print_instance,
                           const SharedLoop* shared) const {
  isl_ctx* ctx = isl_ast_node_get_ctx(tree_);
  UserData data{&print_instance, shared, 0};
  isl_printer* p = isl_printer_to_str(ctx);
  p = isl_printer_set_output_format(p, ISL_FORMAT_C);
  p = isl_printer_set_indent(p, indent);
  p = set_names(p);
  isl_ast_print_options* opts = isl_ast_print_options_alloc(ctx);
  opts = isl_ast_print_options_set_print_user(opts, &print_user, &data);
  if (shared) opts = isl_ast_print_options_set_print_for(opts, &print_for, &data);
  p = isl_ast_node_print(tree_, p, opts);
  char* s = isl_printer_get_str(p);
  std::string r = s ? s : "";
  free(s);
  isl_printer_free(p);
  return r;
}

std::string print_loops(const isl::union_map& schedule, const isl::set& context,
                        const std::string& iterator_prefix, int indent,
                        const PrintInstance& print_instance) {
  return LoopAst(schedule, context, iterator_prefix).print(indent, print_instance);
}

std::string c_expr_from_pw_aff(const isl::pw_aff& pa, const isl::set& context) {
  isl_ast_build* build = isl_ast_build_from_context(ast_context(context).release());
  isl_ast_expr* e = isl_ast_build_expr_from_pw_aff(build, pa.copy());
  isl_ast_build_free(build);
  if (!e) throw std::runtime_error("codegen: cannot print a pw_aff");
  std::string r = expr_str(e);
  isl_ast_expr_free(e);
  return r;
}

std::string c_condition_from_set(const isl::set& set, const isl::set& full_context) {
  const isl::set context = ast_context(full_context);
  isl::set gist = set.gist(context);
  if (isl_set_plain_is_universe(gist.get()) == isl_bool_true) return "1";
  isl_ast_build* build = isl_ast_build_from_context(context.copy());
  isl_ast_expr* e = isl_ast_build_expr_from_set(build, gist.copy());
  isl_ast_build_free(build);
  if (!e) throw std::runtime_error("codegen: cannot print a condition");
  std::string r = expr_str(e);
  isl_ast_expr_free(e);
  return r;
}

}  // namespace bbmm::compiler
