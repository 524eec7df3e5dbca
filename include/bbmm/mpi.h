/* BBMM over several hosts with MPI (link the bbmm_mpi library; Open MPI).
 *
 *   MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
 *   bbmm_runtime_create(&opts, &rt);
 *   bbmm_runtime_use_mpi(rt, MPI_COMM_WORLD, 0); (before the first array)
 *   ... the program, unchanged ...
 *   bbmm_runtime_destroy(rt);                      (before MPI_Finalize)
 *
 * Each rank runs its own runtime over its own devices (docs/runtime.md, "Between
 * hosts"). By default every rank runs the same program over the devices of all ranks
 * (bbmm_device_count counts them all, rank by rank): a tile runs on its device's rank,
 * the runtime moves what it reads there from the rank holding it, and unregistering an
 * array gathers its values on rank 0. With BBMM_MPI_EXPLICIT, devices and tiles are the
 * rank's own and the program moves boxes itself (bbmm_array_send, bbmm_array_receive). */
#ifndef BBMM_MPI_H_
#define BBMM_MPI_H_

#include <mpi.h>

#include "bbmm/bbmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* BBMM_MPI_EXPLICIT: the program moves boxes itself; BBMM_MPI_GATHER_ALL (global tiles):
 * unregistering or synchronising an array makes every rank's host copy current, not
 * only rank 0's. */
enum { BBMM_MPI_EXPLICIT = 1, BBMM_MPI_GATHER_ALL = 2 };

/* Gives `rt` a transport over a duplicate of `comm` (collective over `comm`: every rank
 * calls it, with the same `flags`: 0, BBMM_MPI_GATHER_ALL or BBMM_MPI_EXPLICIT). Fails
 * (BBMM_ERROR_INVALID_ARGUMENT) when MPI is not initialised, or below
 * MPI_THREAD_SERIALIZED, or after the first array was registered, or a second time. */
bbmm_status bbmm_runtime_use_mpi(bbmm_runtime* rt, MPI_Comm comm, int flags);

/* Makes every runtime created afterwards (bbmm_runtime_create, and so the runtime of
 * bbmmc-generated code, created at its first scop) use MPI over a duplicate of `comm` as
 * bbmm_runtime_use_mpi would, with `flags`. Call it once after MPI_Init_thread, on every
 * rank; destroy the runtimes before MPI_Finalize (the generated code destroys its runtime
 * in an atexit handler: register MPI_Finalize with atexit before the first scop runs, so
 * that it runs after). BBMM_ERROR_INVALID_ARGUMENT for unknown flags or MPI not
 * initialised (below MPI_THREAD_SERIALIZED). */
bbmm_status bbmm_mpi_use_by_default(MPI_Comm comm, int flags);

/* 1 when the MPI library is CUDA-aware (built so and saying so at run time: Open MPI's
 * MPIX_Query_cuda_support), else 0. Boxes sent to other ranks then go straight from the
 * GPU holding them (MPI_Isend of the device instance, a subarray datatype over its padded
 * rows); otherwise they are staged through the registered host arrays. The host backend's
 * devices are host memory: their boxes are always sent from the device instance.
 * BBMM_RANK_SENDS=staged (environment) stages every send (docs/runtime.md). */
int bbmm_mpi_cuda_aware(void);

#ifdef __cplusplus
}
#endif

#endif /* BBMM_MPI_H_ */
