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
