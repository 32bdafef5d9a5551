// ASAN-aware arena memory (issue 17): in AddressSanitizer builds the BFC arena, expandable or
// not, poisons free and cached chunks of host memory, unpoisons what it hands out (the whole
// usable size) and gives ranges back to the source clean. Plain builds skip with the reason.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>

#include "arena_test_util.h"
#include "common/asan.h"
#include "memarena/virtual_memory_source.h"

namespace memarena::testing {
namespace {

constexpr const char* kNotAsan =
    "not an AddressSanitizer build: the arena poisons free memory only under ASAN "
    "(the ASAN+UBSAN CI pass runs this)";

ArenaConfig ExpandableConfig() {
  ArenaConfig config;
  config.expandable_segments = true;
  return config;
}

// Both host-memory arenas: the plain one over mmap and the expandable one over a reserved
// virtual range.
std::unique_ptr<BfcArena> MakeArena(bool expandable) {
  if (expandable) {
    return std::make_unique<BfcArena>(
        std::make_shared<HostVirtualMemorySource>(std::size_t{1} << 30), ExpandableConfig());
  }
  return std::make_unique<BfcArena>(std::make_shared<HostMemorySource>(), ArenaConfig{});
}

class ArenaAsanTest : public ::testing::TestWithParam<bool> {};

TEST_P(ArenaAsanTest, FreeAndCachedChunksArePoisonedAndHandedOutChunksAreNot) {
  if (!common::kAsan) GTEST_SKIP() << kNotAsan;
  auto arena = MakeArena(GetParam());
  auto* p = static_cast<char*>(arena->Allocate(1000));
  const std::size_t usable = arena->UsableSize(p);
  ASSERT_GE(usable, 1000u);
  EXPECT_FALSE(common::IsPoisoned(p));
  EXPECT_FALSE(common::IsPoisoned(p + usable - 1));
  EXPECT_TRUE(common::IsPoisoned(p + usable)) << "the rest of the region is free";
  arena->Deallocate(p);
  EXPECT_TRUE(common::IsPoisoned(p));
  EXPECT_TRUE(common::IsPoisoned(p + usable - 1));
  // Cached, then handed out again: usable once more.
  auto* q = static_cast<char*>(arena->Allocate(1000));
  EXPECT_FALSE(common::IsPoisoned(q));
  q[arena->UsableSize(q) - 1] = 1;
  arena->Deallocate(q);
}

TEST_P(ArenaAsanTest, RangesGoBackToTheSourceUnpoisoned) {
  if (!common::kAsan) GTEST_SKIP() << kNotAsan;
  auto arena = MakeArena(GetParam());
  void* p = arena->Allocate(std::size_t{4} << 20);
  arena->Deallocate(p);
  ASSERT_TRUE(common::IsPoisoned(p));
  arena->ReleaseAllUnusedRegions();
  arena.reset();
  // Whoever maps these addresses next must not inherit the arena's poison.
  EXPECT_FALSE(common::IsPoisoned(p));
}

TEST_P(ArenaAsanTest, AUseAfterFreeOfArenaMemoryIsReported) {
  if (!common::kAsan) GTEST_SKIP() << kNotAsan;
  const bool expandable = GetParam();
  EXPECT_DEATH(
      {
        auto arena = MakeArena(expandable);
        auto* p = static_cast<volatile char*>(arena->Allocate(4096));
        arena->Deallocate(const_cast<char*>(p));
        p[100] = 1;
      },
      "AddressSanitizer: use-after-poison");
}

INSTANTIATE_TEST_SUITE_P(PlainAndExpandable, ArenaAsanTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Expandable" : "Plain"; });

// Simulated and device sources hand out addresses that are not this process's memory: the
// arena must leave their shadow alone (poisoning 1 << 44 would hit ASAN's own shadow).
TEST(ArenaAsan, SimulatedAddressesAreNeverPoisoned) {
  auto source = std::make_shared<arena::SimulatedMemorySource>();
  EXPECT_FALSE(source->HostAccessible());
  EXPECT_TRUE(HostMemorySource().HostAccessible());
  BfcArena arena(source, ArenaConfig{});
  void* p = arena.Allocate(1000);
  arena.Deallocate(p);
  EXPECT_EQ(arena.GetStats().bytes_in_use, 0u);  // and, under ASAN, no report on the way
}

}  // namespace
}  // namespace memarena::testing
