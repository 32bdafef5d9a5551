// BfcArena growth and shrink: ORT's extension sizes under both strategies, the power-of-two
// cap, the 0.9x backoff, both max_mem messages, and release-and-retry beyond ORT.
#include <vector>

#include "arena/growth_policy.h"
#include "arena_test_util.h"

namespace memarena::testing {
namespace {

ArenaConfig SameAsRequested() {
  ArenaConfig config;
  config.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
  return config;
}

TEST(ArenaGrowth, NextPowerOfTwoDoublesAndStopsAtTheCap) {
  ArenaConfig config;
  config.max_power_of_two_extend_bytes = 8 * kMiB;
  SimulatedArena t(config);
  for (int i = 0; i < 30; ++i) t.arena->Allocate(kMiB);
  EXPECT_EQ(t.source->ReservedSizes(),
            (std::vector<std::size_t>{kMiB, 2 * kMiB, 4 * kMiB, 8 * kMiB, 8 * kMiB, 8 * kMiB}));
  void* big = t.arena->Allocate(20 * kMiB);  // above the cap: its own, doubled region
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(t.source->ReservedSizes().back(), 32 * kMiB);
  EXPECT_EQ(t.arena->GetStats().num_arena_extensions, 7u);
}

TEST(ArenaGrowth, SameAsRequestedExtendsByTheRoundedRequest) {
  SimulatedArena t(SameAsRequested());
  t.arena->Allocate(1000);
  t.arena->Allocate(kMiB + 1);
  t.arena->Allocate(300 * kKiB);
  EXPECT_EQ(t.source->ReservedSizes(),
            (std::vector<std::size_t>{1024, kMiB + 256, 300 * kKiB}));
}

TEST(ArenaGrowth, ShrinkUnderNextPowerOfTwoKeepsTheFirstRegionAndResetsGrowth) {
  SimulatedArena t;  // initial 1 MiB, growth after shrink 2 MiB
  std::vector<void*> p;
  for (int i = 0; i < 4; ++i) p.push_back(t.arena->Allocate(kMiB));
  EXPECT_EQ(t.source->ReservedSizes(), (std::vector<std::size_t>{kMiB, 2 * kMiB, 4 * kMiB}));
  EXPECT_EQ(t.arena->GetStats().num_arena_extensions, 3u);
  EXPECT_EQ(t.arena->ReleaseUnusedSpans(), 0u) << "every region has something in use";
  for (void* q : p) t.arena->Deallocate(q);
  EXPECT_EQ(t.arena->ReleaseUnusedSpans(), 6 * kMiB);
  AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.num_arena_shrinkages, 2u);
  EXPECT_EQ(s.num_arena_extensions, 1u);
  EXPECT_EQ(s.bytes_held, kMiB);
  EXPECT_EQ(t.arena->ReleaseUnusedSpans(), 0u);
  EXPECT_EQ(t.arena->GetStats().num_arena_shrinkages, 2u);
  // Growth restarts from initial_growth_chunk_size_bytes (2 MiB), not from 8 MiB.
  void* a = t.arena->Allocate(kMiB);
  void* b = t.arena->Allocate(kMiB);
  EXPECT_EQ(t.source->ReservedSizes().back(), 2 * kMiB);
  s = t.arena->GetStats();
  EXPECT_EQ(s.num_arena_extensions, 2u);
  t.arena->Deallocate(a);
  t.arena->Deallocate(b);
}

TEST(ArenaGrowth, ShrinkUnderSameAsRequestedReleasesEveryFreeRegion) {
  SimulatedArena t(SameAsRequested());
  void* a = t.arena->Allocate(kMiB);
  void* b = t.arena->Allocate(kMiB);
  void* c = t.arena->Allocate(512 * kKiB);
  t.arena->Deallocate(b);
  EXPECT_EQ(t.arena->ReleaseUnusedSpans(), kMiB) << "shrinks while other chunks are in use";
  AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.num_arena_shrinkages, 1u);
  EXPECT_EQ(s.num_arena_extensions, 2u);
  t.arena->Deallocate(a);
  t.arena->Deallocate(c);
  EXPECT_EQ(t.arena->ReleaseUnusedSpans(), kMiB + 512 * kKiB);
  s = t.arena->GetStats();
  EXPECT_EQ(s.num_arena_shrinkages, 3u);
  EXPECT_EQ(s.num_arena_extensions, 0u);
  EXPECT_EQ(s.bytes_held, 0u);
  EXPECT_EQ(t.source->held(), 0u);
}

TEST(ArenaGrowth, MaxMemGivesBothOrtMessagesAndSmallerRequestsStillWork) {
  ArenaConfig config;
  config.max_mem = 4 * kMiB;
  arena::SimulatedMemorySource::Options options;
  options.capacity = 2 * kMiB;  // the "device" is smaller than max_mem
  SimulatedArena t(config, options);
  try {
    t.arena->Allocate(8 * kMiB);
    FAIL() << "a request above max_mem succeeded";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "Available memory of 4194304 is smaller than requested bytes of 8388608"),
              std::string::npos)
        << e.what();
  }
  try {
    t.arena->Allocate(3 * kMiB);
    FAIL() << "a request above the source's capacity succeeded";
  } catch (const OutOfMemory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Failed to allocate memory for requested buffer of size 3145728"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("source free 2.00 MiB of 2.00 MiB"), std::string::npos) << what;
  }
  void* small = t.arena->Allocate(kMiB);
  EXPECT_NE(small, nullptr);
  t.arena->Deallocate(small);
  EXPECT_EQ(t.arena->Allocate(kMiB), small);
  EXPECT_EQ(t.arena->GetStats().num_ooms, 2u);
}

TEST(ArenaGrowth, AnAlwaysFailingSourceThrowsAfterABoundedBackoff) {
  SimulatedArena t;
  t.source->FailAlways();
  EXPECT_THROW(t.arena->Allocate(1000), OutOfMemory);
  // 1 MiB, then 0.9x steps down to 8 KiB, then the request itself: ORT's bound plus one.
  std::size_t expected = 1;
  for (std::size_t b = arena::BackoffBytes(kMiB); b >= 8 * kKiB; b = arena::BackoffBytes(b)) {
    ++expected;
  }
  EXPECT_EQ(t.source->num_failed_reserves(), expected + 1);
  EXPECT_LT(expected, 60u);
  EXPECT_THROW(t.arena->Allocate(std::size_t{1} << 40), OutOfMemory);
  EXPECT_EQ(t.arena->TryAllocate(std::size_t{1} << 62), nullptr);
  EXPECT_EQ(t.arena->GetStats().num_ooms, 3u);
}

TEST(ArenaGrowth, ARefusedHugeRequestDoesNotInflateTheNextExtension) {
  arena::SimulatedMemorySource::Options options;
  options.capacity = 64 * kMiB;
  SimulatedArena t({}, options);
  EXPECT_THROW(t.arena->Allocate(std::size_t{1} << 30), OutOfMemory);
  t.arena->Allocate(kMiB);
  EXPECT_EQ(t.source->ReservedSizes(), std::vector<std::size_t>{kMiB})
      << "ORT would now ask for 1 GiB and back off into most of the source";
}

TEST(ArenaGrowth, BackoffServesTheRequestFromASmallerRegion) {
  SimulatedArena t;
  t.source->FailNext(3);
  void* p = t.arena->Allocate(100 * kKiB);
  ASSERT_NE(p, nullptr);
  const std::size_t expected =
      arena::BackoffBytes(arena::BackoffBytes(arena::BackoffBytes(kMiB)));
  EXPECT_EQ(t.source->ReservedSizes(), std::vector<std::size_t>{expected});
}

TEST(ArenaGrowth, ARefusingSourceMakesTheArenaReleaseFreeRegionsAndRetry) {
  SimulatedArena t(SameAsRequested());
  t.arena->Deallocate(t.arena->Allocate(4 * kMiB));  // a stale, fully free region
  t.source->SetCapacity(6 * kMiB);                   // the "device" cannot also hold 5 MiB
  void* a = t.arena->Allocate(5 * kMiB);
  ASSERT_NE(a, nullptr);
  const AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.num_arena_shrinkages, 1u);
  EXPECT_EQ(s.num_arena_extensions, 1u);
  EXPECT_EQ(s.bytes_held, 5 * kMiB);
  EXPECT_EQ(t.source->held(), s.bytes_held);
}

TEST(ArenaGrowth, ASourceThatFailsAfterNCallsFailsCleanlyAndRecovers) {
  SimulatedArena t(SameAsRequested());
  t.source->FailAfter(2);
  void* a = t.arena->Allocate(kMiB);
  void* b = t.arena->Allocate(kMiB);
  EXPECT_THROW(t.arena->Allocate(kMiB), OutOfMemory);
  t.source->ClearFailures();
  void* c = t.arena->Allocate(kMiB);
  EXPECT_NE(c, nullptr);
  EXPECT_EQ(t.source->ReservedSizes().size(), 3u);
  for (void* p : {a, b, c}) t.arena->Deallocate(p);
}

// ORT #14474: a loop whose tensors grow every iteration never reuses kSameAsRequested
// regions (they never merge), so held memory grows without bound.
void RunGrowingLoop(BfcArena& arena) {
  for (std::size_t i = 0; i < 200; ++i) {
    void* a = arena.Allocate(256 * kKiB + i * 4 * kKiB);
    void* b = arena.Allocate(128 * kKiB + i * 2 * kKiB);
    void* c = arena.Allocate(256 * kKiB + i * 4 * kKiB);
    arena.Deallocate(a);
    arena.Deallocate(b);
    arena.Deallocate(c);
  }
}

TEST(ArenaGrowth, OrtSameAsRequestedGrowsWithoutBoundOnAGrowingLoop) {
  SimulatedArena t(SameAsRequested());
  RunGrowingLoop(*t.arena);
  const AllocatorStats s = t.arena->GetStats();
  EXPECT_GT(s.bytes_held, 20 * s.peak_bytes_in_use) << "ORT semantics: no reuse across sizes";
}

TEST(ArenaGrowth, SameAsRequestedLoopStaysUnderMaxMem) {
  ArenaConfig config = SameAsRequested();
  config.max_mem = 8 * kMiB;
  SimulatedArena t(config);
  RunGrowingLoop(*t.arena);
  const AllocatorStats s = t.arena->GetStats();
  EXPECT_LE(s.peak_bytes_held, 8 * kMiB);
  EXPECT_GT(s.num_arena_shrinkages, 0u);
  EXPECT_EQ(s.num_ooms, 0u);
}

TEST(ArenaGrowth, SameAsRequestedLoopSurvivesAFullDevice) {
  arena::SimulatedMemorySource::Options options;
  options.capacity = 8 * kMiB;  // no max_mem: the source itself refuses
  SimulatedArena t(SameAsRequested(), options);
  RunGrowingLoop(*t.arena);
  EXPECT_EQ(t.arena->GetStats().num_ooms, 0u);
  EXPECT_LE(t.source->held(), 8 * kMiB);
}

TEST(ArenaGrowth, SameAsRequestedReusesFreedChunksOfTheSameShapes) {
  SimulatedArena t(SameAsRequested());
  for (int run = 0; run < 100; ++run) {
    std::vector<void*> p;
    for (std::size_t size : {kMiB, 300 * kKiB, 4 * kKiB, 64 * kKiB}) p.push_back(t.arena->Allocate(size));
    for (void* q : p) t.arena->Deallocate(q);
  }
  const AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.num_arena_extensions, 4u) << "later runs are served from the first run's regions";
  EXPECT_EQ(s.bytes_held, kMiB + 300 * kKiB + 4 * kKiB + 64 * kKiB);
}

}  // namespace
}  // namespace memarena::testing
