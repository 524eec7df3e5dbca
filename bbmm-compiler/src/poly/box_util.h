#pragma once
// Helpers shared by the partition, boxes and flow-out passes: the parameter space of a tile
// (scop parameters, serial iterators, tile parameters), boxes of parametric sets, and
// evaluation at concrete values.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "poly/boxes.h"

namespace bbmm::compiler {

// "x" with its parameters aligned to (extended by) those of "model".
isl::set align(const isl::set& x, const isl::space& model);
isl::pw_aff align(const isl::pw_aff& x, const isl::space& model);
isl::space align(const isl::space& x, const isl::space& model);

// "s" with the parameter "name" added at the end (if missing).
isl::set add_param(isl::set s, const std::string& name);
isl::map add_param(isl::map m, const std::string& name);

// A parameter set "lo <= x" style helpers over pw_affs on a parameter domain.
isl::set pw_le_set(const isl::pw_aff& a, const isl::pw_aff& b);

// The bounding box of "s" (a set of array elements over parameters) for tiles in "context"
// (a parameter set). The box's set is the exact hull.
TileBox make_box(const isl::set& s, const isl::set& context);

// While one lives on this thread, make_box remembers the box of every set it computed, by
// the set's text, and gives an equal set's box again (with the call's context) instead of
// its 2 parametric optima per dimension: the boxes of one scop ask for the same sets many
// times (adi at LARGE: 106 calls, 37 distinct sets). The memo holds isl objects: it must
// end before their isl context does (compute_boxes and compute_flow_out scope it). Nested
// scopes share the outermost memo.
class MakeBoxMemo {
 public:
  MakeBoxMemo();
  ~MakeBoxMemo();
  MakeBoxMemo(const MakeBoxMemo&) = delete;
  MakeBoxMemo& operator=(const MakeBoxMemo&) = delete;

  // The active memo of this thread, or null.
  static MakeBoxMemo* active();
  const TileBox* find(const std::string& key) const;
  void remember(std::string key, const TileBox& box);

 private:
  bool owner_;
  std::map<std::string, TileBox> boxes_;
};

// Whether "a" and "b" have the same bounds: per dimension, their minima (maxima) are one
// affine expression once each is simplified under its box's context and guard (isl_gist).
// Then the union of their sets is a box wherever either is nonempty (their hull is exact).
bool same_bounds(const TileBox& a, const TileBox& b);

// The basic sets of "s", in isl's order.
std::vector<isl::basic_set> basic_sets(const isl::set& s);

// "s" as a per-row enumeration (rank >= 2) for tiles in "context", or nullopt when some row
// is not one interval.
std::optional<RowEnumeration> make_rows(const isl::set& s, const isl::set& context);

// The set { x : min_d <= x_d <= max_d } in the space of "like" (a set space).
isl::set box_set_from_bounds(const isl::space& set_space, const std::vector<isl::pw_aff>& mins,
                             const std::vector<isl::pw_aff>& maxs);

// Values of named parameters.
using Values = std::map<std::string, int64_t>;

// "pa" at "v" (every parameter of "pa" must be in "v"); nullopt outside its domain.
std::optional<int64_t> eval(const isl::pw_aff& pa, const Values& v);
bool eval_cond(const isl::set& params, const Values& v);

// A concrete half-open box; empty when some lo >= hi.
struct CBox {
  std::vector<int64_t> lo, hi;
  bool empty() const;
  int64_t volume() const;
};
std::optional<CBox> eval_box(const TileBox& b, const Values& v);  // nullopt: guard false
CBox hull(const CBox& a, const CBox& b);
int64_t union_volume(const std::vector<CBox>& boxes);

// "s" with every parameter fixed to its value in "v" (all must be there; throws).
isl::set fix_params(const isl::set& s, const Values& v);

// The number of points of "s" with its parameters fixed to "v".
int64_t count_points(const isl::set& s, const Values& v);

}  // namespace bbmm::compiler
