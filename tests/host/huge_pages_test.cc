// Transparent huge pages for fresh pages (PageHeap::SetHugePages): large blocks on fresh
// pages, and past PageHeap::kHugeGrowthHeld the growth by whole huge pages. Which ranges
// carry the advice, checked on the kernel's own record of it (the `hg` and `nh` flags of
// /proc/self/smaps), and that the advice never outlives the pages' commit. Each test builds
// its own heap over its own pagemap, as page_heap_test does.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "host/page_heap.h"
#include "host/pagemap.h"
#include "memarena/config.h"
#include "platform/os.h"

namespace memarena::host {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// One mapping of /proc/self/smaps: its range and its VmFlags line.
struct Mapping {
  std::uintptr_t start = 0;
  std::uintptr_t end = 0;
  std::string flags;
  bool Has(const char* flag) const {
    std::istringstream words(flags);
    for (std::string word; words >> word;) {
      if (word == flag) return true;
    }
    return false;
  }
};

// The mappings that overlap [lo, hi).
std::vector<Mapping> MappingsIn(std::uintptr_t lo, std::uintptr_t hi) {
  std::ifstream smaps("/proc/self/smaps");
  std::vector<Mapping> found;
  Mapping current;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long long start = 0;
    unsigned long long end = 0;
    char dash = 0;
    std::istringstream header(line);
    if (header >> std::hex >> start >> dash >> end && dash == '-' &&
        line.find(':') > line.find(' ')) {  // "start-end perms ...", not "Key: value"
      current = {start, end, ""};
    } else if (line.rfind("VmFlags:", 0) == 0) {
      current.flags = line.substr(8);
      if (current.start < hi && current.end > lo) found.push_back(current);
    }
  }
  return found;
}

// Whether any page of [lo, hi) carries `flag` ("hg": MADV_HUGEPAGE, "nh": MADV_NOHUGEPAGE).
bool AnyPageHas(std::uintptr_t lo, std::uintptr_t hi, const char* flag) {
  for (const Mapping& m : MappingsIn(lo, hi)) {
    if (m.Has(flag)) return true;
  }
  return false;
}

// Whether every page of [lo, hi) carries `flag`.
bool EveryPageHas(std::uintptr_t lo, std::uintptr_t hi, const char* flag) {
  std::uintptr_t covered = lo;
  for (const Mapping& m : MappingsIn(lo, hi)) {
    if (m.start > covered || !m.Has(flag)) return false;
    covered = m.end;
  }
  return covered >= hi;
}

std::uintptr_t Address(const Span* span) { return reinterpret_cast<std::uintptr_t>(span->Start()); }

class HugePagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    huge_ = platform::HugePageSize();
    if (huge_ == 0) {
      GTEST_SKIP() << "the kernel backs no memory with transparent huge pages here "
                      "(/sys/kernel/mm/transparent_hugepage/enabled says [never], or is absent)";
    }
  }
  Span* New(std::size_t bytes) {
    Failure failure = Failure::kNone;
    Span* span = heap_.New(bytes / kPageSize, 1, 0, bytes, &failure);
    EXPECT_NE(span, nullptr);
    return span;
  }
  void ExpectConsistent() {
    const char* problem = heap_.CheckInvariants();
    EXPECT_EQ(problem, nullptr) << problem;
  }
  // The whole huge pages inside `span`.
  std::uintptr_t InteriorLo(const Span* span) const {
    return (Address(span) + huge_ - 1) & ~(huge_ - 1);
  }
  std::uintptr_t InteriorHi(const Span* span) const {
    return (Address(span) + span->Bytes()) & ~(huge_ - 1);
  }

  std::size_t huge_ = 0;
  std::unique_ptr<Pagemap> pagemap_ = std::make_unique<Pagemap>();
  PageHeap heap_{pagemap_.get(), 256 * kMiB};
};

TEST_F(HugePagesTest, AFreshLargeBlockAdvisesTheWholeHugePagesInsideItAndNothingElse) {
  Span* first = New(kPageSize);  // so the block below starts off a huge page boundary
  Span* block = New(8 * kMiB + 3 * kPageSize);
  ASSERT_TRUE(first && block);
  EXPECT_EQ(heap_.Stats().huge_page_blocks, 1u);
  EXPECT_TRUE(block->huge_advised);
  const std::uintptr_t lo = InteriorLo(block);
  const std::uintptr_t hi = InteriorHi(block);
  ASSERT_GE(hi - lo, 3 * huge_);
  EXPECT_TRUE(EveryPageHas(lo, hi, "hg"));
  // The partial huge pages at the block's ends, and the reservation around it, stay as the
  // reservation was made: no huge pages.
  EXPECT_FALSE(AnyPageHas(Address(first), lo, "hg"));
  EXPECT_FALSE(AnyPageHas(hi, Address(block) + block->Bytes(), "hg"));
  EXPECT_TRUE(EveryPageHas(Address(first), lo, "nh"));
  std::memset(block->Start(), 0x5a, block->Bytes());  // usable like any block
  heap_.Delete(block);
  heap_.Delete(first);
  ExpectConsistent();
}

TEST_F(HugePagesTest, DecommitTakesTheAdviceBackBeforeThePagesGo) {
  Span* block = New(8 * kMiB);
  ASSERT_NE(block, nullptr);
  const std::uintptr_t start = Address(block);
  const std::uintptr_t end = start + block->Bytes();
  std::memset(block->Start(), 1, block->Bytes());
  heap_.Delete(block);
  // Freed but committed: the advice stays with the pages (nothing faults in them anew).
  EXPECT_TRUE(AnyPageHas(start, end, "hg"));
  heap_.ReleaseFree();
  EXPECT_FALSE(AnyPageHas(start, end, "hg"));
  EXPECT_TRUE(EveryPageHas(start, end, "nh"));
  EXPECT_EQ(platform::ResidentBytesIn(reinterpret_cast<void*>(start), end - start), 0u);
  ExpectConsistent();
}

TEST_F(HugePagesTest, TheAdviceFollowsThePagesThroughSplitsAndMergesUntilTheyAreReturned) {
  Span* block = New(8 * kMiB);
  ASSERT_NE(block, nullptr);
  const std::uintptr_t start = Address(block);
  const std::uintptr_t end = start + block->Bytes();
  heap_.Delete(block);
  // A small span and a smaller large block carved from the advised free pages carry the
  // mark; the rest of the free span keeps it.
  Span* small = nullptr;
  {
    Failure failure = Failure::kNone;
    small = heap_.New(1, 1, 1, 0, &failure);
  }
  Span* part = New(3 * kMiB);
  ASSERT_TRUE(small && part);
  EXPECT_TRUE(small->huge_advised);
  EXPECT_TRUE(part->huge_advised);
  EXPECT_EQ(heap_.Stats().huge_page_blocks, 1u);  // committed pages: no new advice
  heap_.ReleaseFree();  // the free remainder goes back, its advice first
  ExpectConsistent();
  heap_.Delete(small);
  heap_.Delete(part);
  heap_.ReleaseFree();
  EXPECT_FALSE(AnyPageHas(start, end, "hg"));
  ExpectConsistent();
}

TEST_F(HugePagesTest, AFreeSpanMergedIntoAnotherRecordKeepsTheMarkEitherSide) {
  // The unadvised span freed last keeps its record and absorbs the advised one, after it
  // and then before it.
  Span* before = New(kPageSize);
  Span* block = New(8 * kMiB);
  Span* after = New(kPageSize);
  ASSERT_TRUE(before && block && after);
  const std::uintptr_t start = Address(before);
  const std::uintptr_t end = Address(after) + after->Bytes();
  heap_.Delete(block);
  heap_.Delete(before);  // absorbs the block after it
  EXPECT_TRUE(before->huge_advised);
  heap_.Delete(after);  // absorbs both before it
  EXPECT_TRUE(after->huge_advised);
  heap_.ReleaseFree();
  EXPECT_FALSE(AnyPageHas(start, end, "hg"));
  ExpectConsistent();
}

TEST_F(HugePagesTest, ABlockReusingCommittedPagesMakesNoSyscall) {
  Span* block = New(8 * kMiB);
  ASSERT_NE(block, nullptr);
  const std::uintptr_t start = Address(block);
  heap_.Delete(block);
  Span* again = New(8 * kMiB);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(Address(again), start);
  EXPECT_EQ(heap_.Stats().huge_page_blocks, 1u);
  heap_.Delete(again);
  ExpectConsistent();
}

TEST_F(HugePagesTest, AGrowIntoReturnedPagesAdvisesTheGrownBlock) {
  Span* block = New(kMiB);  // too small for a whole huge page
  ASSERT_NE(block, nullptr);
  EXPECT_FALSE(block->huge_advised);
  ASSERT_TRUE(heap_.GrowInPlace(block, (9 * kMiB) / kPageSize, 9 * kMiB));
  EXPECT_TRUE(block->huge_advised);
  EXPECT_EQ(heap_.Stats().huge_page_blocks, 1u);
  EXPECT_TRUE(EveryPageHas(InteriorLo(block), InteriorHi(block), "hg"));
  heap_.Delete(block);
  heap_.ReleaseFree();
  ExpectConsistent();
}

TEST_F(HugePagesTest, AGrowOverAdvisedFreePagesCarriesTheMark) {
  Span* block = New(kMiB);
  Span* advised = New(8 * kMiB);
  ASSERT_TRUE(block && advised);
  ASSERT_EQ(Address(advised), Address(block) + kMiB);
  heap_.Delete(advised);
  // Committed pages only: no new advice, but the block now holds advised pages.
  ASSERT_TRUE(heap_.GrowInPlace(block, (5 * kMiB) / kPageSize, 5 * kMiB));
  EXPECT_TRUE(block->huge_advised);
  EXPECT_EQ(heap_.Stats().huge_page_blocks, 1u);
  // The rest of the advised span, in use, so the freed block merges with nothing.
  Span* rest = New(4 * kMiB);
  ASSERT_NE(rest, nullptr);
  ASSERT_EQ(Address(rest), Address(block) + 5 * kMiB);
  const std::uintptr_t start = Address(block);
  heap_.Delete(block);
  heap_.ReleaseFree();
  EXPECT_FALSE(AnyPageHas(start, start + 5 * kMiB, "hg"));
  heap_.Delete(rest);
  heap_.ReleaseFree();
  ExpectConsistent();
}

TEST_F(HugePagesTest, TheCheckerNamesAReturnedSpanStillAdvised) {
  Span* block = New(8 * kMiB);
  Span* after = New(kPageSize);  // keeps the block's pages apart from the returned rest
  ASSERT_TRUE(block && after);
  heap_.Delete(block);
  heap_.ReleaseFree();  // the block's span, returned; its record survives (nothing merged)
  ExpectConsistent();
  ASSERT_EQ(block->state, SpanState::kReturned);
  block->huge_advised = true;
  const char* problem = heap_.CheckInvariants();
  ASSERT_NE(problem, nullptr);
  EXPECT_STREQ(problem, "a returned span is still advised to use huge pages");
  block->huge_advised = false;
  heap_.Delete(after);
  ExpectConsistent();
}

TEST_F(HugePagesTest, SwitchedOffNoBlockAsks) {
  heap_.SetHugePages(false);
  Span* block = New(8 * kMiB);
  ASSERT_NE(block, nullptr);
  EXPECT_FALSE(block->huge_advised);
  EXPECT_EQ(heap_.Stats().huge_page_blocks, 0u);
  EXPECT_FALSE(AnyPageHas(Address(block), Address(block) + block->Bytes(), "hg"));
  heap_.Delete(block);
  ExpectConsistent();
}

// Past PageHeap::kHugeGrowthHeld, a request smaller than a huge page that no committed free
// span fits commits a whole huge page, advised, and the next requests are carved from it.
class HugeGrowthTest : public HugePagesTest {
 protected:
  // Brings held to the threshold with one untouched block (address space only).
  void FillToThreshold() {
    base_ = New(PageHeap::kHugeGrowthHeld);
    ASSERT_NE(base_, nullptr);
  }
  Span* NewSmall() {
    Failure failure = Failure::kNone;
    Span* span = heap_.New(2, 1, 1, 0, &failure);
    EXPECT_NE(span, nullptr);
    return span;
  }
  void FreeAll(std::initializer_list<Span*> spans) {
    for (Span* span : spans) heap_.Delete(span);
    heap_.Delete(base_);
    heap_.ReleaseFree();
    ExpectConsistent();
  }
  Span* base_ = nullptr;
};

TEST_F(HugeGrowthTest, BelowTheThresholdASmallRequestCommitsOnlyItsPages) {
  Span* small = NewSmall();
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(heap_.Stats().held, 2 * kPageSize);
  EXPECT_EQ(heap_.Stats().huge_pages_committed, 0u);
  EXPECT_FALSE(AnyPageHas(Address(small), Address(small) + small->Bytes(), "hg"));
  heap_.Delete(small);
  ExpectConsistent();
}

TEST_F(HugeGrowthTest, PastItASmallRequestCommitsAWholeHugePageThatTheNextOnesShare) {
  FillToThreshold();
  const std::size_t held = heap_.Stats().held;
  Span* a = NewSmall();
  Span* b = NewSmall();
  ASSERT_TRUE(a && b);
  const PageHeapStats s = heap_.Stats();
  EXPECT_EQ(s.huge_pages_committed, 1u);
  EXPECT_EQ(s.held, held + huge_);  // the rest of the huge page is committed, free
  EXPECT_EQ(s.free_committed, huge_ - 4 * kPageSize);
  EXPECT_TRUE(a->huge_advised && b->huge_advised);
  const std::uintptr_t page = Address(a) & ~(huge_ - 1);
  EXPECT_EQ(Address(b) & ~(huge_ - 1), page);  // both in the one huge page
  EXPECT_TRUE(EveryPageHas(page, page + huge_, "hg"));
  std::memset(a->Start(), 1, a->Bytes());
  FreeAll({a, b});
  EXPECT_FALSE(AnyPageHas(page, page + huge_, "hg"));
}

TEST_F(HugeGrowthTest, AHugePageOrMoreIsALargeBlockAndCommitsOnlyItsPages) {
  FillToThreshold();
  const std::size_t held = heap_.Stats().held;
  Span* block = New(huge_ + kPageSize);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(heap_.Stats().held, held + block->Bytes());
  EXPECT_EQ(heap_.Stats().huge_pages_committed, 0u);
  FreeAll({block});
}

TEST_F(HugeGrowthTest, SwitchedOffOrUnderTheReleaseThresholdItCommitsOnlyThePages) {
  FillToThreshold();
  heap_.SetHugePages(false);
  Span* a = NewSmall();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(heap_.Stats().huge_pages_committed, 0u);
  heap_.SetHugePages(true);
  // A ceiling with room for a huge page, whose release threshold one would cross.
  heap_.SetReleaseRatio(0.5);
  ASSERT_TRUE(heap_.TrySetCeiling(2 * (heap_.Stats().held + huge_ - kPageSize)));
  Span* b = New(3 * kPageSize);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(heap_.Stats().huge_pages_committed, 0u);
  ASSERT_TRUE(heap_.TrySetCeiling(0));
  FreeAll({a, b});
}

TEST(HugePagesConfig, TheKeyIsOnByDefaultAndParses) {
  EXPECT_TRUE(HostConfig{}.huge_pages);
  EXPECT_FALSE(HostConfig::Parse("huge_pages:0").huge_pages);
  EXPECT_TRUE(HostConfig::Parse("huge_pages:1").huge_pages);
}

}  // namespace
}  // namespace memarena::host
