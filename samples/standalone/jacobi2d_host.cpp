// A hand-written 2-D Jacobi on several simulated devices (host backend) through
// libbbmm's public C API: row-block partition, each device's block split into tiles,
// halo rows pushed to the neighbouring devices by flow_out, each device's allocation
// hull reserved up front (bbmm_reserve: no instance grows, so bytes_d2d is 0), or a
// device capacity small enough to force box-out every step (--capacity auto).
// Verified against the sequential loop; prints the runtime's statistics and one
// machine-readable RESULT line (see stencil_common.h).
//
//   jacobi2d_host [--n N] [--steps T] [--devices D] [--tiles-per-device K]
//                 [--capacity BYTES|auto|none] [--no-reserve] [--json] [--plan]
//
// Exit codes: 0 verified, 1 usage or runtime error, 2 verification failed, 3 an
// instance grew although the hulls were reserved.
#include <cstdio>
#include <string>

#include "stencil_common.h"

namespace {

using stencil::Pieces;

void init(double* a, double* b, int64_t n, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i)
    for (int64_t j = 0; j < n; ++j) {
      a[i * n + j] = static_cast<double>((i * 7 + j * 13) % 101) / 101.0;
      b[i * n + j] = static_cast<double>((i * 3 + j * 5) % 37) / 37.0;
    }
}

void cpu_loop(double* a, double* b, int64_t n, int steps) {
  for (int t = 0; t < steps; ++t) {
    for (int64_t i = 1; i < n - 1; ++i)
      for (int64_t j = 1; j < n - 1; ++j)
        b[i * n + j] = 0.2 * (a[i * n + j] + a[i * n + j - 1] + a[i * n + j + 1] +
                              a[(i + 1) * n + j] + a[(i - 1) * n + j]);
    for (int64_t i = 1; i < n - 1; ++i)
      for (int64_t j = 1; j < n - 1; ++j)
        a[i * n + j] = 0.2 * (b[i * n + j] + b[i * n + j - 1] + b[i * n + j + 1] +
                              b[(i + 1) * n + j] + b[(i - 1) * n + j]);
  }
}

// Kernel arguments: copied by bbmm_tile_launch, so the kernel (which runs on the
// device's worker thread after the tile's read-ins) owns them.
struct Args {
  Pieces in, out;
  int64_t lo, hi, n;
};

double* at(const Pieces& v, int64_t i, int64_t j) {
  const int64_t idx[2] = {i, j};
  for (int k = 0; k < v.n; ++k) {
    if (bbmm_piece_contains(&v.p[k], 2, idx)) {
      return static_cast<double*>(bbmm_piece_at(&v.p[k], sizeof(double), 2, idx));
    }
  }
  std::fprintf(stderr, "jacobi2d_host: element (%ld, %ld) is in no piece\n", static_cast<long>(i),
               static_cast<long>(j));
  std::abort();
}

void kernel(const bbmm_launch_info*, void* p) {
  const Args& a = *static_cast<const Args*>(p);
  if (a.in.n == 1 && a.out.n == 1) {
    // One piece each: row pointers, no lookup.
    const bbmm_piece &pi = a.in.p[0], &po = a.out.p[0];
    for (int64_t i = a.lo; i < a.hi; ++i) {
      const int64_t r0[2] = {i - 1, 1}, r1[2] = {i, 1}, r2[2] = {i + 1, 1}, w[2] = {i, 1};
      const double* up = static_cast<const double*>(bbmm_piece_at(&pi, sizeof(double), 2, r0));
      const double* mid = static_cast<const double*>(bbmm_piece_at(&pi, sizeof(double), 2, r1));
      const double* down = static_cast<const double*>(bbmm_piece_at(&pi, sizeof(double), 2, r2));
      double* out = static_cast<double*>(bbmm_piece_at(&po, sizeof(double), 2, w));
      for (int64_t c = 0; c < a.n - 2; ++c)
        out[c] = 0.2 * (mid[c] + mid[c - 1] + mid[c + 1] + down[c] + up[c]);
    }
    return;
  }
  for (int64_t i = a.lo; i < a.hi; ++i)
    for (int64_t j = 1; j < a.n - 1; ++j)
      *at(a.out, i, j) = 0.2 * (*at(a.in, i, j) + *at(a.in, i, j - 1) + *at(a.in, i, j + 1) +
                                *at(a.in, i + 1, j) + *at(a.in, i - 1, j));
}

std::string launch(bbmm_tile* t, const bbmm_view& src, const bbmm_view& dst, int64_t lo, int64_t hi,
                   int64_t n, stencil::LaunchCounts* counts) {
  Args args;
  if (!stencil::copy_pieces(src, &args.in) || !stencil::copy_pieces(dst, &args.out)) {
    return "a view has " + std::to_string(std::max(src.npieces, dst.npieces)) +
           " pieces; the kernel takes at most " + std::to_string(stencil::kMaxPieces);
  }
  args.lo = lo;
  args.hi = hi;
  args.n = n;
  (args.in.n == 1 && args.out.n == 1 ? counts->single_piece : counts->generic)++;
  if (bbmm_tile_launch(t, kernel, &args, sizeof args) != BBMM_OK) {
    return std::string("bbmm_tile_launch: ") + bbmm_last_error_message();
  }
  return "";
}

// Own rows read all n columns, halo rows the n-2 interior ones; n-2 written per row.
// In: all of A but its 4 corners, and B's boundary without corners (read in phase 2
// before any write); out: both interiors.
stencil::Traffic traffic(int64_t n, int steps, const stencil::Partition& p) {
  stencil::Traffic t;
  if (steps == 0) return t;
  t.device = stencil::device_bytes(p, steps, n, n - 2, n - 2);
  t.h2d_min = static_cast<uint64_t>(n * n - 4 + 4 * (n - 2)) * sizeof(double);
  t.d2h_min = static_cast<uint64_t>(2 * (n - 2) * (n - 2)) * sizeof(double);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const stencil::Sample s{"jacobi2d", "jacobi2d_host",  2,       BBMM_BACKEND_HOST, init,   launch,
                          cpu_loop,   int64_t{1} << 40, nullptr, nullptr,           traffic};
  stencil::Options o;
  o.n = 512;
  o.steps = 20;
  o.devices = 4;
  const int rc = stencil::parse_options(argc, argv, s.program, &o);
  if (rc >= 0) return rc;
  return stencil::run(s, o);
}
