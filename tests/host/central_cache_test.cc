// The central cache over a private page heap: batches in and out, the transfer cache,
// draining, and whole free spans going back to the page heap.
#include "host/central_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "host/page_heap.h"
#include "host/pagemap.h"

namespace memarena::host {
namespace {

constexpr std::size_t kClass = 4;  // 64-byte objects

class CentralCacheTest : public ::testing::Test {
 protected:
  int Take(int count, void** head, void** tail) {
    Failure failure = Failure::kNone;
    return central_.Remove(kClass, count, head, tail, &failure);
  }
  // Every object of the first span of `cls`, one Remove at a time, the `num_carvers` carvers
  // at `carvers` taking turns. With no object of the class out, that span is the class's
  // short span (SizeClassInfo::short_pages).
  std::vector<void*> TakeASpanOneByOne(std::size_t cls, const int* carvers, int num_carvers) {
    std::vector<void*> taken;
    Failure failure = Failure::kNone;
    for (std::uint32_t i = 0; i < ClassInfo(cls).short_objects; ++i) {
      void* head = nullptr;
      void* tail = nullptr;
      EXPECT_EQ(central_.Remove(cls, 1, &head, &tail, &failure, CarveEnd::kExact,
                                &carvers[i % static_cast<std::uint32_t>(num_carvers)]),
                1);
      taken.push_back(head);
    }
    return taken;
  }
  // Whole short spans of `cls`, one object at a time, until a full span's worth is out: the
  // class's next span is then a full one (CentralCache::Remove), long enough for the carving
  // tests below. Returns the objects, to be inserted back.
  std::vector<void*> HoldAFullSpansWorth(std::size_t cls) {
    const SizeClassInfo& info = ClassInfo(cls);
    const std::uint32_t spans = (info.objects + info.short_objects - 1) / info.short_objects;
    std::vector<void*> held;
    Failure failure = Failure::kNone;
    for (std::uint32_t i = 0; i < spans * info.short_objects; ++i) {
      void* head = nullptr;
      void* tail = nullptr;
      EXPECT_EQ(central_.Remove(cls, 1, &head, &tail, &failure), 1);
      held.push_back(head);
    }
    return held;
  }
  static int Length(void* head) {
    int n = 0;
    for (void* p = head; p != nullptr; p = *static_cast<void**>(p)) ++n;
    return n;
  }

  std::unique_ptr<Pagemap> pagemap_ = std::make_unique<Pagemap>();
  PageHeap heap_{pagemap_.get(), std::size_t{1} << 20};
  CentralCache central_{&heap_, pagemap_.get()};
};

TEST_F(CentralCacheTest, RemoveCarvesDistinctObjectsOfTheClassFromOneSpan) {
  const int batch = static_cast<int>(ClassInfo(kClass).batch);
  void* head = nullptr;
  void* tail = nullptr;
  ASSERT_EQ(Take(batch, &head, &tail), batch);
  EXPECT_EQ(Length(head), batch);
  EXPECT_EQ(*static_cast<void**>(tail), nullptr);
  std::set<void*> seen;
  for (void* p = head; p != nullptr; p = *static_cast<void**>(p)) {
    EXPECT_TRUE(seen.insert(p).second);
    EXPECT_EQ(pagemap_->ClassOf(p), kClass);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % ClassSize(kClass), 0u);
  }
  // The class had nothing out: its first span is a short one.
  EXPECT_EQ(heap_.Stats().in_use, ClassInfo(kClass).short_pages * kPageSize);
  EXPECT_EQ(central_.FreeObjects(kClass), ClassInfo(kClass).short_objects - batch);
  central_.Insert(kClass, head, tail, batch);
  central_.Drain();
  // Every object is back: the span went back to the page heap as a free span.
  EXPECT_EQ(heap_.Stats().in_use, 0u);
  EXPECT_EQ(central_.FreeObjects(kClass), 0u);
  EXPECT_EQ(heap_.CheckInvariants(), nullptr);
}

// RemoveFreed (borrowing's supply, heap.h kBorrowMinSize) hands out only objects that came
// back: never a carved one, never a new span's; MayHaveFreed tells whether there are any. A
// class of 256 B: its short spans hold more than a batch and one more (64 objects, batches
// of 32), so the objects given back below never empty a span.
TEST_F(CentralCacheTest, RemoveFreedTakesOnlyObjectsThatCameBack) {
  const std::size_t cls = ClassFor(256);
  ASSERT_GT(ClassInfo(cls).short_objects, ClassInfo(cls).batch + 1);
  const int batch = static_cast<int>(ClassInfo(cls).batch);
  void* head = nullptr;
  void* tail = nullptr;
  EXPECT_FALSE(central_.MayHaveFreed(cls));
  EXPECT_EQ(central_.RemoveFreed(cls, 1, &head, &tail), 0) << "nothing came back yet";
  EXPECT_EQ(heap_.Stats().in_use, 0u) << "no span made for it";
  Failure failure = Failure::kNone;
  std::vector<void*> objects;
  for (int i = 0; i < 2 * batch + 1; ++i) {
    ASSERT_EQ(central_.Remove(cls, 1, &head, &tail, &failure), 1);
    objects.push_back(head);
  }
  EXPECT_EQ(central_.RemoveFreed(cls, 1, &head, &tail), 0) << "carved objects are not freed ones";
  // One object back to its span, a whole batch to the transfer cache.
  central_.Insert(cls, objects[0], objects[0], 1);
  for (int i = 1; i < batch; ++i) *static_cast<void**>(objects[i]) = objects[i + 1];
  *static_cast<void**>(objects[batch]) = nullptr;
  central_.Insert(cls, objects[1], objects[batch], batch);
  EXPECT_TRUE(central_.MayHaveFreed(cls));
  EXPECT_EQ(central_.CheckInvariants(), nullptr);
  // Fewer than a batch: the batch goes back to its spans, and the walk takes from them.
  std::set<void*> back(objects.begin(), objects.begin() + batch + 1);
  std::set<void*> taken;
  while (central_.MayHaveFreed(cls)) {
    const int got = central_.RemoveFreed(cls, 2, &head, &tail);
    ASSERT_GT(got, 0);
    EXPECT_LE(got, 2);
    EXPECT_EQ(Length(head), got);
    for (void* p = head; p != nullptr; p = *static_cast<void**>(p)) taken.insert(p);
    EXPECT_EQ(central_.CheckInvariants(), nullptr);
  }
  EXPECT_EQ(taken, back) << "every object that came back, and only those";
  EXPECT_EQ(central_.RemoveFreed(cls, 1, &head, &tail), 0);
  for (void* p : objects) central_.Insert(cls, p, p, 1);
  EXPECT_EQ(heap_.Stats().in_use, 0u);
  EXPECT_FALSE(central_.MayHaveFreed(cls)) << "the spans went back with their freed objects";
  EXPECT_EQ(central_.CheckInvariants(), nullptr);
}

TEST_F(CentralCacheTest, WholeBatchesPassThroughTheTransferCacheUntouched) {
  const int batch = static_cast<int>(ClassInfo(kClass).batch);
  void* head = nullptr;
  void* tail = nullptr;
  ASSERT_EQ(Take(batch, &head, &tail), batch);
  central_.Insert(kClass, head, tail, batch);
  EXPECT_EQ(central_.FreeObjects(kClass), ClassInfo(kClass).short_objects);
  EXPECT_EQ(heap_.Stats().in_use, ClassInfo(kClass).short_pages * kPageSize)
      << "a cached batch keeps its span in use until drained";
  void* again_head = nullptr;
  void* again_tail = nullptr;
  ASSERT_EQ(Take(batch, &again_head, &again_tail), batch);
  EXPECT_EQ(again_head, head);  // the same chain, handed over whole
  EXPECT_EQ(again_tail, tail);
  central_.Insert(kClass, again_head, again_tail, batch);
  central_.Drain();
  EXPECT_EQ(heap_.Stats().in_use, 0u);
}

TEST_F(CentralCacheTest, PartialBatchesGoStraightToTheirSpans) {
  void* head = nullptr;
  void* tail = nullptr;
  ASSERT_EQ(Take(3, &head, &tail), 3);
  central_.Insert(kClass, head, tail, 3);
  EXPECT_EQ(heap_.Stats().in_use, 0u) << "the span's last object came back";
}

// CarveEnd::kLinePair: a carve goes on to the next 128-byte boundary (at most 7 objects
// more, class sizes being multiples of 16), so the next carve starts on a fresh line pair;
// a carve from a span's back goes down to one; kExact takes what was asked. On a full span.
TEST_F(CentralCacheTest, ACarveToTheLinePairEndsOnAPairBoundary) {
  const int front_carver = 0;  // two threads' identities: the second carves from the back
  const int back_carver = 0;
  for (std::size_t cls = 1; cls <= kNumClasses && ClassSize(cls) <= 1024; ++cls) {
    const std::vector<void*> held = HoldAFullSpansWorth(cls);
    Failure failure = Failure::kNone;
    std::vector<std::pair<void*, void*>> taken;  // kept out: each carve follows the last
    for (int count = 1; count <= 5; ++count) {
      void* head = nullptr;
      void* tail = nullptr;
      const int got = central_.Remove(cls, count, &head, &tail, &failure, CarveEnd::kLinePair,
                                      &front_carver);
      EXPECT_GE(got, count);
      EXPECT_LE(got, count + 7) << ClassSize(cls);
      EXPECT_EQ(Length(head), got);
      const auto end = reinterpret_cast<std::uintptr_t>(tail) + ClassSize(cls);
      EXPECT_EQ(end % CentralCache::kCarveAlignBytes, 0u) << ClassSize(cls) << " B, " << count;
      taken.emplace_back(head, tail);
    }
    for (int count = 1; count <= 3; ++count) {
      void* head = nullptr;
      void* tail = nullptr;
      const int got = central_.Remove(cls, count, &head, &tail, &failure, CarveEnd::kLinePair,
                                      &back_carver);
      EXPECT_GE(got, count);
      EXPECT_LE(got, count + 7) << ClassSize(cls);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(tail) % CentralCache::kCarveAlignBytes, 0u)
          << ClassSize(cls) << " B from the back, " << count;
      taken.emplace_back(head, tail);
    }
    void* head = nullptr;
    void* tail = nullptr;
    ASSERT_EQ(central_.Remove(cls, 3, &head, &tail, &failure), 3) << "kExact takes what was asked";
    taken.emplace_back(head, tail);
    for (const auto& [first, last] : taken) central_.Insert(cls, first, last, Length(first));
    for (void* p : held) central_.Insert(cls, p, p, 1);
    EXPECT_EQ(heap_.Stats().in_use, 0u);
  }
  EXPECT_EQ(central_.CheckInvariants(), nullptr);
}

// The thread-affine carve (CentralCache::Remove), on a full span: two carvers take a span's
// two ends and share no 4 KiB page; a third takes the front over on the next 4 KiB page;
// nobody's carve returns more than asked; the list's and the span's counts stay exact
// throughout.
TEST_F(CentralCacheTest, TwoCarversTakeTheSpansTwoEndsAndTheCountsStayExact) {
  constexpr std::uintptr_t kPage = CentralCache::kCarvePageBytes;
  const int carvers[3] = {};  // three threads' identities: only their addresses matter
  for (std::size_t cls = 1; cls <= kNumClasses && ClassSize(cls) <= 1024; ++cls) {
    const std::size_t size = ClassSize(cls);
    const std::vector<void*> held = HoldAFullSpansWorth(cls);
    Failure failure = Failure::kNone;
    std::vector<std::pair<void*, void*>> taken;  // every chain, given back at the end
    std::set<std::uintptr_t> pages[2];
    const auto take = [&](int who, int count) {
      void* head = nullptr;
      void* tail = nullptr;
      const int got = central_.Remove(cls, count, &head, &tail, &failure, CarveEnd::kExact,
                                      &carvers[who]);
      EXPECT_EQ(got, count) << size << " B";
      EXPECT_EQ(Length(head), got);
      for (void* p = head; who < 2 && p != nullptr; p = *static_cast<void**>(p)) {
        const auto start = reinterpret_cast<std::uintptr_t>(p);
        pages[who].insert(start / kPage);
        pages[who].insert((start + size - 1) / kPage);
      }
      taken.emplace_back(head, tail);
      EXPECT_EQ(central_.CheckInvariants(), nullptr) << size << " B";
      return std::pair{reinterpret_cast<std::uintptr_t>(head), reinterpret_cast<std::uintptr_t>(tail)};
    };
    std::uintptr_t front_end = 0;  // where the front's next object starts
    for (int count = 1; count <= 4; ++count) {
      front_end = take(0, count).second + size;
      take(1, count);
    }
    int shared = 0;
    for (std::uintptr_t page : pages[0]) shared += static_cast<int>(pages[1].count(page));
    EXPECT_EQ(shared, 0) << "pages of both ends' carvers, class of " << size << " B";
    // A third carver takes the front over with the first object that starts on the next
    // page, so it writes no page of the old front's (false_sharing: the main thread's
    // `checksums`, written by both workers, sat in the third's page). The first one, back
    // after it while that page's rest waits, continues where the front stands.
    const auto [third_first, third_last] = take(2, 2);
    const std::uintptr_t next_page = (front_end + kPage - 1) / kPage * kPage;
    EXPECT_GE(third_first, next_page) << size << " B";
    EXPECT_LT(third_first, next_page + size) << size << " B";
    EXPECT_EQ(pages[0].count(third_first / kPage), 0u) << size << " B";
    EXPECT_EQ(take(0, 1).first, third_last + size) << size << " B";
    for (const auto& [first, last] : taken) central_.Insert(cls, first, last, Length(first));
    for (void* p : held) central_.Insert(cls, p, p, 1);
    EXPECT_EQ(heap_.Stats().in_use, 0u) << "every object back: the span went back";
    EXPECT_EQ(central_.FreeObjects(cls), 0u);
  }
  EXPECT_EQ(central_.CheckInvariants(), nullptr);
}

// A class with fewer objects out than one full span holds makes short spans; from a full
// span's worth out on, full ones. Both go back to the page heap whole.
TEST_F(CentralCacheTest, AClassMakesShortSpansUntilAFullSpansWorthIsOut) {
  const std::size_t cls = ClassFor(8 << 10);
  const SizeClassInfo& info = ClassInfo(cls);
  ASSERT_LT(info.short_pages, info.pages);
  ASSERT_EQ(info.objects % info.short_objects, 0u) << "the short spans fill a full span's worth";
  Failure failure = Failure::kNone;
  std::vector<void*> taken;
  auto take_one = [&] {
    void* head = nullptr;
    void* tail = nullptr;
    ASSERT_EQ(central_.Remove(cls, 1, &head, &tail, &failure), 1);
    taken.push_back(head);
  };
  for (std::uint32_t i = 0; i < info.objects; ++i) take_one();
  const std::size_t short_spans = info.objects / info.short_objects;
  EXPECT_EQ(heap_.Stats().in_use, short_spans * info.short_pages * kPageSize);
  for (void* p : taken) EXPECT_EQ(pagemap_->Get(Pagemap::PageOf(p))->num_pages, info.short_pages);
  take_one();
  EXPECT_EQ(pagemap_->Get(Pagemap::PageOf(taken.back()))->num_pages, info.pages)
      << "a full span's worth was out";
  EXPECT_EQ(heap_.Stats().in_use, (short_spans * info.short_pages + info.pages) * kPageSize);
  // Nothing came back yet: every free object is one never carved. One object back to a short
  // span whose other objects are out is free, and not uncarved.
  std::size_t uncarved = 0;
  EXPECT_EQ(central_.FreeObjects(cls, &uncarved), info.objects - 1);
  EXPECT_EQ(uncarved, info.objects - 1);
  central_.Insert(cls, taken.front(), taken.front(), 1);
  taken.erase(taken.begin());
  EXPECT_EQ(central_.FreeObjects(cls, &uncarved), info.objects);
  EXPECT_EQ(uncarved, info.objects - 1);
  EXPECT_EQ(central_.CheckInvariants(), nullptr);
  for (void* p : taken) central_.Insert(cls, p, p, 1);
  EXPECT_EQ(heap_.Stats().in_use, 0u);
  EXPECT_EQ(central_.FreeObjects(cls), 0u);
  EXPECT_EQ(central_.CheckInvariants(), nullptr);
}

// What a takeover skipped is not lost: three carvers taking one object at a time take
// every object of the first span, the skipped rest last, before a second span is carved.
TEST_F(CentralCacheTest, TheRestATakeoverSkippedIsCarvedBeforeANewSpan) {
  const int carvers[3] = {};
  for (std::size_t cls = 1; cls <= kNumClasses && ClassSize(cls) <= 1024; ++cls) {
    const SizeClassInfo& info = ClassInfo(cls);
    const std::vector<void*> taken = TakeASpanOneByOne(cls, carvers, 3);
    EXPECT_EQ(std::set<void*>(taken.begin(), taken.end()).size(), taken.size());
    EXPECT_EQ(heap_.Stats().in_use, info.short_pages * kPageSize)
        << "one span's objects, class of " << ClassSize(cls) << " B";
    EXPECT_EQ(central_.FreeObjects(cls), 0u);
    EXPECT_EQ(central_.CheckInvariants(), nullptr);
    for (void* p : taken) central_.Insert(cls, p, p, 1);
    EXPECT_EQ(heap_.Stats().in_use, 0u);
  }
}

// A new span's first kSpanEdgeBytes wait until everything else of it is carved: the lines
// just past the span below stay untouched while that span's top may be another thread's.
TEST_F(CentralCacheTest, ANewSpansFirstBytesAreCarvedLast) {
  constexpr std::uintptr_t kEdge = CentralCache::kSpanEdgeBytes;
  const int carvers[2] = {};
  int classes_with_an_edge = 0;
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
    const SizeClassInfo& info = ClassInfo(cls);
    const std::size_t edge_objects = (kEdge + info.size - 1) / info.size;
    const std::vector<void*> taken = TakeASpanOneByOne(cls, carvers, 2);
    std::vector<std::uintptr_t> offsets;  // from the span's start, in the order taken
    for (void* object : taken) {
      const Span* span = pagemap_->Get(Pagemap::PageOf(object));
      ASSERT_NE(span, nullptr);
      offsets.push_back(reinterpret_cast<std::uintptr_t>(object) -
                        reinterpret_cast<std::uintptr_t>(span->Start()));
    }
    EXPECT_EQ(heap_.Stats().in_use, info.short_pages * kPageSize)
        << "one span, " << info.size << " B";
    EXPECT_EQ(central_.CheckInvariants(), nullptr);
    if (edge_objects < info.short_objects) {
      ++classes_with_an_edge;
      const std::size_t rest = info.short_objects - edge_objects;
      for (std::size_t i = 0; i < info.short_objects; ++i) {
        if (i < rest) {
          EXPECT_GE(offsets[i], kEdge)
              << "object " << i << " of a span of " << info.size << " B objects";
        } else {
          EXPECT_LT(offsets[i], kEdge) << "object " << i << " of " << info.size << " B";
        }
      }
    } else {
      EXPECT_EQ(offsets.front(), 0u) << "a span of " << info.short_objects << " objects of "
                                     << info.size << " B starts at its front";
    }
    for (void* p : taken) central_.Insert(cls, p, p, 1);
    EXPECT_EQ(heap_.Stats().in_use, 0u);
  }
  EXPECT_GT(classes_with_an_edge, 0);
}

// Without a carver (a thread without a cache) a take is the front's, exactly as asked.
TEST_F(CentralCacheTest, ATakeWithoutACarverContinuesTheFront) {
  void* head = nullptr;
  void* tail = nullptr;
  ASSERT_EQ(Take(3, &head, &tail), 3);
  void* next_head = nullptr;
  void* next_tail = nullptr;
  ASSERT_EQ(Take(2, &next_head, &next_tail), 2);
  EXPECT_EQ(static_cast<char*>(next_head), static_cast<char*>(tail) + ClassSize(kClass));
  central_.Insert(kClass, head, tail, 3);
  central_.Insert(kClass, next_head, next_tail, 2);
  EXPECT_EQ(heap_.Stats().in_use, 0u);
}

// allocated + free objects == objects per span (span.h) and the list's free count
// (central_cache.h): each broken by hand is named, and holds again once restored.
TEST_F(CentralCacheTest, TheCheckerNamesABrokenSmallSpanOrListInvariant) {
  void* head = nullptr;
  void* tail = nullptr;
  ASSERT_EQ(Take(3, &head, &tail), 3);
  EXPECT_EQ(central_.CheckInvariants(), nullptr);
  Span* span = pagemap_->Get(Pagemap::PageOf(head));
  ASSERT_NE(span, nullptr);
  ++span->allocated;
  const char* problem = central_.CheckInvariants();
  ASSERT_NE(problem, nullptr);
  EXPECT_STREQ(problem, "a small span's allocated plus free objects differ from its object count");
  --span->allocated;
  EXPECT_EQ(central_.CheckInvariants(), nullptr);
  span->bump += ClassSize(kClass);  // one never-used object vanishes from the span
  ++span->allocated;                // and is counted as handed out: the span is consistent
  problem = central_.CheckInvariants();
  ASSERT_NE(problem, nullptr);
  EXPECT_STREQ(problem, "a central list's free-object count differs from its spans and batches");
  span->bump -= ClassSize(kClass);
  --span->allocated;
  EXPECT_EQ(central_.CheckInvariants(), nullptr);
  central_.Insert(kClass, head, tail, 3);
  EXPECT_EQ(heap_.CheckInvariants(), nullptr);
}

}  // namespace
}  // namespace memarena::host
