#include "poly/boxes.h"

#include <isl/point.h>
#include <isl/set.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "poly/box_util.h"
#include "poly/flow_out.h"
#include "poly/partition.h"

namespace bbmm::compiler {

const char* box_access_name(BoxAccess a) {
  switch (a) {
    case BoxAccess::kRead: return "READ";
    case BoxAccess::kWrite: return "WRITE";
    case BoxAccess::kReadWrite: return "READ_WRITE";
  }
  return "?";
}

const char* write_strategy_name(WriteStrategy s) {
  switch (s) {
    case WriteStrategy::kExactBoxes: return "exact boxes";
    case WriteStrategy::kPerRow: return "per-row";
    case WriteStrategy::kWidened: return "widened to its hull";
    case WriteStrategy::kSingleDevice: return "single device";
  }
  return "?";
}

namespace {

constexpr int kMaxWriteBoxes = 4;

// "w" as a few disjoint boxes each equal to a piece of it, or nullopt.
std::optional<std::vector<TileBox>> exact_boxes(const isl::set& w, const isl::set& ctx) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    isl::set s = attempt == 0 ? w.coalesce() : isl::manage(isl_set_make_disjoint(w.copy()));
    std::vector<isl::basic_set> bs = basic_sets(s);
    if (bs.empty() || static_cast<int>(bs.size()) > kMaxWriteBoxes) continue;
    std::vector<TileBox> boxes;
    bool ok = true;
    for (const isl::basic_set& b : bs) {
      TileBox box = make_box(isl::set(b), ctx);
      if (!box.set.is_equal(isl::set(b))) {
        ok = false;
        break;
      }
      boxes.push_back(std::move(box));
    }
    for (size_t i = 0; ok && i < boxes.size(); ++i)
      for (size_t j = i + 1; ok && j < boxes.size(); ++j)
        ok = boxes[i].set.intersect(boxes[j].set).is_empty();
    if (ok) return boxes;
  }
  return std::nullopt;
}

// A write set declared piece by piece: boxes and rows of one interval, pairwise disjoint,
// their union the write set.
struct WritePieces {
  std::vector<TileBox> boxes;
  std::vector<RowEnumeration> rows;
};

// The write set "images" (one per write access) of an array whose union is neither a few
// boxes nor rows of one interval, declared one access at a time: each access's elements
// that no earlier access writes, as a few boxes or as rows of one interval (cholesky's
// phase writing a column, A[i][k], and the diagonal, A[i][i]). Nullopt when a piece is
// neither.
std::optional<WritePieces> write_pieces(const std::vector<isl::set>& images, const isl::set& ctx) {
  if (images.size() < 2) return std::nullopt;
  WritePieces out;
  isl::set done;
  for (const isl::set& im : images) {
    isl::set piece = (done.is_null() ? im : im.subtract(done)).coalesce();
    done = done.is_null() ? im : done.unite(im);
    if (piece.intersect_params(ctx).is_empty()) continue;
    if (auto b = exact_boxes(piece, ctx)) {
      for (TileBox& x : *b) out.boxes.push_back(std::move(x));
    } else if (auto r = make_rows(piece, ctx)) {
      out.rows.push_back(std::move(*r));
    } else {
      return std::nullopt;
    }
  }
  return out;
}

// The serial iterations that first_middle_last enumerates at most (a few milliseconds; lu's
// 4,960 at n = 32 are enumerated); beyond, it computes them.
constexpr size_t kMaxEnumeratedIterations = 8192;

// Appends the coordinates of the lexicographic minimum of "s" (bounded, nonempty, no
// parameters) to "out".
void append_lexmin(const isl::set& s, std::vector<int64_t>& out) {
  isl_point* pt = isl_set_sample_point(isl_set_lexmin(s.copy()));
  if (!pt || isl_point_is_void(pt)) {
    isl_point_free(pt);
    throw std::logic_error("boxes: no lexicographic minimum of the serial iterations");
  }
  for (unsigned i = 0; i < s.tuple_dim(); ++i) {
    isl_val* v = isl_point_get_coordinate_val(pt, isl_dim_set, i);
    out.push_back(isl_val_get_num_si(v));
    isl_val_free(v);
  }
  isl_point_free(pt);
}

// A point of "s" (bounded, nonempty, no parameters) near its lexicographic median: the middle
// value of the first dimension (the lower one of two), then recursively the middle of that
// slice, or the lexicographic minimum of the rest when the first dimension has an even number
// of values. For a box this is exactly the median; a hole in the slice moves to the next point.
std::vector<int64_t> middle_point(const isl::set& s) {
  std::vector<int64_t> out;
  if (s.tuple_dim() == 0) return out;
  const isl::set first = isl::manage(isl_set_project_out(s.copy(), isl_dim_set, 1, s.tuple_dim() - 1));
  std::vector<int64_t> b;
  append_lexmin(first, b);
  append_lexmin(first.lexmax(), b);
  const int64_t lo = b[0], hi = b[1], len = hi - lo + 1;
  const int64_t v = lo + (len % 2 == 0 ? len / 2 : (len - 1) / 2);
  isl::set slice = isl::manage(isl_set_fix_si(s.copy(), isl_dim_set, 0, v));
  if (len % 2 == 1 && !slice.is_empty()) {
    isl::set rest = isl::manage(isl_set_project_out(slice.release(), isl_dim_set, 0, 1));
    out.push_back(v);
    std::vector<int64_t> tail = middle_point(rest);
    out.insert(out.end(), tail.begin(), tail.end());
    return out;
  }
  isl::set from = isl::manage(isl_set_lower_bound_si(s.copy(), isl_dim_set, 0, v));
  append_lexmin(from, out);
  return out;
}

// The first, middle and last points of "s" (the serial iterations of a phase for the report's
// parameter values) in lexicographic order: exact by enumeration for up to
// kMaxEnumeratedIterations points, else lexmin, middle_point and lexmax (enumerating 32^5
// iterations of a 5-deep serial nest did not finish in a minute).
std::vector<std::vector<int64_t>> first_middle_last(const isl::set& s) {
  std::vector<std::vector<int64_t>> points;
  struct Acc {
    std::vector<std::vector<int64_t>>* pts;
    unsigned n;
  } acc{&points, s.tuple_dim()};
  const isl_stat r = isl_set_foreach_point(
      s.get(),
      [](isl_point* pt, void* user) -> isl_stat {
        Acc* a = static_cast<Acc*>(user);
        std::vector<int64_t> c;
        for (unsigned i = 0; i < a->n; ++i) {
          isl_val* v = isl_point_get_coordinate_val(pt, isl_dim_set, i);
          c.push_back(isl_val_get_num_si(v));
          isl_val_free(v);
        }
        isl_point_free(pt);
        a->pts->push_back(std::move(c));
        return a->pts->size() > kMaxEnumeratedIterations ? isl_stat_error : isl_stat_ok;
      },
      &acc);
  if (r == isl_stat_ok) {
    std::sort(points.begin(), points.end());
    if (points.size() > 3) points = {points.front(), points[points.size() / 2], points.back()};
    return points;
  }
  if (points.size() <= kMaxEnumeratedIterations) {
    // isl failed (out of operations): the caller's budget check reports it.
    throw std::logic_error("boxes: cannot enumerate the serial iterations");
  }
  points.clear();
  points.emplace_back();
  append_lexmin(s, points.back());
  points.push_back(middle_point(s));
  points.emplace_back();
  append_lexmin(s.lexmax(), points.back());
  return points;
}

// Representative values: the report's scop parameters, up to three serial iterations
// (first, middle, last) and the tiles of an even split of the partition range.
struct Samples {
  std::vector<Values> all;     // for the choice
  std::vector<Values> middle;  // the tiles at the middle serial iteration (report)
  std::vector<std::string> tile_text;
  Values serial_middle;
};

Samples make_samples(const Scop& scop, int p, const Partition& part, const TileFrame& frame,
                     const Values& params, int tiles) {
  Samples out;
  // Serial iterations where the phase has instances.
  isl::set ser;
  for (int s : scop.phases[p].statements) {
    isl::set d = tile_instances(scop.statements[s], TileFrame{frame.serial_names, {}, {}, {}}, false).params();
    ser = ser.is_null() ? d : ser.unite(d);
  }
  std::vector<std::vector<int64_t>> points;
  size_t ns = frame.serial_names.size();
  if (ns == 0) {
    points.push_back({});
  } else {
    isl_set* x = isl_set_from_params(ser.copy());
    for (const std::string& n : frame.serial_names) {
      int pos = isl_set_find_dim_by_name(x, isl_dim_param, n.c_str());
      isl_size nd = isl_set_dim(x, isl_dim_set);
      x = isl_set_move_dims(x, isl_dim_set, nd, isl_dim_param, pos, 1);
    }
    isl::set fixed = isl::manage(x);
    for (const auto& [name, v] : params) {
      int pos = isl_set_find_dim_by_name(fixed.get(), isl_dim_param, name.c_str());
      if (pos >= 0) fixed = isl::manage(isl_set_fix_si(fixed.release(), isl_dim_param, pos, v));
    }
    // Every parameter is fixed: dropping them leaves the serial iterations alone.
    isl_size np = isl_set_dim(fixed.get(), isl_dim_param);
    points = first_middle_last(isl::manage(isl_set_project_out(fixed.release(), isl_dim_param, 0, np)));
  }
  for (size_t si = 0; si < points.size(); ++si) {
    Values v = params;
    for (size_t i = 0; i < ns; ++i) v[frame.serial_names[i]] = points[si][i];
    bool middle = si == points.size() / 2;
    if (middle) out.serial_middle = v;
    if (part.dims.empty()) {
      out.all.push_back(v);
      if (middle) {
        out.middle.push_back(v);
        std::string text;
        for (size_t i = 0; i < ns; ++i) text += frame.serial_names[i] + "=" + std::to_string(points[si][i]) + " ";
        out.tile_text.push_back(text + "whole phase");
      }
      continue;
    }
    std::vector<std::vector<std::pair<int64_t, int64_t>>> splits;
    bool ok = true;
    for (const PartitionDim& d : part.dims) {
      auto mn = eval(d.range_min, v), mx = eval(d.range_max, v);
      if (!mn || !mx || *mx < *mn) {
        ok = false;
        break;
      }
      int64_t len = *mx - *mn + 1;
      std::vector<std::pair<int64_t, int64_t>> sp;
      for (int k = 0; k < tiles; ++k) {
        int64_t a = *mn + len * k / tiles, b = *mn + len * (k + 1) / tiles;
        if (a < b) sp.push_back({a, b});
      }
      splits.push_back(sp);
    }
    if (!ok) continue;
    std::vector<size_t> idx(splits.size(), 0);
    while (true) {
      Values t = v;
      std::string text;
      for (size_t i = 0; i < ns; ++i) text += frame.serial_names[i] + "=" + std::to_string(points[si][i]) + " ";
      for (size_t k = 0; k < splits.size(); ++k) {
        t[part.dims[k].lo_param] = splits[k][idx[k]].first;
        t[part.dims[k].hi_param] = splits[k][idx[k]].second;
        if (k > 0) text += ", ";
        text += scop.loops[part.dims[k].loops[0][0]].iterator + " in [" + std::to_string(splits[k][idx[k]].first) +
                ", " + std::to_string(splits[k][idx[k]].second) + ")";
      }
      out.all.push_back(t);
      if (middle) {
        out.middle.push_back(t);
        out.tile_text.push_back(text);
      }
      size_t k = splits.size();
      while (k > 0 && ++idx[k - 1] == splits[k - 1].size()) idx[--k] = 0;
      if (k == 0) break;
    }
  }
  return out;
}

struct AccessImage {
  int access;
  bool write;
  isl::set image;
  // Reads only: whether some element it reads in the tile holds a value from outside the
  // tile (not produced earlier by the same tile, in the kernel's sequential order). A read
  // of nothing but the tile's own results needs no read-in: its group may be WRITE.
  bool reads_outside = true;
};

// Does some instance in the tile of read access "r" see a value that the tile did not
// produce? The tile runs its instances in the original order, so the sequential
// value-based RAW decides; only writers of the same phase execution and tile count.
bool reads_from_outside(const Scop& scop, const std::vector<isl::map>& raw, const TileFrame& frame, int r,
                        const std::vector<int>& phase_of, int p) {
  const Access& rd = scop.accesses[r];
  isl::set readers = tile_instances(scop.statements[rd.statement], frame);
  isl::set inside = isl::manage(isl_set_empty(readers.space().release()));
  for (const isl::map& m : raw) {
    if (scop.access_index_of_tag(tagged_ref(m.range().space())) != r) continue;
    int src = scop.access_index_of_tag(tagged_ref(m.domain().space()));
    if (src < 0 || phase_of[scop.accesses[src].statement] != p) continue;
    isl::map inst = untag(m);
    inst = inst.intersect_domain(tile_instances(scop.statements[scop.accesses[src].statement], frame));
    inside = inside.unite(inst.intersect_range(readers).range());
  }
  return !readers.subtract(inside).is_empty();
}

std::vector<CBox> eval_all(const std::vector<TileBox>& boxes, const Values& v) {
  std::vector<CBox> out;
  for (const TileBox& b : boxes)
    if (auto c = eval_box(b, v)) out.push_back(*c);
  return out;
}

ArrayBoxes array_boxes(int a, const std::vector<AccessImage>& imgs, const isl::set& ctx,
                       const Samples& samples, const BoxOptions& opts, bool single_tile) {
  ArrayBoxes ab;
  ab.array = a;
  // isl objects are never null (isl::set's copy throws on null): empty until known.
  ab.write_set = isl::set::empty(imgs.front().image.space());
  ab.flow_out_set = ab.write_set;
  isl::set all, w;
  std::vector<isl::set> write_images;
  for (const AccessImage& im : imgs) {
    ab.accesses.push_back(im.access);
    ab.access_boxes.push_back(make_box(im.image, ctx));
    all = all.is_null() ? im.image : all.unite(im.image);
    if (im.write) {
      ab.written = true;
      w = w.is_null() ? im.image : w.unite(im.image);
      write_images.push_back(im.image);
    } else {
      ab.read = true;
    }
  }
  all = all.coalesce();
  // Writes.
  if (ab.written) {
    ab.write_set = w.coalesce();
    if (auto boxes = exact_boxes(ab.write_set, ctx)) {
      ab.write_strategy = WriteStrategy::kExactBoxes;
      ab.write_boxes = std::move(*boxes);
      ab.write_reason = "the write set is exactly " + std::to_string(ab.write_boxes.size()) + " box" +
                        (ab.write_boxes.size() == 1 ? "" : "es");
    } else if (auto rows = make_rows(ab.write_set, ctx)) {
      ab.write_strategy = WriteStrategy::kPerRow;
      ab.write_rows.push_back(std::move(*rows));
      ab.write_reason = "the write set is not a union of at most " + std::to_string(kMaxWriteBoxes) +
                        " boxes, but each row of it is one interval";
    } else if (auto pieces = write_pieces(write_images, ctx)) {
      ab.write_strategy = WriteStrategy::kPerRow;
      ab.write_boxes = std::move(pieces->boxes);
      ab.write_rows = std::move(pieces->rows);
      ab.write_reason = "the write set is neither a few boxes nor rows of one interval, but taken one access at a time it is " +
                        std::to_string(ab.write_boxes.size()) + " box" + (ab.write_boxes.size() == 1 ? "" : "es") +
                        " and " + std::to_string(ab.write_rows.size()) + " row enumeration" +
                        (ab.write_rows.size() == 1 ? "" : "s");
    } else {
      ab.write_strategy = WriteStrategy::kSingleDevice;
      ab.write_reason = single_tile ? "the write set is neither a few boxes nor rows of intervals; the phase is one tile on one device"
                                    : "the write set is neither a few boxes nor rows of intervals";
    }
  }
  // Groups: start with one box per access, merge two while the hull of both wastes at most
  // convex_waste_limit of their union (summed over the samples).
  std::vector<std::vector<size_t>> groups;
  std::vector<isl::set> gsets;
  std::vector<TileBox> gboxes;
  for (size_t i = 0; i < imgs.size(); ++i) {
    bool dup = false;
    for (size_t g = 0; g < groups.size() && !dup; ++g)
      if (gboxes[g].set.is_equal(ab.access_boxes[i].set)) {
        groups[g].push_back(i);
        gsets[g] = gsets[g].unite(imgs[i].image);
        dup = true;
      }
    if (dup) continue;
    groups.push_back({i});
    gsets.push_back(imgs[i].image);
    gboxes.push_back(ab.access_boxes[i]);
  }
  auto waste_ok = [&](const TileBox& x, const TileBox& y) {
    int64_t vh = 0, vu = 0;
    for (const Values& v : samples.all) {
      auto cx = eval_box(x, v), cy = eval_box(y, v);
      std::vector<CBox> both;
      if (cx) both.push_back(*cx);
      if (cy) both.push_back(*cy);
      vu += union_volume(both);
      if (cx && cy) vh += hull(*cx, *cy).volume();
      else if (!both.empty()) vh += both[0].volume();
    }
    return vh <= vu + static_cast<int64_t>(opts.convex_waste_limit * vu);
  };
  bool merged = true;
  while (merged && groups.size() > 1) {
    merged = false;
    for (size_t i = 0; i < groups.size() && !merged; ++i)
      for (size_t j = i + 1; j < groups.size() && !merged; ++j) {
        if (!waste_ok(gboxes[i], gboxes[j])) continue;
        groups[i].insert(groups[i].end(), groups[j].begin(), groups[j].end());
        gsets[i] = gsets[i].unite(gsets[j]).coalesce();
        gboxes[i] = make_box(gsets[i], ctx);
        groups.erase(groups.begin() + j);
        gsets.erase(gsets.begin() + j);
        gboxes.erase(gboxes.begin() + j);
        merged = true;
      }
  }
  ab.choice = groups.size() == 1 ? BoxChoice::kConvex : BoxChoice::kDisjoint;
  TileBox convex = groups.size() == 1 ? gboxes[0] : make_box(all, ctx);
  for (const Values& v : samples.all) {
    if (auto c = eval_box(convex, v)) ab.convex_volume += c->volume();
    ab.disjoint_volume += union_volume(eval_all(gboxes, v));
    ab.exact_volume += count_points(all, v);
  }
  auto pct = [](int64_t covered, int64_t exact) {
    if (exact == 0) return std::string("0%");
    std::ostringstream s;
    s.setf(std::ios::fixed);
    s.precision(1);
    s << 100.0 * (covered - exact) / exact << "%";
    return s.str();
  };
  ab.choice_reason = std::string(ab.choice == BoxChoice::kConvex ? "convex" : "disjoint") +
                     ": hull wastes " + pct(ab.convex_volume, ab.exact_volume) + ", " +
                     std::to_string(groups.size()) + " box" + (groups.size() == 1 ? "" : "es") + " waste " +
                     pct(ab.disjoint_volume, ab.exact_volume);
  for (size_t g = 0; g < groups.size(); ++g) {
    bool r = false, wr = false;
    isl::set wg;
    for (size_t i : groups[g]) {
      if (imgs[i].write) {
        wr = true;
        wg = wg.is_null() ? imgs[i].image : wg.unite(imgs[i].image);
      } else {
        r = r || imgs[i].reads_outside;
      }
    }
    if (single_tile && wr && r) {
      // A phase that runs as one tile reads what other devices may have written since the
      // last synchronisation (earlier phases' tiles): only the hull of what it writes is
      // READ_WRITE, the rest of the group's box READ, so that checking mode does not take
      // the elements it only reads for overlapping writes (the runtime places the two
      // overlapping requests as one).
      TileBox wbox = make_box(wg.coalesce(), ctx);
      if (!wbox.set.is_equal(gboxes[g].set)) {
        ab.required.push_back(gboxes[g]);
        ab.required_mode.push_back(BoxAccess::kRead);
        ab.required.push_back(std::move(wbox));
        ab.required_mode.push_back(BoxAccess::kReadWrite);
        continue;
      }
    }
    BoxAccess mode = BoxAccess::kRead;
    if (wr) {
      bool full = ab.write_strategy == WriteStrategy::kExactBoxes && !r && gboxes[g].set.is_subset(ab.write_set);
      mode = full ? BoxAccess::kWrite : BoxAccess::kReadWrite;
    }
    ab.required.push_back(gboxes[g]);
    ab.required_mode.push_back(mode);
  }
  return ab;
}

// "set" with each tile parameter of "part" renamed to <name>_other: the same set for
// another tile of the partition.
isl::set for_other_tile(const isl::set& set, const Partition& part) {
  isl_set* s = set.copy();
  for (const PartitionDim& d : part.dims) {
    for (const std::string& name : {d.lo_param, d.hi_param}) {
      const int pos = isl_set_find_dim_by_name(s, isl_dim_param, name.c_str());
      if (pos >= 0) s = isl_set_set_dim_name(s, isl_dim_param, pos, (name + "_other").c_str());
    }
  }
  return isl::manage(s);
}

// The row enumerations of "ab" (kPerRow) with at most two elements per row on average at
// the report's tiles (a diagonal: cholesky's A[i][i]) declared as their hulls instead
// ("write_hulls", READ_WRITE) where "exclusive" allows it (no other tile touches the hull,
// two tiles' hulls are disjoint): one box per row would cost libbbmm a box per element
// written, while the hull's other elements only come along once, read in (a diagonal's
// hull is the square of the tile's rows, which the tile's device mostly holds anyway).
template <typename Exclusive>
void widen_thin_rows(const Samples& samples, const isl::set& ctx, const Exclusive& exclusive,
                     ArrayBoxes& ab) {
  if (ab.write_strategy != WriteStrategy::kPerRow) return;
  std::vector<RowEnumeration> keep;
  for (const RowEnumeration& r : ab.write_rows) {
    const int rank = static_cast<int>(isl_set_dim(r.exact.get(), isl_dim_set));
    const isl::set rows = isl::manage(isl_set_project_out(r.exact.copy(), isl_dim_set, rank - 1, 1));
    int64_t points = 0, row_count = 0;
    for (const Values& v : samples.middle) {
      points += count_points(r.exact, v);
      row_count += count_points(rows, v);
    }
    TileBox hull = make_box(r.exact, ctx);
    if (points > 0 && points <= 2 * row_count && exclusive(hull)) {
      ab.write_hulls.push_back(std::move(hull));
    } else {
      keep.push_back(r);
    }
  }
  if (keep.size() == ab.write_rows.size()) return;
  ab.write_reason += "; " + std::to_string(ab.write_rows.size() - keep.size()) +
                     " row enumeration(s) of at most two elements per row declared as their hulls, which no other tile of the phase touches";
  ab.write_rows = std::move(keep);
}

// Per-row writes of "ab" (phase "p", tile frame "f" of partition "part", tile context
// "ctx") declared as the hull of the write set instead: one READ_WRITE box rather than a box
// per row, since libbbmm's cost grows with the boxes a tile requires (cholesky at LARGE:
// 1,000 rows per tile, 6 million boxes, 11.8 s inside libbbmm against 1.2 s for the whole
// original program). The elements of the hull a tile does not write keep their values (it
// reads them in), so this is exact as long as no other tile of the phase touches them
// concurrently: the hulls of two tiles of the phase are disjoint, and no instance of the
// phase outside the tile, at the same serial iteration, reads or writes an element of the
// hull. It moves the hull's other elements too, so it is taken only when the hull is at most
// twice the write set at the report's tiles.
void widen_writes(const Scop& scop, int p, const Partition& part, const TileFrame& f,
                  const isl::set& ctx, const Samples& samples, ArrayBoxes& ab) {
  // What other tiles of the phase touch at this serial iteration.
  isl::set others = isl::set::empty(ab.write_set.space());
  for (int st : scop.phases[p].statements) {
    const Statement& stmt = scop.statements[st];
    const isl::set outside = tile_instances(stmt, f, false).subtract(tile_instances(stmt, f));
    for (int a : stmt.accesses) {
      if (scop.accesses[a].array != ab.array || !scop.in_memory(a)) continue;
      others = others.unite(outside.apply(scop.memory_relation(a)));
    }
  }
  // Whether "hull" may stand for the elements it covers: no other tile touches it, and two
  // tiles' hulls are disjoint (tiles differ in some split dimension, where one ends before
  // the other).
  auto exclusive = [&](const TileBox& hull) {
    if (!hull.set.intersect(others).intersect_params(ctx).is_empty()) return false;
    const isl::set both = hull.set.intersect(for_other_tile(hull.set, part))
                              .intersect_params(ctx)
                              .intersect_params(for_other_tile(ctx, part));
    for (const PartitionDim& d : part.dims) {
      const isl::set before(both.ctx(), "[" + d.hi_param + ", " + d.lo_param + "_other] -> { : " +
                                            d.hi_param + " <= " + d.lo_param + "_other }");
      if (!both.intersect_params(before).is_empty()) return false;
    }
    return true;
  };
  TileBox hull = make_box(ab.write_set, ctx);
  if (!exclusive(hull)) {
    widen_thin_rows(samples, ctx, exclusive, ab);
    return;
  }
  int64_t hull_points = 0, write_points = 0;
  for (const Values& v : samples.middle) {
    hull_points += count_points(hull.set, v);
    write_points += count_points(ab.write_set, v);
  }
  if (hull_points > 2 * write_points) {
    widen_thin_rows(samples, ctx, exclusive, ab);
    return;
  }
  ab.write_strategy = WriteStrategy::kWidened;
  ab.write_reason += "; declared as its hull (" + std::to_string(hull_points) + " elements for " +
                     std::to_string(write_points) + " written at the report's tiles), which no other tile of the phase touches";
  ab.write_rows.clear();
  ab.write_boxes = {std::move(hull)};
}

}  // namespace

ScopBoxes compute_boxes(const Scop& scop, const BoxOptions& opts) {
  MakeBoxMemo memo;  // the scop's boxes ask for the same sets many times
  ScopBoxes out;
  for (const std::string& p : scop.params) {
    auto it = opts.params.find(p);
    out.params[p] = it == opts.params.end() ? 32 : it->second;
  }
  out.tiles = opts.report_tiles;
  size_t np = scop.phases.size();
  std::vector<std::vector<std::vector<int>>> loops(np);
  std::vector<std::string> notes(np);
  std::vector<bool> rows_first(np, false);
  // A phase whose writes are neither boxes nor rows runs as one tile: the array's name.
  auto odd_writes = [&](size_t p, const std::vector<std::vector<int>>& split) -> std::string {
    TileFrame f = make_frame(scop, p, split);
    std::map<int, isl::set> writes;
    std::map<int, std::vector<isl::set>> images;  // per array, per write access
    for (int s : scop.phases[p].statements)
      for (int a : scop.statements[s].accesses) {
        const Access& acc = scop.accesses[a];
        if (acc.kind != AccessKind::kWrite || !scop.in_memory(a)) continue;
        isl::set img = tile_instances(scop.statements[s], f).apply(scop.memory_relation(a));
        images[acc.array].push_back(img);
        auto it = writes.find(acc.array);
        if (it == writes.end()) writes.emplace(acc.array, img);
        else it->second = it->second.unite(img);
      }
    isl::set uctx = isl::manage(isl_set_universe(isl_set_get_space(writes.empty() ? scop.context.get() : writes.begin()->second.get()))).params();
    for (auto& [a, w] : writes)
      if (!exact_boxes(w, uctx) && !make_rows(w.coalesce(), uctx) && !write_pieces(images[a], uctx))
        return scop.arrays[a].c_name;
    return "";
  };
  for (size_t p = 0; p < np; ++p) {
    if (opts.partition == PartitionMode::kAuto) {
      loops[p] = auto_partition_loops(scop, p, out.params, notes[p]);
      rows_first[p] = loops[p].size() == 2;
      // A 2-D split whose writes are not boxes falls back to the 1-D one.
      if (rows_first[p]) {
        if (odd_writes(p, loops[p]).empty()) continue;
        loops[p].pop_back();
        notes[p].clear();
        rows_first[p] = false;
      }
    } else {
      loops[p] = partition_loops(scop, p, opts.partition == PartitionMode::kTwoD, notes[p]);
    }
    if (loops[p].empty()) continue;
    const std::string odd = odd_writes(p, loops[p]);
    if (!odd.empty()) {
      notes[p] = "the writes of " + odd +
                 " are neither a few boxes nor rows of intervals: the phase runs as one tile on one device";
      loops[p].clear();
    }
  }
  out.partitions = group_partitions(scop, loops, notes, rows_first);
  std::vector<int> phase_of(scop.statements.size(), -1);
  for (size_t q = 0; q < np; ++q)
    for (int st : scop.phases[q].statements) phase_of[st] = static_cast<int>(q);
  const std::vector<isl::map> raw = sorted_maps(scop.deps.raw);  // for reads_from_outside
  const TilePlan plan = make_tile_plan(scop, out.partitions);
  for (size_t p = 0; p < np; ++p) {
    const Partition& part = out.partitions[plan.partition_of_phase[p]];
    PhaseBoxes pb;
    pb.phase = p;
    pb.partition = part.id;
    bool relax = false;
    pb.tile_domain_context = tile_context(scop, part, &relax);
    // Where the partition range has divisions, the tile's instances are taken under the
    // (relaxed) tile context: lo and hi then bound the split loop alone, and each box is a
    // single piece in them instead of one per residue of the wavefront (seidel-2d's
    // 2i + j: 0.25 s instead of 2.6 s to compile). Elsewhere the instances stay as they
    // are, so their boxes keep their pieces outside the context.
    const TileFrame& f = plan.frames[p];
    Samples samples = make_samples(scop, p, part, f, out.params, opts.report_tiles);
    std::map<int, std::vector<AccessImage>> by_array;
    for (int s : scop.phases[p].statements) {
      isl::set inst = tile_instances(scop.statements[s], f);
      if (relax) inst = inst.intersect_params(align(pb.tile_domain_context, inst.space()).params());
      for (int a : scop.statements[s].accesses) {
        const Access& acc = scop.accesses[a];
        // A private scalar's last value copied out: a write of s[0] by the last instances.
        for (const CopyOut& c : scop.phases[p].copy_outs) {
          if (c.access != a) continue;
          isl::set last =
              isl::manage(isl_set_align_params(c.last.copy(), inst.get_space().release()));
          by_array[acc.array].push_back(
              {a, true, inst.intersect(last).apply(scop.memory_relation(a)).coalesce(), false});
        }
        // Arrays and promoted scalars outside the phases that keep them private.
        if (!scop.in_memory(a)) continue;
        const bool write = acc.kind == AccessKind::kWrite;
        by_array[acc.array].push_back({a, write, inst.apply(scop.memory_relation(a)).coalesce(),
                                       !write && reads_from_outside(scop, raw, f, a, phase_of, static_cast<int>(p))});
      }
    }
    for (auto& [a, imgs] : by_array) {
      std::sort(imgs.begin(), imgs.end(), [](const AccessImage& x, const AccessImage& y) { return x.access < y.access; });
      ArrayBoxes ab = array_boxes(a, imgs, pb.tile_domain_context, samples, opts, part.dims.empty());
      if (ab.written && ab.write_strategy == WriteStrategy::kPerRow && opts.widen_writes) {
        widen_writes(scop, p, part, f, pb.tile_domain_context, samples, ab);
      }
      if (ab.written) compute_flow_out(scop, plan, p, pb.tile_domain_context, ab);
      if (ab.write_strategy == WriteStrategy::kSingleDevice && ab.written) pb.single_device = true;
      // Exactness at the middle serial iteration, per tile.
      isl::set all;
      for (const AccessImage& im : imgs) all = all.is_null() ? im.image : all.unite(im.image);
      for (size_t t = 0; t < samples.middle.size(); ++t) {
        ExactnessRow row;
        row.phase = p;
        row.tile = t;
        row.tile_text = samples.tile_text[t];
        row.array = scop.arrays[a].c_name;
        row.exact = count_points(all, samples.middle[t]);
        row.covered = union_volume(eval_all(ab.required, samples.middle[t]));
        out.exactness.push_back(row);
      }
      pb.arrays.push_back(std::move(ab));
    }
    out.phases.push_back(std::move(pb));
  }
  return out;
}

}  // namespace bbmm::compiler
