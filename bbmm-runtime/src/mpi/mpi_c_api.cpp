// bbmm/mpi.h: the C entry point that gives a runtime its MPI transport.
#include "bbmm/mpi.h"

#include "absl/strings/str_cat.h"
#include "api/c_api_internal.h"
#include "mpi/mpi_transport.h"

namespace {
// OK for 0, BBMM_MPI_GATHER_ALL and BBMM_MPI_EXPLICIT.
absl::Status check_flags(const char* what, int flags) {
  if ((flags & ~(BBMM_MPI_EXPLICIT | BBMM_MPI_GATHER_ALL)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": unknown flags ", flags));
  }
  if ((flags & BBMM_MPI_EXPLICIT) && (flags & BBMM_MPI_GATHER_ALL)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": BBMM_MPI_GATHER_ALL is for global tiles, not with BBMM_MPI_EXPLICIT"));
  }
  return absl::OkStatus();
}
}  // namespace

extern "C" bbmm_status bbmm_runtime_use_mpi(bbmm_runtime* rt, MPI_Comm comm, int flags) {
  bbmm::detail::RuntimeCore* core = bbmm::detail::core_of(rt);
  if (core == nullptr) {
    return bbmm::detail::c_status(absl::InvalidArgumentError("runtime_use_mpi: null runtime"));
  }
  if (absl::Status s = check_flags("runtime_use_mpi", flags); !s.ok()) {
    return bbmm::detail::c_status(s);
  }
  absl::StatusOr<std::unique_ptr<bbmm::Transport>> t = bbmm::make_mpi_transport(comm);
  if (!t.ok()) return bbmm::detail::c_status(t.status());
  return bbmm::detail::c_status(
      core->set_transport(*std::move(t), (flags & BBMM_MPI_EXPLICIT) == 0,
                          (flags & BBMM_MPI_GATHER_ALL) != 0));
}

extern "C" bbmm_status bbmm_mpi_use_by_default(MPI_Comm comm, int flags) {
  if (absl::Status s = check_flags("mpi_use_by_default", flags); !s.ok()) {
    return bbmm::detail::c_status(s);
  }
  int initialized = 0, level = MPI_THREAD_SINGLE;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Query_thread(&level);
  if (!initialized || level < MPI_THREAD_SERIALIZED) {
    return bbmm::detail::c_status(absl::FailedPreconditionError(
        "mpi_use_by_default: MPI is not initialised with MPI_THREAD_SERIALIZED or more"));
  }
  bbmm::detail::set_default_transport([comm] { return bbmm::make_mpi_transport(comm); },
                                      (flags & BBMM_MPI_EXPLICIT) == 0,
                                      (flags & BBMM_MPI_GATHER_ALL) != 0);
  return BBMM_OK;
}

extern "C" int bbmm_mpi_cuda_aware(void) { return bbmm::mpi_cuda_aware() ? 1 : 0; }
