// MetaPool's placement: objects on the boundary the pool was made with, never sharing it.
#include "host/meta_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace memarena::host {
namespace {

// A thread cache's size class (6.4 KiB): between two pages, unaligned two of them would
// share a page (heap.cc's g_cache_pool keeps thread caches on pages of their own).
struct PageAndAHalf {
  char bytes[6592];
};

TEST(MetaPool, AnAlignedPoolPutsEveryObjectOnPagesOfItsOwn) {
  constexpr std::uintptr_t kPage = 4096;
  MetaPool<PageAndAHalf> pool{kPage};
  PageAndAHalf* first = pool.New();
  ASSERT_NE(MetaAllocate(24), nullptr);  // other metadata in between, off the boundary
  PageAndAHalf* second = pool.New();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  const auto a = reinterpret_cast<std::uintptr_t>(first);
  const auto b = reinterpret_cast<std::uintptr_t>(second);
  EXPECT_EQ(a % kPage, 0u);
  EXPECT_EQ(b % kPage, 0u);
  const std::uintptr_t a_last = (a + sizeof(PageAndAHalf) - 1) / kPage;
  const std::uintptr_t b_last = (b + sizeof(PageAndAHalf) - 1) / kPage;
  EXPECT_TRUE(a_last < b / kPage || b_last < a / kPage) << "the two objects share a page";
  pool.Delete(second);
  EXPECT_EQ(pool.New(), second) << "a freed object is reused where it was";
}

// An offset pool puts each object that far past its boundary, on pages of its own still.
TEST(MetaPool, AnOffsetPoolPutsEveryObjectThatFarPastItsBoundary) {
  constexpr std::uintptr_t kPage = 4096;
  constexpr std::uintptr_t kOffset = 64;
  MetaPool<PageAndAHalf> pool{kPage, kOffset};
  PageAndAHalf* first = pool.New();
  ASSERT_NE(MetaAllocate(24), nullptr);
  PageAndAHalf* second = pool.New();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  const auto a = reinterpret_cast<std::uintptr_t>(first);
  const auto b = reinterpret_cast<std::uintptr_t>(second);
  EXPECT_EQ(a % kPage, kOffset);
  EXPECT_EQ(b % kPage, kOffset);
  EXPECT_GE(b > a ? b - a : a - b, sizeof(PageAndAHalf) + kOffset);
  pool.Delete(first);
  EXPECT_EQ(pool.New(), first) << "a freed object is reused where it was";
}

// The metadata count is what was handed out (with its alignment padding), not the 1 MiB
// chunk it came from: it read 1.00 MiB for a program that used 70 KiB of it.
TEST(MetaPool, MetaBytesCountsWhatWasHandedOut) {
  ASSERT_NE(MetaAllocate(24, 8), nullptr);
  const std::size_t before = MetaBytes();
  ASSERT_NE(MetaAllocate(100, 64), nullptr);
  const std::size_t grew = MetaBytes() - before;
  EXPECT_GE(grew, 128u);  // 100 rounded up to 64s
  EXPECT_LT(grew, 128u + 64u) << "at most a line of padding before it";
}

// Small records on both sides of a page-aligned block lie side by side: the page-aligned
// block comes from the chunk's top. From the bottom it had skipped to the next page and the
// records after it started another, so a small program wrote four pages of metadata (span
// records, two pages of thread cache, span records) where three hold it.
TEST(MetaPool, PageAlignedBlocksLeaveTheSmallRecordsSideBySide) {
  constexpr std::uintptr_t kPage = 4096;
  // A 1 MiB chunk can end between two records once: three tries, one must find them beside.
  bool beside = false;
  for (int attempt = 0; attempt < 3 && !beside; ++attempt) {
    const auto before = reinterpret_cast<std::uintptr_t>(MetaAllocate(64, kMetaLine));
    const auto page = reinterpret_cast<std::uintptr_t>(MetaAllocate(2 * kPage, kPage));
    const auto after = reinterpret_cast<std::uintptr_t>(MetaAllocate(64, kMetaLine));
    ASSERT_NE(before, 0u);
    ASSERT_NE(page, 0u);
    ASSERT_NE(after, 0u);
    EXPECT_EQ(page % kPage, 0u);
    EXPECT_TRUE(page + 2 * kPage <= before || before + 64 <= page) << "the blocks overlap";
    EXPECT_TRUE(page + 2 * kPage <= after || after + 64 <= page) << "the blocks overlap";
    beside = after == before + 64;
  }
  EXPECT_TRUE(beside) << "a page-aligned block came between two small records";
}

// In a fresh process (the death test's "threadsafe" style runs it in a new one, where nothing
// used the metadata yet) the first 16 records of 64 bytes come from the 1 KiB reserve in .bss
// and the next from a chunk; a page-aligned block never comes from the reserve.
TEST(MetaPoolDeathTest, TheFirstSmallRecordsComeFromTheReserveInBss) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        int in_reserve = 0;
        bool left = false;
        bool came_back = false;
        for (int i = 0; i < 64; ++i) {
          if (InMetaReserve(MetaAllocate(64, kMetaLine))) {
            ++in_reserve;
            came_back = came_back || left;
          } else {
            left = true;
          }
        }
        const bool page_outside = !InMetaReserve(MetaAllocate(4096, 4096));
        std::fprintf(stderr, "in reserve %d, came back %d, page outside %d\n", in_reserve,
                     came_back, page_outside);
        std::_Exit(in_reserve == 16 && !came_back && page_outside ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}

TEST(MetaPool, ThePlainPoolKeepsCacheLineAlignment) {
  MetaPool<PageAndAHalf> pool;
  ASSERT_NE(MetaAllocate(24), nullptr);
  const auto a = reinterpret_cast<std::uintptr_t>(pool.New());
  ASSERT_NE(a, 0u);
  EXPECT_EQ(a % kMetaLine, 0u);
}

}  // namespace
}  // namespace memarena::host
