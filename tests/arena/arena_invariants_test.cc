// The arena's checker: the chunk and region equations of chunk_store.h and the counters of
// BfcArena hold through a random workload, and each broken by hand is named.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "arena/chunk_store.h"
#include "arena_test_util.h"

namespace memarena::testing {
namespace {

using arena::ChunkStore;

TEST(ArenaInvariantsTest, HoldThroughARandomWorkloadOnBothStrategies) {
  for (const ArenaExtendStrategy strategy :
       {ArenaExtendStrategy::kNextPowerOfTwo, ArenaExtendStrategy::kSameAsRequested}) {
    ArenaConfig config;
    config.arena_extend_strategy = strategy;
    SimulatedArena sim(config);
    std::mt19937 rng(7);
    std::vector<void*> live;
    for (int i = 0; i < 2000; ++i) {
      if (!live.empty() && rng() % 3 == 0) {
        const std::size_t victim = rng() % live.size();
        sim.arena->Deallocate(live[victim]);
        live[victim] = live.back();
        live.pop_back();
      } else {
        const std::size_t bytes = 1 + rng() % (256 * kKiB);
        live.push_back(sim.arena->Allocate(bytes, std::size_t{1} << (rng() % 12)));
      }
      if (i % 100 == 0) {
        const char* problem = sim.arena->CheckInvariants();
        ASSERT_EQ(problem, nullptr) << problem;
      }
    }
    for (void* p : live) sim.arena->Deallocate(p);
    sim.arena->ReleaseUnusedSpans();
    const char* problem = sim.arena->CheckInvariants();
    EXPECT_EQ(problem, nullptr) << problem;
  }
}

class ChunkStoreInvariantsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    first_ = store_.AddPiece(kBase, 4 * kMiB, /*merge=*/false, /*pinned=*/false);
    store_.RemoveFree(first_);
    store_.Split(first_, kMiB);  // first_: 1 MiB, not in a bin; the rest: a free chunk
    store_.at(first_).in_use = true;
    ASSERT_EQ(store_.CheckInvariants(), nullptr);
  }
  void ExpectBroken(const char* what) {
    const char* problem = store_.CheckInvariants();
    ASSERT_NE(problem, nullptr);
    EXPECT_STREQ(problem, what);
  }

  static constexpr std::uintptr_t kBase = std::uintptr_t{1} << 30;
  ChunkStore store_;
  arena::ChunkHandle first_ = arena::kInvalidChunk;
};

TEST_F(ChunkStoreInvariantsTest, AChunkThatNoLongerTilesItsRegionIsNamed) {
  store_.at(first_).size -= arena::kMinAllocationSize;
  ExpectBroken("the chunks of a region do not tile it in address order");
  store_.at(first_).size += arena::kMinAllocationSize;
  EXPECT_EQ(store_.CheckInvariants(), nullptr);
}

TEST_F(ChunkStoreInvariantsTest, AnInUseChunkInABinIsNamed) {
  const arena::ChunkHandle rest = store_.at(first_).next;
  store_.at(rest).in_use = true;  // the free rest is still in its bin
  ExpectBroken("a bin entry does not match the free chunk it names");
  store_.at(rest).in_use = false;
  EXPECT_EQ(store_.CheckInvariants(), nullptr);
}

TEST_F(ChunkStoreInvariantsTest, AFreeChunkOutOfItsClaimedBinIsNamed) {
  store_.at(first_).in_use = false;
  store_.at(first_).bin = 3;  // claims a bin that does not hold it
  ExpectBroken("a chunk claims a bin that does not hold it");
  store_.at(first_).bin = -1;
  EXPECT_EQ(store_.CheckInvariants(), nullptr);
}

}  // namespace
}  // namespace memarena::testing
