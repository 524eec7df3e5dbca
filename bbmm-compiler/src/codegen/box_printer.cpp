#include "codegen/box_printer.h"

#include <isl/aff.h>
#include <isl/ast.h>
#include <isl/ast_build.h>
#include <isl/set.h>

#include <cstdlib>
#include <stdexcept>

#include "poly/box_util.h"

namespace bbmm::compiler {
namespace {

// C text of "pa" assuming "context" (a parameter set; the parameters of both are aligned).
std::string c_expr(const isl::pw_aff& pa, const isl::set& context) {
  isl::set ctx = align(context, pa.space());
  isl::pw_aff p = align(pa, ctx.space());
  ctx = ctx.intersect(p.domain());
  isl_ast_build* b = isl_ast_build_from_context(ctx.release());
  isl_ast_expr* e = isl_ast_build_expr_from_pw_aff(b, p.release());
  isl_ast_build_free(b);
  if (!e) throw std::logic_error("box printer: cannot build a C expression");
  char* c = isl_ast_expr_to_C_str(e);
  std::string r = c ? c : "";
  free(c);
  isl_ast_expr_free(e);
  return r;
}

// C text of the condition "guard" assuming "context": "1" when it always holds there, "0"
// when it never does.
std::string c_cond(const isl::set& guard, const isl::set& context) {
  isl::set ctx = align(context, guard.space());
  isl::set g = align(guard, ctx.space());
  if (ctx.is_subset(g)) return "1";
  if (ctx.intersect(g).is_empty()) return "0";
  isl_ast_build* b = isl_ast_build_from_context(ctx.release());
  isl_ast_expr* e = isl_ast_build_expr_from_set(b, g.release());
  isl_ast_build_free(b);
  if (!e) throw std::logic_error("box printer: cannot build a C condition");
  char* c = isl_ast_expr_to_C_str(e);
  std::string r = c ? c : "";
  free(c);
  isl_ast_expr_free(e);
  return r;
}

// "pa" + 1: the exclusive bound of an inclusive maximum.
isl::pw_aff plus_one(const isl::pw_aff& pa) {
  return isl::manage(isl_pw_aff_add_constant_val(pa.copy(), isl_val_one(pa.ctx().get())));
}

// "context" restricted to "guard" (both parameter sets, aligned).
isl::set where(const isl::set& context, const isl::set& guard) {
  return align(context, guard.space()).intersect(align(guard, context.space()));
}

}  // namespace

BoxText box_c_text(const TileBox& box) {
  BoxText t;
  // The bounds need to be valid only where the box is nonempty.
  const isl::set bounds_context = where(box.context, box.guard);
  for (const TileBoxDim& d : box.dims) {
    t.lo.push_back(c_expr(d.min, bounds_context));
    t.hi.push_back(c_expr(plus_one(d.max), bounds_context));
  }
  t.guard = c_cond(box.guard, box.context);
  return t;
}

RowsText rows_c_text(const RowEnumeration& rows) {
  RowsText t;
  t.rows = box_c_text(rows.rows);
  t.seg_guard = c_cond(rows.seg_guard, rows.seg_context);
  const isl::set bounds_context = where(rows.seg_context, rows.seg_guard);
  t.seg_lo = c_expr(rows.seg_min, bounds_context);
  t.seg_hi = c_expr(plus_one(rows.seg_max), bounds_context);
  return t;
}

RangeText partition_range_c_text(const PartitionDim& dim) {
  const isl::set nonempty = dim.range_min.domain();
  return RangeText{c_expr(dim.range_min, nonempty), c_expr(plus_one(dim.range_max), nonempty)};
}

}  // namespace bbmm::compiler
