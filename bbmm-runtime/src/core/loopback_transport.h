// The ranks of one process, for tests of what runs over several hosts on any
// machine (and under ThreadSanitizer): make_loopback_transports(n) gives n
// transports that deliver to one another in memory, each meant for one thread
// playing one rank. A send and its matching receive (transport.h's rule)
// complete together, when the second of the two is posted: the sender's box is
// copied straight into the receiver's, so a send stays pending until received
// (as a large MPI message does). Each transport posts its operations in order
// from a thread of its own, which waits for each one's `after` events.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "core/transport.h"

namespace bbmm {

// Copies `bytes` from `src` to `dst`, either of which may be device memory of a
// backend the transports send from (a row of a box; called on a transport's
// thread, after the send's `after` events).
using LoopbackCopy = std::function<void(void* dst, const void* src, size_t bytes)>;

// `ranks` >= 1 transports of one group; transport k has rank k. They send
// from the device memory of the backends in `device_memory`
// (Transport::sends_from_device_memory): the host backend's by default, whose
// devices are host memory. Tests of what a CUDA-aware MPI does add kCuda and
// give `copy` a CUDA copy that reads device memory (cudaMemcpyDefault, as such
// an MPI reads it); an empty `copy` is memcpy (host memory, or the fake CUDA
// runtime's device memory, which is host memory too).
std::vector<std::unique_ptr<Transport>> make_loopback_transports(
    int ranks, std::vector<BackendKind> device_memory = {BackendKind::kHost},
    LoopbackCopy copy = {});

}  // namespace bbmm
