#include "poly/isl_util.h"

#include <isl/aff.h>
#include <isl/local_space.h>
#include <isl/map.h>
#include <isl/space.h>

#include <algorithm>
#include <isl/options.h>

namespace bbmm::compiler {

IslContext::IslContext() : ctx_(isl_ctx_alloc()) {
  isl_options_set_on_error(ctx_, ISL_ON_ERROR_CONTINUE);
}

IslContext::~IslContext() { isl_ctx_free(ctx_); }

void IslContext::set_max_operations(unsigned long n) { isl_ctx_set_max_operations(ctx_, n); }
void IslContext::reset_operations() { isl_ctx_reset_operations(ctx_); }

isl::space make_set_space(isl::ctx ctx, const std::vector<std::string>& params,
                          const std::string& tuple, const std::vector<std::string>& dims) {
  isl_space* sp = isl_space_set_alloc(ctx.get(), params.size(), dims.size());
  for (size_t i = 0; i < params.size(); ++i)
    sp = isl_space_set_dim_id(sp, isl_dim_param, i, isl_id_alloc(ctx.get(), params[i].c_str(), nullptr));
  for (size_t i = 0; i < dims.size(); ++i)
    sp = isl_space_set_dim_name(sp, isl_dim_set, i, dims[i].c_str());
  if (!tuple.empty()) sp = isl_space_set_tuple_name(sp, isl_dim_set, tuple.c_str());
  return isl::manage(sp);
}

isl::map matrix_map(const isl::set& dom, const std::vector<std::vector<long>>& m,
                    const std::vector<std::string>& names) {
  isl_space* sp = isl_set_get_space(dom.get());
  isl_local_space* ls = isl_local_space_from_space(isl_space_copy(sp));
  isl_space* out = isl_space_add_dims(isl_space_drop_dims(isl_space_copy(sp), isl_dim_set, 0,
                                                          isl_space_dim(sp, isl_dim_set)),
                                      isl_dim_set, static_cast<unsigned>(m.size()));
  if (isl_space_has_tuple_id(sp, isl_dim_set) == isl_bool_true)
    out = isl_space_set_tuple_id(out, isl_dim_set, isl_space_get_tuple_id(sp, isl_dim_set));
  isl_multi_aff* ma = isl_multi_aff_zero(isl_space_map_from_domain_and_range(sp, out));
  for (size_t d = 0; d < m.size(); ++d) {
    isl_aff* a = isl_aff_zero_on_domain(isl_local_space_copy(ls));
    for (size_t k = 0; k < m[d].size(); ++k)
      a = isl_aff_set_coefficient_si(a, isl_dim_in, static_cast<int>(k), static_cast<int>(m[d][k]));
    ma = isl_multi_aff_set_aff(ma, static_cast<int>(d), a);
  }
  isl_local_space_free(ls);
  isl_map* r = isl_map_from_multi_aff(ma);
  for (size_t d = 0; d < names.size(); ++d)
    r = isl_map_set_dim_name(r, isl_dim_out, static_cast<int>(d), names[d].c_str());
  return isl::manage(r);
}

std::string str(const isl::set& s) {
  char* c = isl_set_to_str(s.get());
  std::string r = c ? c : "";
  free(c);
  return r;
}
std::string str(const isl::map& m) {
  char* c = isl_map_to_str(m.get());
  std::string r = c ? c : "";
  free(c);
  return r;
}
std::string str(const isl::pw_aff& a) {
  char* c = isl_pw_aff_to_str(a.get());
  std::string r = c ? c : "";
  free(c);
  return r;
}

std::vector<isl::map> sorted_maps(const isl::union_map& umap) {
  std::vector<std::pair<std::string, isl::map>> v;
  isl::map_list list = umap.map_list();
  for (unsigned i = 0; i < list.size(); ++i) {
    isl::map m = list.at(i);
    v.emplace_back(str(m), m);
  }
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<isl::map> out;
  for (auto& p : v) out.push_back(p.second);
  return out;
}

std::vector<isl::set> sorted_sets(const isl::union_set& uset) {
  std::vector<std::pair<std::string, isl::set>> v;
  isl::set_list list = uset.set_list();
  for (unsigned i = 0; i < list.size(); ++i) {
    isl::set s = list.at(i);
    v.emplace_back(str(s), s);
  }
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<isl::set> out;
  for (auto& p : v) out.push_back(p.second);
  return out;
}

std::string tagged_statement(const isl::space& sp) {
  isl_space* u = isl_space_unwrap(isl_space_copy(sp.get()));
  const char* n = isl_space_get_tuple_name(u, isl_dim_in);
  std::string r = n ? n : "";
  isl_space_free(u);
  return r;
}

std::string tagged_ref(const isl::space& sp) {
  isl_space* u = isl_space_unwrap(isl_space_copy(sp.get()));
  const char* n = isl_space_get_tuple_name(u, isl_dim_out);
  std::string r = n ? n : "";
  isl_space_free(u);
  return r;
}

isl::map untag(const isl::map& m) {
  return isl::manage(isl_map_range_factor_domain(isl_map_domain_factor_domain(m.copy())));
}

}  // namespace bbmm::compiler
