// The transport checks (transport_checks.h) over MPI: run by mpirun with 2
// and 3 processes (ctest mpi_transport.np2, .np3; label "mpi"). Each process
// is one rank; the exit status is nonzero when any rank failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include "mpi/mpi_transport.h"
#include "transport_checks.h"

namespace bbmm {
namespace {

TEST(MpiTransport, EveryRankPassesTheChecks) {
  absl::StatusOr<std::unique_ptr<Transport>> t = make_mpi_transport(MPI_COMM_WORLD);
  ASSERT_TRUE(t.ok()) << t.status();
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ((*t)->size(), size);
  testing::run_transport_checks(**t);
}

}  // namespace
}  // namespace bbmm

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS();
  int any = failed;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
