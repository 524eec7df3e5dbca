/* BBMM over several hosts with MPI (link the bbmm_mpi library; Open MPI).
 *
 *   MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
 *   bbmm_runtime_create(&opts, &rt);
 *   bbmm_runtime_use_mpi(rt, MPI_COMM_WORLD);   (before the first array)
 *   ... bbmm_array_send / bbmm_array_receive (bbmm.h) between ranks ...
 *   bbmm_runtime_destroy(rt);                    (before MPI_Finalize)
 *
 * Each rank runs its own runtime over its own devices; the transport moves boxes
 * of the registered host arrays between ranks (docs/runtime.md, "Between hosts"). */
#ifndef BBMM_MPI_H_
#define BBMM_MPI_H_

#include <mpi.h>

#include "bbmm/bbmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Gives `rt` a transport over a duplicate of `comm` (collective over `comm`). Fails
 * (BBMM_ERROR_INVALID_ARGUMENT) when MPI is not initialised, or below
 * MPI_THREAD_SERIALIZED, or after the first array was registered, or a second time. */
bbmm_status bbmm_runtime_use_mpi(bbmm_runtime* rt, MPI_Comm comm);

#ifdef __cplusplus
}
#endif

#endif /* BBMM_MPI_H_ */
