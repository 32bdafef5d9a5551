// Pages moved instead of faulted: a growth that the trim makes room for takes the trimmed
// spans' pages with platform::MovePages (PageHeap::FinishReleases), and larger committed
// free spans give theirs to a large growth (TakeDonors). Each test builds its own heap.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "host/page_heap.h"
#include "host/pagemap.h"
#include "platform/os.h"
#include "support/mappings.h"

namespace memarena::host {
namespace {

constexpr std::size_t kGrowPages = 2048;  // 16 MiB reservations
constexpr std::size_t kMovePages = PageHeap::kMinMovePages * 2;
// More than the trim keeps committed on growth (PageHeap::kMinKeptOnGrow).
constexpr std::size_t kTrimmedPages = PageHeap::kMinKeptOnGrow / kPageSize + 100;

// Fills each page of `span`'s first `pages` with a byte unique to (tag, page).
void Stamp(Span* span, std::size_t pages, unsigned char tag) {
  for (std::size_t p = 0; p < pages; ++p) {
    std::memset(span->Start() + p * kPageSize, static_cast<char>(tag + p), kPageSize);
  }
}

bool HasStamp(const char* start, std::size_t pages, unsigned char tag) {
  for (std::size_t p = 0; p < pages; ++p) {
    const char want = static_cast<char>(tag + p);
    if (start[p * kPageSize] != want || start[(p + 1) * kPageSize - 1] != want) return false;
  }
  return true;
}

// Moves are for heaps without transparent huge pages (PageHeap::MovesAllowed), so these
// heaps advise none.
class PageMovesTest : public ::testing::Test {
 protected:
  PageMovesTest() { heap_.SetHugePages(false); }

  Span* New(std::size_t pages) {
    Failure failure = Failure::kNone;
    Span* span = heap_.New(pages, 1, 0, pages * kPageSize, &failure);
    EXPECT_NE(span, nullptr);
    return span;
  }
  void ExpectConsistent() {
    const char* problem = heap_.CheckInvariants();
    EXPECT_EQ(problem, nullptr) << problem;
  }
  // a (stamped with tag 1) is freed and nothing committed fits the next request, so the
  // trim returns a (it is above what the trim keeps) before `grown` is carved; b keeps a
  // from growing into the returned rest.
  struct TrimmedGrowth {
    char* a_start = nullptr;
    Span* b = nullptr;
    Span* grown = nullptr;
    PageHeapStats before;
    PageHeapStats after;
  };
  TrimmedGrowth GrowAfterTrimming() {
    TrimmedGrowth g;
    Span* a = New(kTrimmedPages);
    g.b = New(8);
    if (a == nullptr || g.b == nullptr) return g;
    g.a_start = a->Start();
    Stamp(a, kTrimmedPages, 1);
    heap_.Delete(a);
    g.before = heap_.Stats();
    g.grown = New(kTrimmedPages + 40);
    g.after = heap_.Stats();
    return g;
  }
  void DeleteAllAndExpectNothingHeld(std::initializer_list<Span*> spans) {
    ExpectConsistent();
    for (Span* span : spans) heap_.Delete(span);
    heap_.ReleaseFree();
    EXPECT_EQ(heap_.Stats().held, 0u);
    ExpectConsistent();
  }

  std::unique_ptr<Pagemap> pagemap_ = std::make_unique<Pagemap>();
  PageHeap heap_{pagemap_.get(), kGrowPages * kPageSize};
};

// a is freed and nothing committed fits the request, so the trim returns a (it is above
// what the trim keeps); its pages go under the new span's first pages instead of back to
// the OS.
TEST_F(PageMovesTest, AGrowthTakesTheTrimmedSpansPagesInsteadOfFaultingFreshOnes) {
  const TrimmedGrowth g = GrowAfterTrimming();
  ASSERT_NE(g.grown, nullptr);
  char* const a_start = g.a_start;
  Span* const grown = g.grown;
  const PageHeapStats& before = g.before;
  const PageHeapStats& after = g.after;
  ASSERT_EQ(after.moves_refused, 0u) << "the kernel refused mremap";
  EXPECT_EQ(after.num_releases - before.num_releases, 1u) << "the trim returned a";
  EXPECT_EQ(after.bytes_moved - before.bytes_moved, kTrimmedPages * kPageSize);
  EXPECT_NE(grown->Start(), a_start);
  EXPECT_TRUE(HasStamp(grown->Start(), kTrimmedPages, 1)) << "a's bytes, moved";
  EXPECT_EQ(platform::ResidentBytesIn(grown->Start(), kTrimmedPages * kPageSize),
            kTrimmedPages * kPageSize);
  EXPECT_EQ(platform::ResidentBytesIn(a_start, kTrimmedPages * kPageSize), 0u)
      << "a gave its pages";
  EXPECT_FALSE(grown->zero_pages) << "moved pages hold old bytes: calloc must fill them";
  EXPECT_TRUE(grown->fresh_pages) << "its last 40 pages come from the OS";
  EXPECT_EQ(after.held, (2 * kTrimmedPages + 48) * kPageSize - kTrimmedPages * kPageSize)
      << "a's pages count as grown's, once";
  DeleteAllAndExpectNothingHeld({g.b, grown});
}

// The same growth while huge pages are in effect: a's pages go back to the OS instead of
// moving, since a move would split the huge pages under them and leave the new span on base
// pages for its life.
TEST_F(PageMovesTest, NothingMovesWhileHugePagesAreInEffect) {
  if (platform::HugePageSize() == 0) GTEST_SKIP() << "no transparent huge pages here";
  heap_.SetHugePages(true);
  const TrimmedGrowth g = GrowAfterTrimming();
  ASSERT_NE(g.grown, nullptr);
  EXPECT_EQ(g.after.num_releases - g.before.num_releases, 1u) << "the trim returned a";
  EXPECT_EQ(g.after.bytes_moved, g.before.bytes_moved);
  EXPECT_EQ(platform::ResidentBytesIn(g.a_start, kTrimmedPages * kPageSize), 0u)
      << "a's pages went back";
  EXPECT_FALSE(HasStamp(g.grown->Start(), kTrimmedPages, 1)) << "no old bytes came along";
  DeleteAllAndExpectNothingHeld({g.b, g.grown});
}

// A committed free span the trim keeps (the recent peak is far above) gives its pages to a
// large growth that no committed span fits: one call instead of a fault per page, and the
// heap holds fewer pages after it.
TEST_F(PageMovesTest, ALargeGrowthTakesTheCommittedFreeSpansTheTrimKeeps) {
  Span* a = New(kMovePages);
  Span* b = New(8);
  Span* c = New(PageHeap::kMinMovePages - 1);  // too small to be worth a move
  Span* d = New(8);
  Span* peak = New(1000);
  ASSERT_TRUE(a && b && c && d && peak);
  heap_.Delete(peak);
  heap_.ReleaseFree();  // the recent peak stays; peak's pages are returned
  Stamp(a, kMovePages, 7);
  heap_.Delete(a);
  heap_.Delete(c);
  const PageHeapStats before = heap_.Stats();
  ASSERT_EQ(before.free_committed, (kMovePages + PageHeap::kMinMovePages - 1) * kPageSize);
  Span* grown = New(kMovePages + 100);
  ASSERT_NE(grown, nullptr);
  const PageHeapStats after = heap_.Stats();
  ASSERT_EQ(after.moves_refused, 0u) << "the kernel refused mremap";
  EXPECT_EQ(after.bytes_moved - before.bytes_moved, kMovePages * kPageSize);
  EXPECT_TRUE(HasStamp(grown->Start(), kMovePages, 7));
  EXPECT_EQ(after.free_committed, (PageHeap::kMinMovePages - 1) * kPageSize) << "c stays";
  DeleteAllAndExpectNothingHeld({b, d, grown});
}

// An aligned request (which never straddles a free run) takes donors a and c. a borders the
// returned rest, so the span is carved over a's pages, which stay where they are; c's move
// into the span's fresh pages after them.
TEST_F(PageMovesTest, DonorPagesUnderTheNewSpanStayAndTheOthersMoveAfterThem) {
  Span* c = New(PageHeap::kMinMovePages + 8);
  Span* y = New(8);
  Span* a = New(kMovePages);
  ASSERT_TRUE(c && y && a);
  ASSERT_EQ(a->first_page, c->first_page + c->num_pages + 8) << "the layout the test needs";
  char* const a_start = a->Start();
  Stamp(a, kMovePages, 11);
  Stamp(c, c->num_pages, 99);
  const std::size_t c_pages = c->num_pages;
  heap_.Delete(a);
  heap_.Delete(c);
  Failure failure = Failure::kNone;
  const std::size_t pages = kMovePages + c_pages + 36;
  Span* grown = heap_.New(pages, 8, 0, pages * kPageSize, &failure);
  ASSERT_NE(grown, nullptr);
  const PageHeapStats after = heap_.Stats();
  ASSERT_EQ(after.moves_refused, 0u) << "the kernel refused mremap";
  EXPECT_EQ(grown->Start(), a_start);
  EXPECT_EQ(after.bytes_moved, c_pages * kPageSize) << "c's pages only";
  EXPECT_TRUE(HasStamp(grown->Start(), kMovePages, 11)) << "a's bytes, in place";
  EXPECT_TRUE(HasStamp(grown->Start() + kMovePages * kPageSize, c_pages, 99)) << "c's, moved";
  EXPECT_FALSE(grown->zero_pages);
  EXPECT_TRUE(grown->fresh_pages) << "its last 36 pages come from the OS";
  EXPECT_EQ(after.held, (8 + pages) * kPageSize);
  EXPECT_EQ(after.free_committed, 0u);
  DeleteAllAndExpectNothingHeld({y, grown});
}

// The mappings of /proc/self/maps that hold at least one of `pages` (page starts, sorted).
// Counted this way, not as the process's whole count: a test that ran before may leave the
// process mappings that this heap's pagemap leaf or its span records' next chunk then add to
// or merge with (2 of 40 shuffled orders failed a check on the whole count).
std::size_t MappingsHolding(const std::vector<std::uintptr_t>& pages) {
  std::size_t holding = 0;
  memarena::testing::ForEachMapping([&](std::uintptr_t lo, std::uintptr_t hi) {
    const auto first = std::lower_bound(pages.begin(), pages.end(), lo);
    if (first != pages.end() && *first < hi) ++holding;
  });
  return holding;
}

// Each move leaves its pages in a mapping of their own; given back, they merge again, so
// a heap that moved pages and returned them all holds its pages in no more mappings than
// one that never moved: its reservations'.
TEST_F(PageMovesTest, ReturnedPagesMergeBackIntoTheReservationsMapping) {
  std::vector<Span*> live;
  std::vector<std::uintptr_t> pages;
  const auto note_pages = [&pages](const Span* span) {
    for (std::size_t p = 0; p < span->num_pages; ++p) {
      pages.push_back(reinterpret_cast<std::uintptr_t>(span->Start()) + p * kPageSize);
    }
  };
  for (int round = 0; round < 6; ++round) {
    Span* a = New(kMovePages + round);
    Span* b = New(8);
    ASSERT_TRUE(a && b);
    note_pages(a);
    note_pages(b);
    std::memset(a->Start(), round + 1, a->Bytes());
    heap_.Delete(a);
    Span* grown = New(kMovePages + 40 + round);  // takes a's pages
    ASSERT_NE(grown, nullptr);
    note_pages(grown);
    live.push_back(b);
    live.push_back(grown);
  }
  std::sort(pages.begin(), pages.end());
  ASSERT_GT(heap_.Stats().bytes_moved, 0u);
  const std::size_t reserves = heap_.Stats().num_reserves;
  EXPECT_GT(MappingsHolding(pages), reserves) << "moved pages are mappings apart";
  for (Span* span : live) heap_.Delete(span);
  heap_.ReleaseFree();
  ExpectConsistent();
  // The reservations themselves (one or two here), and nothing for the moves.
  EXPECT_GE(MappingsHolding(pages), 1u) << "/proc/self/maps is unreadable";
  EXPECT_LE(MappingsHolding(pages), reserves);
}

// Past PageHeap::kMaxMappingsForMoves mappings the trim returns pages as before: no move
// adds to a count near the kernel's limit.
TEST_F(PageMovesTest, MovesPauseWhileTheProcessHoldsTooManyMappings) {
  const std::size_t page = platform::PageSize();
  const std::size_t extra = PageHeap::kMaxMappingsForMoves + 16;
  // One reservation, split into a mapping per page by alternating protections.
  char* many = static_cast<char*>(
      mmap(nullptr, extra * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  ASSERT_NE(many, MAP_FAILED);
  for (std::size_t i = 0; i < extra; i += 2) {
    ASSERT_EQ(mprotect(many + i * page, page, PROT_READ), 0);
  }
  ASSERT_GT(platform::CountMappings(), PageHeap::kMaxMappingsForMoves);
  Span* a = New(kTrimmedPages);
  Span* b = New(8);
  ASSERT_TRUE(a && b);
  char* const a_start = a->Start();
  Stamp(a, kTrimmedPages, 3);
  heap_.Delete(a);
  Span* grown = New(kTrimmedPages + 40);
  ASSERT_NE(grown, nullptr);
  EXPECT_EQ(heap_.Stats().bytes_moved, 0u);
  EXPECT_EQ(heap_.Stats().num_releases, 1u) << "the trim returned a";
  EXPECT_EQ(platform::ResidentBytesIn(a_start, kTrimmedPages * kPageSize), 0u) << "returned";
  EXPECT_EQ(platform::ResidentBytesIn(grown->Start(), grown->Bytes()), 0u) << "fresh pages";
  EXPECT_TRUE(grown->zero_pages);
  munmap(many, extra * page);
  heap_.Delete(b);
  heap_.Delete(grown);
  ExpectConsistent();
}

// Random growth and frees of large spans, so that trims, donors, moves and the mapping
// again all happen: no live span's bytes change but by its owner, a span marked zero_pages
// reads as zeros, and the heap's books stay consistent.
TEST_F(PageMovesTest, RandomGrowthNeverTouchesALiveSpanAndZeroMeansZero) {
  struct Live {
    Span* span;
    unsigned char tag;
  };
  std::vector<Live> live;
  std::uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  auto intact = [](const Live& l) {
    for (std::size_t p = 0; p < l.span->num_pages; ++p) {
      if (l.span->Start()[p * kPageSize] != static_cast<char>(l.tag + p)) return false;
    }
    return true;
  };
  for (int op = 0; op < 3000; ++op) {
    if (live.size() < 24 && (live.empty() || next() % 3 != 0)) {
      Span* span = New(1 + next() % 600);
      ASSERT_NE(span, nullptr);
      if (span->zero_pages) {
        for (std::size_t p = 0; p < span->num_pages; ++p) {
          ASSERT_EQ(span->Start()[p * kPageSize], 0) << "a zero_pages span holds old bytes";
        }
      }
      const auto tag = static_cast<unsigned char>(next());
      for (std::size_t p = 0; p < span->num_pages; ++p) {
        span->Start()[p * kPageSize] = static_cast<char>(tag + p);
      }
      live.push_back({span, tag});
    } else {
      const std::size_t i = next() % live.size();
      ASSERT_TRUE(intact(live[i])) << "a live span changed (op " << op << ")";
      heap_.Delete(live[i].span);
      live[i] = live.back();
      live.pop_back();
    }
    if (op % 50 == 0) {
      for (const Live& l : live) ASSERT_TRUE(intact(l)) << "a live span changed (op " << op << ")";
      ExpectConsistent();
    }
  }
  EXPECT_GT(heap_.Stats().bytes_moved, 0u) << "the test no longer exercises moves";
  for (const Live& l : live) {
    EXPECT_TRUE(intact(l));
    heap_.Delete(l.span);
  }
  heap_.ReleaseFree();
  EXPECT_EQ(heap_.Stats().held, 0u);
  ExpectConsistent();
}

// Two ranges of `pages` OS pages mapped as the heap maps its reservations, unmapped at the end.
struct TwoRanges {
  explicit TwoRanges(std::size_t pages) : size(pages * platform::PageSize()) {
    from = static_cast<char*>(platform::MapPages(size, 0));
    to = static_cast<char*>(platform::MapPages(size, 0));
  }
  ~TwoRanges() {
    if (from != nullptr) platform::UnmapPages(from, size);
    if (to != nullptr) platform::UnmapPages(to, size);
  }
  TwoRanges(const TwoRanges&) = delete;
  TwoRanges& operator=(const TwoRanges&) = delete;
  std::size_t size;
  char* from = nullptr;
  char* to = nullptr;
};

TEST(PlatformMovePages, MovesTheBytesAndLeavesZerosBehind) {
  TwoRanges r(64);
  ASSERT_TRUE(r.from && r.to);
  std::memset(r.from, 0x33, r.size);
  ASSERT_TRUE(platform::MovePages(r.from, r.to, r.size));
  EXPECT_EQ(r.to[0], 0x33);
  EXPECT_EQ(r.to[r.size - 1], 0x33);
  EXPECT_EQ(r.from[0], 0) << "the source is mapped again, as fresh pages";
  r.from[r.size - 1] = 1;  // and writable
}

// A source that is not mapped is refused; the destination must still be mapped.
TEST(PlatformMovePages, ARefusedMoveLeavesTheDestinationMapped) {
  TwoRanges r(16);
  ASSERT_TRUE(r.from && r.to);
  std::memset(r.to, 0x55, r.size);
  char* const gone = std::exchange(r.from, nullptr);
  platform::UnmapPages(gone, r.size);
  EXPECT_FALSE(platform::MovePages(gone, r.to, r.size));
  EXPECT_EQ(r.to[0], 0) << "mapped again as fresh pages";
  r.to[r.size - 1] = 1;  // and writable
}

}  // namespace
}  // namespace memarena::host
