// Hazards (core/hazards.h) against a plain list: a random sequence of reads and
// writes of random boxes, on a few in-order queues, with events that complete at
// random. Before every operation, what Hazards::before returns for its box must
// cover what the plain list (every operation recorded, nothing dropped or
// merged) says to wait for: each such operation is complete, or its completion
// follows from that of a returned event (the same operation, a later one of the
// same queue, or one that waited for it, transitively). The sequences keep
// hundreds of operations in flight, so that the in-flight lists are merged (one
// entry per queue and mode, the hull of the boxes).

#include <gtest/gtest.h>

#include <bitset>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "bbmm/box.h"
#include "core/backend.h"
#include "core/hazards.h"

namespace bbmm::detail {
namespace {

// An operation on queue `queue`, the `seq`-th there; complete once the queue's
// completed count passes it (queues complete in order).
// `queries`, when given, counts the calls of query() (on a GPU, each a driver call).
class FakeEvent final : public EventState {
 public:
  FakeEvent(const int* completed, const void* queue, uint64_t seq, int* queries = nullptr)
      : completed_(completed), queries_(queries) {
    set_queue(queue, seq);
  }
  bool query() const override {
    if (queries_ != nullptr) ++*queries_;
    return static_cast<uint64_t>(*completed_) >= sequence();
  }
  absl::Status wait() const override { return absl::OkStatus(); }

 private:
  const int* completed_;
  int* queries_;
};

struct Op {
  Box box;
  bool write;
  Event done;
};

Box random_box(std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> c(0, 15);
  int64_t a = c(rng), b = c(rng), x = c(rng), y = c(rng);
  return *Box::create({std::min(a, b), std::min(x, y)}, {std::max(a, b) + 1, std::max(x, y) + 1});
}

TEST(Hazards, BeforeCoversEveryUnfinishedOperationAPlainListWaitsFor) {
  constexpr int kSteps = 600;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    constexpr int kQueues = 3;
    std::vector<int> completed(kQueues, 0), issued(kQueues, 0);
    Hazards h;
    std::vector<Op> all;
    std::vector<int> queue_of;
    // done_implies[i]: the operations complete once operation i is.
    std::vector<std::bitset<kSteps>> done_implies;
    std::map<const EventState*, size_t> index;
    for (int step = 0; step < kSteps; ++step) {
      const int q = static_cast<int>(rng() % kQueues);
      const Box box = random_box(rng);
      const bool write = rng() % 3 == 0;
      std::vector<Event> got;
      h.before(box, write, got);
      std::bitset<kSteps> implied;
      for (const Event& g : got) implied |= done_implies[index.at(g.state())];
      for (size_t j = 0; j < all.size(); ++j) {
        const Op& op = all[j];
        if (!(write || op.write) || !overlaps(op.box, box) || op.done.done()) continue;
        ASSERT_TRUE(implied.test(j))
            << "seed " << seed << " step " << step << ": an unfinished "
            << (op.write ? "write" : "read") << " of " << op.box.to_string()
            << " is not waited for by a " << (write ? "write" : "read") << " of "
            << box.to_string();
      }
      Event done(std::make_shared<FakeEvent>(&completed[q], &completed[q], ++issued[q]));
      h.after(box, write, done);
      // This operation completes after what it waited for and after the earlier
      // operations of its queue.
      std::bitset<kSteps> mine = implied;
      for (size_t j = 0; j < all.size(); ++j) {
        if (queue_of[j] == q) mine |= done_implies[j];
      }
      mine.set(all.size());
      index[done.state()] = all.size();
      all.push_back({box, write, done});
      queue_of.push_back(q);
      done_implies.push_back(mine);
      // Rarely complete some: many stay in flight, and the lists get merged.
      if (rng() % 50 == 0) {
        const int c = static_cast<int>(rng() % kQueues);
        completed[c] = std::min(issued[c], completed[c] + static_cast<int>(rng() % 20));
      }
    }
    EXPECT_LE(h.size(), 2 * Hazards::kMaxInFlight + 2 * kQueues)
        << "seed " << seed << ": the in-flight list was not kept short";
  }
}

// The calling thread runs ahead of the devices: a long list of operations in
// flight on two queues, part of one queue complete. Pruning asks a few events
// per queue (the latest, then a bisection), not every entry, and drops exactly
// the completed ones.
TEST(Hazards, PruneAsksAFewEventsPerQueueNotEveryEntry) {
  int completed[2] = {0, 0};
  int queries = 0;
  Hazards h;
  std::vector<Event> events;
  // Reads of disjoint boxes (none stands for another), alternating queues.
  const int kOps = 31;
  for (int k = 0; k < kOps; ++k) {
    const int q = k % 2;
    Event e(std::make_shared<FakeEvent>(&completed[q], &completed[q], k / 2 + 1, &queries));
    events.push_back(e);
    h.after(*Box::create({k, 0}, {k + 1, 4}), /*write=*/false, e);
  }
  ASSERT_EQ(h.size(), static_cast<size_t>(kOps));
  ASSERT_EQ(queries, 0);
  completed[0] = 5;  // queue 0: its first 5 operations (of 16) are complete
  // The 32nd entry triggers the prune.
  Event last(std::make_shared<FakeEvent>(&completed[1], &completed[1], 16, &queries));
  h.after(*Box::create({kOps, 0}, {kOps + 1, 4}), /*write=*/false, last);
  // Per queue: the latest, then at most log2(16) + 1 more.
  EXPECT_LE(queries, 2 * (1 + 5));
  EXPECT_GT(queries, 0);
  EXPECT_EQ(h.size(), static_cast<size_t>(kOps + 1 - 5));
  // What is left: every operation but the completed ones.
  std::vector<Event> waits;
  h.before(*Box::create({0, 0}, {kOps + 1, 4}), /*write=*/true, waits);
  // One event per queue stands for its queue's operations (the latest).
  ASSERT_EQ(waits.size(), 2u);
  for (const Event& w : waits) EXPECT_EQ(w.state()->sequence(), 16u);
}

// A list that stays short (a stencil's kernels re-reading the same halo: each
// read stands for the one before) never reaches the size that prunes it; an
// operation long complete (the instance's first read-in) must still leave it,
// or every later write of its box waits for it again. Pruned every
// Hazards::kPruneEvery operations, at a handful of queries each.
TEST(Hazards, CompletedEntriesLeaveAShortListToo) {
  int completed[2] = {0, 0};
  int queries = 0;
  Hazards h;
  Event first(std::make_shared<FakeEvent>(&completed[0], &completed[0], 1, &queries));
  h.after(*Box::create({0, 0}, {8, 8}), /*write=*/true, first);
  completed[0] = 1;  // the read-in is complete
  const int kOps = 3 * Hazards::kPruneEvery;
  for (int k = 0; k < kOps; ++k) {
    Event e(std::make_shared<FakeEvent>(&completed[1], &completed[1], k + 1, &queries));
    h.after(*Box::create({0, 0}, {8, 8}), /*write=*/false, e);
    ASSERT_LE(h.size(), 2u) << "after operation " << k;
  }
  std::vector<Event> waits;
  h.before(*Box::create({2, 2}, {4, 4}), /*write=*/true, waits);
  ASSERT_EQ(waits.size(), 1u) << "a write waits for the completed read-in again";
  EXPECT_EQ(waits[0].state()->queue(), &completed[1]);
  EXPECT_EQ(waits[0].state()->sequence(), static_cast<uint64_t>(kOps));
  // At most a few queries per prune (the latest entry of each queue, a bisection).
  EXPECT_LE(queries, 3 * 2 * 2);
}

}  // namespace
}  // namespace bbmm::detail
