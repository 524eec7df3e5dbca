// The ranks of one process, for tests of what runs over several hosts on any
// machine (and under ThreadSanitizer): make_loopback_transports(n) gives n
// transports that deliver to one another in memory, each meant for one thread
// playing one rank. A send and its matching receive (transport.h's rule)
// complete together, when the second of the two is posted: the sender's box is
// copied straight into the receiver's, so a send stays pending until received
// (as a large MPI message does). Each transport posts its operations in order
// from a thread of its own, which waits for each one's `after` events.
#pragma once

#include <memory>
#include <vector>

#include "core/transport.h"

namespace bbmm {

// `ranks` >= 1 transports of one group; transport k has rank k.
std::vector<std::unique_ptr<Transport>> make_loopback_transports(int ranks);

}  // namespace bbmm
