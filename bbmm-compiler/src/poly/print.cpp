#include "poly/print.h"

#include <algorithm>
#include <map>

namespace bbmm::compiler {
namespace {

std::string base_name(const std::string& path) {
  size_t s = path.find_last_of('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

std::string where_text(Decl::Where w) {
  switch (w) {
    case Decl::Where::kGlobal: return "global";
    case Decl::Where::kParam: return "function parameter";
    case Decl::Where::kLocal: return "local";
    case Decl::Where::kScop: return "declared in the scop";
  }
  return "";
}

std::string at(const SourceLoc& l) { return std::to_string(l.line) + ":" + std::to_string(l.col); }

void header(std::ostream& os, const Scop& s) {
  os << "scop " << s.index << " in function " << (s.function.empty() ? "?" : s.function) << " ("
     << base_name(s.file) << ":" << s.begin_loc.line << "-" << s.end_loc.line << ", bytes "
     << s.begin_byte << ".." << s.end_byte << ")\n";
  os << "  parameters: [";
  for (size_t i = 0; i < s.params.size(); ++i) os << (i ? ", " : "") << s.params[i];
  os << "]\n";
}

std::string loop_name(const Scop& s, int l) {
  return "L" + std::to_string(l) + " " + s.loops[l].iterator;
}

// Untagged dependences of one kind, merged per array.
void print_dep_kind(std::ostream& os, const Scop& s, const char* title, const isl::union_map& deps) {
  std::map<std::string, isl::union_map> per_array;
  for (const isl::map& m : sorted_maps(deps)) {
    int src = s.access_index_of_tag(tagged_ref(m.domain().space()));
    if (src < 0) continue;
    const std::string& a = s.arrays[s.accesses[src].array].name;
    isl::map u = untag(m);
    auto it = per_array.find(a);
    if (it == per_array.end()) per_array.emplace(a, isl::union_map(u));
    else it->second = it->second.unite(isl::union_map(u));
  }
  os << "  " << title << ":";
  if (per_array.empty()) os << " none";
  os << "\n";
  for (auto& [a, u] : per_array)
    for (const isl::map& m : sorted_maps(u.coalesce())) os << "    " << a << ": " << str(m) << "\n";
}

}  // namespace

void print_model(std::ostream& os, const Scop& s) {
  header(os, s);
  os << "  arrays:\n";
  for (const ArrayInfo& a : s.arrays) {
    os << "    " << a.name << ": " << a.elem_type;
    if (a.is_scalar) {
      os << " scalar";
    } else {
      for (const std::string& e : a.extent_text) os << "[" << e << "]";
    }
    os << ", " << a.elem_size << "-byte elements, " << where_text(a.where);
    if (a.c_name != a.name) os << " (C name " << a.c_name << ")";
    os << ";";
    if (a.read) os << " read";
    if (a.written) os << " written";
    if (a.live_in) os << " live-in";
    if (a.live_out) os << " live-out";
    os << "\n";
    if (a.is_scalar) continue;  // a promoted scalar's extent {1} is implicit
    for (size_t k = 0; k < a.extents.size(); ++k) os << "      extent " << k << ": " << str(a.extents[k]) << "\n";
  }
  os << "  loops:\n";
  for (const Loop& L : s.loops) {
    os << "    " << loop_name(s, L.id) << " at " << at(L.loc) << ": depth " << L.depth << ", step " << L.step;
    if (L.parent >= 0) os << ", inside L" << L.parent;
    if (L.asserted_parallel) os << ", asserted parallel at " << at(L.pragma_loc);
    os << "\n";
  }
  os << "  statements:\n";
  for (const Statement& st : s.statements) {
    os << "    " << st.name << " at " << at(st.loc) << ": " << st.text << "\n";
    os << "      domain: " << str(st.domain) << "\n";
    os << "      schedule: " << str(st.schedule) << "\n";
    for (int ai : st.accesses) {
      const Access& a = s.accesses[ai];
      os << "      " << (a.kind == AccessKind::kWrite ? "write" : "read") << " " << a.tag() << " "
         << a.text << " at " << at(a.loc) << ": " << str(a.relation) << "\n";
    }
  }
}

void print_deps(std::ostream& os, const Scop& s) {
  header(os, s);
  print_dep_kind(os, s, "RAW (value-based flow)", s.deps.raw);
  print_dep_kind(os, s, "WAR (anti)", s.deps.war);
  print_dep_kind(os, s, "WAW (output)", s.deps.waw);
  bool asserted = false;
  for (const Loop& L : s.loops) asserted = asserted || L.asserted_parallel;
  if (asserted) print_dep_kind(os, s, "RAW with asserted loops unordered", s.deps.raw_asserted);
  os << "  live-in:";
  bool any = false;
  for (const ArrayInfo& a : s.arrays)
    if (a.live_in) {
      os << " " << a.name;
      any = true;
    }
  os << (any ? "" : " none") << "\n  live-out:";
  any = false;
  for (const ArrayInfo& a : s.arrays)
    if (a.live_out) {
      os << " " << a.name;
      any = true;
    }
  os << (any ? "" : " none") << "\n";
  std::vector<std::string> promoted;
  for (const ArrayInfo& a : s.arrays)
    if (a.promoted) promoted.push_back(a.name);
  if (!promoted.empty()) {
    os << "  scalars in memory (one-element arrays):";
    for (const std::string& n : promoted) os << " " << n;
    os << "\n";
  }
  os << "  loops:\n";
  for (const Loop& L : s.loops) {
    const LoopVerdict& v = L.verdict;
    os << "    " << loop_name(s, L.id) << " at " << at(L.loc) << ": ";
    if (L.asserted_parallel) {
      os << "parallel (asserted by '#pragma bbmm parallel' at " << at(L.pragma_loc) << ")";
      if (v.carries) os << "; the exact analysis finds carried dependences";
    } else {
      os << (v.parallel ? "parallel" : "serial");
    }
    os << "\n";
    for (const std::string& r : v.reasons) os << "      carries " << r << "\n";
    for (const std::string& b : v.blocking_scalars)
      os << "      scalar '" << b << "' cannot be privatised and makes the loop serial\n";
    for (const std::string& p : v.privatised) {
      const bool scalar = std::any_of(s.arrays.begin(), s.arrays.end(), [&](const ArrayInfo& a) {
        return a.name == p && a.is_scalar;
      });
      os << "      privatised " << (scalar ? "scalar" : "array") << " '" << p << "'\n";
    }
  }
  os << "  phases:\n";
  for (size_t i = 0; i < s.phases.size(); ++i) {
    const Phase& p = s.phases[i];
    os << "    phase " << i << ": serial loops [";
    for (size_t k = 0; k < p.serial_loops.size(); ++k) os << (k ? ", " : "") << loop_name(s, p.serial_loops[k]);
    os << "], ";
    if (p.parallel_loop >= 0) os << "parallel loop " << loop_name(s, p.parallel_loop);
    else os << "no parallel loop";
    os << ", statements";
    for (int st : p.statements) os << " " << s.statements[st].name;
    for (const bool scalars : {true, false}) {
      bool first = true;
      for (int a : p.private_scalars) {
        if (s.arrays[a].is_scalar != scalars) continue;
        if (first) os << (scalars ? ", private scalars" : ", private arrays");
        first = false;
        os << " " << s.arrays[a].name;
        for (const CopyOut& c : p.copy_outs) {
          if (s.accesses[c.access].array == a) {
            os << (scalars ? " (last value copied out)" : " (last values copied out)");
            break;
          }
        }
      }
    }
    os << "\n";
  }
}

}  // namespace bbmm::compiler
