// Messages between the ranks of a run over several hosts (issue 14's first
// slice; docs/architecture.md, "Plan: beyond one node"): a box of a host array
// sent by one rank and received, into the same box of its own copy of the
// array, by another. The runtime will stage flow-outs whose readers live on
// other ranks through the registered host arrays with it.
//
// Two implementations: MpiTransport (src/mpi/, over an MPI communicator) and
// LoopbackTransport (core/loopback_transport.h: the ranks of one process,
// for tests on any machine). Both follow MPI's matching rule: a receive from
// rank r with tag t takes the earliest unmatched send of r to this rank with
// tag t, and the two boxes must have the same extents (elements of the same
// size). A mismatch fails the receive with a message naming the array and the
// box (the loopback fails the send too and names both boxes; MPI sees only a
// different number of bytes).
//
// Thread-safety: every method may be called from several threads at once.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bbmm/box.h"
#include "core/backend.h"

namespace bbmm {

// A dense row-major array: `extents` elements of `elem_size` bytes at `base`,
// the last dimension contiguous. `name` is for messages. `base` is host memory
// (a registered host array), or for a send, a device instance's memory (its
// padded rows as the extents) when the transport sends from that backend's
// device memory (Transport::sends_from_device_memory).
struct HostArrayRef {
  std::string name;
  void* base = nullptr;
  size_t elem_size = 0;
  std::vector<int64_t> extents;
};

// What every transport checks before posting: that `box` has `array`'s rank,
// lies inside its extents and is not empty, that the array is usable (base,
// element size, extents >= 0), that `peer` is another rank of 0..size-1 (this
// is `rank`) and `tag` in 0..max_tag; `op` ("send", "receive") starts the
// message.
absl::Status check_transfer(const HostArrayRef& array, const Box& box, const char* op, int peer,
                            int tag, int rank, int size, int max_tag);

// The state of one send or receive: pending until complete(status).
class TransportEvent final : public EventState {
 public:
  bool query() const override;
  absl::Status wait() const override;
  // Publishes completion (once; later calls are ignored).
  void complete(absl::Status status);

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool done_ = false;
  absl::Status status_;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // This process's rank in 0..size()-1, and the number of ranks.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Sends `box` of `array` to rank `to` (not this rank) with `tag` (>= 0),
  // once every event of `after` has completed (the copies that bring the box
  // to the host). Returns at once; the event completes when the array's bytes
  // may change again. The array must stay allocated until then. A transport
  // starts its operations in the order they were posted, each after its
  // `after` events (so the matching order is the posting order).
  virtual absl::StatusOr<Event> send(const HostArrayRef& array, const Box& box, int to, int tag,
                                     std::span<const Event> after = {}) = 0;
  // Receives into `box` of `array` what rank `from` sends with `tag`, once
  // every event of `after` has completed (what still reads or writes those
  // bytes). The event completes when the bytes are in place. For both, a
  // failed `after` event becomes this event's error (the message still goes,
  // so that the other rank is not left waiting).
  virtual absl::StatusOr<Event> receive(const HostArrayRef& array, const Box& box, int from,
                                        int tag, std::span<const Event> after = {}) = 0;
  // Whether send() may be given the memory of `kind`'s devices as its array
  // (a device instance, not only host arrays): the host backend's devices are
  // host memory; CUDA memory only through a CUDA-aware MPI. The runtime then
  // sends a box from the device holding it, with no copy to the host first.
  virtual bool sends_from_device_memory(BackendKind kind) const {
    (void)kind;
    return false;
  }
  // Collective (every rank calls it, in the same order): `value` of every
  // rank, in rank order.
  virtual absl::StatusOr<std::vector<int64_t>> all_gather(int64_t value) = 0;
};

}  // namespace bbmm
