// Staged copies (cuda/cuda_staging.h): random rectangular host<->device copies
// cut into rounds, packed by the copier's threads, moved by a plain
// rectangular copy (what the copy engine does with staged_device_op), and
// compared with the same copies done directly (the oracle: a loop over the
// original rectangle). No CUDA involved.
#include "cuda/cuda_staging.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace bbmm {
namespace {

// What the copy engine does: copies `op`'s rectangle from src to dst
// (both addressed by base + offset).
void rect_copy(const CopyOp& op) {
  const CopyShape& s = op.shape;
  for (size_t z = 0; z < s.depth; ++z) {
    for (size_t y = 0; y < s.height; ++y) {
      std::memcpy(static_cast<char*>(op.dst.base) + op.dst.offset + z * op.dst.slice_pitch +
                      y * op.dst.row_pitch,
                  static_cast<const char*>(op.src.base) + op.src.offset +
                      z * op.src.slice_pitch + y * op.src.row_pitch,
                  s.width_bytes);
    }
  }
}

// A random rectangle of at most `max_bytes` in a buffer of `size` bytes:
// pitches at least its width, offset so that it fits.
Endpoint random_side(std::mt19937_64& rng, const CopyShape& s, size_t size, void* base, int device) {
  std::uniform_int_distribution<size_t> extra(0, 40);
  Endpoint e;
  e.device = device;
  e.base = base;
  e.row_pitch = s.width_bytes + extra(rng);
  e.slice_pitch = e.row_pitch * s.height + extra(rng);
  const size_t span = (s.depth - 1) * e.slice_pitch + (s.height - 1) * e.row_pitch + s.width_bytes;
  e.offset = std::uniform_int_distribution<size_t>(0, size - span)(rng);
  return e;
}

struct Case {
  std::vector<CopyOp> ops;
  std::vector<char> host, device;
};

// `n` copies between a host buffer and a device buffer, none overlapping
// another's destination (each gets its own slot of both buffers).
Case random_case(std::mt19937_64& rng, int n, size_t max_width, size_t max_rows, size_t max_planes,
                 bool host_is_dst) {
  Case c;
  std::vector<CopyShape> shapes;
  size_t slot = 0;
  for (int i = 0; i < n; ++i) {
    CopyShape s;
    s.width_bytes = std::uniform_int_distribution<size_t>(1, max_width)(rng);
    s.height = std::uniform_int_distribution<size_t>(1, max_rows)(rng);
    s.depth = std::uniform_int_distribution<size_t>(1, max_planes)(rng);
    shapes.push_back(s);
    slot = std::max(slot, (s.width_bytes + 40) * s.height * s.depth + 40 * s.depth + 64);
  }
  c.host.resize(slot * n);
  c.device.resize(slot * n);
  std::uniform_int_distribution<int> byte(0, 255);
  for (char& b : c.host) b = static_cast<char>(byte(rng));
  for (char& b : c.device) b = static_cast<char>(byte(rng));
  for (int i = 0; i < n; ++i) {
    Endpoint h = random_side(rng, shapes[i], slot, c.host.data() + i * slot, kHost);
    Endpoint d = random_side(rng, shapes[i], slot, c.device.data() + i * slot, 0);
    c.ops.push_back(host_is_dst ? CopyOp{h, d, shapes[i]} : CopyOp{d, h, shapes[i]});
  }
  return c;
}

// Runs `c` staged with `capacity` and `copier`, and directly on a copy of its
// buffers; the buffers must come out equal.
void check_staged(Case& c, bool host_is_dst, size_t capacity, StagingCopier& copier) {
  // The oracle: every op directly, on copies of the buffers (re-pointed).
  Case direct = c;
  for (CopyOp& op : direct.ops) {
    for (Endpoint* e : {&op.dst, &op.src}) {
      const bool on_host = e->device == kHost;
      const char* from = on_host ? c.host.data() : c.device.data();
      char* to = on_host ? direct.host.data() : direct.device.data();
      e->base = to + (static_cast<const char*>(e->base) - from);
    }
    rect_copy(op);
  }
  std::vector<StagedRound> rounds;
  plan_staging(c.ops, capacity, &rounds);
  std::vector<char> buffer(capacity + 64);
  size_t bytes = 0, ops_bytes = 0;
  for (const CopyOp& op : c.ops) ops_bytes += op.shape.width_bytes * op.shape.height * op.shape.depth;
  for (const StagedRound& r : rounds) {
    ASSERT_FALSE(r.pieces.empty());
    ASSERT_LE(r.bytes, capacity);
    size_t end = 0;
    for (const StagedPiece& p : r.pieces) {
      const size_t pb = p.op.shape.width_bytes * p.op.shape.height * p.op.shape.depth;
      ASSERT_GT(pb, 0u);
      ASSERT_EQ(p.offset % kStagingAlign, 0u);
      ASSERT_GE(p.offset, end);  // sorted and disjoint
      end = p.offset + pb;
      bytes += pb;
    }
    ASSERT_EQ(end, r.bytes);
    // Poison the buffer: every byte the device reads must have been packed.
    std::fill(buffer.begin(), buffer.end(), '\x5a');
    if (!host_is_dst) copier.run(r, false, buffer.data());
    for (const StagedPiece& p : r.pieces) rect_copy(staged_device_op(p, host_is_dst, buffer.data()));
    if (host_is_dst) copier.run(r, true, buffer.data());
  }
  EXPECT_EQ(bytes, ops_bytes);
  EXPECT_TRUE(c.host == direct.host) << "host bytes differ from the direct copies";
  EXPECT_TRUE(c.device == direct.device) << "device bytes differ from the direct copies";
}

// Streaming stores copy exactly n bytes whatever the alignment of either
// side: every length up to 300 at every destination and source misalignment
// up to 16, between guard bytes that must stay untouched.
TEST(Staging, StreamingCopiesMatchMemcpyAtEveryAlignment) {
  std::vector<unsigned char> src(400), dst(400);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 1);
  for (size_t n = 0; n <= 300; n += (n < 70 ? 1 : 13)) {
    for (size_t da = 0; da < 16; ++da) {
      for (size_t sa = 0; sa < 16; sa += 5) {
        std::fill(dst.begin(), dst.end(), 0xAB);
        copy_streaming(dst.data() + 32 + da, src.data() + 32 + sa, n);
        std::vector<unsigned char> want(dst.size(), 0xAB);
        std::memcpy(want.data() + 32 + da, src.data() + 32 + sa, n);
        ASSERT_EQ(dst, want) << "n " << n << " dst +" << da << " src +" << sa;
      }
    }
  }
}

TEST(Staging, SmallCopiesShareRounds) {
  std::mt19937_64 rng(1);
  StagingCopier copier(1);
  for (bool to_host : {false, true}) {
    Case c = random_case(rng, 40, 64, 4, 2, to_host);
    check_staged(c, to_host, 4096, copier);
  }
}

TEST(Staging, LargeCopiesAreCutIntoPlanesRowsAndRowPieces) {
  std::mt19937_64 rng(2);
  StagingCopier copier(1);
  for (int trial = 0; trial < 200; ++trial) {
    const bool to_host = trial % 2 == 1;
    Case c = random_case(rng, 1 + trial % 4, 700, 9, 5, to_host);
    // Capacities below a row, below a plane, below a copy, above.
    const size_t capacity = std::uniform_int_distribution<size_t>(256, 20000)(rng);
    check_staged(c, to_host, capacity, copier);
    if (HasFatalFailure() || HasFailure()) return;
  }
}

TEST(Staging, ARoundIsSplitOverTheCopierThreads) {
  // Rounds of several MiB: parts of 1 MiB on up to 6 threads, concurrent
  // callers (as host functions of several streams).
  std::mt19937_64 rng(3);
  StagingCopier copier(6);
  std::vector<Case> cases;
  for (int i = 0; i < 4; ++i) cases.push_back(random_case(rng, 6, 4000, 300, 3, i % 2 == 1));
  std::vector<std::thread> callers;
  for (int i = 0; i < 4; ++i) {
    callers.emplace_back([&, i] { check_staged(cases[i], i % 2 == 1, size_t{6} << 20, copier); });
  }
  for (std::thread& t : callers) t.join();
}

TEST(Staging, AHostFunctionJobRunsAndFreesItself) {
  std::mt19937_64 rng(4);
  StagingCopier copier(2);
  Case c = random_case(rng, 3, 100, 3, 1, false);
  std::vector<StagedRound> rounds;
  plan_staging(c.ops, 1 << 20, &rounds);
  ASSERT_EQ(rounds.size(), 1u);
  std::vector<char> buffer(1 << 20, 0);
  const StagedRound copy = rounds[0];
  run_staged_round(new StagedJob{&copier, std::move(rounds[0]), false, buffer.data()});
  for (const StagedPiece& p : copy.pieces) {
    const CopyOp d = staged_device_op(p, false, buffer.data());
    // The packed bytes are the host rectangle's.
    const CopyShape& s = p.op.shape;
    for (size_t y = 0; y < s.height; ++y) {
      ASSERT_EQ(0, std::memcmp(static_cast<char*>(d.src.base) + d.src.offset + y * s.width_bytes,
                               static_cast<char*>(p.op.src.base) + p.op.src.offset +
                                   y * p.op.src.row_pitch,
                               s.width_bytes));
    }
  }
}

}  // namespace
}  // namespace bbmm
