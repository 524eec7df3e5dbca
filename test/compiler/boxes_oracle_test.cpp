// bbmmc's boxes checked against brute-force executions (issue 6). For small concrete
// parameter values, the oracle runs the scop instance by instance (brute_force.h) and, for
// every execution of every phase (values of its serial loops) and every tile [lo, hi) the
// generated code could use (all sub-ranges of the partitioned range, per dimension),
// derives what the tile really touches. It then evaluates the C text that bbmmc emits
// (codegen/box_printer.h, evaluated by c_eval.h: guards, bounds, row enumerations, partition
// ranges) and checks:
// - every element the tile reads is in a required box, every element it writes is in one
//   with the WRITE bit, and every element whose value it reads from outside the tile (the
//   last writer in the original order is not one of its instances) is in one with the
//   READ bit;
// - every element of a WRITE box is written by the tile (the runtime reads nothing in);
// - the declared writes (exact boxes, pairwise disjoint, or rows) are exactly the
//   elements written, and bbmmc's isl write set is too;
// - flow-out: the oracle's flow-out (an element the tile writes whose value, by the
//   sequential semantics with asserted-parallel iterations unordered, is read later by an
//   instance outside the tile) is inside the flow-out boxes, which are inside the
//   written elements (except with the single-device strategy, ArrayBoxes::flow_out);
//   bbmmc's exact isl flow-out set equals the oracle's.
// "Outside the tile" is the contract of flow_out.h: a reader in another partition, or in
// the same partition with a partitioned iterator outside [lo, hi).
// Inputs: test/compiler/boxes/*.c and codegen/*.c, the samples' kernels, and random affine
// nests.

#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "brute_force.h"
#include "c_eval.h"
#include "codegen/box_printer.h"
#include "driver/pipeline.h"
#include "poly/box_util.h"
#include "poly/boxes.h"
#include "poly/partition.h"
#include "test_util.h"

namespace bbmm::compiler {
namespace {

using testing::c_eval;
using testing::Event;
using testing::Execution;
using testing::execute;
using testing::Instance;
using testing::random_program;

using Elem = std::vector<long>;
using ElemSet = std::set<Elem>;

struct Range {
  int64_t lo = 0, hi = 0;  // half-open
};

// A box from bbmmc's C text at "v"; nullopt when its guard is false.
std::optional<std::vector<Range>> text_box(const BoxText& b, const Values& v) {
  if (!c_eval(b.guard, v)) return std::nullopt;
  std::vector<Range> r;
  for (size_t d = 0; d < b.lo.size(); ++d) r.push_back({c_eval(b.lo[d], v), c_eval(b.hi[d], v)});
  return r;
}

bool contains(const std::vector<Range>& box, const Elem& e) {
  for (size_t d = 0; d < box.size(); ++d)
    if (e[d] < box[d].lo || e[d] >= box[d].hi) return false;
  return true;
}

// The elements of "box" (which the arrays of the tests keep small).
void add_elements(const std::vector<Range>& box, ElemSet& out, int64_t* count = nullptr) {
  Elem e(box.size());
  for (const Range& r : box)
    if (r.lo >= r.hi) return;
  int64_t volume = 1;
  for (const Range& r : box) volume *= r.hi - r.lo;
  ASSERT_LE(volume, 1 << 22) << "box too large for the oracle";
  if (count) *count += volume;
  for (size_t d = 0; d < box.size(); ++d) e[d] = box[d].lo;
  for (;;) {
    out.insert(e);
    size_t d = box.size();
    while (d > 0) {
      --d;
      if (++e[d] < box[d].hi) break;
      e[d] = box[d].lo;
      if (d == 0) return;
    }
    if (box.empty()) return;
  }
}

// The elements of a row enumeration from its C text.
void add_rows(const RowsText& r, const Values& v, ElemSet& out, int64_t* count) {
  auto rows = text_box(r.rows, v);
  if (!rows) return;
  ElemSet row_points;
  add_elements(*rows, row_points);
  for (const Elem& row : row_points) {
    Values w = v;
    for (size_t k = 0; k < row.size(); ++k) w["bbmm_r" + std::to_string(k)] = row[k];
    if (!c_eval(r.seg_guard, w)) continue;
    std::vector<Range> seg;
    for (long x : row) seg.push_back({x, x + 1});
    seg.push_back({c_eval(r.seg_lo, w), c_eval(r.seg_hi, w)});
    add_elements(seg, out, count);
  }
}

// The points of an isl set of array elements with its parameters fixed by name.
ElemSet isl_elements(const isl::set& s, const Values& v) {
  if (s.is_null()) return {};
  std::vector<Elem> pts = testing::points(fix_params(s, v));
  return ElemSet(pts.begin(), pts.end());
}

std::string show(const Elem& e) {
  std::ostringstream os;
  os << "[";
  for (size_t k = 0; k < e.size(); ++k) os << (k ? "][" : "") << e[k];
  os << "]";
  return os.str();
}

std::string show(const Values& v) {
  std::ostringstream os;
  for (auto& [k, x] : v) os << k << "=" << x << " ";
  return os.str();
}

std::string show_diff(const ElemSet& a, const ElemSet& b) {  // a \ b, a few
  std::ostringstream os;
  int n = 0;
  for (const Elem& e : a)
    if (!b.count(e) && n++ < 6) os << show(e) << " ";
  if (n > 6) os << "... (" << n << " in all)";
  return os.str();
}

struct Tally {
  int64_t tiles = 0;       // (execution, tile) pairs checked
  int64_t checks = 0;      // (execution, tile, array) triples
  int64_t touched = 0;     // elements touched, summed over the triples
  int64_t flow = 0;        // oracle flow-out elements, summed
  int64_t flow_boxes = 0;  // elements in the flow-out boxes (union per check), summed
  int64_t flow_extra = 0;  // elements in the flow-out boxes outside the flow-out, summed
  int64_t flow_tiles = 0;  // triples with a nonempty flow-out
  int64_t private_flows = 0;  // reads of private scalars checked
};

// Where each instance sits: its phase, serial values and partitioned coordinates.
struct Placement {
  int phase = -1;
  Elem serial;
  Elem coords;  // one per partition dimension (empty for an unsplit phase)
};

class BoxesOracle {
 public:
  BoxesOracle(const Scop& s, const ScopBoxes& bx, const Values& params, std::string what)
      : s_(s), bx_(bx), params_(params), what_(std::move(what)) {}

  void run(Tally& t) {
    isl_set* f = s_.context.copy();
    for (size_t k = 0; k < s_.params.size(); ++k) f = isl_set_fix_si(f, isl_dim_param, k, params_.at(s_.params[k]));
    run_ = execute(s_, isl::manage(f));
    place();
    link_readers();
    check_private_scalars(t);
    for (size_t p = 0; p < s_.phases.size() && !::testing::Test::HasFatalFailure(); ++p) check_phase(static_cast<int>(p), t);
  }

 private:
  int position_in(const Partition& part, int p) const {
    for (size_t k = 0; k < part.phases.size(); ++k)
      if (part.phases[k] == p) return static_cast<int>(k);
    return -1;
  }

  void place() {
    std::vector<int> phase_of(s_.statements.size(), -1);
    for (size_t q = 0; q < s_.phases.size(); ++q)
      for (int st : s_.phases[q].statements) phase_of[st] = static_cast<int>(q);
    for (const Instance& in : run_.inst) {
      Placement pl;
      pl.phase = phase_of[in.stmt];
      ASSERT_GE(pl.phase, 0) << what_ << ": statement " << s_.statements[in.stmt].name << " is in no phase";
      const Statement& st = s_.statements[in.stmt];
      const Phase& ph = s_.phases[pl.phase];
      for (size_t k = 0; k < ph.serial_loops.size(); ++k) {
        ASSERT_LT(k, st.loops.size());
        ASSERT_EQ(st.loops[k], ph.serial_loops[k]) << "serial loops are not a prefix of " << st.name << "'s loops";
        pl.serial.push_back(in.it[k]);
      }
      const Partition& part = bx_.partitions[bx_.phases[pl.phase].partition];
      int idx = position_in(part, pl.phase);
      ASSERT_GE(idx, 0);
      for (const PartitionDim& d : part.dims) {
        // The statement's coordinate: the iterator of the innermost of the dimension's split
        // loops (one per nest, or the outer split loop) enclosing it.
        int at = -1;
        for (size_t k = 0; k < st.loops.size(); ++k)
          if (std::find(d.loops[idx].begin(), d.loops[idx].end(), st.loops[k]) != d.loops[idx].end())
            at = static_cast<int>(k);
        ASSERT_GE(at, 0) << st.name << " is not inside its phase's split loops";
        pl.coords.push_back(in.it[at]);
      }
      placed_.push_back(pl);
    }
  }

  // A write is visible to a later read unless both are in one execution of an asserted
  // parallel loop, in different iterations of it (such iterations are unordered).
  bool visible(int w_inst, int r_inst) const {
    const Instance& a = run_.inst[w_inst];
    const Instance& b = run_.inst[r_inst];
    const Statement& sa = s_.statements[a.stmt];
    const Statement& sb = s_.statements[b.stmt];
    for (size_t k = 0; k < sa.loops.size() && k < sb.loops.size() && sa.loops[k] == sb.loops[k]; ++k)
      if (a.it[k] != b.it[k]) return !s_.loops[sa.loops[k]].asserted_parallel;
    return true;
  }

  // readers_[w]: the read events whose value the write event w produced (asserted-parallel
  // iterations unordered); seq_writer_[r]: the write event a read sees when the instances
  // run in the original order, as inside one tile's kernel (-1: a value from before).
  void link_readers() {
    readers_.assign(run_.ev.size(), {});
    seq_writer_.assign(run_.ev.size(), -1);
    std::map<std::pair<int, Elem>, std::vector<int>> writes;  // per element, in order
    for (size_t e = 0; e < run_.ev.size(); ++e) {
      const Event& ev = run_.ev[e];
      auto& list = writes[{ev.array, ev.elem}];
      if (ev.write) {
        list.push_back(static_cast<int>(e));
        continue;
      }
      if (!list.empty()) seq_writer_[e] = list.back();
      for (auto w = list.rbegin(); w != list.rend(); ++w)
        if (run_.ev[*w].inst != ev.inst && visible(run_.ev[*w].inst, ev.inst)) {
          readers_[*w].push_back(static_cast<int>(e));
          break;
        }
    }
  }

  // The serial iterators and, when the phase has one, the parallel loop's iterator of
  // instance "inst": a phase keeps a scalar private within one such iteration.
  Elem iteration(int inst) const {
    const Instance& in = run_.inst[inst];
    const Phase& ph = s_.phases[placed_[inst].phase];
    Elem r = placed_[inst].serial;
    const std::vector<int>& loops = s_.statements[in.stmt].loops;
    auto at = std::find(loops.begin(), loops.end(), ph.parallel_loop);
    if (ph.parallel_loop >= 0 && at != loops.end()) r.push_back(in.it[at - loops.begin()]);
    return r;
  }

  // The scalars a phase keeps private (poly/scalars.h), from the sequential trace: every
  // read of one in the phase sees a write of the same phase and iteration, and every value
  // written there is read only there. (A live-out scalar's last value written there must
  // reach the host: check_tile takes that write as a write of s[0].)
  void check_private_scalars(Tally& t) {
    last_write_.clear();
    for (size_t e = 0; e < run_.ev.size(); ++e) {
      const Event& ev = run_.ev[e];
      if (ev.write) last_write_[{ev.array, ev.elem}] = static_cast<int>(e);
      if (ev.write || seq_writer_[e] < 0) {
        if (!ev.write && s_.is_private(placed_[ev.inst].phase, ev.array)) {
          ADD_FAILURE() << what_ << ": " << s_.arrays[ev.array].c_name << " is private in phase "
                        << placed_[ev.inst].phase << " but a read there sees a value from before the scop";
        }
        continue;
      }
      const int w = run_.ev[seq_writer_[e]].inst, r = ev.inst;
      const bool wp = s_.is_private(placed_[w].phase, ev.array);
      const bool rp = s_.is_private(placed_[r].phase, ev.array);
      if (!wp && !rp) continue;
      ++t.private_flows;
      EXPECT_TRUE(placed_[w].phase == placed_[r].phase && iteration(w) == iteration(r))
          << what_ << ": " << s_.arrays[ev.array].c_name << " is private in phase "
          << (wp ? placed_[w].phase : placed_[r].phase) << " but flows from phase " << placed_[w].phase
          << " iteration " << show_elem(iteration(w)) << " to phase " << placed_[r].phase << " iteration "
          << show_elem(iteration(r));
    }
  }

  static std::string show_elem(const Elem& e) {
    std::string r = "(";
    for (size_t k = 0; k < e.size(); ++k) r += (k ? ", " : "") + std::to_string(e[k]);
    return r + ")";
  }

  bool inside(int inst, int p, const std::vector<Range>& tile) const {
    const Placement& pl = placed_[inst];
    for (size_t d = 0; d < tile.size(); ++d)
      if (pl.coords[d] < tile[d].lo || pl.coords[d] >= tile[d].hi) return false;
    (void)p;
    return true;
  }

  // Is the reader instance "r" outside the tile "tile" of phase p (flow_out.h)?
  bool outside(int r, int p, const std::vector<Range>& tile) const {
    int q = placed_[r].phase;
    if (bx_.phases[q].partition != bx_.phases[p].partition) return true;
    if (tile.empty()) return false;
    return !inside(r, q, tile);
  }

  void check_phase(int p, Tally& t) {
    const PhaseBoxes& pb = bx_.phases[p];
    const Partition& part = bx_.partitions[pb.partition];
    std::vector<std::string> names = serial_names(s_, s_.phases[p]);
    std::vector<RangeText> ranges;
    for (const PartitionDim& d : part.dims) ranges.push_back(partition_range_c_text(d));
    std::map<Elem, std::vector<int>> execs;
    for (size_t i = 0; i < placed_.size(); ++i)
      if (placed_[i].phase == p) execs[placed_[i].serial].push_back(static_cast<int>(i));
    for (auto& [serial, insts] : execs) {
      Values v = params_;
      for (size_t k = 0; k < names.size(); ++k) v[names[k]] = serial[k];
      // The tiles: every sub-range of the partitioned range per dimension.
      std::vector<std::vector<Range>> per_dim;
      for (size_t d = 0; d < part.dims.size(); ++d) {
        Range r{c_eval(ranges[d].lo, v), c_eval(ranges[d].hi, v)};
        for (int i : insts)
          ASSERT_TRUE(placed_[i].coords[d] >= r.lo && placed_[i].coords[d] < r.hi)
              << what_ << ": phase " << p << " instance outside its partition range [" << r.lo << ", " << r.hi
              << ") at " << show(v);
        std::vector<Range> choices;
        if (pb.single_device) {
          choices.push_back(r);
        } else {
          for (int64_t lo = r.lo; lo < r.hi; ++lo)
            for (int64_t hi = lo + 1; hi <= r.hi; ++hi) choices.push_back({lo, hi});
        }
        per_dim.push_back(choices);
      }
      std::vector<std::vector<Range>> tiles{{}};
      for (const std::vector<Range>& choices : per_dim) {
        std::vector<std::vector<Range>> next;
        for (const std::vector<Range>& prefix : tiles)
          for (const Range& c : choices) {
            next.push_back(prefix);
            next.back().push_back(c);
          }
        tiles = std::move(next);
      }
      hulls_.clear();
      for (const std::vector<Range>& tile : tiles) {
        Values vt = v;
        for (size_t d = 0; d < part.dims.size(); ++d) {
          vt[part.dims[d].lo_param] = tile[d].lo;
          vt[part.dims[d].hi_param] = tile[d].hi;
        }
        check_tile(p, insts, tile, vt, t);
        if (::testing::Test::HasFailure()) return;  // one counterexample is enough
      }
      // Widened writes: two tiles apart in some partitioned dimension have disjoint hulls.
      for (size_t i = 0; i < hulls_.size(); ++i)
        for (size_t j = i + 1; j < hulls_.size(); ++j) {
          const Hull& a = hulls_[i];
          const Hull& b = hulls_[j];
          bool apart = false, meet = a.array == b.array;
          for (size_t d = 0; d < a.tile.size(); ++d)
            apart = apart || a.tile[d].hi <= b.tile[d].lo || b.tile[d].hi <= a.tile[d].lo;
          for (size_t d = 0; d < a.box.size() && meet; ++d)
            meet = a.box[d].lo < b.box[d].hi && b.box[d].lo < a.box[d].hi;
          ASSERT_FALSE(apart && meet) << what_ << ": phase " << p << " at " << show(v) << " array "
                                      << s_.arrays[a.array].c_name << ": the widened hulls of two tiles overlap";
        }
    }
  }

  void check_tile(int p, const std::vector<int>& insts, const std::vector<Range>& tile, const Values& v, Tally& t) {
    const PhaseBoxes& pb = bx_.phases[p];
    std::set<int> mine;
    for (int i : insts)
      if (inside(i, p, tile)) mine.insert(i);
    std::map<int, ElemSet> reads, writes, flow, read_in;
    // What the phase's instances outside the tile touch at this serial iteration (the
    // other tiles, running at the same time).
    const std::set<int> same_step(insts.begin(), insts.end());
    std::map<int, ElemSet> others;
    for (const Event& ev : run_.ev) {
      // (Other tiles' private scalars and arrays are their own copies.)
      if (same_step.count(ev.inst) && !mine.count(ev.inst) && !s_.arrays[ev.array].is_scalar &&
          !s_.is_private(p, ev.array))
        others[ev.array].insert(ev.elem);
    }
    for (size_t e = 0; e < run_.ev.size(); ++e) {
      const Event& ev = run_.ev[e];
      if (!mine.count(ev.inst)) continue;
      // Scalars: read-only ones are arguments, private ones kernel locals; a promoted
      // scalar elsewhere is the one element s[0]. Private arrays are kernel locals too.
      // The last write of an element of a live-out scalar or array writes memory
      // wherever it is (a private one is copied out).
      const ArrayInfo& arr = s_.arrays[ev.array];
      const auto lw = last_write_.find({ev.array, ev.elem});
      const bool last_value = arr.live_out && lw != last_write_.end() &&
                              lw->second == static_cast<int>(e);
      const bool priv = s_.is_private(p, ev.array);
      if (arr.is_scalar && !last_value && (!arr.promoted || priv)) continue;
      if (!arr.is_scalar && priv && !last_value) continue;
      const Elem elem = arr.is_scalar ? Elem{0} : ev.elem;
      (ev.write ? writes : reads)[ev.array].insert(elem);
      // A read of a value the tile produced itself needs no read-in.
      if (!ev.write && (seq_writer_[e] < 0 || !mine.count(run_.ev[seq_writer_[e]].inst)))
        read_in[ev.array].insert(elem);
      if (ev.write)
        for (int r : readers_[e])
          if (outside(run_.ev[r].inst, p, tile)) flow[ev.array].insert(elem);
    }
    ++t.tiles;
    const std::string where = what_ + ": phase " + std::to_string(p) + " at " + show(v);
    std::set<int> covered_arrays;
    for (const ArrayBoxes& ab : pb.arrays) {
      covered_arrays.insert(ab.array);
      const std::string arr = where + "array " + s_.arrays[ab.array].c_name;
      const ElemSet& R = reads[ab.array];
      const ElemSet& W = writes[ab.array];
      const ElemSet& F = flow[ab.array];
      ++t.checks;
      t.touched += static_cast<int64_t>(R.size() + W.size());
      // Required boxes and their modes.
      std::vector<std::pair<std::vector<Range>, BoxAccess>> req;
      for (size_t k = 0; k < ab.required.size(); ++k)
        if (auto b = text_box(text(ab.required[k]), v)) req.push_back({*b, ab.required_mode[k]});
      auto covered = [&](const Elem& e, int bit) {
        for (auto& [b, mode] : req)
          if ((static_cast<int>(mode) & bit) && contains(b, e)) return true;
        return false;
      };
      for (const Elem& e : R) EXPECT_TRUE(covered(e, 3)) << arr << ": read " << show(e) << " is in no box";
      for (const Elem& e : read_in[ab.array])
        EXPECT_TRUE(covered(e, 1)) << arr << ": read " << show(e) << " (a value from outside the tile) is in no READ box";
      for (const Elem& e : W) EXPECT_TRUE(covered(e, 2)) << arr << ": write " << show(e) << " is in no WRITE box";
      for (auto& [b, mode] : req) {
        if (mode != BoxAccess::kWrite) continue;
        ElemSet in;
        add_elements(b, in);
        EXPECT_TRUE(std::includes(W.begin(), W.end(), in.begin(), in.end()))
            << arr << ": a WRITE box holds elements the tile does not write: " << show_diff(in, W);
      }
      // Declared writes.
      ElemSet widened_hull;
      if (!ab.written) {
        EXPECT_TRUE(W.empty()) << arr << ": written but not declared written";
      } else {
        EXPECT_EQ(isl_elements(ab.write_set, v), W) << arr << ": bbmmc's isl write set";
        ElemSet declared;
        int64_t sum = 0;
        switch (ab.write_strategy) {
          case WriteStrategy::kExactBoxes:
            for (const TileBox& b : ab.write_boxes)
              if (auto x = text_box(text(b), v)) add_elements(*x, declared, &sum);
            break;
          case WriteStrategy::kPerRow: {
            // Pieces one access at a time: rows, exact boxes, and hulls of thin rows (each
            // holds its piece, READ_WRITE; no other tile of the phase touches it; hulls of
            // two tiles are disjoint, check_phase).
            for (const RowEnumeration& r : ab.write_rows) add_rows(text(r), v, declared, &sum);
            for (const TileBox& b : ab.write_boxes)
              if (auto x = text_box(text(b), v)) add_elements(*x, declared, &sum);
            ElemSet hull;
            for (const TileBox& b : ab.write_hulls)
              if (auto x = text_box(text(b), v)) {
                add_elements(*x, hull);
                hulls_.push_back({tile, ab.array, *x});
              }
            ElemSet shared;
            for (const Elem& e : others[ab.array])
              if (hull.count(e)) shared.insert(e);
            EXPECT_TRUE(shared.empty()) << arr << " (per-row hulls): other tiles of the phase touch "
                                        << show_diff(shared, {}) << " of a hull";
            // What the hulls stand for: the writes no exact piece declares.
            for (const Elem& e : W)
              if (!declared.count(e) && hull.count(e)) {
                declared.insert(e);
                ++sum;
              }
            widened_hull = std::move(hull);
            break;
          }
          case WriteStrategy::kSingleDevice:
            EXPECT_TRUE(pb.single_device) << arr;
            declared = W;
            sum = static_cast<int64_t>(W.size());
            break;
          case WriteStrategy::kWidened: {
            // The hull, READ_WRITE: it holds every write, and no other tile of the phase
            // touches it (what it holds besides the writes keeps its value); hulls of two
            // tiles are disjoint (check_phase).
            ElemSet hull;
            if (auto x = text_box(text(ab.write_boxes.front()), v)) {
              add_elements(*x, hull);
              hulls_.push_back({tile, ab.array, *x});
            }
            EXPECT_TRUE(std::includes(hull.begin(), hull.end(), W.begin(), W.end()))
                << arr << " (widened): written but not in the hull: " << show_diff(W, hull);
            ElemSet shared;
            for (const Elem& e : others[ab.array])
              if (hull.count(e)) shared.insert(e);
            EXPECT_TRUE(shared.empty()) << arr << " (widened): other tiles of the phase touch "
                                        << show_diff(shared, {}) << " of the hull";
            declared = W;
            sum = static_cast<int64_t>(W.size());
            widened_hull = std::move(hull);
            break;
          }
        }
        EXPECT_EQ(declared, W) << arr << " (" << write_strategy_name(ab.write_strategy)
                               << "): declared but not written: " << show_diff(declared, W)
                               << "; written but not declared: " << show_diff(W, declared);
        EXPECT_EQ(sum, static_cast<int64_t>(declared.size())) << arr << ": the declared writes overlap";
      }
      // Flow-out.
      ElemSet fbox;
      for (const TileBox& b : ab.flow_out)
        if (auto x = text_box(text(b), v)) add_elements(*x, fbox);
      for (const RowEnumeration& r : ab.flow_out_rows) add_rows(text(r), v, fbox, nullptr);
      // Per-row writes declared as hulls of thin rows (a diagonal) are not flowed out:
      // their readers copy them from the tile's device at acquire (flow_out.cpp). Every
      // other element another tile reads later must be flowed out.
      ElemSet needed;
      for (const Elem& e : F)
        if (ab.write_strategy != WriteStrategy::kPerRow || !widened_hull.count(e)) needed.insert(e);
      EXPECT_TRUE(std::includes(fbox.begin(), fbox.end(), needed.begin(), needed.end()))
          << arr << ": flow-out misses " << show_diff(needed, fbox);
      if (ab.write_strategy == WriteStrategy::kWidened) {  // the hull is the tile's
        EXPECT_TRUE(std::includes(widened_hull.begin(), widened_hull.end(), fbox.begin(), fbox.end()))
            << arr << ": flow-out boxes hold elements outside the widened hull: "
            << show_diff(fbox, widened_hull);
      } else if (ab.write_strategy != WriteStrategy::kSingleDevice) {  // see ArrayBoxes::flow_out
        ElemSet mine = W;
        mine.insert(widened_hull.begin(), widened_hull.end());  // per-row hulls
        EXPECT_TRUE(std::includes(mine.begin(), mine.end(), fbox.begin(), fbox.end()))
            << arr << ": flow-out boxes hold elements the tile does not write: " << show_diff(fbox, mine);
      }
      EXPECT_EQ(isl_elements(ab.flow_out_set, v), F) << arr << ": bbmmc's exact flow-out set";
      t.flow += static_cast<int64_t>(F.size());
      t.flow_boxes += static_cast<int64_t>(fbox.size());
      for (const Elem& e : fbox) t.flow_extra += F.count(e) ? 0 : 1;
      if (!F.empty()) ++t.flow_tiles;
    }
    for (auto* m : {&reads, &writes})
      for (auto& [a, set] : *m)
        EXPECT_TRUE(set.empty() || covered_arrays.count(a))
            << where << "array " << s_.arrays[a].c_name << " is accessed but has no boxes";
  }

  // The C text of a box of bx_, printed once (the tiles evaluate it many times).
  const BoxText& text(const TileBox& b) {
    auto it = box_texts_.find(&b);
    if (it == box_texts_.end()) it = box_texts_.emplace(&b, box_c_text(b)).first;
    return it->second;
  }
  // The widened hulls of the tiles checked at one serial iteration (check_phase).
  struct Hull {
    std::vector<Range> tile;
    int array;
    std::vector<Range> box;
  };
  std::vector<Hull> hulls_;

  const RowsText& text(const RowEnumeration& r) {
    auto it = rows_texts_.find(&r);
    if (it == rows_texts_.end()) it = rows_texts_.emplace(&r, rows_c_text(r)).first;
    return it->second;
  }

  const Scop& s_;
  const ScopBoxes& bx_;
  std::map<const TileBox*, BoxText> box_texts_;  // a cache: never iterated
  std::map<const RowEnumeration*, RowsText> rows_texts_;
  Values params_;
  std::string what_;
  Execution run_;
  std::vector<Placement> placed_;
  std::vector<std::vector<int>> readers_;
  std::map<std::pair<int, Elem>, int> last_write_;  // (array, element) -> its last write event
  std::vector<int> seq_writer_;
};

// The partition the input asks for (its extra arguments), else bbmmc's default.
PartitionMode partition_mode(const std::filesystem::path& input) {
  std::vector<std::string> args = testing::extra_args(testing::read_file(input));
  if (std::find(args.begin(), args.end(), "--partition=2d") != args.end()) return PartitionMode::kTwoD;
  if (std::find(args.begin(), args.end(), "--partition=1d") != args.end()) return PartitionMode::kOneD;
  return PartitionMode::kAuto;
}

void check_program(const Program& prog, PartitionMode mode, const std::vector<std::vector<long>>& value_sets,
                   const std::string& what, Tally& t) {
  for (const Scop& s : prog.scops) {
    BoxOptions opts;
    opts.partition = mode;
    ScopBoxes bx = compute_boxes(s, opts);
    for (const std::vector<long>& vals : value_sets) {
      Values params;
      for (size_t k = 0; k < s.params.size(); ++k) params[s.params[k]] = vals[k % vals.size()];
      BoxesOracle(s, bx, params, what).run(t);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

class BoxesOracleTest : public ::testing::TestWithParam<std::filesystem::path> {};

// The wavefront steps the input asks for (--wavefront-steps=launch|block), else the default.
PipelineOptions pipeline_options(const std::filesystem::path& input) {
  PipelineOptions opts;
  for (const std::string& a : testing::extra_args(testing::read_file(input))) {
    if (a == "--wavefront-steps=launch") opts.wavefront_steps = WavefrontSteps::kLaunch;
    if (a == "--wavefront-steps=block") opts.wavefront_steps = WavefrontSteps::kBlock;
  }
  return opts;
}

TEST_P(BoxesOracleTest, BoxesMatchBruteForce) {
  Diagnostics diag;
  auto prog = analyze_file(GetParam().string(), pipeline_options(GetParam()), diag);
  ASSERT_FALSE(diag.has_errors());
  ASSERT_FALSE(prog->scops.empty());
  Tally t;
  // Parameters cycle through the values (e.g. T=3, N=7); small enough to try every tile.
  check_program(*prog, partition_mode(GetParam()), {{6}, {3, 7}}, GetParam().filename().string(), t);
  EXPECT_GT(t.tiles, 0);
  EXPECT_GT(t.touched, 0);
  // These inputs have no strided flow-out: their flow-out boxes hold nothing outside the
  // flow-out (and, above, all of it but thin rows declared as their hulls, whose readers copy
  // them at acquire: the interval program of codegen/moving_reserve.c flows out nothing).
  EXPECT_EQ(t.flow_extra, 0) << "flow-out boxes wider than the flow-out";
  std::cout << GetParam().filename().string() << ": " << t.tiles << " tiles, " << t.checks
            << " array checks, " << t.touched << " elements touched, flow-out in " << t.flow_tiles
            << " checks: " << t.flow << " elements needed, boxes " << t.flow_boxes << "\n";
}

std::vector<std::filesystem::path> inputs() {
  std::vector<std::filesystem::path> v = testing::files_in(BBMM_BOXES_DIR, ".c");
  for (const std::filesystem::path& p : testing::files_in(BBMM_CODEGEN_DIR, ".c")) v.push_back(p);
  for (const auto& e : std::filesystem::directory_iterator(BBMM_SAMPLES_DIR)) {
    std::filesystem::path k = e.path() / (e.path().filename().string() + ".c");
    if (e.is_directory() && std::filesystem::exists(k)) v.push_back(k);
  }
  std::sort(v.begin(), v.end());
  return v;
}

std::string case_name(const ::testing::TestParamInfo<std::filesystem::path>& info) {
  std::string dir = info.param.parent_path().filename().string();
  return (dir == "boxes" ? "" : dir == "codegen" ? "codegen_" : "sample_") +
         testing::test_name(info.param);
}

INSTANTIATE_TEST_SUITE_P(Inputs, BoxesOracleTest, ::testing::ValuesIn(inputs()), case_name);

TEST(BoxesOracleRandom, RandomNestsMatchBruteForce) {
  std::mt19937 rng(20261123);
  Tally t;
  int programs = 0;
  for (int n = 0; n < 60; ++n) {
    std::string src = random_program(rng, n % 2 == 1, n % 4 >= 2);
    Diagnostics diag;
    auto prog = analyze_text(src, "random.c", PipelineOptions{}, diag);
    if (diag.has_errors() || prog->scops.empty()) continue;
    ++programs;
    check_program(*prog, n % 3 == 0 ? PartitionMode::kTwoD : n % 3 == 1 ? PartitionMode::kAuto : PartitionMode::kOneD, {{4, 5}, {5, 3}}, "random program " + std::to_string(n), t);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "program:\n" << src;
      break;
    }
  }
  EXPECT_GT(programs, 40);
  EXPECT_GT(t.flow_tiles, 100);
  EXPECT_GT(t.private_flows, 0);  // phases keeping the scalar s private are checked
  std::cout << programs << " random programs: " << t.tiles << " tiles, " << t.checks << " array checks, "
            << t.touched << " elements touched, flow-out in " << t.flow_tiles << " checks: " << t.flow
            << " elements needed, boxes " << t.flow_boxes << "; " << t.private_flows
            << " values of private scalars\n";
}

}  // namespace
}  // namespace bbmm::compiler
