// BfcArena behaviours on the simulated source: ORT rounding, best fit and coalescing,
// requested-versus-allocated bookkeeping, zero size, alignment, merging, stats, threads.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "arena/chunk_store.h"
#include "arena_test_util.h"
#include "common/release_registry.h"
#include "memarena/host.h"

namespace memarena::testing {
namespace {

TEST(BfcArena, SizesOneTo1023AreDistinctAndRoundedTo256) {
  SimulatedArena t;
  LiveRanges live;
  std::vector<void*> ptrs;
  for (std::size_t n = 1; n < 1024; ++n) {
    void* p = t.arena->Allocate(n);
    ASSERT_NE(p, nullptr);
    const std::size_t usable = t.arena->UsableSize(p);
    EXPECT_EQ(usable, (n + 255) / 256 * 256) << "size " << n;
    EXPECT_EQ(t.arena->RequestedSize(p), n);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u);
    live.Add(p, usable);
    ptrs.push_back(p);
  }
  EXPECT_EQ(live.size(), 1023u);
  for (void* p : ptrs) t.arena->Deallocate(p);
  EXPECT_EQ(t.arena->GetStats().bytes_in_use, 0u);
}

TEST(BfcArena, ManyRoundsOfOneSizeReturnTheFirstPointerAgain) {
  SimulatedArena t;
  void* first = t.arena->Allocate(1000);
  t.arena->Deallocate(first);
  std::mt19937 rng(3);
  for (int round = 0; round < 500; ++round) {
    std::vector<void*> batch;
    for (int i = 0; i < 20; ++i) batch.push_back(t.arena->Allocate(1000));
    std::shuffle(batch.begin(), batch.end(), rng);
    for (void* p : batch) t.arena->Deallocate(p);
  }
  EXPECT_EQ(t.arena->Allocate(1000), first) << "free chunks did not coalesce back";
  const AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.num_arena_extensions, 1u) << "the arena grew although nothing was live";
  EXPECT_EQ(s.largest_free_block, (std::size_t{1} << 20) - 1024);
}

TEST(BfcArena, BestFitLowestAddressFirst) {
  ArenaConfig config;
  config.max_dead_bytes_per_chunk = 0;  // always split, so holes keep their exact sizes
  SimulatedArena t(config);
  std::vector<void*> p;
  for (std::size_t size : {4096, 256, 2048, 256, 2048, 256, 8192, 256}) {
    p.push_back(t.arena->Allocate(size));
  }
  t.arena->Deallocate(p[0]);  // 4096 hole
  t.arena->Deallocate(p[2]);  // 2048 hole, lower of the two
  t.arena->Deallocate(p[4]);  // 2048 hole
  t.arena->Deallocate(p[6]);  // 8192 hole
  EXPECT_EQ(t.arena->Allocate(1800), p[2]) << "best fit, lowest address";
  EXPECT_EQ(t.arena->Allocate(2000), p[4]);
  EXPECT_EQ(t.arena->Allocate(3000), p[0]);
}

TEST(BfcArena, RequestedVersusAllocatedBookkeeping) {
  SimulatedArena t;
  void* a = t.arena->Allocate(1);
  void* b = t.arena->Allocate(300);
  void* c = t.arena->Allocate(4097);
  AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.bytes_requested, 1u + 300u + 4097u);
  EXPECT_EQ(s.bytes_in_use, 256u + 512u + 4352u);
  EXPECT_EQ(s.max_alloc_size, 4352u);
  EXPECT_EQ(t.arena->RequestedSize(b), 300u);
  EXPECT_EQ(t.arena->UsableSize(b), 512u);
  t.arena->Deallocate(a);
  t.arena->Deallocate(b);
  t.arena->Deallocate(c);
  s = t.arena->GetStats();
  EXPECT_EQ(s.bytes_requested, 0u);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.peak_bytes_requested, 1u + 300u + 4097u);
  EXPECT_EQ(s.peak_bytes_in_use, 256u + 512u + 4352u);
  EXPECT_EQ(s.num_allocs, 3u);
  EXPECT_EQ(s.num_frees, 3u);
}

TEST(BfcArena, SplitRuleHandsOutTheWholeChunkUnlessTheLeftoverIsLarge) {
  // A fresh 1 MiB region and a 600 KiB request: under 2x and the 424 KiB leftover is below
  // max_dead_bytes_per_chunk, so ORT hands out the whole region.
  SimulatedArena whole;
  void* p = whole.arena->Allocate(600 * kKiB);
  EXPECT_EQ(whole.arena->UsableSize(p), kMiB);
  EXPECT_EQ(whole.arena->GetStats().bytes_in_use, kMiB);
  EXPECT_EQ(whole.arena->GetStats().bytes_requested, 600 * kKiB);

  ArenaConfig config;
  config.max_dead_bytes_per_chunk = 256 * kKiB;
  SimulatedArena split(config);
  void* q = split.arena->Allocate(600 * kKiB);
  EXPECT_EQ(split.arena->UsableSize(q), 600 * kKiB);
  EXPECT_EQ(split.arena->GetStats().largest_free_block, 424 * kKiB);
}

TEST(BfcArena, ZeroSizeIsNullAndCountsNothing) {
  SimulatedArena t;
  EXPECT_EQ(t.arena->Allocate(0), nullptr);
  EXPECT_EQ(t.arena->TryAllocate(0), nullptr);
  EXPECT_EQ(t.arena->TryAllocateOnStream(0, 256, 0), nullptr);
  t.arena->Deallocate(nullptr);
  const AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.num_allocs, 0u);
  EXPECT_EQ(s.num_ooms, 0u);
  EXPECT_EQ(s.bytes_held, 0u);
  EXPECT_TRUE(t.source->calls().empty());
}

TEST(BfcArena, LargeAlignmentsLeaveTheFrontFree) {
  SimulatedArena t;
  for (std::size_t align : {512, 4096, 65536, 1 << 20}) {
    void* p = t.arena->Allocate(1000, align);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % align, 0u) << align;
    EXPECT_EQ(t.arena->UsableSize(p), 1024u) << "padding must not be charged to the chunk";
    t.arena->Deallocate(p);
  }
  const AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.largest_free_block, s.bytes_held) << "front pieces did not coalesce back";
}

TEST(BfcArena, AdjacentRegionsMergeWhenTheSourceIsContiguous) {
  ArenaConfig config;
  config.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
  SimulatedArena t(config, {.contiguous = true});
  void* a = t.arena->Allocate(kMiB);
  void* b = t.arena->Allocate(kMiB);
  EXPECT_EQ(static_cast<char*>(a) + kMiB, static_cast<char*>(b));
  t.arena->Deallocate(a);
  t.arena->Deallocate(b);
  EXPECT_EQ(t.arena->GetStats().largest_free_block, 2 * kMiB) << "regions did not merge";
  void* both = t.arena->Allocate(2 * kMiB);
  EXPECT_EQ(both, a);
  EXPECT_EQ(t.source->ReservedSizes().size(), 2u) << "a merged region serves the request";
  t.arena->Deallocate(both);
  EXPECT_EQ(t.arena->ReleaseUnusedSpans(), 2 * kMiB);
  const AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.num_arena_extensions, 0u);
  EXPECT_EQ(s.num_arena_shrinkages, 1u);
  EXPECT_EQ(s.num_releases, 2u) << "each source range goes back as it came";
  EXPECT_EQ(t.source->held(), 0u);
  EXPECT_EQ(t.source->num_bad_releases(), 0u);
}

TEST(BfcArena, AContiguousSourceIsExtendedOnlyByWhatTheFreeTailLacks) {
  ArenaConfig config;
  config.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
  SimulatedArena t(config, {.contiguous = true});
  void* a = t.arena->Allocate(kMiB);
  t.arena->Deallocate(a);
  void* big = t.arena->Allocate(3 * kMiB);
  EXPECT_EQ(big, a) << "the free tail and the new range form one chunk";
  EXPECT_EQ(t.source->ReservedSizes(), (std::vector<std::size_t>{kMiB, 2 * kMiB}));
  EXPECT_EQ(t.arena->GetStats().bytes_held, 3 * kMiB);
  t.arena->Deallocate(big);
}

TEST(BfcArena, OrtSourcesNeverMerge) {
  SimulatedArena t({}, {.contiguous = false});
  void* a = t.arena->Allocate(kMiB);
  void* b = t.arena->Allocate(2 * kMiB);
  t.arena->Deallocate(a);
  t.arena->Deallocate(b);
  EXPECT_EQ(t.arena->GetStats().largest_free_block, 2 * kMiB);
}

TEST(BfcArena, StatsReportFragmentationAndReleasable) {
  SimulatedArena t;  // kNextPowerOfTwo: the first 1 MiB region is kept on shrink
  void* a = t.arena->Allocate(256 * kKiB);
  void* b = t.arena->Allocate(256 * kKiB);
  void* c = t.arena->Allocate(256 * kKiB);
  t.arena->Deallocate(b);
  AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.bytes_held, kMiB);
  EXPECT_EQ(s.largest_free_block, 256 * kKiB);
  EXPECT_DOUBLE_EQ(s.fragmentation, 0.5);
  EXPECT_EQ(s.bytes_releasable, 0u) << "the first region is never released";
  EXPECT_EQ(s.limit_bytes, 0u);
  void* d = t.arena->Allocate(2 * kMiB);  // a second region, releasable once free
  t.arena->Deallocate(d);
  s = t.arena->GetStats();
  EXPECT_EQ(s.bytes_releasable, 2 * kMiB);
  EXPECT_EQ(t.arena->ReleaseUnusedSpans(), 2 * kMiB);
  t.arena->Deallocate(a);
  t.arena->Deallocate(c);
}

TEST(BfcArena, OutOfMemoryMessageNamesTheNumbersAndTheKnobs) {
  ArenaConfig config;
  config.max_mem = 4 * kMiB;
  SimulatedArena t(config);
  void* keep = t.arena->Allocate(kMiB);
  try {
    t.arena->Allocate(8 * kMiB);
    FAIL() << "no exception";
  } catch (const OutOfMemory& e) {
    const std::string what = e.what();
    for (const char* word : {"in use", "held", "limit", "largest free block", "fragmentation",
                             "max_mem", "8.00 MiB", "4.00 MiB"}) {
      EXPECT_NE(what.find(word), std::string::npos) << "lacks '" << word << "': " << what;
    }
  }
  t.arena->Deallocate(keep);
}

// A size no arena can represent is refused before max_mem or the source are asked, so the
// message must not send the user to raise max_mem.
TEST(BfcArena, ASizeNoArenaCanServeSaysToCheckTheSize) {
  ArenaConfig config;
  config.max_mem = 4 * kMiB;
  SimulatedArena t(config);
  try {
    t.arena->Allocate(std::size_t{1} << 62);
    FAIL() << "no exception";
  } catch (const OutOfMemory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("larger than any arena can serve"), std::string::npos) << what;
    EXPECT_NE(what.find("Check how the size was computed"), std::string::npos) << what;
    EXPECT_EQ(what.find("Raise max_mem"), std::string::npos) << what;
  }
}

TEST(BfcArena, TheReleaseRegistryReachesTheArena) {
  ArenaConfig config;
  config.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
  SimulatedArena t(config);
  t.arena->Deallocate(t.arena->Allocate(3 * kMiB));
  EXPECT_EQ(t.arena->GetStats().bytes_held, 3 * kMiB);
  EXPECT_GE(common::ReleaseAllRegistered(), 3 * kMiB);
  EXPECT_EQ(t.arena->GetStats().bytes_held, 0u);
  EXPECT_EQ(t.source->held(), 0u);
  t.arena->Deallocate(t.arena->Allocate(2 * kMiB));
  EXPECT_GE(memarena::ReleaseUnusedSpans(), 2 * kMiB) << "the public free function";
  EXPECT_EQ(t.source->held(), 0u);
}

TEST(BfcArena, DestructionGivesEveryRangeBack) {
  auto source = std::make_shared<arena::SimulatedMemorySource>();
  {
    BfcArena arena(source);
    arena.Allocate(kMiB);
    arena.Allocate(5 * kMiB);
    EXPECT_GT(source->held(), 0u);
  }
  EXPECT_EQ(source->held(), 0u);
  EXPECT_EQ(source->num_bad_releases(), 0u);
}

struct WorkloadCase {
  ArenaExtendStrategy strategy;
  bool contiguous;
  std::size_t max_mem;
};

class RandomWorkload : public ::testing::TestWithParam<WorkloadCase> {};

TEST_P(RandomWorkload, GrowthNeverOverlapsAndTheBooksBalance) {
  const WorkloadCase c = GetParam();
  ArenaConfig config;
  config.arena_extend_strategy = c.strategy;
  config.max_mem = c.max_mem;
  config.initial_chunk_size_bytes = 64 * kKiB;  // small, so the arena grows often
  config.max_power_of_two_extend_bytes = 4 * kMiB;
  SimulatedArena t(config, {.contiguous = c.contiguous});
  std::mt19937_64 rng(c.max_mem + static_cast<unsigned>(c.strategy) * 7 + c.contiguous);
  LiveRanges live;
  std::vector<std::pair<void*, std::size_t>> blocks;
  std::size_t requested = 0;
  for (int op = 0; op < 6000; ++op) {
    if (blocks.empty() || rng() % 100 < 55) {
      const std::size_t bytes = 1 + rng() % (std::size_t{1} << (rng() % 19));  // up to 256 KiB
      const std::size_t align = std::size_t{1} << (rng() % 14);               // up to 8 KiB
      void* p = t.arena->TryAllocate(bytes, align);
      if (p == nullptr) {
        ASSERT_NE(c.max_mem, 0u) << "only a limited arena may refuse";
        continue;
      }
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % align, 0u);
      live.Add(p, t.arena->UsableSize(p));
      blocks.emplace_back(p, bytes);
      requested += bytes;
    } else {
      const std::size_t k = rng() % blocks.size();
      live.Remove(blocks[k].first);
      t.arena->Deallocate(blocks[k].first);
      requested -= blocks[k].second;
      blocks[k] = blocks.back();
      blocks.pop_back();
    }
    if (op % 1000 == 999) t.arena->ReleaseUnusedSpans();
    const AllocatorStats s = t.arena->GetStats();
    ASSERT_EQ(s.bytes_requested, requested);
    ASSERT_EQ(s.bytes_held, t.source->held());
    ASSERT_LE(s.bytes_in_use + s.largest_free_block, s.bytes_held);
    if (c.max_mem != 0) {
      ASSERT_LE(s.bytes_held, c.max_mem);
    }
  }
  for (auto& [p, bytes] : blocks) t.arena->Deallocate(p);
  const AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_GT(s.num_arena_extensions + s.num_arena_shrinkages, 3u) << "the arena never grew";
  t.arena->ReleaseUnusedSpans();
  EXPECT_EQ(t.source->num_bad_releases(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Configs, RandomWorkload,
    ::testing::Values(WorkloadCase{ArenaExtendStrategy::kNextPowerOfTwo, false, 0},
                      WorkloadCase{ArenaExtendStrategy::kSameAsRequested, false, 0},
                      WorkloadCase{ArenaExtendStrategy::kNextPowerOfTwo, true, 0},
                      WorkloadCase{ArenaExtendStrategy::kSameAsRequested, true, 0},
                      WorkloadCase{ArenaExtendStrategy::kNextPowerOfTwo, false, 24 * kMiB},
                      WorkloadCase{ArenaExtendStrategy::kSameAsRequested, true, 24 * kMiB}));

TEST(BfcArena, ConcurrentThreadsWithGrowthAndShrink) {
  ArenaConfig config;
  config.initial_chunk_size_bytes = 64 * kKiB;
  config.max_mem = 64 * kMiB;
  SimulatedArena t(config);
  std::mutex live_mutex;
  LiveRanges live;
  std::atomic<bool> stop{false};
  std::thread shrinker([&] {
    while (!stop.load()) {
      t.arena->ReleaseUnusedSpans();
      std::this_thread::yield();
    }
  });
  auto worker = [&](unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<void*> mine;
    for (int i = 0; i < 4000; ++i) {
      if (mine.empty() || rng() % 3 != 0) {
        void* p = t.arena->Allocate(1 + rng() % (16 * kKiB));
        std::lock_guard<std::mutex> lock(live_mutex);
        live.Add(p, t.arena->UsableSize(p));
        mine.push_back(p);
      } else {
        const std::size_t k = rng() % mine.size();
        {
          std::lock_guard<std::mutex> lock(live_mutex);
          live.Remove(mine[k]);
        }
        t.arena->Deallocate(mine[k]);
        mine[k] = mine.back();
        mine.pop_back();
      }
      if (mine.size() > 200) {
        std::lock_guard<std::mutex> lock(live_mutex);
        for (void* p : mine) live.Remove(p);
        for (void* p : mine) t.arena->Deallocate(p);
        mine.clear();
      }
    }
    std::lock_guard<std::mutex> lock(live_mutex);
    for (void* p : mine) live.Remove(p);
    for (void* p : mine) t.arena->Deallocate(p);
  };
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < 4; ++i) threads.emplace_back(worker, i + 1);
  for (auto& th : threads) th.join();
  stop = true;
  shrinker.join();
  const AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.num_allocs, s.num_frees);
  EXPECT_EQ(s.bytes_held, t.source->held());
  EXPECT_LE(s.peak_bytes_held, config.max_mem);
}

}  // namespace
}  // namespace memarena::testing
