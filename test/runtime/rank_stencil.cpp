#include "rank_stencil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "bbmm/view.h"

namespace bbmm::testing {
namespace {

// The kernel's arguments: a view's pieces live until the tile's release, and
// the kernel may run after it, so the pieces travel in the arguments.
constexpr int kMaxPieces = 4;
struct Pieces {
  int n;
  bbmm_piece p[kMaxPieces];
};
struct Args {
  int64_t lo, hi;  // the elements the tile writes
  Pieces src, dst;
};

bool copy_pieces(const bbmm_view& v, Pieces* out) {
  if (v.npieces > kMaxPieces) return false;
  out->n = v.npieces;
  for (int k = 0; k < v.npieces; ++k) out->p[k] = v.pieces[k];
  return true;
}

double* at(const Pieces& ps, int64_t i) {
  const bbmm_view v{1, ps.n, sizeof(double), ps.p};
  return static_cast<double*>(bbmm_view_at(&v, &i));
}

void jacobi_kernel(const bbmm_launch_info*, void* p) {
  const Args& a = *static_cast<const Args*>(p);
  for (int64_t i = a.lo; i < a.hi; ++i) {
    *at(a.dst, i) = 0.33333 * (*at(a.src, i - 1) + *at(a.src, i) + *at(a.src, i + 1));
  }
}

// [lo, hi) of the interior [1, n-1) split in `parts`, part k.
void split(int64_t n, int parts, int k, int64_t* lo, int64_t* hi) {
  const int64_t m = n - 2;
  *lo = 1 + m * k / parts;
  *hi = 1 + m * (k + 1) / parts;
}

#define BBMM_OK_OR_FAIL(call) ASSERT_EQ((call), BBMM_OK) << #call << ": " << bbmm_last_error_message()

// Both stencils' input.
std::vector<double> initial_values(int64_t n) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * 37) % 101) / 7.0;
  return v;
}

// The sequential program on `a` and `b`.
void run_sequential(int64_t n, int steps, std::vector<double>* a, std::vector<double>* b) {
  for (int t = 0; t < steps; ++t) {
    for (int64_t i = 1; i < n - 1; ++i) (*b)[i] = 0.33333 * ((*a)[i - 1] + (*a)[i] + (*a)[i + 1]);
    for (int64_t i = 1; i < n - 1; ++i) (*a)[i] = 0.33333 * ((*b)[i - 1] + (*b)[i] + (*b)[i + 1]);
  }
}

// One tile on `device`: dst[lo, hi) from src[lo-1, hi+1), its edge elements
// flowed out for the neighbouring tiles of other devices.
void run_tile(bbmm_runtime* rt, int device, bbmm_array* src, bbmm_array* dst, int64_t lo,
              int64_t hi) {
  bbmm_tile* tile = nullptr;
  BBMM_OK_OR_FAIL(bbmm_tile_begin(rt, device, &tile));
  const int64_t rlo = lo - 1, rhi = hi + 1;
  BBMM_OK_OR_FAIL(bbmm_tile_require(tile, src, &rlo, &rhi, BBMM_READ));
  BBMM_OK_OR_FAIL(bbmm_tile_require(tile, dst, &lo, &hi, BBMM_WRITE));
  BBMM_OK_OR_FAIL(bbmm_tile_acquire(tile));
  Args args{lo, hi, {}, {}};
  bbmm_view vs, vd;
  BBMM_OK_OR_FAIL(bbmm_tile_view(tile, src, &vs));
  BBMM_OK_OR_FAIL(bbmm_tile_view(tile, dst, &vd));
  ASSERT_TRUE(copy_pieces(vs, &args.src) && copy_pieces(vd, &args.dst));
  BBMM_OK_OR_FAIL(bbmm_tile_launch(tile, jacobi_kernel, &args, sizeof args));
  const int64_t lo1 = lo + 1, hi1 = hi - 1;
  BBMM_OK_OR_FAIL(bbmm_tile_flow_out(tile, dst, &lo, &lo1));
  BBMM_OK_OR_FAIL(bbmm_tile_flow_out(tile, dst, &hi1, &hi));
  BBMM_OK_OR_FAIL(bbmm_tile_release(tile));
}

}  // namespace

void run_global_stencil(bbmm_runtime* rt, int64_t n, int steps, bool every_rank) {
  const int devices = bbmm_device_count(rt);
  std::vector<double> a = initial_values(n), b = a, ref_a = a, ref_b = a;
  bbmm_array *A = nullptr, *B = nullptr;
  BBMM_OK_OR_FAIL(bbmm_array_register(rt, "A", a.data(), sizeof(double), 1, &n, nullptr, 0, &A));
  BBMM_OK_OR_FAIL(bbmm_array_register(rt, "B", b.data(), sizeof(double), 1, &n, nullptr, 0, &B));
  for (int t = 0; t < steps; ++t) {
    for (int phase = 0; phase < 2; ++phase) {
      for (int d = 0; d < devices; ++d) {
        int64_t lo, hi;
        split(n, devices, d, &lo, &hi);
        if (lo >= hi) continue;
        ASSERT_NO_FATAL_FAILURE(run_tile(rt, d, phase == 0 ? A : B, phase == 0 ? B : A, lo, hi));
      }
      BBMM_OK_OR_FAIL(bbmm_phase_boundary(rt));
    }
  }
  BBMM_OK_OR_FAIL(bbmm_array_unregister(rt, A));
  BBMM_OK_OR_FAIL(bbmm_array_unregister(rt, B));
  if (bbmm_rank(rt) != 0 && !every_rank) return;
  run_sequential(n, steps, &ref_a, &ref_b);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(a[i], ref_a[i]) << "A[" << i << "] on rank " << bbmm_rank(rt);
    ASSERT_EQ(b[i], ref_b[i]) << "B[" << i << "] on rank " << bbmm_rank(rt);
  }
}

std::vector<uint64_t> global_stencil_bytes_received(int64_t n, int steps, int ranks,
                                                    int devices) {
  std::vector<uint64_t> got(ranks, 0);
  // current[array][rank][element]: that rank holds the current value.
  std::vector<std::vector<std::vector<char>>> current(
      2, std::vector<std::vector<char>>(ranks, std::vector<char>(n, 1)));
  const int all = ranks * devices;
  for (int t = 0; t < steps; ++t) {
    for (int phase = 0; phase < 2; ++phase) {
      auto& src = current[phase == 0 ? 0 : 1];
      auto& dst = current[phase == 0 ? 1 : 0];
      for (int d = 0; d < all; ++d) {
        int64_t lo, hi;
        split(n, all, d, &lo, &hi);
        if (lo >= hi) continue;
        const int owner = d / devices;
        for (int64_t e = lo - 1; e < hi + 1; ++e) {
          if (!src[owner][e]) {
            got[owner] += sizeof(double);
            src[owner][e] = 1;
          }
        }
        for (int64_t e = lo; e < hi; ++e) {
          for (int r = 0; r < ranks; ++r) dst[r][e] = r == owner;
        }
      }
    }
  }
  for (int a = 0; a < 2; ++a) {
    for (int64_t e = 0; e < n; ++e) got[0] += current[a][0][e] ? 0 : sizeof(double);
  }
  return got;
}

uint64_t tight_device_memory(int64_t n, int ranks, int devices) {
  const int64_t rows = (n - 2 + ranks - 1) / ranks;
  const int64_t len = (rows + devices - 1) / devices;
  return static_cast<uint64_t>((2 * len + 2) * sizeof(double) + 64);
}

void run_rank_stencil(bbmm_runtime* rt, int64_t n, int steps) {
  const int me = bbmm_rank(rt), ranks = bbmm_rank_count(rt), devices = bbmm_device_count(rt);
  std::vector<double> a = initial_values(n), b = a, ref_a = a, ref_b = a;
  bbmm_array *A = nullptr, *B = nullptr;
  BBMM_OK_OR_FAIL(bbmm_array_register(rt, "A", a.data(), sizeof(double), 1, &n, nullptr, 0, &A));
  BBMM_OK_OR_FAIL(bbmm_array_register(rt, "B", b.data(), sizeof(double), 1, &n, nullptr, 0, &B));
  int64_t own_lo, own_hi;
  split(n, ranks, me, &own_lo, &own_hi);
  for (int t = 0; t < steps; ++t) {
    for (int phase = 0; phase < 2; ++phase) {
      bbmm_array* src = phase == 0 ? A : B;
      bbmm_array* dst = phase == 0 ? B : A;
      for (int d = 0; d < devices; ++d) {
        int64_t lo, hi;
        split(own_hi - own_lo + 2, devices, d, &lo, &hi);  // within the rank's rows
        lo += own_lo - 1;
        hi += own_lo - 1;
        if (lo >= hi) continue;
        ASSERT_NO_FATAL_FAILURE(run_tile(rt, d, src, dst, lo, hi));
      }
      // The rank's edge elements to the neighbouring ranks, theirs in.
      const int tag = (t * 2 + phase) * 2;
      const int64_t first = own_lo, first1 = own_lo + 1, last = own_hi - 1, last1 = own_hi;
      const int64_t before = own_lo - 1, after = own_hi + 1;
      if (me > 0) {
        BBMM_OK_OR_FAIL(bbmm_array_send(rt, dst, &first, &first1, me - 1, tag));
        BBMM_OK_OR_FAIL(bbmm_array_receive(rt, dst, &before, &first, me - 1, tag + 1));
      }
      if (me + 1 < ranks) {
        BBMM_OK_OR_FAIL(bbmm_array_send(rt, dst, &last, &last1, me + 1, tag + 1));
        BBMM_OK_OR_FAIL(bbmm_array_receive(rt, dst, &last1, &after, me + 1, tag));
      }
    }
  }
  // Every rank's rows of A to rank 0.
  const int gather = 30000;  // MPI guarantees tags up to 32767
  if (me == 0) {
    for (int r = 1; r < ranks; ++r) {
      int64_t lo, hi;
      split(n, ranks, r, &lo, &hi);
      BBMM_OK_OR_FAIL(bbmm_array_receive(rt, A, &lo, &hi, r, gather));
    }
  } else {
    BBMM_OK_OR_FAIL(bbmm_array_send(rt, A, &own_lo, &own_hi, 0, gather));
  }
  BBMM_OK_OR_FAIL(bbmm_array_unregister(rt, A));
  BBMM_OK_OR_FAIL(bbmm_array_unregister(rt, B));
  bbmm_stats st;
  BBMM_OK_OR_FAIL(bbmm_stats_get(rt, -1, &st));
  if (ranks > 1) {
    EXPECT_GT(st.bytes_sent_ranks, 0u);
    EXPECT_GT(st.bytes_received_ranks, 0u);
  }
  if (me != 0) return;
  run_sequential(n, steps, &ref_a, &ref_b);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(a[i], ref_a[i]) << "A[" << i << "] on rank 0";
}

}  // namespace bbmm::testing
