// Spans split and merge, the ceiling and the release of a private PageHeap, and the
// pagemap that finds them. Each test builds its own heap over its own pagemap.
#include "host/page_heap.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <bit>
#include <cstring>
#include <iterator>
#include <memory>
#include <set>
#include <vector>

#include "host/object_start.h"
#include "host/pagemap.h"
#include "platform/os.h"
#include "support/resident_pages.h"

namespace memarena::host {
namespace {

constexpr std::size_t kGrowPages = 128;

class PageHeapTest : public ::testing::Test {
 protected:
  Span* New(std::size_t pages, std::size_t align_pages = 1, std::uint8_t cls = 0) {
    Failure failure = Failure::kNone;
    Span* span = heap_.New(pages, align_pages, cls, pages * kPageSize - 1, &failure);
    EXPECT_EQ(span == nullptr, failure != Failure::kNone);
    last_failure_ = failure;
    return span;
  }
  void ExpectConsistent() {
    const char* problem = heap_.CheckInvariants();
    EXPECT_EQ(problem, nullptr) << problem;
  }
  // Once every span is freed: the release leaves nothing held and every page returned.
  void ExpectAllReturnedAfterRelease() {
    heap_.ReleaseFree();
    EXPECT_EQ(heap_.Stats().held, 0u);
    EXPECT_EQ(heap_.Stats().free_returned, heap_.Stats().reserved);  // all merged back
    ExpectConsistent();
  }

  std::unique_ptr<Pagemap> pagemap_ = std::make_unique<Pagemap>();
  PageHeap heap_{pagemap_.get(), kGrowPages * kPageSize};
  Failure last_failure_ = Failure::kNone;
};

// InFreeSpan (the misuse report's question) answers from the free lists, not from the
// pagemap: after two freed neighbours merge, the pages of the one whose record the merge
// retired are still found free, while their slots name that record.
TEST_F(PageHeapTest, InFreeSpanFindsPagesAMergeTookOver) {
  Span* low = New(2);
  Span* high = New(3);
  Span* kept = New(1);
  ASSERT_TRUE(low != nullptr && high != nullptr && kept != nullptr);
  ASSERT_EQ(high->first_page, low->first_page + 2) << "the heap carves a reservation in order";
  const std::uintptr_t low_page = low->first_page;
  const std::uintptr_t high_page = high->first_page;
  const std::uintptr_t kept_page = kept->first_page;
  EXPECT_FALSE(heap_.InFreeSpan(high_page)) << "in use";
  heap_.Delete(low);
  heap_.Delete(high);  // merges with `low`'s free span: one of the two records is retired
  for (std::uintptr_t page = low_page; page < high_page + 3; ++page) {
    EXPECT_TRUE(heap_.InFreeSpan(page)) << page - low_page;
  }
  EXPECT_FALSE(heap_.InFreeSpan(kept_page)) << "in use";
  EXPECT_FALSE(heap_.InFreeSpan(std::uintptr_t{1})) << "not this heap's";
  heap_.Delete(kept);
  ExpectConsistent();
}

TEST_F(PageHeapTest, NewSplitsAReservationAndCountsOnlyCommittedPagesAsHeld) {
  Span* a = New(3);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->num_pages, 3u);
  EXPECT_EQ(a->state, SpanState::kInUse);
  const PageHeapStats s = heap_.Stats();
  EXPECT_EQ(s.held, 3 * kPageSize);
  EXPECT_EQ(s.in_use, 3 * kPageSize);
  EXPECT_EQ(s.reserved, kGrowPages * kPageSize);
  EXPECT_EQ(s.free_returned, (kGrowPages - 3) * kPageSize);
  EXPECT_EQ(s.num_reserves, 1u);
  EXPECT_EQ(s.large_allocs, 1u);
  EXPECT_EQ(heap_.LargeInUse(), 3 * kPageSize);
  EXPECT_EQ(heap_.LargeRequested(), 3 * kPageSize - 1);
  std::memset(a->Start(), 0x5a, a->Bytes());  // the span's memory is usable
  ExpectConsistent();
}

// Every reservation starts on a kReservationAlignment boundary, even right after another
// mapping (MapReservation: a heap line with the same address bits 12-27 as a metadata line
// shares its AMD L1 way-predictor tag, and the two thrash).
TEST_F(PageHeapTest, EveryReservationStartsOnAReservationAlignmentBoundary) {
  Span* a = New(kGrowPages);
  ASSERT_NE(a, nullptr);
  void* other = platform::MapPages(std::size_t{1} << 20, 0);  // a metadata chunk, say
  ASSERT_NE(other, nullptr);
  Span* b = New(kGrowPages);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(heap_.Stats().num_reserves, 2u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a->Start()) % PageHeap::kReservationAlignment, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b->Start()) % PageHeap::kReservationAlignment, 0u);
  platform::UnmapPages(other, std::size_t{1} << 20);
  heap_.Delete(a);
  heap_.Delete(b);
  ExpectAllReturnedAfterRelease();
}

// A later reservation is tried below the lowest and above the highest, nearest first and
// then a step further each time, inside the first reservation's pagemap leaf only (so the
// free's first-leaf shortcut holds).
TEST(PageHeapPlacement, LaterReservationsAreTriedBesideTheOthersInTheFirstLeaf) {
  constexpr std::uintptr_t kAlign = PageHeap::kReservationAlignment;
  constexpr std::uintptr_t kLeafSpan = std::uintptr_t{Pagemap::kLeafLength} << kPageShift;
  const std::uintptr_t leaf_start = 0x3f * kLeafSpan;  // some leaf's first byte
  const std::uintptr_t leaf = leaf_start >> kPageShift >> Pagemap::kLeafBits;
  // One reservation mid-leaf: both sides fit, and so do the next places out.
  std::uintptr_t low = leaf_start + 3 * kAlign;
  std::uintptr_t high = low + kAlign;
  auto places = PageHeap::PlacesBeside(low, high, leaf, kAlign, 0);
  EXPECT_EQ(places[0], low - kAlign);
  EXPECT_EQ(places[1], high);
  places = PageHeap::PlacesBeside(low, high, leaf, kAlign, 2);
  EXPECT_EQ(places[0], low - 3 * kAlign);
  EXPECT_EQ(places[1], high + 2 * kAlign);
  places = PageHeap::PlacesBeside(low, high, leaf, kAlign, 3);  // below would leave the leaf
  EXPECT_EQ(places[0], 0u);
  EXPECT_EQ(places[1], high + 3 * kAlign);
  // A request that is not a multiple of the alignment ends at or before `low`.
  places = PageHeap::PlacesBeside(low, high - 4096, leaf, kAlign + 8192, 0);
  EXPECT_EQ(places[0], low - 2 * kAlign);
  EXPECT_EQ(places[1], high);
  // At the leaf's bottom only above fits; at its top only below.
  places = PageHeap::PlacesBeside(leaf_start, leaf_start + kAlign, leaf, kAlign, 0);
  EXPECT_EQ(places[0], 0u);
  EXPECT_EQ(places[1], leaf_start + kAlign);
  places = PageHeap::PlacesBeside(leaf_start + kLeafSpan - kAlign, leaf_start + kLeafSpan, leaf,
                                  kAlign, 0);
  EXPECT_EQ(places[0], leaf_start + kLeafSpan - 2 * kAlign);
  EXPECT_EQ(places[1], 0u);
  // A request larger than the room left on either side, or than a leaf, fits nowhere.
  places = PageHeap::PlacesBeside(leaf_start + kAlign, leaf_start + 2 * kAlign, leaf, kLeafSpan, 0);
  EXPECT_EQ(places[0], 0u);
  EXPECT_EQ(places[1], 0u);
  // Near address 0 nothing wraps around.
  places = PageHeap::PlacesBeside(kAlign / 2, kAlign, 0, kAlign, 0);
  EXPECT_EQ(places[0], 0u);
  EXPECT_EQ(places[1], kAlign);
}

// Live: a second reservation lands in the first one's leaf whenever one of the places Grow
// tries is free, which the test checks by mapping those places itself when the heap did not.
// A small mapping right below the first reservation (where the kernel puts a thread's stack,
// say) must not push the second one out of the leaf.
TEST_F(PageHeapTest, ASecondReservationStaysInTheFirstOnesLeafWhenThereIsRoom) {
  Span* a = New(kGrowPages);
  ASSERT_NE(a, nullptr);
  const std::uintptr_t a_start = reinterpret_cast<std::uintptr_t>(a->Start());
  const std::uintptr_t leaf = a->first_page >> Pagemap::kLeafBits;
  const std::uintptr_t nearest_below = PageHeap::PlacesBeside(
      a_start, a_start + kGrowPages * kPageSize, leaf, kGrowPages * kPageSize, 0)[0];
  void* blocker = nearest_below == 0
                      ? nullptr
                      : platform::MapPagesAt(reinterpret_cast<void*>(nearest_below), kPageSize);
  Span* b = New(kGrowPages);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(heap_.Stats().num_reserves, 2u);
  if ((b->first_page >> Pagemap::kLeafBits) != leaf) {
    for (std::size_t step = 0; step < PageHeap::kPlacementSteps; ++step) {
      for (const std::uintptr_t place :
           PageHeap::PlacesBeside(a_start, a_start + kGrowPages * kPageSize, leaf,
                                  kGrowPages * kPageSize, step)) {
        if (place == 0) continue;
        void* mapped = platform::MapPagesAt(reinterpret_cast<void*>(place), kGrowPages * kPageSize);
        EXPECT_EQ(mapped, nullptr) << "the heap left a free place in its first leaf unused";
        if (mapped != nullptr) platform::UnmapPages(mapped, kGrowPages * kPageSize);
      }
    }
  }
  if (blocker != nullptr) platform::UnmapPages(blocker, kPageSize);
  heap_.Delete(a);
  heap_.Delete(b);
  ExpectAllReturnedAfterRelease();
}

// The free rest of the newest reservation writes no slot for its last page: nothing can
// follow it, and that slot's pagemap page, at the reservation's far end, is one a small
// program otherwise never writes (4 KiB of its RSS). The next reservation may begin right
// there (PlacesBeside), so growing writes the slot first, and the two rests then merge.
TEST_F(PageHeapTest, TheNewestReservationsFarEndKeepsNoSlotUntilTheHeapGrows) {
  Span* a = New(2);
  ASSERT_NE(a, nullptr);
  const std::uintptr_t end = a->first_page + kGrowPages;  // the reservation's end
  Span* rest = pagemap_->Get(a->first_page + 2);
  ASSERT_NE(rest, nullptr);
  ASSERT_EQ(rest->first_page + rest->num_pages, end);
  EXPECT_EQ(pagemap_->Get(end - 1), nullptr) << "the far end's slot was written";
  ExpectConsistent();
  Span* b = New(kGrowPages);  // more than the rest: a second reservation
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(heap_.Stats().num_reserves, 2u);
  Span* old_rest = pagemap_->Get(a->first_page + 2);
  ASSERT_NE(old_rest, nullptr);
  EXPECT_EQ(pagemap_->Get(old_rest->LastPage()), old_rest)
      << "the first reservation's end is no longer the newest, and its slot is still unwritten";
  ExpectConsistent();  // names two bordering free spans that did not merge
  heap_.Delete(a);
  heap_.Delete(b);
  ExpectAllReturnedAfterRelease();
}

TEST_F(PageHeapTest, FreedNeighboursMergeIntoOneSpan) {
  Span* a = New(2);
  Span* b = New(3);
  Span* c = New(4);
  ASSERT_TRUE(a && b && c);
  // Consecutive carving from one reservation places them side by side.
  ASSERT_EQ(a->first_page + 2, b->first_page);
  ASSERT_EQ(b->first_page + 3, c->first_page);
  const std::uintptr_t first = a->first_page;
  heap_.Delete(a);
  heap_.Delete(c);
  ExpectConsistent();
  EXPECT_EQ(heap_.Stats().free_committed, 6 * kPageSize);
  EXPECT_EQ(heap_.Stats().largest_free_committed, 4 * kPageSize);
  heap_.Delete(b);  // bridges both: one committed free span of 9 pages
  ExpectConsistent();
  const PageHeapStats s = heap_.Stats();
  EXPECT_EQ(s.free_committed, 9 * kPageSize);
  EXPECT_EQ(s.largest_free_committed, 9 * kPageSize);
  Span* merged = pagemap_->Get(first);
  ASSERT_NE(merged, nullptr);
  EXPECT_EQ(merged->num_pages, 9u);
  EXPECT_EQ(pagemap_->Get(first + 8), merged);
  // A request of the merged size reuses it without touching the OS.
  Span* again = New(9);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->first_page, first);
  EXPECT_EQ(heap_.Stats().num_reserves, 1u);
  ExpectConsistent();
}

// The checker is only worth having if it fails: break one equation of page_heap.h at a
// time on a free span's record, see it named, and put it back.
TEST_F(PageHeapTest, TheCheckerNamesABrokenFreeSpanInvariant) {
  Span* a = New(2);
  Span* b = New(3);
  ASSERT_TRUE(a && b);
  heap_.Delete(a);  // a free committed span of 2 pages, kept apart by b in use
  ExpectConsistent();
  a->state = SpanState::kReturned;
  const char* problem = heap_.CheckInvariants();
  ASSERT_NE(problem, nullptr);
  EXPECT_STREQ(problem, "a span sits in the free list of another state");
  a->state = SpanState::kFree;
  a->num_pages = 1;
  problem = heap_.CheckInvariants();
  ASSERT_NE(problem, nullptr);
  EXPECT_STREQ(problem, "a span sits in the free list of another size");
  a->num_pages = 2;
  ExpectConsistent();
}

TEST_F(PageHeapTest, ASmallerRequestSplitsAFreeSpanAndKeepsTheRest) {
  Span* big = New(10);
  ASSERT_NE(big, nullptr);
  const std::uintptr_t first = big->first_page;
  heap_.Delete(big);
  Span* part = New(4);
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(part->first_page, first);  // the committed free span is preferred
  EXPECT_EQ(heap_.Stats().free_committed, 6 * kPageSize);
  EXPECT_EQ(heap_.Stats().held, 10 * kPageSize);  // splitting a committed span commits nothing
  ExpectConsistent();
}

// The committed free spans by length: a 1-page span and a 5-page one between in-use spans
// land in the 1-page and 4-7-page buckets; the returned rest of the reservation is not held
// and counts nowhere.
TEST_F(PageHeapTest, StatsCountCommittedFreeSpansByLength) {
  Span* spans[6] = {New(1), New(1), New(2), New(1), New(5), New(1)};
  for (Span* span : spans) ASSERT_NE(span, nullptr);
  heap_.Delete(spans[1]);
  heap_.Delete(spans[4]);
  const PageHeapStats s = heap_.Stats();
  EXPECT_EQ(s.free_by_length[0].spans, 1u);
  EXPECT_EQ(s.free_by_length[0].bytes, kPageSize);
  EXPECT_EQ(s.free_by_length[2].spans, 1u);
  EXPECT_EQ(s.free_by_length[2].bytes, 5 * kPageSize);
  std::size_t bytes = 0;
  for (const FreeSpanCount& c : s.free_by_length) bytes += c.bytes;
  EXPECT_EQ(bytes, s.free_committed);
  for (Span* span : {spans[0], spans[2], spans[3], spans[5]}) heap_.Delete(span);
  ExpectAllReturnedAfterRelease();
}

// A class span cut from a longer free span takes the end beside a class span, so the rest
// stays beside the large block and merges back when that block is freed (before: the
// front, and the rest was stranded between two class spans once the block went); a large
// block keeps the front, where the free pages after it let realloc grow it in place.
TEST_F(PageHeapTest, AClassSpanIsCarvedBesideAClassSpanAndALargeBlockAtTheFront) {
  Span* large = New(10);
  Span* freed = New(10);
  Span* kin = New(4, 1, 1);
  ASSERT_NE(large, nullptr);
  ASSERT_NE(freed, nullptr);
  ASSERT_NE(kin, nullptr);
  const std::uintptr_t first = freed->first_page;
  ASSERT_EQ(first, large->first_page + 10);
  ASSERT_EQ(kin->first_page, first + 10);
  heap_.Delete(freed);  // 10 free pages between a large block and a class span

  Span* block = New(3);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->first_page, first) << "a large block takes the front";
  heap_.Delete(block);

  Span* span = New(4, 1, 1);
  ASSERT_NE(span, nullptr);
  EXPECT_EQ(span->first_page, first + 6) << "a class span takes the end beside its kind";
  ExpectConsistent();
  heap_.Delete(large);  // the 6 pages left merge with the freed block's
  Span* merged = New(16);
  ASSERT_NE(merged, nullptr);
  EXPECT_EQ(merged->first_page, first - 10) << "the block's pages and the 6 left";
  EXPECT_EQ(heap_.Stats().free_committed, 0u);
  heap_.Delete(merged);
  heap_.Delete(span);
  heap_.Delete(kin);
  ExpectAllReturnedAfterRelease();
}

// A request no committed free span fits goes where a run of free spans holds the most
// committed pages: here a committed span between two returned ones, none long enough
// alone with the committed span, so the request straddles all three and only the
// returned pages it covers are committed (before: it took fresh pages from the
// reservation's tail and the committed span stayed beside them).
TEST_F(PageHeapTest, ARequestNoCommittedSpanFitsStraddlesTheFreeRunWithTheMostCommittedPages) {
  Span* a = New(4);
  Span* x = New(6);
  Span* c = New(6);
  Span* y = New(6);
  Span* e = New(4);
  ASSERT_TRUE(a && x && c && y && e);
  const std::uintptr_t run_first = x->first_page;
  const std::uintptr_t committed_first = c->first_page;
  heap_.Delete(x);
  heap_.Delete(y);
  heap_.ReleaseFree();  // x and y returned
  heap_.Delete(c);      // c committed, between them
  PageHeapStats before = heap_.Stats();
  ASSERT_EQ(before.free_committed, 6 * kPageSize);
  Span* wide = New(16);
  ASSERT_NE(wide, nullptr);
  EXPECT_GE(wide->first_page, run_first);
  EXPECT_LE(wide->first_page, committed_first);
  EXPECT_GE(wide->first_page + wide->num_pages, committed_first + 6);
  EXPECT_LE(wide->first_page + wide->num_pages, run_first + 18);
  EXPECT_TRUE(wide->fresh_pages) << "10 of its pages come from the OS";
  EXPECT_FALSE(wide->zero_pages) << "c's 6 pages were written: calloc must fill them";
  const PageHeapStats after = heap_.Stats();
  EXPECT_EQ(after.held - before.held, 10 * kPageSize);  // the 16 pages less the 6 committed
  EXPECT_EQ(after.free_committed, 0u);
  EXPECT_EQ(after.num_releases, before.num_releases);
  EXPECT_EQ(after.num_reserves, before.num_reserves);
  ExpectConsistent();
  heap_.Delete(wide);
  heap_.Delete(a);
  heap_.Delete(e);
  ExpectAllReturnedAfterRelease();
}

TEST_F(PageHeapTest, ReleaseDecommitsFreeSpansAndMergesThemWithTheRest) {
  Span* a = New(5);
  Span* b = New(5);
  ASSERT_TRUE(a && b);
  heap_.Delete(a);
  EXPECT_EQ(heap_.ReleaseFree(), 5 * kPageSize);
  PageHeapStats s = heap_.Stats();
  EXPECT_EQ(s.held, 5 * kPageSize);
  EXPECT_EQ(s.free_committed, 0u);
  EXPECT_EQ(s.num_releases, 1u);
  EXPECT_EQ(s.bytes_released, 5 * kPageSize);
  heap_.Delete(b);
  heap_.ReleaseFree();
  ExpectConsistent();
  s = heap_.Stats();
  EXPECT_EQ(s.held, 0u);
  EXPECT_EQ(s.free_returned, s.reserved);
  // Everything merged back into the one reservation: all of it fits one request.
  Span* all = New(kGrowPages);
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(heap_.Stats().num_reserves, 1u);
}

TEST_F(PageHeapTest, AlignedRequestsStartOnTheAlignmentAndTrimTheRest) {
  Span* pad = New(1);  // knocks the next start off any larger alignment
  ASSERT_NE(pad, nullptr);
  for (std::size_t align : {2u, 16u, 64u}) {
    Span* s = New(3, align);
    ASSERT_NE(s, nullptr) << align;
    EXPECT_EQ(s->first_page % align, 0u) << align;
    EXPECT_EQ(s->num_pages, 3u);
    EXPECT_EQ(heap_.Stats().in_use, (1 + 3) * kPageSize);
    heap_.Delete(s);
    ExpectConsistent();
  }
}

TEST_F(PageHeapTest, RequestsAboveTheGrowSizeGetTheirOwnReservation) {
  Span* huge = New(3 * kGrowPages);
  ASSERT_NE(huge, nullptr);
  EXPECT_GE(heap_.Stats().reserved, 3 * kGrowPages * kPageSize);
  heap_.Delete(huge);
  ExpectConsistent();
}

// Issue 17: a span aligned to 2^37 bytes used to reserve the alignment's size and write a
// pagemap entry for each of its 2^24 pages (150 MB of metadata nobody counted).
TEST_F(PageHeapTest, AHugeAlignmentReservesAlignedSpaceWithoutPerPageMetadata) {
  constexpr std::size_t kAlignPages = (std::size_t{1} << 37) >> kPageShift;
  Span* span = New(1, kAlignPages);
  ASSERT_NE(span, nullptr);
  EXPECT_EQ(span->first_page % kAlignPages, 0u);
  const PageHeapStats s = heap_.Stats();
  EXPECT_LE(s.reserved, kGrowPages * kPageSize) << "the alignment's size was reserved";
  EXPECT_LE(pagemap_->MetadataBytes(), Pagemap::kLeafBytes) << "more than one leaf";
  heap_.Delete(span);
  ExpectConsistent();
}

// Issue 17: a 1 TiB reservation wrote 2^27 pagemap entries (1.18 GB, 25 s). Now only the
// span's ends are written: the leaves covering it are mapped but stay untouched.
TEST_F(PageHeapTest, AHugeRequestWritesOnlyTheEndsOfItsSpan) {
#if defined(MEMARENA_SANITIZED)
  GTEST_SKIP() << "sanitizer build: ASAN unpoisons a carved span's shadow (1 TiB needs 128 GiB)";
#endif
  constexpr std::size_t kPages = (std::size_t{1} << 40) >> kPageShift;
  Span* span = New(kPages);
  if (span == nullptr) GTEST_SKIP() << "the OS refused 1 TiB of address space";
  EXPECT_EQ(pagemap_->Get(span->first_page), span);
  EXPECT_EQ(pagemap_->Get(span->LastPage()), span);
  EXPECT_EQ(pagemap_->Get(span->first_page + kPages / 2), nullptr) << "interior page written";
  EXPECT_TRUE(heap_.Reserved(span->first_page + kPages / 2));
  heap_.Delete(span);
  heap_.ReleaseFree();
  ExpectConsistent();
}

TEST_F(PageHeapTest, TheCeilingRefusesCommitsAndHeldNeverCrossesIt) {
  ASSERT_TRUE(heap_.TrySetCeiling(8 * kPageSize));
  Span* a = New(6);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(New(3), nullptr);
  EXPECT_EQ(last_failure_, Failure::kCeiling);
  Span* b = New(2);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(heap_.Stats().held, 8 * kPageSize);
  EXPECT_LE(heap_.Stats().peak_held, 8 * kPageSize);
  EXPECT_FALSE(heap_.TrySetCeiling(4 * kPageSize)) << "a ceiling below held was accepted";
  EXPECT_EQ(heap_.Ceiling(), 8 * kPageSize);
  heap_.Delete(a);
  heap_.Delete(b);
  ExpectConsistent();
}

TEST_F(PageHeapTest, CrossingTheThresholdReleasesFreeSpansBeforeCommittingMore) {
  ASSERT_TRUE(heap_.TrySetCeiling(16 * kPageSize));
  heap_.SetReleaseRatio(0.5);
  Span* a = New(4);
  Span* keep = New(1);
  ASSERT_TRUE(a && keep);
  heap_.Delete(a);  // 4 committed free pages that cannot serve 6
  EXPECT_EQ(heap_.Stats().free_committed, 4 * kPageSize);
  Span* b = New(6);  // held would reach 11 pages > 8 = 0.5 * 16: release first
  ASSERT_NE(b, nullptr);
  const PageHeapStats s = heap_.Stats();
  EXPECT_EQ(s.num_releases, 1u);
  EXPECT_EQ(s.free_committed, 0u);
  EXPECT_EQ(s.held, 7 * kPageSize);
  ExpectConsistent();
}

TEST_F(PageHeapTest, PagemapFindsInUseSpansAndTheirClass) {
  Span* small = New(4, 1, 7);
  Span* large = New(5);
  ASSERT_TRUE(small && large);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(pagemap_->Get(small->first_page + i), small);
    EXPECT_EQ(pagemap_->ClassOf(small->Start() + i * kPageSize + 100), 7u);
  }
  // A large span is found from its first and last page; ownership of the pages between
  // is answered by the reservations (the pagemap is not written page by page).
  EXPECT_EQ(pagemap_->Get(large->first_page), large);
  EXPECT_EQ(pagemap_->Get(large->LastPage()), large);
  EXPECT_EQ(pagemap_->ClassOf(large->Start()), 0u);
  for (std::size_t i = 1; i < 4; ++i) EXPECT_TRUE(heap_.Reserved(large->first_page + i));
  int on_stack = 0;
  EXPECT_FALSE(heap_.Reserved(Pagemap::PageOf(&on_stack)));
  EXPECT_EQ(pagemap_->Get(Pagemap::PageOf(&on_stack)), nullptr);
  EXPECT_EQ(pagemap_->ClassOf(&on_stack), 0u);
  EXPECT_EQ(pagemap_->Get(std::uintptr_t{1} << 40), nullptr);  // past the 48-bit range
  heap_.Delete(small);
  // A freed small span's pages lose their class: a stale pointer is not taken for an object.
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(pagemap_->ClassOf(small->Start() + i * kPageSize), 0u);
  }
  heap_.Delete(large);
  EXPECT_EQ(heap_.Stats().large_allocs, 1u) << "small spans are not large blocks";
  EXPECT_EQ(heap_.Stats().large_frees, 1u);
  EXPECT_EQ(heap_.LargeInUse(), 0u);
}

TEST(Pagemap, LeavesAreCreatedOnDemandAcrossLeafBoundaries) {
  auto pagemap = std::make_unique<Pagemap>();
  const std::uintptr_t page = 3 * Pagemap::kLeafLength - 2;  // straddles two leaves
  EXPECT_EQ(pagemap->MetadataBytes(), 0u);
  ASSERT_TRUE(pagemap->Ensure(page, 4));
  EXPECT_GT(pagemap->MetadataBytes(), 0u);
  Span span;
  span.first_page = page;
  span.num_pages = 4;
  pagemap->Set(page, 4, &span, 9);
  for (std::uintptr_t p = page; p < page + 4; ++p) EXPECT_EQ(pagemap->Get(p), &span);
  EXPECT_EQ(pagemap->Get(page - 1), nullptr);
  EXPECT_EQ(pagemap->Get(page + 4), nullptr);
  EXPECT_FALSE(pagemap->Ensure(std::uintptr_t{1} << (Pagemap::kAddressBits - kPageShift), 1));
}

// The first leaf made is also found without the root (Pagemap::LeafOf's shortcut for the
// free's chain): lookups in it, in leaves made after it on either side, in leaves never made,
// at index 0 and beyond the address bits must all give what the root gives.
TEST(Pagemap, TheFirstLeafAndTheOthersAnswerAlike) {
  auto pagemap = std::make_unique<Pagemap>();
  const auto at = [](std::uintptr_t page) { return reinterpret_cast<const void*>(page << kPageShift); };
  EXPECT_EQ(pagemap->Find(at(5)).entry, 0u) << "no leaf yet, index 0";
  EXPECT_EQ(pagemap->Find(at(5)).freed_mark, 0u);
  EXPECT_EQ(pagemap->Get(5), nullptr);
  const std::uintptr_t pages[] = {5 * Pagemap::kLeafLength + 9, 2 * Pagemap::kLeafLength + 1,
                                  7 * Pagemap::kLeafLength, 0 * Pagemap::kLeafLength + 3};
  Span spans[std::size(pages)];
  for (std::size_t i = 0; i < std::size(pages); ++i) {
    ASSERT_TRUE(pagemap->Ensure(pages[i], 1));  // the first one made is leaf 5
    spans[i].first_page = pages[i];
    spans[i].num_pages = 1;
    pagemap->Set(pages[i], 1, &spans[i], static_cast<std::uint8_t>(i + 2));
  }
  // The first leaf is not in the root (its page stays untouched): Ensure must still find it.
  for (const std::uintptr_t page : pages) ASSERT_TRUE(pagemap->Ensure(page, 1));
  EXPECT_EQ(pagemap->MetadataBytes(), std::size(pages) * Pagemap::kLeafBytes)
      << "a second Ensure made another leaf";
  std::uintptr_t marks[std::size(pages)];
  for (std::size_t i = 0; i < std::size(pages); ++i) {
    const Pagemap::Lookup found = pagemap->Find(at(pages[i]));
    EXPECT_EQ(found.entry, ObjectStartEntry(pages[i], 1, static_cast<std::uint8_t>(i + 2))) << i;
    EXPECT_EQ(found.start_test.multiplier, detail::kObjectStartTests[i + 2].multiplier) << i;
    EXPECT_EQ(pagemap->Get(pages[i]), &spans[i]) << i;
    EXPECT_EQ(pagemap->Get(pages[i] + 1), nullptr) << i;
    marks[i] = found.freed_mark;
    EXPECT_NE(marks[i], 0u) << i;
  }
  EXPECT_EQ(std::set<std::uintptr_t>(std::begin(marks), std::end(marks)).size(), std::size(pages))
      << "each leaf gives its own mark";
  for (std::uintptr_t none : {std::uintptr_t{4} * Pagemap::kLeafLength, Pagemap::kRootLength * Pagemap::kLeafLength,
                              ~std::uintptr_t{0} >> kPageShift}) {
    EXPECT_EQ(pagemap->Find(at(none)).entry, 0u) << none;
    EXPECT_EQ(pagemap->Find(at(none)).freed_mark, 0u) << none;
    EXPECT_EQ(pagemap->Get(none), nullptr) << none;
  }
}

// The free fast path takes the class's object-start test from the page's slot with its
// entry (Pagemap::Find): every page of a small span gives its own class's entry and test,
// and so tells object starts from interior pointers; other pages give nothing that passes.
TEST(Pagemap, FindGivesEveryPageOfASmallSpanItsClasssEntryAndStartTest) {
  // A class whose size is not a power of two (its span has a tail) and whose span has pages.
  const auto wanted = [](std::size_t c) {
    return ClassInfo(c).pages >= 2 && !std::has_single_bit(ClassInfo(c).size);
  };
  std::size_t cls = 1;
  while (cls < kNumClasses && !wanted(cls)) ++cls;
  ASSERT_LT(cls, kNumClasses);
  const std::size_t pages = ClassInfo(cls).pages;
  const std::size_t size = ClassInfo(cls).size;
  const std::size_t objects = ClassInfo(cls).objects;
  auto pagemap = std::make_unique<Pagemap>();
  const std::uintptr_t first = 3 * Pagemap::kLeafLength - 1;  // the span straddles two leaves
  ASSERT_TRUE(pagemap->Ensure(first - 1, pages + 2));
  Span span;
  span.first_page = first;
  span.num_pages = pages;
  pagemap->Set(first, pages, &span, static_cast<std::uint8_t>(cls));
  const std::uintptr_t start = first << kPageShift;
  std::size_t starts = 0;
  for (std::uintptr_t address = start; address < start + pages * kPageSize; address += 8) {
    const void* ptr = reinterpret_cast<const void*>(address);
    const Pagemap::Lookup page = pagemap->Find(ptr);
    ASSERT_EQ(page.entry, ObjectStartEntry(first, pages, cls)) << address - start;
    ASSERT_EQ(page.start_test.multiplier, detail::kObjectStartTests[cls].multiplier);
    ASSERT_EQ(page.start_test.bound, detail::kObjectStartTests[cls].bound);
    ASSERT_NE(page.freed_mark, 0u);
    const std::size_t offset = address - start;
    const bool expected = offset % size == 0 && offset / size < objects;
    ASSERT_EQ(IsObjectStart(ptr, page.entry, page.start_test), expected) << offset;
    starts += expected;
  }
  EXPECT_EQ(starts, objects);
  // The two leaves give two freed marks (each inside its own leaf).
  EXPECT_NE(pagemap->Find(reinterpret_cast<const void*>(start)).freed_mark,
            pagemap->Find(reinterpret_cast<const void*>(start + kPageSize)).freed_mark);
  // The neighbouring pages, and the span's pages once it is no longer small, fail every test.
  const auto fails_everywhere = [&](std::uintptr_t page_number) {
    const void* ptr = reinterpret_cast<const void*>(page_number << kPageShift);
    const Pagemap::Lookup page = pagemap->Find(ptr);
    return page.entry == 0 && page.start_test.multiplier == 0 && page.start_test.bound == 0 &&
           !IsObjectStart(ptr, page.entry, page.start_test);
  };
  EXPECT_TRUE(fails_everywhere(first - 1));
  EXPECT_TRUE(fails_everywhere(first + pages));
  pagemap->Set(first, pages, &span, 0);
  for (std::uintptr_t p = first; p < first + pages; ++p) EXPECT_TRUE(fails_everywhere(p));
  EXPECT_EQ(pagemap->Get(first + 1), &span);
}

TEST_F(PageHeapTest, FreeSpansNotNeededRecentlyGoBackWithoutACeiling) {
  constexpr std::size_t kPages = 32;
  constexpr std::size_t kSpans = 2 * PageHeap::kScavengeInterval;
  static_assert(kSpans * kPages * kPageSize > 2 * PageHeap::kMinKeptFree);
  std::vector<Span*> spans;
  for (std::size_t i = 0; i < kSpans; ++i) spans.push_back(New(kPages));
  for (Span* span : spans) heap_.Delete(span);
  // Freed and needed again soon (the recent peak): they stay committed.
  EXPECT_EQ(heap_.Stats().num_releases, 0u);
  EXPECT_EQ(heap_.Stats().free_committed, kSpans * kPages * kPageSize);
  // Two windows of small traffic later the peak is no longer recent: all but the bound go.
  for (std::uint32_t i = 0; i < PageHeap::kWindowOps; ++i) heap_.Delete(New(1));
  const PageHeapStats s = heap_.Stats();
  EXPECT_LE(s.free_committed, PageHeap::kMinKeptFree);
  EXPECT_EQ(s.held, s.free_committed);
  EXPECT_GT(s.num_releases, 0u);
  ExpectConsistent();
}

TEST_F(PageHeapTest, UnderACeilingFreeSpansStayForReuse) {
  constexpr std::size_t kPages = 32;
  constexpr std::size_t kSpans = 2 * PageHeap::kScavengeInterval;
  ASSERT_TRUE(heap_.TrySetCeiling(std::size_t{1} << 30));
  std::vector<Span*> spans;
  for (std::size_t i = 0; i < kSpans; ++i) spans.push_back(New(kPages));
  for (Span* span : spans) heap_.Delete(span);
  const PageHeapStats s = heap_.Stats();
  EXPECT_EQ(s.free_committed, kSpans * kPages * kPageSize);
  EXPECT_EQ(s.num_releases, 0u);
  ExpectConsistent();
}

// realloc's growth in place (GrowInPlace): a live large span takes the free pages right
// after it, keeps its first page (and so its contents), and every counter and the pagemap
// follow as if it had been allocated at its new size.
TEST_F(PageHeapTest, AGrownSpanTakesTheCommittedFreePagesAfterIt) {
  Span* a = New(4);
  Span* b = New(6);
  Span* c = New(2);
  ASSERT_TRUE(a && b && c);
  const std::uintptr_t first = a->first_page;
  std::memset(a->Start(), 0x5a, a->Bytes());
  heap_.Delete(b);  // 6 committed free pages right after a
  const PageHeapStats before = heap_.Stats();
  ASSERT_TRUE(heap_.GrowInPlace(a, 9, 9 * kPageSize - 100));
  EXPECT_EQ(a->first_page, first);
  EXPECT_EQ(a->num_pages, 9u);
  EXPECT_EQ(a->state, SpanState::kInUse);
  EXPECT_EQ(pagemap_->Get(a->LastPage()), a);
  EXPECT_EQ(static_cast<unsigned char>(a->Start()[4 * kPageSize - 1]), 0x5a);
  std::memset(a->Start(), 0x6b, a->Bytes());  // the grown span's memory is usable
  const PageHeapStats after = heap_.Stats();
  EXPECT_EQ(after.held, before.held);  // the pages were committed already
  EXPECT_EQ(after.in_use, before.in_use + 5 * kPageSize);
  EXPECT_EQ(after.free_committed, kPageSize);  // the free span's last page stays free
  EXPECT_EQ(after.large_allocs, before.large_allocs);
  EXPECT_EQ(after.max_large_request, 9 * kPageSize - 100);
  EXPECT_EQ(heap_.LargeInUse(), (9 + 2) * kPageSize);
  EXPECT_EQ(heap_.LargeRequested(), (9 * kPageSize - 100) + (2 * kPageSize - 1));
  ExpectConsistent();
  // Taking the rest of the free span leaves no free span between a and c.
  ASSERT_TRUE(heap_.GrowInPlace(a, 10, 10 * kPageSize));
  EXPECT_EQ(heap_.Stats().free_committed, 0u);
  EXPECT_EQ(a->first_page + a->num_pages, c->first_page);
  ExpectConsistent();
  // Freed, the grown span merges with its neighbours as any span of its size would.
  heap_.Delete(a);
  heap_.Delete(c);
  EXPECT_EQ(heap_.Stats().in_use, 0u);
  EXPECT_EQ(heap_.LargeInUse(), 0u);
  EXPECT_EQ(heap_.LargeRequested(), 0u);
  EXPECT_EQ(heap_.Stats().free_committed, heap_.Stats().held);
  ExpectAllReturnedAfterRelease();
}

TEST_F(PageHeapTest, ASpanFollowedByAnInUseSpanDoesNotGrow) {
  Span* a = New(4);
  Span* b = New(2);
  ASSERT_TRUE(a && b);
  const PageHeapStats before = heap_.Stats();
  EXPECT_FALSE(heap_.GrowInPlace(a, 5, 5 * kPageSize));
  EXPECT_EQ(a->num_pages, 4u);
  EXPECT_EQ(heap_.Stats().in_use, before.in_use);
  EXPECT_EQ(heap_.Stats().held, before.held);
  EXPECT_EQ(heap_.LargeRequested(), (4 * kPageSize - 1) + (2 * kPageSize - 1));
  ExpectConsistent();
  heap_.Delete(b);  // now the pages after a are free
  EXPECT_TRUE(heap_.GrowInPlace(a, 5, 5 * kPageSize));
  ExpectConsistent();
}

// Past the committed free span the window runs into returned pages: only those count as
// newly held, as when a new span straddles a free run.
TEST_F(PageHeapTest, AGrownSpanCommitsTheReturnedPagesItTakes) {
  Span* a = New(4);
  Span* b = New(3);
  ASSERT_TRUE(a && b);
  heap_.Delete(b);  // 3 committed pages, then the reservation's returned rest
  const PageHeapStats before = heap_.Stats();
  ASSERT_EQ(before.free_committed, 3 * kPageSize);
  ASSERT_TRUE(heap_.GrowInPlace(a, 10, 10 * kPageSize));
  EXPECT_EQ(a->num_pages, 10u);
  std::memset(a->Start(), 0x5a, a->Bytes());
  const PageHeapStats after = heap_.Stats();
  EXPECT_EQ(after.held - before.held, 3 * kPageSize);  // 6 pages, 3 of them committed
  EXPECT_EQ(after.free_committed, 0u);
  EXPECT_EQ(before.free_returned - after.free_returned, 3 * kPageSize);
  EXPECT_EQ(after.num_releases, before.num_releases);
  EXPECT_EQ(after.reserved, before.reserved);
  ExpectConsistent();
  heap_.Delete(a);
  ExpectAllReturnedAfterRelease();
}

// realloc's copy into a new block (host::PrefaultForWrite): the whole pages it is about to
// write are faulted in by one call when they came from the OS, and left alone when they
// were committed and free (resident already: the call would walk them for nothing). Pages
// all from the OS also read as zero (zero_pages: calloc's fill is skipped).
TEST_F(PageHeapTest, APrefaultFaultsInTheWholePagesOfAFreshSpanOnly) {
  if (!testing::KernelPopulatesForWrite()) GTEST_SKIP() << "the kernel lacks MADV_POPULATE_WRITE (5.14)";
  Span* a = New(16);
  ASSERT_NE(a, nullptr);
  char* const start = a->Start();
  EXPECT_TRUE(a->fresh_pages);
  EXPECT_TRUE(a->zero_pages);
  ASSERT_EQ(platform::ResidentBytesIn(a->Start(), a->Bytes()), 0u) << "New touched its pages";
  heap_.PrefaultForWrite(a, 10 * kPageSize + 100);  // the part page is left to the write
  EXPECT_EQ(platform::ResidentBytesIn(a->Start(), 10 * kPageSize), 10 * kPageSize);
  EXPECT_EQ(platform::ResidentBytesIn(a->Start() + 10 * kPageSize, 6 * kPageSize), 0u);
  EXPECT_FALSE(a->fresh_pages) << "a second call would walk resident pages";
  heap_.Delete(a);
  Span* b = New(16);  // a's committed pages
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->Start(), start);
  EXPECT_FALSE(b->fresh_pages);
  EXPECT_FALSE(b->zero_pages) << "a's pages, faulted in: they may hold anything";
  heap_.Delete(b);
  heap_.ReleaseFree();
  Span* c = New(16);  // the same pages, returned: fresh again
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->fresh_pages);
  EXPECT_TRUE(c->zero_pages);
  heap_.PrefaultForWrite(c, 0);
  EXPECT_EQ(platform::ResidentBytesIn(c->Start(), c->Bytes()), 0u) << "nothing to write";
  EXPECT_TRUE(c->fresh_pages) << "a call with no whole page to write keeps the mark";
  heap_.Delete(c);
  ExpectAllReturnedAfterRelease();
}

// Locked pages (mlock, mlockall) survive MADV_DONTNEED: a span "returned" from them still
// holds its old bytes, so calloc must fill it (zero_pages stays false from then on).
TEST_F(PageHeapTest, AFailedDecommitLeavesNoSpanMarkedZero) {
  Span* a = New(4);
  ASSERT_NE(a, nullptr);
  char* const start = a->Start();
  std::memset(start, 0x5a, 4 * kPageSize);
  if (mlock(start, 4 * kPageSize) != 0) GTEST_SKIP() << "mlock refused (RLIMIT_MEMLOCK)";
  heap_.Delete(a);
  heap_.ReleaseFree();  // MADV_DONTNEED refuses locked pages
  Span* b = New(4);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(b->Start(), start) << "the returned span was not reused";
  if (start[0] != 0x5a) {  // ASAN's mlock interceptor locks nothing: the pages were dropped
    munlock(start, 4 * kPageSize);
    heap_.Delete(b);
    GTEST_SKIP() << "mlock did not lock the pages (sanitizer builds make it a no-op)";
  }
  EXPECT_FALSE(b->zero_pages);
  munlock(start, 4 * kPageSize);
  heap_.Delete(b);
  heap_.ReleaseFree();
  Span* c = New(4);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->zero_pages) << "one failure is enough to stop trusting returned pages";
  heap_.Delete(c);
}

// Committing pages here while a committed free span could take the whole block would
// fault fresh pages and leave that span unused: the caller moves there instead.
TEST_F(PageHeapTest, AGrowThatWouldCommitPagesGivesWayToACommittedSpanThatFits) {
  Span* x = New(10);
  Span* y = New(1);
  Span* a = New(4);  // the reservation's returned rest follows a
  ASSERT_TRUE(x && y && a);
  heap_.Delete(x);  // 10 committed free pages, away from a
  const PageHeapStats before = heap_.Stats();
  EXPECT_FALSE(heap_.GrowInPlace(a, 8, 8 * kPageSize)) << "x fits 8 pages";
  EXPECT_EQ(a->num_pages, 4u);
  EXPECT_EQ(heap_.Stats().held, before.held);
  ASSERT_TRUE(heap_.GrowInPlace(a, 12, 12 * kPageSize)) << "x does not fit 12 pages";
  EXPECT_EQ(heap_.Stats().held - before.held, 8 * kPageSize);
  EXPECT_EQ(heap_.Stats().free_committed, 10 * kPageSize);
  ExpectConsistent();
}

// Near the ceiling a grow that commits pages first releases the committed free spans, as
// New does, but not the one it is about to take.
TEST_F(PageHeapTest, AGrowAboveTheThresholdReleasesFreeSpansOutsideItsWindow) {
  ASSERT_TRUE(heap_.TrySetCeiling(16 * kPageSize));
  heap_.SetReleaseRatio(0.5);  // the release threshold: 8 pages
  Span* x = New(2);
  Span* y = New(1);
  Span* a = New(4);
  Span* b = New(2);  // the reservation's returned rest follows b
  ASSERT_TRUE(x && y && a && b);
  heap_.Delete(x);  // 2 committed free pages away from a: too small for the grown block
  heap_.Delete(b);  // 2 committed free pages right after a
  ASSERT_EQ(heap_.Stats().held, 9 * kPageSize);
  // 4 more pages, 2 of them returned: held would reach 11 pages > 8.
  ASSERT_TRUE(heap_.GrowInPlace(a, 8, 8 * kPageSize));
  const PageHeapStats s = heap_.Stats();
  EXPECT_EQ(s.num_releases, 1u) << "x alone goes back";
  EXPECT_EQ(s.bytes_released, 2 * kPageSize);
  EXPECT_EQ(s.free_committed, 0u);
  EXPECT_EQ(s.held, (1 + 8) * kPageSize);
  EXPECT_EQ(a->num_pages, 8u);
  ExpectConsistent();
}

TEST_F(PageHeapTest, TheCeilingRefusesAGrowAndLeavesTheSpanAsItWas) {
  ASSERT_TRUE(heap_.TrySetCeiling(8 * kPageSize));
  Span* a = New(6);
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(heap_.GrowInPlace(a, 9, 9 * kPageSize));
  PageHeapStats s = heap_.Stats();
  EXPECT_EQ(a->num_pages, 6u);
  EXPECT_EQ(s.held, 6 * kPageSize);
  EXPECT_EQ(s.in_use, 6 * kPageSize);
  EXPECT_EQ(heap_.LargeRequested(), 6 * kPageSize - 1);
  ExpectConsistent();
  ASSERT_TRUE(heap_.GrowInPlace(a, 8, 8 * kPageSize));  // up to the ceiling is fine
  s = heap_.Stats();
  EXPECT_EQ(s.held, 8 * kPageSize);
  EXPECT_LE(s.peak_held, 8 * kPageSize);
  EXPECT_EQ(heap_.LargeRequested(), 8 * kPageSize);
  ExpectConsistent();
  heap_.Delete(a);
  EXPECT_EQ(heap_.Stats().in_use, 0u);
  ExpectConsistent();
}

}  // namespace
}  // namespace memarena::host
