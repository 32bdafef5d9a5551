// CentralCache: one locked free list per size class, between the thread caches and the
// page heap. Objects move in batches; a span whose objects are all free goes back to the
// page heap at once, so the central lists never sit on whole free spans. A few whole
// batches are kept as they came (a transfer cache, after tcmalloc): a batch freed on one
// thread and allocated on another then moves in O(1), without touching span metadata.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "host/page_heap.h"
#include "host/pagemap.h"
#include "host/size_classes.h"
#include "host/span.h"
#include "host/spin_lock.h"

namespace memarena::host {

// Where a carve of never-used objects may stop (CentralCache::Remove).
enum class CarveEnd : std::uint8_t {
  kExact,      // after exactly the objects asked for
  kLinePair,   // at the next 128-byte boundary (or the end of what the carver may take)
};

// Where Insert puts a whole batch.
enum class BatchTo : std::uint8_t {
  kTransferCache,  // kept whole for the next thread that asks for a batch (spans if full)
  kSpans,          // back to its spans: a span all of whose objects came back is freed
};

namespace central_detail {
// Where class `cls`'s list sits in CentralCache::lists_. The process's central cache starts
// a page after the pagemap's tail (libmemarena_malloc_startup.ld), so slots 0-29 share the
// page that every process writes, and slots 30-61 the next. The class of a 4 KiB block
// (stdio's buffer: 4096 + kColorBytes) trades places with class 29 (832 B), so a program
// whose other blocks are small writes one page of lists, not two
// (DropinFootprint.ATrivialCProgramKeepsSixPagesOfTheLibrarysDataResident).
inline constexpr std::size_t kPageSharingSlot = 29;
inline constexpr std::size_t kStdioBufferClass = detail::kLargeTable[(kColoredSize + 127) >> 7];
static_assert(kStdioBufferClass > kPageSharingSlot &&
              detail::kClasses[kStdioBufferClass].size == kColoredSize + kColorBytes);
// A table, not two compares: one load at each of the central cache's uses, where the
// compares and selects made the start-up text 384 bytes longer (override_footprint_test).
// Hidden, as the class tables: one copy, addressed RIP-relative.
[[gnu::visibility("hidden")]] inline constexpr auto kListSlots = [] {
  std::array<std::uint8_t, kNumClasses + 1> slots{};
  for (std::size_t cls = 0; cls <= kNumClasses; ++cls) {
    slots[cls] = static_cast<std::uint8_t>(cls == kStdioBufferClass   ? kPageSharingSlot
                                           : cls == kPageSharingSlot ? kStdioBufferClass
                                                                     : cls);
  }
  return slots;
}();
static_assert(
    [] {
      for (std::size_t cls = 0; cls <= kNumClasses; ++cls) {
        if (kListSlots[cls] > kNumClasses || kListSlots[kListSlots[cls]] != cls) return false;
      }
      return true;
    }(),
    "kListSlots gives each class a slot of its own");
inline std::size_t ListSlot(std::size_t cls) noexcept { return kListSlots[cls]; }
}  // namespace central_detail

class CentralCache {
 public:
  // The unit two threads' carves keep apart: the 4 KiB page, within which the L2 streamer
  // prefetches (false_sharing: both threads' objects and their 512-byte vectors in one page
  // took 2.6-2.9 s against 1.1-1.6 in pages of their own; cutting carves at 64 and at 128
  // bytes had left the pages shared).
  static constexpr std::size_t kCarvePageBytes = 4096;
  // Two cache lines, the L2's adjacent-line prefetcher's unit: CarveEnd::kLinePair's.
  static constexpr std::size_t kCarveAlignBytes = 128;
  // A new span's first bytes, carved last (Span::edge_waits). They are the lines just past
  // the span below, whose top a thread may be running through: the stream prefetcher runs
  // ahead of an ascending run by up to four lines, into the next page too, and pulls another
  // thread's written lines away from it (false_sharing on an AMD family-23 VM: a worker's
  // 512-byte vector at the top of one span and the other worker's objects at the bottom of
  // the next made that worker's loop 2.3x slower; a gap of 128 bytes left it 1.5x, of 256
  // none).
  static constexpr std::size_t kSpanEdgeBytes = 256;

  constexpr CentralCache(PageHeap* heap, Pagemap* pagemap) noexcept
      : heap_(heap), pagemap_(pagemap) {}
  // The process heap's (heap.cc): every byte zero, so it sits in .bss and a program
  // touches only the lists of the classes it uses, where two relocated pointers put all
  // 31 KiB in the library's .data, resident from load. Null heap and pagemap mean the
  // process-wide ones (ProcessPageHeap, ProcessPagemap in page_heap.h).
  constexpr CentralCache() noexcept = default;
  CentralCache(const CentralCache&) = delete;
  CentralCache& operator=(const CentralCache&) = delete;

  // Takes up to `count` objects of class `cls`, linked through their first word from
  // *head to *tail (whose link is nullptr). Returns how many; 0 on failure, with
  // *failure saying why. Never-used objects are carved for `carver` (a thread cache's
  // address; nullptr: anyone) thread-affine, as mimalloc's thread-owned pages: the span's
  // first carver takes them from its front, the next from its back, so two threads
  // refilled from one class write no common kCarvePageBytes page until one span's ends
  // meet. A third takes the front over on the next kCarvePageBytes page (Span::front_carver);
  // the rest of the old front's page waits in Span::skipped, carved by anyone once
  // [bump, bump_end) runs out (kept for the old carver alone, rests of threads that come and
  // go held larson 0.1-0.2 MiB more). Objects freed back to a span go to
  // whoever asks next. With CarveEnd::kLinePair a carve goes on to the next
  // kCarveAlignBytes boundary (a back carve down to one), so it may return up to 7 more
  // than `count` (class sizes are multiples of 16).
  int Remove(std::size_t cls, int count, void** head, void** tail, Failure* failure,
             CarveEnd carve_end = CarveEnd::kExact, const void* carver = nullptr) noexcept;

  // Takes up to `count` objects of class `cls` that were handed out before and came back:
  // from the transfer cache and the free lists of the first kFreedWalk spans, never carved
  // and never from a new span, so no page the program never wrote is handed out. Returns
  // how many (0: none), linked as Remove's.
  int RemoveFreed(std::size_t cls, int count, void** head, void** tail) noexcept;

  // Whether class `cls` holds objects that came back (RemoveFreed's supply), read without
  // the lock: a hint, exact only while no other thread moves objects of the class.
  bool MayHaveFreed(std::size_t cls) const noexcept {
    return ListOf(cls).freed.load(std::memory_order_relaxed) != 0;
  }

  // Gives back `count` objects of class `cls` linked through their first word from
  // `head` to `tail` (whose link is nullptr). A whole batch goes where `batch_to` says;
  // BatchTo::kSpans costs a page-map lookup per object.
  void Insert(std::size_t cls, void* head, void* tail, int count,
              BatchTo batch_to = BatchTo::kTransferCache) noexcept;

  // Returns every batch of the transfer cache to its spans, so whole free spans reach the
  // page heap (before a release, or under ceiling pressure).
  void Drain() noexcept;

  // Free objects of class `cls` held here (transfer cache, span free lists, not yet carved);
  // with `uncarved`, also how many of them were never carved (one lock for both).
  std::size_t FreeObjects(std::size_t cls, std::size_t* uncarved = nullptr) const noexcept;

  // Walks every class list (taking each class lock in turn) and checks the invariants of
  // ClassList and of the small spans on it (span.h). Returns nullptr when they hold, else
  // what is broken. Costs a walk over every free object: for tests and checkers.
  const char* CheckInvariants() const noexcept;

  // Fork handlers take every class lock, in class order (a loop over locks, which the
  // analysis cannot follow).
  void LockAll() noexcept MEMARENA_NO_THREAD_SAFETY_ANALYSIS;
  void UnlockAll() noexcept MEMARENA_NO_THREAD_SAFETY_ANALYSIS;

 private:
  static constexpr std::size_t kMaxBatches = 16;
  static constexpr std::size_t kNearBatches = 4;  // in the ClassList's line pair
  // Spans RemoveFreed looks at: a class's spans with a free object sit at its list's head
  // (InsertObjects pushes a span there when its first object comes back).
  static constexpr int kFreedWalk = 8;
  // Bytes one class's transfer cache may pin; big classes keep fewer batches (or none).
  static constexpr std::size_t kTransferBytes = std::size_t{128} << 10;

  struct Batch {
    void* head;
    void* tail;
  };
  // Invariants (CheckInvariants checks the last two; of the first, that span_objects is at
  // least the objects of the spans on the list, since an exhausted span is on no list):
  //   span_objects == sum over the class's live spans of their objects (full or short)
  //   freed == num_batches * ClassInfo(cls).batch + sum over spans of length(free_objects)
  //   free_objects == freed + sum over spans of (bump_end - bump) / size
  //                                             + (skipped_end - skipped) / size
  // A line pair of its own (kCarveAlignBytes): classes do not contend, not even through the
  // adjacent-line prefetcher. The header and the first four batches fill it; the other
  // twelve lie apart (TransferSlots), so the lists take 12.5 KiB of .bss instead of 31, and
  // a small program writes one or two pages fewer of them (override_footprint_test). With
  // all sixteen apart, trees took 2-4 % more time: a batch's move touched a second page.
  struct alignas(kCarveAlignBytes) ClassList {
    mutable SpinLock lock;
    // Spans of this class with a free or never-used object.
    SpanList spans MEMARENA_GUARDED_BY(lock);
    std::size_t free_objects MEMARENA_GUARDED_BY(lock) = 0;
    // Objects of every live span of the class, on the list or not: span_objects -
    // free_objects are the objects out (Remove sizes a new span by them).
    std::size_t span_objects MEMARENA_GUARDED_BY(lock) = 0;
    // Written under the lock; MayHaveFreed reads it without.
    std::atomic<std::size_t> freed{0};
    // Whole batches: BatchAt(list, 0 .. num_batches - 1).
    std::size_t num_batches MEMARENA_GUARDED_BY(lock) = 0;
    // The first batches, on the pair's second line: a class that moves a few batches at a
    // time (trees: 4 threads building and freeing) touches no other line.
    Batch near_batches[kNearBatches] MEMARENA_GUARDED_BY(lock) = {};
  };
  static_assert(sizeof(ClassList) == kCarveAlignBytes, "a class list is one line pair");
  // The rest of a class's transfer cache, guarded by its ClassList's lock (BatchAt). Apart
  // from the lists: a program whose thread caches never pass many whole batches back never
  // touches it.
  struct alignas(kCarveAlignBytes) TransferSlots {
    Batch batches[kMaxBatches - kNearBatches] = {};
  };

  ClassList& ListOf(std::size_t cls) noexcept { return lists_[central_detail::ListSlot(cls)]; }
  const ClassList& ListOf(std::size_t cls) const noexcept {
    return lists_[central_detail::ListSlot(cls)];
  }

  static std::size_t BatchSlots(std::size_t cls) noexcept;
  static const char* CheckClass(const ClassList& list, std::size_t cls) noexcept
      MEMARENA_REQUIRES(list.lock);
  static void AddFreed(ClassList& list, std::ptrdiff_t delta) noexcept MEMARENA_REQUIRES(list.lock);
  void InsertObjects(ClassList& list, std::size_t cls, void* head, int count) noexcept
      MEMARENA_REQUIRES(list.lock);
  // Batch i of `list`'s transfer cache: the lock that guards the list guards it.
  Batch& BatchAt(ClassList& list, std::size_t i) noexcept MEMARENA_REQUIRES(list.lock) {
    if (i < kNearBatches) return list.near_batches[i];
    return transfer_[static_cast<std::size_t>(&list - lists_)].batches[i - kNearBatches];
  }

  PageHeap& Heap() const noexcept { return heap_ != nullptr ? *heap_ : ProcessPageHeap(); }
  Pagemap& Map() const noexcept { return pagemap_ != nullptr ? *pagemap_ : ProcessPagemap(); }

  PageHeap* heap_ = nullptr;
  Pagemap* pagemap_ = nullptr;
  ClassList lists_[kNumClasses + 1] = {};
  TransferSlots transfer_[kNumClasses + 1] = {};
};

}  // namespace memarena::host
