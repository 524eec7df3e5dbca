// The transport (core/transport.h) over MPI: a duplicate of the application's
// communicator with MPI_ERRORS_RETURN, so that an MPI error becomes the failed
// operation's status instead of aborting; each box described by a subarray
// datatype of its array (MPI_Type_create_subarray), so that nothing is packed
// by hand; one communication thread that makes every MPI call after
// construction (posting, MPI_Testsome, the collectives), so MPI must have been
// initialised with MPI_THREAD_SERIALIZED or more. Open MPI progresses only
// inside its calls: the thread polls while operations are pending.
//
// MPI matches messages by type signature, not shape: a receive whose box has
// as many elements as the sent box, in another shape, takes them in row-major
// order; a different number of elements fails the receive (only the receive).
// Counts and extents are ints in MPI: larger extents are refused with a
// message. Destroying the transport waits for every operation posted (each
// send must have been received), then frees the communicator.
#pragma once

#include <mpi.h>

#include <memory>

#include "absl/status/statusor.h"
#include "core/transport.h"

namespace bbmm {

// A transport over a duplicate of `comm` (collective over `comm`: every rank
// calls it). Fails when MPI is not initialised, or initialised with less than
// MPI_THREAD_SERIALIZED.
absl::StatusOr<std::unique_ptr<Transport>> make_mpi_transport(MPI_Comm comm);

// True when the MPI library was built CUDA-aware and says so at run time
// (Open MPI's MPIX_CUDA_AWARE_SUPPORT and MPIX_Query_cuda_support): it could
// send from GPU memory: the transport then says it sends from CUDA devices'
// memory (Transport::sends_from_device_memory), and the runtime sends boxes
// from the GPU holding them instead of staging them through the host arrays.
bool mpi_cuda_aware();

}  // namespace bbmm
