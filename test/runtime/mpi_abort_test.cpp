// A rank that destroys its transport while a receive can never complete (rank
// 0 posts a receive rank 1 never sends) must not hang the job: after
// BBMM_MPI_SHUTDOWN_TIMEOUT_S the transport says what is pending and aborts it
// (ctest mpi_transport.abort checks the message; mpirun then exits nonzero).
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "mpi/mpi_transport.h"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  {
    absl::StatusOr<std::unique_ptr<bbmm::Transport>> t = bbmm::make_mpi_transport(MPI_COMM_WORLD);
    if (!t.ok()) {
      std::fprintf(stderr, "%s\n", std::string(t.status().message()).c_str());
      return 1;
    }
    std::vector<double> a(16, 0.0);
    bbmm::HostArrayRef A{"A", a.data(), sizeof(double), {16}};
    const int64_t lo[1] = {0}, hi[1] = {4};
    if ((*t)->rank() == 0) {
      (void)(*t)->receive(A, bbmm::Box::make_unchecked(1, lo, hi), 1, 9);
      // Destroying the transport now waits for the receive, which never comes.
    }
  }
  MPI_Finalize();
  std::printf("rank finished without aborting\n");
  return 0;
}
