// The Backend interface's default implementations.
#include "core/backend.h"

#include <vector>

namespace bbmm {

absl::StatusOr<Event> Backend::copy_batch(std::span<const CopyOp> ops,
                                          std::span<const Event> wait) {
  // One after another: op k waits for `wait` and op k-1, so the last event
  // completes after every op.
  std::vector<Event> waits(wait.begin(), wait.end());
  Event last;
  for (size_t k = 0; k < ops.size(); ++k) {
    absl::StatusOr<Event> ev = copy(ops[k].dst, ops[k].src, ops[k].shape, waits);
    if (!ev.ok()) {
      // The contract: on error nothing of the batch is still running.
      (void)last.wait();
      return ev.status();
    }
    last = *std::move(ev);
    waits.assign(1, last);  // the next op is ordered after this one, hence after `wait`
  }
  // An empty batch has nothing of its own to complete (the caller already
  // holds the events it waited for).
  return last;
}

}  // namespace bbmm
