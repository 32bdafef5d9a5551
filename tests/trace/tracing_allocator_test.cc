// TracingAllocator: it passes the conformance suite, logs every call, forwards failures, and
// a trace recorded through it replays to the same peaks as the run it recorded.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "conformance/conformance_suite.h"
#include "memarena/arena.h"
#include "memarena/tracing.h"
#include "platform/os.h"
#include "replay.h"
#include "replay_target.h"

namespace memarena {
namespace {

std::string TempPath(const std::string& stem) {
  static int counter = 0;
  return ::testing::TempDir() + stem + "." + std::to_string(getpid()) + "." +
         std::to_string(counter++) + ".csv";
}

// A TracingAllocator that owns the BFC arena it wraps.
struct TracedArena {
  explicit TracedArena(std::size_t limit)
      : arena(std::make_shared<HostMemorySource>(), [limit] {
          ArenaConfig c;
          c.max_mem = limit;
          return c;
        }()),
        path(TempPath("traced_arena")),
        tracing(arena, path) {}
  ~TracedArena() { std::remove(path.c_str()); }
  BfcArena arena;
  std::string path;
  TracingAllocator tracing;
};

struct TracingFactory {
  static std::shared_ptr<Allocator> Make(std::size_t limit_bytes) {
    auto owner = std::make_shared<TracedArena>(limit_bytes);
    return std::shared_ptr<Allocator>(owner, &owner->tracing);
  }
  static constexpr std::size_t kMaxAlignment = std::size_t{1} << 20;
  static constexpr bool kHasLimit = true;
  static constexpr bool kAddressable = true;
};

}  // namespace

namespace testing {
INSTANTIATE_TYPED_TEST_SUITE_P(Tracing, AllocatorConformance, ::testing::Types<TracingFactory>);
}  // namespace testing

namespace {

TEST(TracingAllocator, LogsAllocationsFreesAndFailuresAndForwardsEverythingElse) {
  TracedArena traced(1 << 20);
  TracingAllocator& t = traced.tracing;
  EXPECT_EQ(t.name(), "tracing(" + std::string(traced.arena.name()) + ")");
  void* a = t.Allocate(1000);
  void* b = t.Allocate(3000);
  EXPECT_EQ(t.UsableSize(a), traced.arena.UsableSize(a));
  t.Deallocate(a);
  t.Deallocate(nullptr);  // not logged
  try {
    t.Allocate(8 << 20);
    FAIL() << "no OutOfMemory";
  } catch (const OutOfMemory& e) {
    // The upstream explains the failure in its own words.
    EXPECT_EQ(std::string(e.what()), traced.arena.DescribeFailure(8 << 20, kDefaultAlignment));
  }
  EXPECT_EQ(t.GetStats().num_ooms, traced.arena.GetStats().num_ooms);
  t.Deallocate(b);
  t.Flush();
  const auto events = ReadTrace(traced.path);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].action, TraceAction::kAllocate);
  EXPECT_EQ(events[0].pointer, reinterpret_cast<std::uintptr_t>(a));
  EXPECT_EQ(events[0].size, 1000u);
  EXPECT_EQ(events[1].size, 3000u);
  EXPECT_EQ(events[2].action, TraceAction::kFree);
  EXPECT_EQ(events[2].pointer, reinterpret_cast<std::uintptr_t>(a));
  EXPECT_EQ(events[3].action, TraceAction::kAllocateFailure);
  EXPECT_EQ(events[3].size, std::size_t{8} << 20);
  EXPECT_EQ(events[4].pointer, reinterpret_cast<std::uintptr_t>(b));
}

TEST(TracingAllocator, UnwritablePathIsAClearError) {
  BfcArena arena(std::make_shared<HostMemorySource>());
  EXPECT_THROW(TracingAllocator(arena, "/nonexistent-dir/t.csv"), TraceError);
}

// A workload with overlapping lifetimes and mixed sizes.
void RunWorkload(Allocator& alloc, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<void*> live;
  for (int i = 0; i < 3000; ++i) {
    if (!live.empty() && rng() % 3 == 0) {
      const std::size_t k = rng() % live.size();
      alloc.Deallocate(live[k]);
      live[k] = live.back();
      live.pop_back();
    } else {
      live.push_back(alloc.Allocate(1 + rng() % (rng() % 8 == 0 ? (1u << 20) : 4096u)));
    }
  }
  for (void* p : live) alloc.Deallocate(p);
}

// Unmapped holes of 64 KiB - 4 MiB among live mappings, so that the next mmaps land in
// them, out of address order. Returns the mappings kept; UnmapAll gives them back.
std::vector<std::pair<void*, std::size_t>> PunchHoles(unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::pair<void*, std::size_t>> maps;
  for (int i = 0; i < 96; ++i) {
    const std::size_t bytes = (std::size_t{64} << 10) << (rng() % 7);
    maps.emplace_back(platform::MapPages(bytes, platform::PageSize()), bytes);
  }
  std::vector<std::pair<void*, std::size_t>> kept;
  for (std::size_t i = 0; i < maps.size(); ++i) {
    if (i % 2 == 0) {
      platform::UnmapPages(maps[i].first, maps[i].second);
    } else {
      kept.push_back(maps[i]);
    }
  }
  return kept;
}

TEST(HostMemorySource, FallingPlacementPutsEveryRegionBelowTheOnesBefore) {
  HostMemorySource source(0, HostMemorySource::Placement::kFallingAddresses);
  const auto kept = PunchHoles(5);
  std::vector<std::pair<void*, std::size_t>> regions;
  for (std::size_t i = 0; i < 40; ++i) {
    const std::size_t bytes = (i % 5 + 1) * (std::size_t{96} << 10) + 1;
    void* region = source.Reserve(bytes);
    ASSERT_NE(region, nullptr);
    if (!regions.empty()) {
      EXPECT_LT(region, regions.back().first) << i;
    }
    std::memset(region, 0x5a, bytes);  // mapped, writable, and the whole length
    regions.emplace_back(region, bytes);
  }
  // A released range is not taken again: the next region still goes below all.
  source.Release(regions[2].first, regions[2].second);
  void* again = source.Reserve(64 << 10);
  ASSERT_NE(again, nullptr);
  EXPECT_LT(again, regions.back().first);
  source.Release(again, 64 << 10);
  for (std::size_t i = 0; i < regions.size(); ++i) {
    if (i != 2) source.Release(regions[i].first, regions[i].second);
  }
  for (const auto& [ptr, bytes] : kept) platform::UnmapPages(ptr, bytes);
}

// A replay into the bfc target gives the same peaks wherever mmap places its regions: the
// arena's best fit breaks ties between equal free chunks by address, so the regions must
// come in the same address order in every process (the recorded run below, and every
// `memarena replay` of a trace).
TEST(TracingAllocator, BfcReplaysDoNotDependOnWhereMmapPlacesRegions) {
  const std::string path = TempPath("placement");
  {
    auto recorded = tools::MakeTarget("bfc", "arena_extend_strategy:kSameAsRequested");
    TracingAllocator tracing(recorded->allocator(), path);
    RunWorkload(tracing, 11);
  }
  const auto trace = ReadTrace(path);
  std::remove(path.c_str());
  auto replay_once = [&trace] {
    auto target = tools::MakeTarget("bfc", "arena_extend_strategy:kSameAsRequested");
    return tools::Replay(trace, *target);
  };
  const tools::ReplayResult plain = replay_once();
  for (unsigned seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(seed);
    const auto kept = PunchHoles(seed);
    const tools::ReplayResult holed = replay_once();
    for (const auto& [ptr, bytes] : kept) platform::UnmapPages(ptr, bytes);
    EXPECT_EQ(holed.peak_in_use, plain.peak_in_use);
    EXPECT_EQ(holed.peak_held, plain.peak_held);
  }
}

// Record a run through the tracing wrapper, replay the trace into a fresh allocator of the
// same kind: the peaks are those of the recorded run.
TEST(TracingAllocator, ARecordedRunReplaysToTheSamePeaks) {
  for (const std::string config : {"", "arena_extend_strategy:kSameAsRequested"}) {
    SCOPED_TRACE(config);
    const std::string path = TempPath("recorded_run");
    auto recorded = tools::MakeTarget("bfc", config);
    {
      TracingAllocator tracing(recorded->allocator(), path);
      RunWorkload(tracing, 7);
    }
    const AllocatorStats run = recorded->allocator().GetStats();
    const auto trace = ReadTrace(path);
    ASSERT_EQ(trace.size(), run.num_allocs + run.num_frees);
    auto fresh = tools::MakeTarget("bfc", config);
    const tools::ReplayResult replay = tools::Replay(trace, *fresh);
    EXPECT_EQ(replay.peak_in_use, run.peak_bytes_in_use);
    EXPECT_EQ(replay.peak_requested, run.peak_bytes_requested);
    EXPECT_EQ(replay.peak_held, run.peak_bytes_held);
    EXPECT_EQ(replay.peak_requested, tools::TracePeakRequested(trace));
    std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace memarena
