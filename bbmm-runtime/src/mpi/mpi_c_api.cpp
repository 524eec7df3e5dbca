// bbmm/mpi.h: the C entry point that gives a runtime its MPI transport.
#include "bbmm/mpi.h"

#include "absl/strings/str_cat.h"
#include "api/c_api_internal.h"
#include "mpi/mpi_transport.h"

extern "C" bbmm_status bbmm_runtime_use_mpi(bbmm_runtime* rt, MPI_Comm comm, int flags) {
  bbmm::detail::RuntimeCore* core = bbmm::detail::core_of(rt);
  if (core == nullptr) {
    return bbmm::detail::c_status(absl::InvalidArgumentError("runtime_use_mpi: null runtime"));
  }
  if ((flags & ~BBMM_MPI_EXPLICIT) != 0) {
    return bbmm::detail::c_status(absl::InvalidArgumentError(
        absl::StrCat("runtime_use_mpi: unknown flags ", flags)));
  }
  absl::StatusOr<std::unique_ptr<bbmm::Transport>> t = bbmm::make_mpi_transport(comm);
  if (!t.ok()) return bbmm::detail::c_status(t.status());
  return bbmm::detail::c_status(
      core->set_transport(*std::move(t), (flags & BBMM_MPI_EXPLICIT) == 0));
}

extern "C" bbmm_status bbmm_mpi_use_by_default(MPI_Comm comm, int flags) {
  if ((flags & ~BBMM_MPI_EXPLICIT) != 0) {
    return bbmm::detail::c_status(absl::InvalidArgumentError(
        absl::StrCat("mpi_use_by_default: unknown flags ", flags)));
  }
  int initialized = 0, level = MPI_THREAD_SINGLE;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Query_thread(&level);
  if (!initialized || level < MPI_THREAD_SERIALIZED) {
    return bbmm::detail::c_status(absl::FailedPreconditionError(
        "mpi_use_by_default: MPI is not initialised with MPI_THREAD_SERIALIZED or more"));
  }
  bbmm::detail::set_default_transport([comm] { return bbmm::make_mpi_transport(comm); },
                                      (flags & BBMM_MPI_EXPLICIT) == 0);
  return BBMM_OK;
}
