// bbmm/mpi.h: the C entry point that gives a runtime its MPI transport.
#include "bbmm/mpi.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "api/c_api_internal.h"
#include "mpi/mpi_transport.h"

namespace {
// The communicator of the job, for bbmm_fatal (set with the first transport, before the
// hook that uses it).
MPI_Comm g_job = MPI_COMM_NULL;

// bbmm_fatal on a rank of several: says which rank failed and why, then stops every rank
// (a rank exiting alone would leave the others waiting for its boxes).
void stop_every_rank(const char* message, int code) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // bbmm_fatal exits
  int rank = 0, size = 1;
  MPI_Comm_rank(g_job, &rank);
  MPI_Comm_size(g_job, &size);
  std::fflush(stdout);
  std::fprintf(stderr,
               "bbmm: rank %d of %d: %s\nbbmm: rank %d stops every rank of the job "
               "(MPI_Abort, code %d)\n",
               rank, size, message, rank, code);
  std::fflush(stderr);
  MPI_Abort(g_job, code);
  std::_Exit(code);
}

void use_job(MPI_Comm comm) {
  if (g_job == MPI_COMM_NULL) g_job = comm;
  bbmm::detail::set_fatal_hook(&stop_every_rank);
}

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
  use_job(comm);
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
  use_job(comm);
  bbmm::detail::set_default_transport([comm] { return bbmm::make_mpi_transport(comm); },
                                      (flags & BBMM_MPI_EXPLICIT) == 0,
                                      (flags & BBMM_MPI_GATHER_ALL) != 0);
  return BBMM_OK;
}

extern "C" int bbmm_mpi_cuda_aware(void) { return bbmm::mpi_cuda_aware() ? 1 : 0; }
