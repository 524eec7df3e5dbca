#include "poly/isl_util.h"

#include <isl/map.h>

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
