// The checks every transport (core/transport.h) must pass, run by each rank
// of a group at once: over the loopback by threads (transport_loopback_test),
// over MPI by processes (mpi_transport_test, under mpirun). Results are
// compared with dense arrays computed here from the values each rank wrote.
#pragma once

#include "core/transport.h"

namespace bbmm::testing {

// Runs on every rank of `t`'s group (all ranks must call it); reports
// failures with gtest's non-fatal assertions.
void run_transport_checks(Transport& t);

}  // namespace bbmm::testing
