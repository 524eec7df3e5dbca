#include "core/copy_merge.h"

#include <algorithm>
#include <tuple>

namespace bbmm {
namespace {

// `x` and `y` are the same memory with the same row pitch.
bool same_rows(const Endpoint& x, const Endpoint& y) {
  return x.device == y.device && x.base == y.base && x.row_pitch == y.row_pitch;
}

// Whether `b` starts `src_step` (source) and `dst_step` (destination) bytes
// after `a`.
bool starts_after(const CopyOp& a, const CopyOp& b, size_t src_step, size_t dst_step) {
  return b.src.offset == a.src.offset + src_step && b.dst.offset == a.dst.offset + dst_step;
}

// One plane, or planes that are consecutive rows on both sides: a 2-D copy,
// its slice pitches its rows' pitch times its height.
void normalize(CopyOp& op) {
  CopyShape& s = op.shape;
  if (s.depth > 1 && op.dst.slice_pitch == op.dst.row_pitch * s.height &&
      op.src.slice_pitch == op.src.row_pitch * s.height) {
    s.height *= s.depth;
    s.depth = 1;
  }
  if (s.depth == 1) {
    op.dst.slice_pitch = op.dst.row_pitch * s.height;
    op.src.slice_pitch = op.src.row_pitch * s.height;
  }
}

// Pitches that hold `shape` without overlap: rows at least a row apart,
// planes at least a plane apart.
bool holds(const Endpoint& e, const CopyShape& shape) {
  return (shape.height == 1 || e.row_pitch >= shape.width_bytes) &&
         (shape.depth == 1 || e.slice_pitch >= e.row_pitch * shape.height);
}

// Makes `a` also copy `b`, where `b` continues it; false (nothing changed)
// otherwise. A one-plane copy's slice pitches are not its arrays' (normalize),
// so planes are only stacked where one of the two has several.
bool absorb(CopyOp& a, const CopyOp& b) {
  if (!same_rows(a.dst, b.dst) || !same_rows(a.src, b.src)) return false;
  CopyShape& s = a.shape;
  const CopyShape& t = b.shape;
  const bool same_slices =
      a.src.slice_pitch == b.src.slice_pitch && a.dst.slice_pitch == b.dst.slice_pitch;
  CopyOp m = a;
  if (s.height == t.height && s.depth == t.depth && (s.depth == 1 || same_slices) &&
      starts_after(a, b, s.width_bytes, s.width_bytes)) {
    // Beside it: wider rows.
    m.shape.width_bytes += t.width_bytes;
  } else if (s.width_bytes != t.width_bytes) {
    return false;
  } else if (s.depth == 1 && t.depth == 1 &&
             starts_after(a, b, s.height * a.src.row_pitch, s.height * a.dst.row_pitch)) {
    // Below it: more rows of one plane.
    m.shape.height += t.height;
  } else if (s.height == t.height && s.depth > 1 && (t.depth == 1 || same_slices) &&
             starts_after(a, b, s.depth * a.src.slice_pitch, s.depth * a.dst.slice_pitch)) {
    // Behind it: more planes (of `a`'s slice pitches).
    m.shape.depth += t.depth;
  } else if (s.height == t.height && s.depth == 1 && t.depth > 1 &&
             starts_after(a, b, b.src.slice_pitch, b.dst.slice_pitch)) {
    // One plane in front of `b`'s planes: `b`'s slice pitches.
    m.src.slice_pitch = b.src.slice_pitch;
    m.dst.slice_pitch = b.dst.slice_pitch;
    m.shape.depth += t.depth;
  } else {
    return false;
  }
  if (!holds(m.src, m.shape) || !holds(m.dst, m.shape)) return false;
  normalize(m);
  a = m;
  return true;
}

}  // namespace

void merge_adjacent_copies(std::vector<CopyOp>* ops) {
  if (ops->size() < 2) return;
  // Passes in source order, each op tried against the last one kept, until a
  // pass merges nothing: boxes in a row merge in the first pass, and the rows
  // of a grid of boxes, widened there, in the next.
  bool merged = true;
  while (merged && ops->size() > 1) {
    merged = false;
    std::sort(ops->begin(), ops->end(), [](const CopyOp& x, const CopyOp& y) {
      return std::make_tuple(x.src.device, x.src.base, x.src.offset) <
             std::make_tuple(y.src.device, y.src.base, y.src.offset);
    });
    size_t kept = 0;
    for (size_t k = 1; k < ops->size(); ++k) {
      if (absorb((*ops)[kept], (*ops)[k])) {
        merged = true;
      } else {
        (*ops)[++kept] = (*ops)[k];
      }
    }
    ops->resize(kept + 1);
  }
}

}  // namespace bbmm
