#include "transport_checks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace bbmm::testing {
namespace {

constexpr int64_t kRows = 23, kCols = 41;

// The value rank `r` keeps at A[i][j] (exact in a double).
double value_of(int r, int64_t i, int64_t j) { return r * 10000.0 + i * 100.0 + j; }

// Deterministic numbers shared by all ranks: the k-th of rank r's stream.
uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}
int64_t pick(int r, int k, int slot, int64_t n) {  // in [0, n)
  return static_cast<int64_t>(mix((uint64_t(r) << 40) ^ (uint64_t(k) << 8) ^ uint64_t(slot)) %
                              uint64_t(n));
}

// Rank r's k-th box of A, and where its receiver puts it (same extents).
struct Move {
  int64_t lo[2], ext[2], to[2];
};
Move move_of(int r, int k) {
  Move m;
  const int64_t dims[2] = {kRows, kCols};
  for (int d = 0; d < 2; ++d) {
    m.ext[d] = 1 + pick(r, k, d, dims[d]);
    m.lo[d] = pick(r, k, 2 + d, dims[d] - m.ext[d] + 1);
    m.to[d] = pick(r, k, 4 + d, dims[d] - m.ext[d] + 1);
  }
  return m;
}
Box box2(int64_t lo0, int64_t lo1, int64_t e0, int64_t e1) {
  const int64_t lo[2] = {lo0, lo1}, hi[2] = {lo0 + e0, lo1 + e1};
  return Box::make_unchecked(2, lo, hi);
}
HostArrayRef ref(const char* name, void* base, size_t elem, std::vector<int64_t> extents) {
  HostArrayRef a;
  a.name = name;
  a.base = base;
  a.elem_size = elem;
  a.extents = std::move(extents);
  return a;
}

}  // namespace

void run_transport_checks(Transport& t) {
  const int me = t.rank(), n = t.size();
  ASSERT_GE(n, 1);
  ASSERT_TRUE(me >= 0 && me < n);

  // all_gather: every rank's value, in rank order, twice in a row.
  for (int round = 0; round < 2; ++round) {
    absl::StatusOr<std::vector<int64_t>> all = t.all_gather(me * 7 + 1 + round);
    ASSERT_TRUE(all.ok()) << all.status();
    ASSERT_EQ(all->size(), size_t(n));
    for (int r = 0; r < n; ++r) EXPECT_EQ((*all)[r], r * 7 + 1 + round) << "round " << round;
  }

  std::vector<double> a(kRows * kCols);
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t j = 0; j < kCols; ++j) a[i * kCols + j] = value_of(me, i, j);
  }
  HostArrayRef A = ref("A", a.data(), sizeof(double), {kRows, kCols});

  // Bad arguments: clear errors naming the array, nothing sent.
  {
    absl::StatusOr<Event> e = t.send(A, box2(20, 0, 4, 3), (me + 1) % n, 1);
    EXPECT_FALSE(e.ok());
    EXPECT_NE(std::string(e.status().message()).find("'A'"), std::string::npos) << e.status();
    EXPECT_NE(std::string(e.status().message()).find("outside"), std::string::npos) << e.status();
    e = t.send(A, box2(0, 0, 1, 1), me, 1);
    EXPECT_FALSE(e.ok()) << "a send to this rank";
    e = t.receive(A, box2(0, 0, 1, 1), (me + 1) % n, -1);
    EXPECT_FALSE(e.ok()) << "a negative tag";
    const int64_t lo[1] = {0}, hi[1] = {3};
    e = t.send(A, Box::make_unchecked(1, lo, hi), (me + 1) % n, 1);
    EXPECT_FALSE(e.ok()) << "a box of another rank than the array's";
  }
  if (n < 2) return;
  const int next = (me + 1) % n, prev = (me + n - 1) % n;

  // A ring: each rank sends 12 random boxes of A to the next rank, which puts
  // the k-th into its own array k at another place of the same extents.
  constexpr int kMoves = 12;
  std::vector<std::vector<double>> got(kMoves, std::vector<double>(kRows * kCols, -1.0));
  std::vector<Event> events;
  for (int k = 0; k < kMoves; ++k) {
    const Move out = move_of(me, k), in = move_of(prev, k);
    absl::StatusOr<Event> s = t.send(A, box2(out.lo[0], out.lo[1], out.ext[0], out.ext[1]), next, k);
    ASSERT_TRUE(s.ok()) << s.status();
    events.push_back(*s);
    HostArrayRef G = ref("G", got[k].data(), sizeof(double), {kRows, kCols});
    absl::StatusOr<Event> r = t.receive(G, box2(in.to[0], in.to[1], in.ext[0], in.ext[1]), prev, k);
    ASSERT_TRUE(r.ok()) << r.status();
    events.push_back(*r);
  }
  // Two sends with one tag arrive in order: the first into P, the second into Q.
  std::vector<double> f(kRows * kCols, -1.0);
  HostArrayRef F = ref("F", f.data(), sizeof(double), {kRows, kCols});
  for (const Box& b : {box2(0, 0, 3, 5), box2(10, 20, 3, 5)}) {
    absl::StatusOr<Event> s = t.send(A, b, next, 500);
    ASSERT_TRUE(s.ok()) << s.status();
    events.push_back(*s);
  }
  for (const Box& b : {box2(1, 1, 3, 5), box2(5, 30, 3, 5)}) {
    absl::StatusOr<Event> r = t.receive(F, b, prev, 500);
    ASSERT_TRUE(r.ok()) << r.status();
    events.push_back(*r);
  }
  // A 3-D array of 4-byte elements.
  constexpr int64_t kX = 5, kY = 6, kZ = 7;
  std::vector<int32_t> c(kX * kY * kZ), cin(kX * kY * kZ, -1);
  for (int64_t x = 0; x < kX * kY * kZ; ++x) c[x] = static_cast<int32_t>(me * 1000 + x);
  HostArrayRef C = ref("C", c.data(), sizeof(int32_t), {kX, kY, kZ});
  HostArrayRef Cin = ref("Cin", cin.data(), sizeof(int32_t), {kX, kY, kZ});
  {
    const int64_t lo[3] = {1, 2, 3}, hi[3] = {4, 5, 7}, lo2[3] = {2, 0, 0}, hi2[3] = {5, 3, 4};
    absl::StatusOr<Event> s = t.send(C, Box::make_unchecked(3, lo, hi), next, 600);
    absl::StatusOr<Event> r = t.receive(Cin, Box::make_unchecked(3, lo2, hi2), prev, 600);
    ASSERT_TRUE(s.ok() && r.ok()) << s.status() << r.status();
    events.push_back(*s);
    events.push_back(*r);
  }
  for (const Event& e : events) EXPECT_TRUE(e.wait().ok()) << e.wait();

  for (int k = 0; k < kMoves; ++k) {
    const Move in = move_of(prev, k);
    for (int64_t i = 0; i < kRows; ++i) {
      for (int64_t j = 0; j < kCols; ++j) {
        const int64_t si = i - in.to[0] + in.lo[0], sj = j - in.to[1] + in.lo[1];
        const bool inside = i >= in.to[0] && i < in.to[0] + in.ext[0] && j >= in.to[1] &&
                            j < in.to[1] + in.ext[1];
        const double want = inside ? value_of(prev, si, sj) : -1.0;
        ASSERT_EQ(got[k][i * kCols + j], want) << "move " << k << " at " << i << "," << j;
      }
    }
  }
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t j = 0; j < kCols; ++j) {
      double want = -1.0;
      if (i >= 1 && i < 4 && j >= 1 && j < 6) want = value_of(prev, i - 1, j - 1);
      if (i >= 5 && i < 8 && j >= 30 && j < 35) want = value_of(prev, i + 5, j - 10);
      ASSERT_EQ(f[i * kCols + j], want) << "in-order sends at " << i << "," << j;
    }
  }
  for (int64_t x = 0; x < kX; ++x) {
    for (int64_t y = 0; y < kY; ++y) {
      for (int64_t z = 0; z < kZ; ++z) {
        int32_t want = -1;
        if (x >= 2 && y < 3 && z < 4) {
          want = static_cast<int32_t>(prev * 1000 + ((x - 1) * kY + (y + 2)) * kZ + (z + 3));
        }
        ASSERT_EQ(cin[(x * kY + y) * kZ + z], want) << x << "," << y << "," << z;
      }
    }
  }

  // A send waits for its `after` events: the box is changed after posting,
  // before the gate opens, and the receiver sees the change. A failed `after`
  // event fails the send, but the message still goes (the receiver is not left
  // waiting).
  {
    auto gate = std::make_shared<TransportEvent>();
    auto broken = std::make_shared<TransportEvent>();
    const Event g(gate), b(broken);
    absl::StatusOr<Event> s = t.send(A, box2(2, 3, 4, 5), next, 800, std::span<const Event>(&g, 1));
    absl::StatusOr<Event> s2 = t.send(A, box2(0, 0, 1, 2), next, 801, std::span<const Event>(&b, 1));
    std::vector<double> h(kRows * kCols, -1.0);
    HostArrayRef H = ref("H", h.data(), sizeof(double), {kRows, kCols});
    absl::StatusOr<Event> r = t.receive(H, box2(2, 3, 4, 5), prev, 800);
    absl::StatusOr<Event> r2 = t.receive(H, box2(10, 10, 1, 2), prev, 801);
    ASSERT_TRUE(s.ok() && s2.ok() && r.ok() && r2.ok());
    for (int64_t i = 2; i < 6; ++i) {
      for (int64_t j = 3; j < 8; ++j) a[i * kCols + j] = value_of(me, i, j) + 0.5;
    }
    gate->complete(absl::OkStatus());
    broken->complete(absl::DataLossError("the write-back failed"));
    EXPECT_TRUE(s->wait().ok()) << s->wait();
    EXPECT_TRUE(r->wait().ok()) << r->wait();
    absl::Status w2 = s2->wait();
    EXPECT_EQ(w2.code(), absl::StatusCode::kDataLoss) << w2;
    EXPECT_TRUE(r2->wait().ok()) << r2->wait();
    for (int64_t i = 2; i < 6; ++i) {
      for (int64_t j = 3; j < 8; ++j) {
        ASSERT_EQ(h[i * kCols + j], value_of(prev, i, j) + 0.5) << "gated send at " << i << "," << j;
      }
    }
    EXPECT_EQ(h[10 * kCols + 10], value_of(prev, 0, 0));
    EXPECT_EQ(h[10 * kCols + 11], value_of(prev, 0, 1));
  }

  // A receive whose box holds more elements than were sent fails, naming the
  // array (rank 1 from rank 0).
  if (me == 0) {
    absl::StatusOr<Event> s = t.send(A, box2(0, 0, 2, 3), 1, 700);
    ASSERT_TRUE(s.ok()) << s.status();
    (void)s->wait();  // the loopback fails it too, MPI does not
  } else if (me == 1) {
    std::vector<double> m(kRows * kCols, -1.0);
    HostArrayRef M = ref("M", m.data(), sizeof(double), {kRows, kCols});
    absl::StatusOr<Event> r = t.receive(M, box2(0, 0, 2, 4), 0, 700);
    ASSERT_TRUE(r.ok()) << r.status();
    absl::Status w = r->wait();
    EXPECT_FALSE(w.ok());
    EXPECT_NE(std::string(w.message()).find("'M'"), std::string::npos) << w;
  }
  // Everyone is done before the arrays go away.
  absl::StatusOr<std::vector<int64_t>> end = t.all_gather(0);
  EXPECT_TRUE(end.ok()) << end.status();
}

}  // namespace bbmm::testing
