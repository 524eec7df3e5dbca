// The transport checks (transport_checks.h) over MPI: run by mpirun with 2
// and 3 processes (ctest mpi_transport.np2, .np3; label "mpi"). Each process
// is one rank; the exit status is nonzero when any rank failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include <functional>

#include "bbmm/mpi.h"
#include "mpi/mpi_transport.h"
#include "rank_stencil.h"
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

// Runs `body(rt, ranks)` with a runtime of 2 host devices per process (devices
// that box out with `tight`) over MPI_COMM_WORLD (bbmm_runtime_use_mpi with
// `flags`), then destroys it.
void with_mpi_runtime(int flags, bool tight, const std::function<void(bbmm_runtime*, int)>& body) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  bbmm_options o;
  ASSERT_EQ(bbmm_options_init(&o), BBMM_OK);
  o.backend = BBMM_BACKEND_HOST;
  o.devices = 2;
  o.device_memory = tight ? testing::tight_device_memory(1000, size, 2) : 0;
  bbmm_runtime* rt = nullptr;
  ASSERT_EQ(bbmm_runtime_create(&o, &rt), BBMM_OK) << bbmm_last_error_message();
  EXPECT_EQ(bbmm_runtime_use_mpi(rt, MPI_COMM_WORLD, flags), BBMM_OK) << bbmm_last_error_message();
  EXPECT_EQ(bbmm_rank_count(rt), size);
  body(rt, size);
  EXPECT_EQ(bbmm_runtime_destroy(rt), BBMM_OK) << bbmm_last_error_message();
}

// The stencil over ranks (rank_stencil.h), one process per rank, through the C
// API, moving its edges itself (BBMM_MPI_EXPLICIT); with devices that box out too.
void stencil(bool tight) {
  with_mpi_runtime(BBMM_MPI_EXPLICIT, tight, [&](bbmm_runtime* rt, int) {
    testing::run_rank_stencil(rt, 1000, 12);
    bbmm_stats st;
    ASSERT_EQ(bbmm_stats_get(rt, -1, &st), BBMM_OK);
    if (tight) {
      EXPECT_GT(st.evictions, 0u);
    }
  });
}

TEST(MpiRuntime, StencilMatchesTheSequentialProgram) { stencil(false); }
TEST(MpiRuntime, StencilWithBoxOutMatchesTheSequentialProgram) { stencil(true); }

// The stencil written for one runtime (run_global_stencil), unchanged, over the
// devices of all ranks (bbmm_runtime_use_mpi without flags).
void global_stencil(bool tight) {
  with_mpi_runtime(0, tight, [](bbmm_runtime* rt, int ranks) {
    EXPECT_EQ(bbmm_device_count(rt), 2 * ranks);
    testing::run_global_stencil(rt, 1000, 12);
  });
}

TEST(MpiRuntime, GlobalStencilMatchesTheSequentialProgram) { global_stencil(false); }
TEST(MpiRuntime, GlobalStencilWithBoxOutMatchesTheSequentialProgram) { global_stencil(true); }

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
