// The expandable BFC arena (expandable_segments:1): growth by what the tail lacks, commits and
// decommits that never touch a byte in use, held == committed, max_mem on committed bytes,
// refused commits and an exhausted reservation explained and recovered from.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "arena/decommit_policy.h"
#include "arena/interval_set.h"
#include "arena/simulated_virtual_memory_source.h"
#include "arena_test_util.h"
#include "memarena/errors.h"
#include "memarena/virtual_memory_source.h"
#include "support/expandable_config.h"

namespace memarena::testing {
namespace {

using arena::SimulatedVirtualMemorySource;
constexpr std::size_t kGranule = 2 * kMiB;


struct VirtualArena {
  explicit VirtualArena(ArenaConfig config, SimulatedVirtualMemorySource::Options options = {})
      : source(std::make_shared<SimulatedVirtualMemorySource>(options)),
        arena(std::make_unique<BfcArena>(source, config)) {}
  std::shared_ptr<SimulatedVirtualMemorySource> source;
  std::unique_ptr<BfcArena> arena;
};

// Replays the source's call log and checks it against the live allocations: no decommit
// overlaps a range that was live when it ran, every live range is committed, and
// held == committed. Call Check with the ranges live before the last operation (a block an
// allocation hands out may be decommitted and recommitted before it is handed out) and
// `added`, the block it handed out, if any.
class CommitAudit {
 public:
  void Check(const VirtualArena& t, std::map<std::uintptr_t, std::size_t>& live,
             const void* added = nullptr) {
    const auto calls = t.source->calls();
    for (; seen_ < calls.size(); ++seen_) {
      const auto& c = calls[seen_];
      if (c.refused) continue;
      if (c.kind == SimulatedVirtualMemorySource::CallKind::kCommit) {
        ASSERT_EQ(committed_.BytesInside(c.addr, c.addr + c.bytes), 0u) << "commit over committed";
        committed_.Add(c.addr, c.addr + c.bytes);
      } else {
        for (const auto& [a, n] : live) {
          ASSERT_TRUE(a + n <= c.addr || c.addr + c.bytes <= a)
              << "decommit [" << c.addr << ", +" << c.bytes << ") touches live [" << a << ", +" << n << ")";
        }
        committed_.Remove(c.addr, c.addr + c.bytes);
      }
    }
    if (added != nullptr) live.emplace(reinterpret_cast<std::uintptr_t>(added), t.arena->UsableSize(added));
    for (const auto& [a, n] : live) {
      ASSERT_TRUE(committed_.Covers(a, a + n))
          << "live range [" << a << ", +" << n << ") not committed; " << committed_.BytesInside(a, a + n);
    }
    const AllocatorStats s = t.arena->GetStats();
    ASSERT_EQ(s.bytes_held, committed_.bytes());
    ASSERT_EQ(s.bytes_held, t.source->VirtualStats().committed_bytes);
    ASSERT_EQ(t.source->VirtualStats().num_contract_violations, 0u);
  }

 private:
  std::size_t seen_ = 0;
  arena::IntervalSet committed_;
};

TEST(ExpandableArena, NeedsAVirtualMemorySource) {
  try {
    BfcArena arena(std::make_shared<arena::SimulatedMemorySource>(), ExpandableConfig());
    FAIL() << "an expandable arena over a plain source was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("expandable_segments"), std::string::npos) << e.what();
  }
}

TEST(ExpandableArena, ConfigKeysParse) {
  const ArenaConfig c = ArenaConfig::Parse("expandable_segments:1,expandable_decommit_threshold:4MiB");
  EXPECT_TRUE(c.expandable_segments);
  EXPECT_EQ(c.expandable_decommit_threshold, 4 * kMiB);
  EXPECT_FALSE(ArenaConfig{}.expandable_segments);
  EXPECT_THROW(ArenaConfig::Parse("expandable_segments:2"), ConfigError);
}

TEST(ExpandableArena, GrowsByExactlyWhatTheFreeTailLacks) {
  VirtualArena t(ExpandableConfig(64 * kMiB));
  void* a = t.arena->Allocate(3 * kMiB);  // one 4 MiB growth (two granules)
  EXPECT_EQ(t.source->VirtualStats().used_bytes, 4 * kMiB);
  t.arena->Deallocate(a);
  void* b = t.arena->Allocate(5 * kMiB);  // the free 4 MiB tail plus one more granule
  EXPECT_EQ(b, a);
  const AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.virtual_bytes_used, 6 * kMiB);
  EXPECT_EQ(s.bytes_held, 6 * kMiB);
  EXPECT_EQ(s.num_arena_extensions, 2u);
  EXPECT_EQ(s.virtual_bytes_reserved, t.source->VirtualStats().reserved_bytes);
  t.arena->Deallocate(b);
}

TEST(ExpandableArena, EveryFreeChunkIsSplitOffSoNothingIsDeadWeight) {
  VirtualArena t(ExpandableConfig(64 * kMiB));
  void* big = t.arena->Allocate(8 * kMiB);
  t.arena->Deallocate(big);
  // ORT would hand out the whole 8 MiB chunk for 5 MiB (not >= 2x, leftover < 128 MiB).
  void* p = t.arena->Allocate(5 * kMiB);
  EXPECT_EQ(t.arena->UsableSize(p), 5 * kMiB);
  t.arena->Deallocate(p);
}

TEST(ExpandableArena, DecommitsFreeGranulesBeforeGrowingPastTheThreshold) {
  VirtualArena t(ExpandableConfig(/*threshold=*/4 * kMiB));
  void* a = t.arena->Allocate(16 * kMiB);
  void* b = t.arena->Allocate(2 * kMiB);
  t.arena->Deallocate(a);  // 16 MiB free below b: deallocation itself decommits nothing
  EXPECT_EQ(t.arena->GetStats().bytes_held, 18 * kMiB);
  EXPECT_EQ(t.arena->GetStats().num_decommits, 0u);
  void* c = t.arena->Allocate(20 * kMiB);  // does not fit the hole: grows, first decommitting
  const AllocatorStats s = t.arena->GetStats();
  EXPECT_GT(s.num_decommits, 0u);
  EXPECT_LE(s.bytes_held - s.bytes_in_use, 4 * kMiB);
  EXPECT_LE(s.peak_bytes_held, 22 * kMiB + 4 * kMiB);
  t.arena->Deallocate(b);
  t.arena->Deallocate(c);
}

TEST(ExpandableArena, MemoryUpToTheRecentInUsePeakStaysCommitted) {
  VirtualArena t(ExpandableConfig(/*threshold=*/4 * kMiB));
  void* a = t.arena->Allocate(16 * kMiB);
  t.arena->Deallocate(a);
  // The working set comes back in other shapes: no decommit while held stays within this
  // epoch's peak in use (16 MiB) plus the threshold.
  for (std::size_t parts : {2u, 4u, 8u}) {
    std::vector<void*> blocks;
    for (std::size_t i = 0; i < parts; ++i) blocks.push_back(t.arena->Allocate(16 * kMiB / parts));
    for (void* p : blocks) t.arena->Deallocate(p);
  }
  void* b = t.arena->Allocate(18 * kMiB);  // grows by 2 MiB: 18 MiB held, within 16 + 4
  AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.num_decommits, 0u);
  EXPECT_EQ(s.bytes_held, 18 * kMiB);
  t.arena->Deallocate(b);
  t.arena->ReleaseUnusedSpans();  // gives everything back and restarts the epochs
  s = t.arena->GetStats();
  EXPECT_EQ(s.bytes_held, 0u);
  void* c = t.arena->Allocate(2 * kMiB);
  void* d = t.arena->Allocate(12 * kMiB);  // above the fresh peak: commits without decommitting c
  EXPECT_EQ(t.arena->GetStats().bytes_held, 14 * kMiB);
  t.arena->Deallocate(c);
  t.arena->Deallocate(d);
}

// The rule: held exceeding in use by more than the threshold goes back, down to half
// of it, once in use has stayed low for a whole epoch of frees (two epoch ends at most).
TEST(ExpandableArena, HeldComesDownToHalfTheThresholdAboveInUseOnceInUseStaysLow) {
  constexpr std::size_t kThreshold = 8 * kMiB;
  VirtualArena t(ExpandableConfig(kThreshold));
  void* keep = t.arena->Allocate(kMiB);
  void* big = t.arena->Allocate(64 * kMiB);
  t.arena->Deallocate(big);
  EXPECT_EQ(t.arena->GetStats().num_decommits, 0u);  // a free alone compares counters only
  for (std::uint32_t i = 0; i < 2 * arena::DecommitPolicy::kEpochFrees; ++i) {
    t.arena->Deallocate(t.arena->Allocate(4096));
  }
  const AllocatorStats s = t.arena->GetStats();
  EXPECT_GT(s.num_decommits, 0u);
  EXPECT_LE(s.bytes_held - s.bytes_in_use, kThreshold / 2);
  EXPECT_GE(s.bytes_held, s.bytes_in_use);
  // The end of the range went first: the granule under `keep` and the bottom of the free
  // chunk after it stay, so the next small allocations need no commit.
  const std::size_t commits = s.num_commits;
  void* again = t.arena->Allocate(kMiB);
  EXPECT_EQ(t.arena->GetStats().num_commits, commits);
  t.arena->Deallocate(again);
  t.arena->Deallocate(keep);
}

// A workload whose in use swings by far more than the threshold between epochs' ends (an
// inference batch's layers) keeps its granules: decommitting and recommitting them on every
// dip is what made the replay cost about 10x the plain arena's.
TEST(ExpandableArena, ASwingingWorkloadKeepsItsGranulesCommitted) {
  VirtualArena t(ExpandableConfig(/*threshold=*/4 * kMiB));
  for (std::uint32_t i = 0; i < 3 * arena::DecommitPolicy::kEpochFrees; ++i) {
    t.arena->Deallocate(t.arena->Allocate(32 * kMiB));
  }
  const AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.num_decommits, 0u);
  EXPECT_EQ(s.num_commits, 0u);  // recommits of holes; the first 32 MiB was growth
  EXPECT_EQ(s.num_arena_extensions, 1u);
  EXPECT_EQ(s.bytes_held, 32 * kMiB);
}

TEST(ExpandableArena, ReleaseUnusedSpansDecommitsEveryFreeGranule) {
  VirtualArena t(ExpandableConfig(1024 * kMiB));
  void* a = t.arena->Allocate(10 * kMiB);
  void* b = t.arena->Allocate(kMiB);
  void* c = t.arena->Allocate(10 * kMiB);
  t.arena->Deallocate(a);
  t.arena->Deallocate(c);
  EXPECT_EQ(t.arena->GetStats().bytes_releasable, 20 * kMiB);
  EXPECT_EQ(t.arena->ReleaseUnusedSpans(), 20 * kMiB);
  AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.bytes_held, kGranule);  // the granule under b
  EXPECT_EQ(s.bytes_releasable, 0u);
  t.arena->Deallocate(b);
  t.arena->ReleaseUnusedSpans();
  s = t.arena->GetStats();
  EXPECT_EQ(s.bytes_held, 0u);
  EXPECT_EQ(t.source->VirtualStats().committed_bytes, 0u);
}

TEST(ExpandableArena, RandomWorkloadNeverCommitsOrDecommitsLiveBytes) {
  for (std::size_t threshold : {std::size_t{0}, 8 * kMiB}) {
    SCOPED_TRACE(threshold);
    VirtualArena t(ExpandableConfig(threshold));
    CommitAudit audit;
    std::map<std::uintptr_t, std::size_t> live;
    std::vector<void*> ptrs;
    std::mt19937_64 rng(19);
    for (int i = 0; i < 3000; ++i) {
      if (!ptrs.empty() && rng() % 100 < 45) {
        const std::size_t k = rng() % ptrs.size();
        live.erase(reinterpret_cast<std::uintptr_t>(ptrs[k]));
        t.arena->Deallocate(ptrs[k]);
        ptrs[k] = ptrs.back();
        ptrs.pop_back();
      } else {
        const std::size_t n = rng() % 4 == 0 ? 1 + rng() % (12 * kMiB) : 1 + rng() % (256 * 1024);
        const std::size_t align = std::size_t{256} << (rng() % 4 == 0 ? rng() % 8 : 0);
        void* p = t.arena->Allocate(n, align);
        ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % align, 0u);
        ASSERT_NO_FATAL_FAILURE(audit.Check(t, live, p));
        ptrs.push_back(p);
      }
      if (i % 200 == 0) t.arena->ReleaseUnusedSpans();
      ASSERT_NO_FATAL_FAILURE(audit.Check(t, live));
    }
    for (void* p : ptrs) t.arena->Deallocate(p);
    t.arena->ReleaseUnusedSpans();
    live.clear();
    ASSERT_NO_FATAL_FAILURE(audit.Check(t, live));
    EXPECT_EQ(t.arena->GetStats().bytes_held, 0u);
  }
}

TEST(ExpandableArena, HostPagesKeepEveryLiveByteThroughCommitAndDecommit) {
  for (std::size_t granularity : {std::size_t{0}, std::size_t{64} << 10}) {
    SCOPED_TRACE(granularity);
    auto source = std::make_shared<HostVirtualMemorySource>(std::size_t{4} << 30, granularity);
    BfcArena arena(source, ExpandableConfig(0));
    struct Block {
      unsigned char* p;
      std::size_t n;
      unsigned char tag;
    };
    std::vector<Block> blocks;
    std::mt19937_64 rng(7);
    auto verify = [](const Block& b) {
      for (std::size_t i = 0; i < b.n; i += 61) ASSERT_EQ(b.p[i], b.tag) << "byte " << i;
      ASSERT_EQ(b.p[b.n - 1], b.tag);
    };
    for (int i = 0; i < 1500; ++i) {
      if (!blocks.empty() && rng() % 100 < 45) {
        const std::size_t k = rng() % blocks.size();
        ASSERT_NO_FATAL_FAILURE(verify(blocks[k]));
        arena.Deallocate(blocks[k].p);
        blocks[k] = blocks.back();
        blocks.pop_back();
      } else {
        const std::size_t n = rng() % 4 == 0 ? 1 + rng() % (3 * kMiB) : 1 + rng() % 70000;
        auto* p = static_cast<unsigned char*>(arena.Allocate(n));
        const auto tag = static_cast<unsigned char>(1 + rng() % 255);
        std::memset(p, tag, n);
        blocks.push_back({p, n, tag});
      }
      if (i % 100 == 0) arena.ReleaseUnusedSpans();
      const AllocatorStats s = arena.GetStats();
      ASSERT_EQ(s.bytes_held, source->VirtualStats().committed_bytes);
    }
    for (const Block& b : blocks) ASSERT_NO_FATAL_FAILURE(verify(b));
    EXPECT_GT(arena.GetStats().num_decommits, 0u);
    EXPECT_EQ(source->VirtualStats().num_contract_violations, 0u);
    for (const Block& b : blocks) arena.Deallocate(b.p);
  }
}

TEST(ExpandableArena, MaxMemCapsCommittedBytesAndFreeGranulesMakeRoom) {
  VirtualArena t(ExpandableConfig(/*threshold=*/64 * kMiB, /*max_mem=*/10 * kMiB));
  void* a = t.arena->Allocate(6 * kMiB);
  void* b = t.arena->Allocate(2 * kMiB);
  t.arena->Deallocate(a);
  // 7 MiB does not fit below b: growing commits 8 MiB, which fits under max_mem only after
  // the 6 MiB hole is decommitted.
  void* c = t.arena->Allocate(7 * kMiB);
  AllocatorStats s = t.arena->GetStats();
  EXPECT_LE(s.peak_bytes_held, 10 * kMiB);
  EXPECT_GT(s.num_decommits, 0u);
  EXPECT_EQ(t.arena->TryAllocate(4 * kMiB), nullptr);
  const std::string text = t.arena->DescribeFailure(4 * kMiB, kDefaultAlignment);
  EXPECT_NE(text.find("Available memory of"), std::string::npos) << text;
  EXPECT_NE(text.find("max_mem"), std::string::npos) << text;
  t.arena->Deallocate(c);
  void* d = t.arena->Allocate(4 * kMiB);  // recovers once memory is free
  s = t.arena->GetStats();
  EXPECT_LE(s.peak_bytes_held, 10 * kMiB);
  t.arena->Deallocate(b);
  t.arena->Deallocate(d);
}

TEST(ExpandableArena, RecoversAfterARefusedCommit) {
  VirtualArena t(ExpandableConfig(0));
  CommitAudit audit;
  std::map<std::uintptr_t, std::size_t> live;
  void* a = t.arena->Allocate(4 * kMiB);
  ASSERT_NO_FATAL_FAILURE(audit.Check(t, live, a));
  t.arena->Deallocate(a);
  live.clear();
  t.arena->ReleaseUnusedSpans();  // the whole arena goes back
  void* low = t.arena->Allocate(kMiB);
  void* high = t.arena->Allocate(8 * kMiB);
  ASSERT_NO_FATAL_FAILURE(audit.Check(t, live, low));
  ASSERT_NO_FATAL_FAILURE(audit.Check(t, live, high));
  t.arena->Deallocate(high);
  live.erase(reinterpret_cast<std::uintptr_t>(high));
  t.arena->ReleaseUnusedSpans();  // the free granules above `low` become a hole
  ASSERT_NO_FATAL_FAILURE(audit.Check(t, live));

  t.source->FailAlways();
  EXPECT_EQ(t.arena->TryAllocate(3 * kMiB), nullptr);   // the hole cannot be recommitted
  EXPECT_EQ(t.arena->TryAllocate(64 * kMiB), nullptr);  // nor can the range grow
  const std::string text = t.arena->DescribeFailure(64 * kMiB, kDefaultAlignment);
  EXPECT_NE(text.find("Failed to allocate memory for requested buffer"), std::string::npos) << text;
  EXPECT_EQ(t.arena->GetStats().num_ooms, 2u);
  ASSERT_NO_FATAL_FAILURE(audit.Check(t, live));

  t.source->ClearFailures();
  void* b = t.arena->Allocate(3 * kMiB);
  ASSERT_NO_FATAL_FAILURE(audit.Check(t, live, b));
  void* c = t.arena->Allocate(64 * kMiB);
  ASSERT_NO_FATAL_FAILURE(audit.Check(t, live, c));

  for (void* p : {low, b, c}) t.arena->Deallocate(p);
}

TEST(ExpandableArena, ARefusedCommitIsRetriedAfterDecommittingFreeGranules) {
  VirtualArena t(ExpandableConfig(/*threshold=*/1024 * kMiB));
  CommitAudit audit;
  std::map<std::uintptr_t, std::size_t> live;
  void* a = t.arena->Allocate(8 * kMiB);
  void* b = t.arena->Allocate(2 * kMiB);
  ASSERT_NO_FATAL_FAILURE(audit.Check(t, live, b));
  t.arena->Deallocate(a);
  t.source->FailNextCommits(1);
  void* c = t.arena->Allocate(20 * kMiB);
  ASSERT_NO_FATAL_FAILURE(audit.Check(t, live, c));
  const AllocatorStats s = t.arena->GetStats();
  EXPECT_EQ(s.num_ooms, 0u);
  EXPECT_EQ(s.bytes_held, 22 * kMiB);  // the 8 MiB hole went back to make the retry fit
  EXPECT_EQ(t.source->VirtualStats().num_refused_commits, 1u);
  t.arena->Deallocate(b);
  t.arena->Deallocate(c);
}

TEST(ExpandableArena, AnExhaustedReservationIsNamedWithItsKnob) {
  SimulatedVirtualMemorySource::Options options;
  options.reserve_bytes = 8 * kMiB;
  VirtualArena t(ExpandableConfig(0, /*max_mem=*/64 * kMiB), options);
  void* a = t.arena->Allocate(6 * kMiB);
  EXPECT_EQ(t.arena->TryAllocate(4 * kMiB), nullptr);
  const std::string text = t.arena->DescribeFailure(4 * kMiB, kDefaultAlignment);
  EXPECT_NE(text.find("virtual reservation"), std::string::npos) << text;
  EXPECT_NE(text.find("not max_mem"), std::string::npos) << text;
  EXPECT_NE(text.find("reserve_bytes"), std::string::npos) << text;
  EXPECT_EQ(text.find("Available memory of"), std::string::npos) << text;
  t.arena->Deallocate(a);
  void* b = t.arena->Allocate(8 * kMiB);  // the whole reservation, once free
  t.arena->Deallocate(b);
}

}  // namespace
}  // namespace memarena::testing
