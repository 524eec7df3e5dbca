#include "core/copy_planner.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/copy_merge.h"

namespace bbmm::detail {
namespace {

// How a place stores its elements: byte offset of the element at `origin`
// from `base`, element strides per dimension.
struct Layout {
  int device;
  void* base;
  size_t offset;
  const int64_t* origin;
  const int64_t* strides;
};

Layout layout_of(const Place& p) {
  static const int64_t kZeros[Box::kMaxRank] = {};
  if (p.inst == nullptr) return Layout{kHost, p.array->host, 0, kZeros, p.array->host_strides};
  const Instance& i = *p.inst;
  return Layout{i.device, i.buffer.base, i.buffer.offset, i.box.lo_data(), i.strides};
}

}  // namespace

absl::Status CopyPlanner::add(const Place& dst, const Place& src, const Box& box) {
  if (box.empty()) return absl::OkStatus();
  for (const Pending& q : pending_) {
    const bool depends = ((dst == q.dst || dst == q.src) && overlaps(box, q.box)) ||
                         (src == q.dst && overlaps(box, q.box));
    if (depends) {
      absl::Status s = flush();
      if (!s.ok()) return s;
      break;
    }
  }
  pending_.push_back(Pending{dst, src, box});
  return absl::OkStatus();
}

void CopyPlanner::append_rects(const Pending& p) {
  const Box& box = p.box;
  const Layout dst = layout_of(p.dst), src = layout_of(p.src);
  const int r = box.rank();
  const size_t elem = p.dst.array->elem_size;
  auto offset_of = [&](const Layout& l, const int64_t* idx) {
    int64_t off = 0;
    for (int d = 0; d < r; ++d) off += (idx[d] - l.origin[d]) * l.strides[d];
    return l.offset + static_cast<size_t>(off) * elem;
  };
  CopyOp op;
  CopyShape& shape = op.shape;
  shape.width_bytes = static_cast<size_t>(box.extent(r - 1)) * elem;
  op.dst = Endpoint{dst.device, dst.base, 0, shape.width_bytes, shape.width_bytes};
  op.src = Endpoint{src.device, src.base, 0, shape.width_bytes, shape.width_bytes};
  Endpoint& de = op.dst;
  Endpoint& se = op.src;
  if (r >= 2) {
    shape.height = static_cast<size_t>(box.extent(r - 2));
    de.row_pitch = static_cast<size_t>(dst.strides[r - 2]) * elem;
    se.row_pitch = static_cast<size_t>(src.strides[r - 2]) * elem;
    de.slice_pitch = de.row_pitch * shape.height;
    se.slice_pitch = se.row_pitch * shape.height;
  }
  if (r >= 3) {
    shape.depth = static_cast<size_t>(box.extent(r - 3));
    de.slice_pitch = static_cast<size_t>(dst.strides[r - 3]) * elem;
    se.slice_pitch = static_cast<size_t>(src.strides[r - 3]) * elem;
  }
  // Planes that are just consecutive rows on both sides (the box spans its
  // arrays' whole middle dimension): one taller 2-D copy is cheaper than a
  // 3-D one.
  if (shape.depth > 1 && de.slice_pitch == de.row_pitch * shape.height &&
      se.slice_pitch == se.row_pitch * shape.height) {
    shape.height *= shape.depth;
    shape.depth = 1;
    de.slice_pitch = de.row_pitch * shape.height;
    se.slice_pitch = se.row_pitch * shape.height;
  }
  // Dimensions before the last three: one 3-D copy per index combination.
  int64_t idx[Box::kMaxRank];
  std::copy_n(box.lo_data(), r, idx);
  const int outer = std::max(0, r - 3);
  while (true) {
    de.offset = offset_of(dst, idx);
    se.offset = offset_of(src, idx);
    ops_.push_back(op);
    int d = outer - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < box.hi(d)) break;
      idx[d] = box.lo(d);
    }
    if (d < 0) break;
  }
}

absl::Status CopyPlanner::issue_group(int src_device, int dst_device) {
  ops_.clear();
  waits_.clear();
  const Pending* first = nullptr;
  size_t boxes = 0;
  for (size_t k = 0; k < pending_.size(); ++k) {
    const Pending& p = pending_[k];
    if (issued_[k] || p.src.device() != src_device || p.dst.device() != dst_device) continue;
    if (first == nullptr) first = &p;
    ++boxes;
    append_rects(p);
    p.src.hazards().before(p.box, /*write=*/false, waits_);
    p.dst.hazards().before(p.box, /*write=*/true, waits_);
  }
  // Boxes that continue one another on both sides: one copy (copy_merge.h).
  if (merge_) merge_adjacent_copies(&ops_);
  // The trace names the array and box of every copy (the first of a batch).
  std::optional<Tracer::Label> label;
  if (tracer_ != nullptr) {
    std::string args = absl::StrCat("\"array\":\"", json_escape(first->dst.array->name),
                                    "\",\"box\":\"", first->box.to_string(), "\"");
    if (boxes > 1) absl::StrAppend(&args, ",\"boxes\":", boxes);
    label.emplace(std::move(args));
  }
  absl::StatusOr<Event> ev =
      ops_.size() == 1 ? backend_.copy(ops_[0].dst, ops_[0].src, ops_[0].shape, waits_)
                       : backend_.copy_batch(ops_, waits_);
  if (!ev.ok()) return ev.status();
  for (size_t k = 0; k < pending_.size(); ++k) {
    const Pending& p = pending_[k];
    if (issued_[k] || p.src.device() != src_device || p.dst.device() != dst_device) continue;
    p.src.hazards().after(p.box, /*write=*/false, *ev);
    p.dst.hazards().after(p.box, /*write=*/true, *ev);
    issued_[k] = 1;
  }
  return absl::OkStatus();
}

absl::Status CopyPlanner::flush() {
  if (pending_.empty()) return absl::OkStatus();
  issued_.assign(pending_.size(), 0);
  absl::Status status;
  for (size_t k = 0; k < pending_.size() && status.ok(); ++k) {
    if (!issued_[k]) status = issue_group(pending_[k].src.device(), pending_[k].dst.device());
  }
  pending_.clear();
  return status;
}

}  // namespace bbmm::detail
