// Checks shared by the backends that validate a rectangular copy before
// queueing it (host, OpenCL).
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "core/backend.h"

namespace bbmm {

// Bytes from `ep.base` to one past the last byte `shape` touches at `ep`:
// offset + (depth-1)*slice_pitch + (height-1)*row_pitch + width. Fails with
// kInvalidArgument, the message starting with `op` (e.g. "copy") and naming
// `side` ("source"/"destination"), when the pitches are too small for the
// shape or the size overflows.
absl::StatusOr<size_t> copy_rect_span(const Endpoint& ep, const CopyShape& shape, const char* op,
                                      const char* side);

// "0x7f..." for messages.
std::string pointer_string(const void* p);
// "WxHxD" for messages and traces.
std::string shape_string(const CopyShape& s);

}  // namespace bbmm
