// A rank that fails in the middle of a run must stop the others, with a message saying
// which rank failed and why, instead of leaving them waiting for its boxes (issue 14).
// Global tiles over 2 ranks x 1 host device: the tile of device 1 (rank 1) writes
// A[0, 8), then the tile of device 0 (rank 0) reads it, so rank 0 waits for a box from
// rank 1. Rank 1 fails before its tile (bbmm_fatal, as the generated code does on any
// runtime error). Like the bbmmc samples, the program finalises MPI at exit, so a rank
// that simply exited would sit in MPI_Finalize while rank 0 waits for it: the job would
// hang. ctest (mpi_transport.rank_fails) checks the message and a timeout catches a hang.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bbmm/bbmm.h"
#include "bbmm/mpi.h"

namespace {
void finalize() { MPI_Finalize(); }

void check(bbmm_status s, const char* what) {
  if (s != BBMM_OK) {
    std::fprintf(stderr, "%s: %s\n", what, bbmm_last_error_message());
    std::exit(1);
  }
}

void fill(const bbmm_launch_info*, void*) {}
}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  std::atexit(finalize);
  bbmm_options o;
  check(bbmm_options_init(&o), "options");
  o.backend = BBMM_BACKEND_HOST;
  o.devices = 1;
  bbmm_runtime* rt = nullptr;
  check(bbmm_runtime_create(&o, &rt), "runtime_create");
  check(bbmm_runtime_use_mpi(rt, MPI_COMM_WORLD, 0), "runtime_use_mpi");
  std::vector<double> a(16, 1.0);
  const int64_t extents[1] = {16}, lo[1] = {0}, hi[1] = {8};
  bbmm_array* A = nullptr;
  check(bbmm_array_register(rt, "A", a.data(), sizeof(double), 1, extents, nullptr, 0, &A),
        "register");
  if (bbmm_rank(rt) == 1) bbmm_fatal(7, "injected failure on rank %d, before its tile", 1);
  for (int device : {1, 0}) {
    bbmm_tile* t = nullptr;
    check(bbmm_tile_begin(rt, device, &t), "tile_begin");
    check(bbmm_tile_require(t, A, lo, hi, device == 1 ? BBMM_WRITE : BBMM_READ), "require");
    check(bbmm_tile_acquire(t), "acquire");
    check(bbmm_tile_launch(t, fill, nullptr, 0), "launch");
    check(bbmm_tile_release(t), "release");
  }
  check(bbmm_synchronize(rt), "synchronize");
  std::printf("rank %d finished: the failure of rank 1 did not stop it\n", bbmm_rank(rt));
  check(bbmm_runtime_destroy(rt), "destroy");
  return 0;
}
