// Transparent huge pages for fresh pages (PageHeap::SetHugePages): large blocks on fresh
// pages, and past PageHeap::kHugeGrowthHeld the growth by whole huge pages. Which ranges
// carry the advice, checked on the kernel's own record of it (the `hg` and `nh` flags of
// /proc/self/smaps), and that the advice never outlives the pages' commit. Each test builds
// its own heap over its own pagemap, as page_heap_test does.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
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

// Whether this kernel maps pages on request (MADV_POPULATE_WRITE, Linux 5.14), which the
// heap's timing of huge pages' first faults needs.
bool KernelPopulates() {
  void* page = platform::ReserveAddressSpace(kPageSize, kPageSize);
  const bool ok = page != nullptr && platform::CommitPages(page, kPageSize) &&
                  platform::PopulateForWrite(page, kPageSize);
  if (page != nullptr) platform::UnmapPages(page, kPageSize);
  return ok;
}

class HugePagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    huge_ = platform::HugePageSize();
    if (huge_ == 0) {
      GTEST_SKIP() << "the kernel backs no memory with transparent huge pages here "
                      "(/sys/kernel/mm/transparent_hugepage/enabled says [never], or is absent)";
    }
    // What the advice does must not hang on how fast this machine's huge pages come: the
    // tests of the switch set their own bound.
    heap_.SetSlowHugeFaultNanos(std::numeric_limits<std::uint64_t>::max());
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
  // Whether the huge page at `lo` is resident whole: a fault there made a huge page.
  bool WholeHugePageAt(std::uintptr_t lo) const {
    return platform::ResidentBytesIn(reinterpret_cast<const void*>(lo), huge_) == huge_;
  }
  void SkipUnlessTheKernelPopulates() {
    if (!KernelPopulates()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE (Linux 5.14)";
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

// The trial: until kFastInARowToTrust huge pages in a row have faulted fast, a fresh block
// asks for its first huge page only; then for all of them.
TEST_F(HugePagesTest, UntilHugePagesProveFastABlockAdvisesOnlyItsFirstHugePage) {
  SkipUnlessTheKernelPopulates();
  heap_.SetSlowHugeFaultNanos(std::numeric_limits<std::uint64_t>::max() / 2);  // none slow
  std::vector<Span*> blocks;
  std::uint32_t huge_faults = 0;
  while (blocks.size() < 8 && huge_faults < HugeFaultWatch::kFastInARowToTrust) {
    Span* block = New(8 * kMiB);
    ASSERT_NE(block, nullptr);
    const std::uintptr_t lo = InteriorLo(block);
    EXPECT_TRUE(EveryPageHas(lo, lo + huge_, "hg"));
    EXPECT_FALSE(AnyPageHas(lo + huge_, InteriorHi(block), "hg")) << "the trial asks for one";
    if (WholeHugePageAt(lo)) ++huge_faults;
    blocks.push_back(block);
  }
  if (huge_faults < HugeFaultWatch::kFastInARowToTrust) {
    for (Span* block : blocks) heap_.Delete(block);
    GTEST_SKIP() << "the kernel made too few huge pages to end the trial";
  }
  Span* trusted = New(8 * kMiB);
  ASSERT_NE(trusted, nullptr);
  EXPECT_TRUE(EveryPageHas(InteriorLo(trusted), InteriorHi(trusted), "hg"));
  blocks.push_back(trusted);
  for (Span* block : blocks) heap_.Delete(block);
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

// New takes the first write fault of the first huge page it advised itself, to time it:
// that huge page, and nothing else of the block, is resident when New returns.
TEST_F(HugePagesTest, NewFaultsInTheFirstAdvisedHugePageAndNothingElse) {
  SkipUnlessTheKernelPopulates();
  Span* block = New(8 * kMiB + 3 * kPageSize);
  ASSERT_NE(block, nullptr);
  ASSERT_TRUE(block->huge_advised);
  const std::size_t resident = platform::ResidentBytesIn(block->Start(), block->Bytes());
  const auto lo = reinterpret_cast<const void*>(InteriorLo(block));
  EXPECT_EQ(platform::ResidentBytesIn(lo, kPageSize), kPageSize);
  EXPECT_EQ(platform::ResidentBytesIn(lo, huge_), resident);
  // The whole huge page, or one page where the kernel had no huge page to give.
  EXPECT_TRUE(resident == huge_ || resident == kPageSize) << resident;
  heap_.Delete(block);
  ExpectConsistent();
}

TEST_F(HugePagesTest, SlowFirstFaultsSwitchTheAdviceOffForNewBlocks) {
  SkipUnlessTheKernelPopulates();
  heap_.SetSlowHugeFaultNanos(0);  // every fault that makes a huge page is slow
  std::vector<Span*> advised;
  std::uint32_t huge_faults = 0;
  while (advised.size() < 8 && huge_faults < HugeFaultWatch::kSlowInARow) {
    advised.push_back(New(4 * kMiB));
    ASSERT_NE(advised.back(), nullptr);
    if (WholeHugePageAt(InteriorLo(advised.back()))) ++huge_faults;
  }
  if (huge_faults < HugeFaultWatch::kSlowInARow) {
    GTEST_SKIP() << "the kernel had no free huge page for the advised blocks";
  }
  ASSERT_GE(heap_.Stats().slow_huge_fault_nanos, HugeFaultWatch::kMinHugeFaultNanos);
  const std::uint64_t blocks_advised = heap_.Stats().huge_page_blocks;
  Span* after = New(8 * kMiB);
  ASSERT_NE(after, nullptr);
  EXPECT_FALSE(after->huge_advised);
  EXPECT_EQ(heap_.Stats().huge_page_blocks, blocks_advised);
  EXPECT_FALSE(AnyPageHas(Address(after), Address(after) + after->Bytes(), "hg"));
  EXPECT_EQ(platform::ResidentBytesIn(after->Start(), after->Bytes()), 0u);  // nothing timed
  // The blocks advised before keep the advice until their pages are returned.
  EXPECT_TRUE(advised.back()->huge_advised);
  // Turned on again (the huge_pages key applied again), the heap forgets the slow faults.
  heap_.SetHugePages(true);
  EXPECT_EQ(heap_.Stats().slow_huge_fault_nanos, 0u);
  Span* again = New(8 * kMiB);
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(again->huge_advised);
  heap_.Delete(again);
  heap_.Delete(after);
  for (Span* span : advised) heap_.Delete(span);
  heap_.ReleaseFree();
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

TEST_F(HugeGrowthTest, SlowFirstFaultsSwitchTheGrowthByHugePagesOff) {
  SkipUnlessTheKernelPopulates();
  heap_.SetSlowHugeFaultNanos(0);
  FillToThreshold();  // a large block: its first huge page's fault is the first timed
  Span* a = NewSmall();  // commits a huge page: the second
  ASSERT_NE(a, nullptr);
  // New took the first fault of the committed huge page at `a`'s first page, to time it.
  ASSERT_EQ(platform::ResidentBytesIn(a->Start(), kPageSize), kPageSize);
  if (!WholeHugePageAt(InteriorLo(base_)) || !WholeHugePageAt(Address(a) & ~(huge_ - 1))) {
    GTEST_SKIP() << "the kernel had no free huge page for the two advised ranges";
  }
  ASSERT_NE(heap_.Stats().slow_huge_fault_nanos, 0u);
  EXPECT_EQ(heap_.Stats().huge_pages_committed, 1u);
  // Larger than what is left of the committed huge page: it would commit another.
  const std::size_t held = heap_.Stats().held;
  Failure failure = Failure::kNone;
  Span* b = heap_.New(huge_ / kPageSize - 1, 1, 1, 0, &failure);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(heap_.Stats().huge_pages_committed, 1u);
  EXPECT_LE(heap_.Stats().held, held + b->Bytes());
  FreeAll({a, b});
}

TEST(HugePagesConfig, TheKeyIsOnByDefaultAndParses) {
  EXPECT_TRUE(HostConfig{}.huge_pages);
  EXPECT_FALSE(HostConfig::Parse("huge_pages:0").huge_pages);
  EXPECT_TRUE(HostConfig::Parse("huge_pages:1").huge_pages);
}

// The measurement the watch's bound rises to (HugeFaultWatch): real faults take time, and
// none is asked for nothing.
TEST(BasePageFaultNanos, TimesRealFaults) {
  EXPECT_EQ(platform::BasePageFaultNanos(0), 0u);
  const std::uint64_t nanos = platform::BasePageFaultNanos(PageHeap::kBasePageProbePages);
  EXPECT_GT(nanos, 0u);             // a fault zeroes a page: never free
  EXPECT_LT(nanos, 100'000'000u);  // 100 ms per page is no machine's
}

// A pagemap leaf (32 MiB of slots, written a slot at a time as the heap grows) never takes
// huge pages: under "always" its first slot written would fault in 2 MiB.
TEST(PagemapLeaves, AreAdvisedAgainstHugePages) {
  if (platform::HugePageSize() == 0) GTEST_SKIP() << "no transparent huge pages here";
  auto pagemap = std::make_unique<Pagemap>();
  const std::uintptr_t page = 3 * Pagemap::kLeafLength + 5;
  ASSERT_TRUE(pagemap->Ensure(page, 1));
  const std::uintptr_t leaf =
      pagemap->Find(reinterpret_cast<const void*>(page << kPageShift)).freed_mark -
      Pagemap::kFreedMarkOffset;  // the leaf's address
  ASSERT_NE(leaf, 0u);
  EXPECT_TRUE(EveryPageHas(leaf, leaf + Pagemap::kLeafBytes, "nh"));
}

}  // namespace
}  // namespace memarena::host
