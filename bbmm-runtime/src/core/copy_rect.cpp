#include "core/copy_rect.h"

#include <cstdio>

#include "absl/strings/str_cat.h"

namespace bbmm {

absl::StatusOr<size_t> copy_rect_span(const Endpoint& ep, const CopyShape& shape, const char* op,
                                      const char* side) {
  const size_t w = shape.width_bytes;
  if (shape.height > 1 && ep.row_pitch < w) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", side, " row pitch ", ep.row_pitch,
                                                   " is smaller than the row width ", w));
  }
  size_t plane;  // (height - 1) * row_pitch + w
  if (__builtin_mul_overflow(shape.height - 1, ep.row_pitch, &plane) ||
      __builtin_add_overflow(plane, w, &plane)) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", side, " rectangle size overflows (",
                                                   shape.height, " rows, row pitch ", ep.row_pitch,
                                                   ")"));
  }
  if (shape.depth > 1 && ep.slice_pitch < plane) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", side, " slice pitch ", ep.slice_pitch,
                                                   " is smaller than a plane (", plane, " bytes)"));
  }
  size_t span;  // (depth - 1) * slice_pitch + plane + offset
  if (__builtin_mul_overflow(shape.depth - 1, ep.slice_pitch, &span) ||
      __builtin_add_overflow(span, plane, &span) ||
      __builtin_add_overflow(span, ep.offset, &span)) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", side, " rectangle size overflows (",
                                                   shape.depth, " planes, slice pitch ",
                                                   ep.slice_pitch, ", offset ", ep.offset, ")"));
  }
  return span;
}

std::string pointer_string(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

std::string shape_string(const CopyShape& s) {
  return absl::StrCat(s.width_bytes, "x", s.height, "x", s.depth);
}

}  // namespace bbmm
