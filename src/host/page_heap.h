// PageHeap: spans of pages carved from address space reserved in large chunks, split on
// allocation and merged with free neighbours on free. It owns the ceiling on held bytes
// (committed pages) and gives free spans back to the OS.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "host/huge_fault_watch.h"
#include "host/pagemap.h"
#include "host/recent_peak.h"
#include "host/span.h"
#include "host/spin_lock.h"
#include "memarena/stats.h"

namespace memarena::host {

enum class Failure : std::uint8_t { kNone, kCeiling, kOs };

struct PageHeapStats {
  std::size_t held = 0;              // committed pages: in-use spans + free committed spans
  std::size_t peak_held = 0;
  std::size_t in_use = 0;            // bytes of in-use spans
  std::size_t free_committed = 0;    // releasable now
  std::size_t free_returned = 0;     // reserved address space not held
  std::size_t largest_free_committed = 0;
  // The committed free spans by length (AllocatorStats::free_spans_by_length).
  std::array<FreeSpanCount, kFreeSpanBuckets> free_by_length{};
  std::size_t reserved = 0;          // address space reserved from the OS
  std::uint64_t num_reserves = 0;
  std::uint64_t num_releases = 0;
  std::uint64_t bytes_released = 0;
  // Of the bytes released by the trim before growth, those the new span took over
  // (platform::MovePages), and the moves the kernel refused.
  std::uint64_t bytes_moved = 0;
  std::uint64_t moves_refused = 0;
  std::size_t ceiling = 0;
  std::uint64_t large_allocs = 0;    // large (page-granular) blocks handed out
  std::uint64_t large_frees = 0;
  std::size_t max_large_request = 0;
  std::uint64_t huge_page_blocks = 0;  // large blocks whose whole huge pages were advised
  std::uint64_t huge_pages_committed = 0;  // whole huge pages committed for smaller requests
  // The first write fault of a huge page that switched them off (HugeFaultWatch), in
  // nanoseconds; 0 while they are on.
  std::uint64_t slow_huge_fault_nanos = 0;
  bool huge_pages_on = false;  // SetHugePages (the huge_pages key), switched off or not
  // A first write fault above this counts as slow (HugeFaultWatch::Bound).
  std::uint64_t huge_fault_bound_nanos = 0;
};

class PageHeap {
 public:
  static constexpr std::size_t kMaxPages = 128;  // exact-size free lists up to 1 MiB
  static constexpr std::size_t kDefaultGrowBytes = std::size_t{256} << 20;
  // Where reservations start (page_heap.cc MapReservation): address space only.
  static constexpr std::size_t kReservationAlignment = std::size_t{256} << 20;
  // Without a ceiling, committed free spans beyond kMinKeptFree + (recent peak of in-use
  // span bytes - in use now) are returned to the OS, smallest first, checked once every
  // kScavengeInterval frees of a span (amortized; never on the thread-cache fast path).
  // "Recent" is this window of kWindowOps page-heap operations and the one before: a
  // program that frees and reallocates the same amount keeps its pages committed (no
  // decommit/fault cycle), one that stopped needing them gives them back.
  static constexpr std::size_t kMinKeptFree = std::size_t{8} << 20;
  static constexpr std::uint32_t kScavengeInterval = 64;
  static constexpr std::uint32_t kWindowOps = 4096;
  // Before fresh pages are committed for a request no committed free span fits, committed
  // free spans go back to the OS until held would stay within 1 + 1/kGrowSlackDivisor of
  // the larger of the recent peak of in use and in use after the request (at least
  // kMinKeptOnGrow stays): free spans too small for what the program asks now would
  // otherwise stay held beside the new pages (held reached 1.74x peak requested on the
  // batched inference trace). A tenth rather than a sixteenth: since requests straddle
  // free runs (ExtendIntoReturned) the traces stay within 1.03-1.08x with it, and
  // large_buffers (scale 0.1) takes 180 k page faults with it, 207 k with a sixteenth.
  static constexpr std::size_t kMinKeptOnGrow = std::size_t{1} << 20;
  static constexpr std::size_t kGrowSlackDivisor = 10;
  // The pages that trim frees are not dropped and faulted in again under the new span:
  // the new span takes them over with platform::MovePages (mremap), one call per span
  // instead of a fault per 4 KiB page, 40 us against 11-14 ms for 20 MiB on this project's
  // VMs (FinishReleases). Each move leaves its pages in a mapping of their own, which the
  // kernel does not merge with its neighbours until they are given back (ReturnPages), and a
  // process may hold 65,530 mappings: every kMapCountInterval growths that could move
  // pages count the process's mappings first, and moves pause while there are more than
  // kMaxMappingsForMoves (large_buffers at scale 1 ends with about 630). They stop for good
  // after kMaxMoveRefusals refusals (pages across two mappings). No moves while huge pages
  // are in effect (MovesAllowed says why).
  static constexpr std::uint32_t kMapCountInterval = 64;
  static constexpr std::size_t kMaxMappingsForMoves = 4096;
  static constexpr std::uint64_t kMaxMoveRefusals = 64;
  // Smaller runs are not worth a mapping of their own: their faults cost about one call.
  static constexpr std::size_t kMinMovePages = 32;
  // Past this much held, a request smaller than a huge page that no committed free span
  // fits commits a whole free huge page and asks for a transparent huge page on it
  // (CommitHugePage): one page fault instead of 512, for at most a huge page of committed
  // free pages beside the request. Below it, a small program keeps its 4 KiB footprint.
  static constexpr std::size_t kHugeGrowthHeld = std::size_t{64} << 20;
  // No Linux architecture's transparent huge page is smaller than 1 MiB (s390x's; x86-64's,
  // and arm64's and RISC-V's over 4 KiB pages, are 2 MiB), so a shorter block holds none
  // and its allocation need not learn the size, which reads sysfs on first use: at start-up
  // the private C++ runtime's 73 KiB emergency pool is a large block, and the read (open,
  // strtoull) faulted a libc window a glibc-malloc program never maps.
  static constexpr std::size_t kMinHugePageBytes = std::size_t{1} << 20;
  // Base pages TimeHugeFault faults to learn their cost, the first time a huge page's fault
  // is above HugeFaultWatch's fixed bound: enough that one preemption's accounting noise or
  // the page table's own allocation is a small part of the mean.
  static constexpr std::size_t kBasePageProbePages = 16;
  static_assert(kFreeSpanBucketBase == kPageSize,
                "free_by_length's first bucket is one page (PageHeapStats)");
  // A small span comes from the exact-size free lists (Carve, Delete keep it there).
  static_assert(detail::kClasses[kNumClasses].pages <= kMaxPages,
                "the largest class's span fits the exact-size free lists");

  // `grow_bytes`: the size of each address-space reservation (requests above it get one
  // of their own). Reserving address space does not count as held.
  constexpr PageHeap(Pagemap* pagemap, std::size_t grow_bytes) noexcept
      : pagemap_(pagemap), grow_bytes_(grow_bytes) {}
  PageHeap(const PageHeap&) = delete;
  PageHeap& operator=(const PageHeap&) = delete;

  // An in-use span of `pages` pages starting on a multiple of `align_pages` pages (a power
  // of two, which the caller guarantees; checked mode asserts it). A small
  // span (size_class != 0) has every page mapped to it with its class; a large one its
  // first and last page, with class 0. nullptr on failure, with `*failure` saying why
  // (the ceiling, or the OS). Takes the heap lock.
  // `requested` (large spans) is what the caller asked for, kept for the statistics.
  Span* New(std::size_t pages, std::size_t align_pages, std::uint8_t size_class,
            std::size_t requested, Failure* failure) noexcept;

  // Grows in-use large span `span` (size_class 0) in place to `pages` pages: the pages
  // right after it are taken from the front of the free spans there, committed or
  // returned, and only the returned ones are committed, under the ceiling, the release near
  // it and the trim exactly as a new span's pages would be. `requested` replaces what the
  // block's caller asked for. False, with the span as it was, when those pages are not all
  // free, when the ceiling refuses them, or when returned pages would be committed while a
  // committed free span could take the whole grown block (the caller's move then reuses
  // it without a page fault). Takes the heap lock.
  bool GrowInPlace(Span* span, std::size_t pages, std::size_t requested) noexcept;

  // The caller of in-use large span `span` is about to write its first `bytes` (realloc's
  // copy). When New took its pages from the OS, they are faulted in by one call
  // (platform::PopulateForWrite) instead of one page fault per 4 KiB page, which on this
  // project's VMs costs 13 us against 6 us per page in the call. Pages already resident
  // are left alone: the call walks them for nothing (6 us per 256 KiB, twice its copy).
  // No lock: the span is the caller's.
  void PrefaultForWrite(Span* span, std::size_t bytes) noexcept;

  // Frees an in-use span: it stays committed and merges with committed free neighbours.
  // A small span's pages lose their class, so a stale pointer into them is not taken for
  // an object.
  void Delete(Span* span) noexcept;

  // Where a reservation of `bytes` after the first is tried (Grow): below `low` (the lowest
  // reservation's start) and above `high` (the highest's end), on kReservationAlignment
  // boundaries, `step` boundaries away from the nearest (the kernel fills the gap an aligned
  // mapping leaves below itself with the next small mappings, a thread's stack say), each
  // only when it lies wholly in pagemap leaf `leaf` (the first reservation's): a pointer in
  // the first leaf is found without the root's load (Pagemap::LeafOf), and a heap spread
  // over two leaves would make that shortcut mispredict. 0 for a place that does not fit;
  // Grow maps with MAP_FIXED_NOREPLACE, steps 0 to kPlacementSteps - 1, so an occupied place
  // fails, and the kernel's placement comes last.
  static constexpr std::size_t kPlacementSteps = 8;
  static std::array<std::uintptr_t, 2> PlacesBeside(std::uintptr_t low, std::uintptr_t high,
                                                    std::uintptr_t leaf, std::size_t bytes,
                                                    std::size_t step) noexcept;

  // True when `page` lies in address space this heap reserved. Takes the heap lock and
  // walks the reservations (few: each is grow_bytes or one large request).
  bool Reserved(std::uintptr_t page) const noexcept;

  // True when `page` lies in a free span, committed or returned. Takes the heap lock and
  // walks every free list: for misuse reports only, where the page's pagemap slot may name
  // a span record that a merge retired (only a free span's end pages are kept current).
  [[gnu::cold]] bool InFreeSpan(std::uintptr_t page) const noexcept;

  // Decommits committed free spans, largest first, until at most `keep_bytes` stay
  // committed (whole spans: it may keep less); returns the bytes given back. Spans already
  // returned are never touched, so with nothing to release it costs one pass over the
  // free-list heads.
  std::size_t ReleaseFree(std::size_t keep_bytes = 0) noexcept;

  // Whether fresh pages come as transparent huge pages (platform::AdviseHugePages): the
  // program's first writes then take one page fault per 2 MiB instead of 512. A large block
  // on pages the OS did not hold (returned or fresh) asks for them on the whole huge pages
  // inside it; past kHugeGrowthHeld, a smaller request that no committed free span fits
  // commits a whole huge page (CommitHugePage). Blocks reusing committed pages ask nothing
  // (their pages are mostly mapped already), so warm reuse makes no syscall; the advice is
  // taken back when the pages are decommitted. On by default (HostConfig::huge_pages), and
  // only while they prove cheap: the first write fault of each advised huge page is timed,
  // and slow ones switch the advice off (HugeFaultWatch) until it is turned on again here.
  void SetHugePages(bool on) noexcept {
    if (on) huge_faults_.Reset();
    huge_pages_.store(on, std::memory_order_relaxed);
  }
  // Fixes the time above which a huge page's first write fault counts as slow, with no
  // base-page equivalent (tests set 0).
  void SetSlowHugeFaultNanos(std::uint64_t nanos) noexcept { huge_faults_.SetSlowNanos(nanos); }

  // Sets the ceiling (0 = none) unless more than `bytes` is held; returns whether it did.
  bool TrySetCeiling(std::size_t bytes) noexcept;
  std::size_t Ceiling() const noexcept { return ceiling_.load(std::memory_order_relaxed); }
  // Held bytes above ratio * ceiling trigger a release before more is committed.
  void SetReleaseRatio(double ratio) noexcept;

  std::size_t Held() const noexcept { return held_.load(std::memory_order_relaxed); }
  // Bytes of in-use large spans, and what their callers asked for. Lock-free reads.
  std::size_t LargeInUse() const noexcept { return large_in_use_.load(std::memory_order_relaxed); }
  std::size_t LargeRequested() const noexcept {
    return large_requested_.load(std::memory_order_relaxed);
  }
  PageHeapStats Stats() const noexcept;
  void ResetPeak() noexcept;

  // Walks every free list and checks spans against the pagemap and the counters.
  // Returns nullptr when consistent, else what is broken.
  const char* CheckInvariants() const noexcept;

  SpinLock& lock() noexcept MEMARENA_RETURN_CAPABILITY(lock_) { return lock_; }

 private:
  static constexpr int kStates = 2;  // free lists for kFree and kReturned

  // Runs of pages [first_page[i], first_page[i] + num_pages[i]), disjoint, at most kMax.
  // FinishReleases' two lists: the free spans the trim before growth has returned (their
  // records, held and the free lists say so) whose pages are still mapped, and the
  // returned pages a new span is about to commit.
  struct PageRuns {
    static constexpr int kMax = 32;
    std::uintptr_t first_page[kMax] = {};
    std::size_t num_pages[kMax] = {};
    int count = 0;
    bool Add(std::uintptr_t first, std::size_t pages) noexcept {
      if (count == kMax) return false;
      first_page[count] = first;
      num_pages[count] = pages;
      ++count;
      return true;
    }
  };
  static constexpr std::size_t kMaxSpareRecords = 16;

  Span* NewLocked(std::size_t pages, std::size_t align_pages, std::uint8_t size_class,
                  std::size_t requested, std::size_t huge_page, Failure* failure,
                  bool* fresh, std::uintptr_t* huge_fault_page) noexcept
      MEMARENA_REQUIRES(lock_);
  bool GrowInPlaceLocked(Span* span, std::size_t pages, std::size_t requested,
                         bool* fresh) noexcept MEMARENA_REQUIRES(lock_);
  std::uintptr_t CommitHugePage(std::size_t pages, std::size_t huge_page) noexcept
      MEMARENA_REQUIRES(lock_);
  // The huge page size when fresh pages for a large block of `pages` pages (or, past
  // kHugeGrowthHeld, for any request) should ask for huge pages now, else 0; 0 without
  // reading the size where no huge page can be used.
  std::size_t HugePageIfUsable(bool large_block, std::size_t pages) const noexcept;
  // Times the first write fault of the huge page around `page`, one of the caller's own.
  void TimeHugeFault(std::uintptr_t page) noexcept;
  // The bytes [*lo, *hi) of whole huge pages inside `span`, when it is a large block on
  // fresh pages that should ask for them (then marked huge_advised); false otherwise.
  bool TakeHugeInterior(Span* span, bool fresh, std::size_t huge_page, std::uintptr_t* lo,
                        std::uintptr_t* hi) noexcept MEMARENA_REQUIRES(lock_);
  Span* FindFit(SpanState state, std::size_t pages, std::size_t align_pages) noexcept
      MEMARENA_REQUIRES(lock_);
  // `*taken`: the returned pages in the window that came with old bytes (FinishReleases).
  Span* ExtendIntoReturned(std::size_t pages, std::uint8_t size_class, std::size_t* taken) noexcept
      MEMARENA_REQUIRES(lock_);
  Span* Neighbour(const Span* span, bool after) const noexcept MEMARENA_REQUIRES(lock_);
  Span* FreeNeighbour(const Span* span, bool after) const noexcept MEMARENA_REQUIRES(lock_);
  std::size_t WindowAround(const Span* anchor, std::size_t pages, bool forward,
                           std::uintptr_t* start) const noexcept MEMARENA_REQUIRES(lock_);
  Span* CommitPart(Span* span, std::uintptr_t lo, std::uintptr_t hi, Span* spare[2]) noexcept
      MEMARENA_REQUIRES(lock_);
  // Takes `pages` pages of free span `span` for a new in-use span: its first pages on an
  // `align_pages` boundary, or with `from_back` (align_pages 1 only) its last pages; the
  // rest stays free.
  Span* Carve(Span* span, std::size_t pages, std::size_t align_pages, std::uint8_t size_class,
              bool from_back = false) noexcept MEMARENA_REQUIRES(lock_);
  // Whether a class span (size_class != 0) of `pages` pages cut from free span `span` should
  // take its back: the span after it is an in-use class span and the one before is not.
  // Never for a large block.
  bool CarveFromBack(const Span* span, std::size_t pages, std::uint8_t size_class) const noexcept
      MEMARENA_REQUIRES(lock_);
  bool Grow(std::size_t pages, std::size_t align_pages) noexcept MEMARENA_REQUIRES(lock_);
  void* MapBesideReservations(std::size_t bytes) noexcept MEMARENA_REQUIRES(lock_);
  void MergeAndInsert(Span* span) noexcept MEMARENA_REQUIRES(lock_);
  void Insert(Span* span) noexcept MEMARENA_REQUIRES(lock_);
  void Unlink(Span* span) noexcept MEMARENA_REQUIRES(lock_);
  // Writes the last page's slot of the span at open_end_, and leaves no end open.
  void CloseOpenEnd() noexcept MEMARENA_REQUIRES(lock_);
  SpanList& ListFor(SpanState state, std::size_t pages) noexcept MEMARENA_REQUIRES(lock_);
  std::size_t ReleaseFreeLocked() noexcept MEMARENA_REQUIRES(lock_);
  // Decommits committed free spans until at most `keep_bytes` stay: the large list and then
  // the exact sizes from the largest (one syscall returns the most), or from the smallest
  // up; spans overlapping pages [keep_lo, keep_hi) stay.
  // With `deferred`, the pages of the spans released are left for FinishReleases.
  std::size_t ReleaseDownToLocked(std::size_t keep_bytes, bool smallest_first = false,
                                  std::uintptr_t keep_lo = 0, std::uintptr_t keep_hi = 0,
                                  PageRuns* deferred = nullptr) noexcept
      MEMARENA_REQUIRES(lock_);
  std::size_t ReleaseFromListLocked(SpanList& list, std::size_t keep_bytes, bool smallest_first,
                                    std::uintptr_t keep_lo, std::uintptr_t keep_hi,
                                    PageRuns* deferred) noexcept MEMARENA_REQUIRES(lock_);
  std::size_t Decommit(Span* span, PageRuns* deferred = nullptr) noexcept
      MEMARENA_REQUIRES(lock_);
  // Committed free spans of at least kMinMovePages pages, outside [keep_lo, keep_hi), are
  // returned into `deferred` while its pages fall short of `pages`: a new span takes them.
  void TakeDonors(std::size_t pages, PageRuns* deferred, std::uintptr_t keep_lo,
                  std::uintptr_t keep_hi) noexcept MEMARENA_REQUIRES(lock_);
  // Sends the pages the trim deferred back to the OS but those the returned pages `fresh`
  // (about to be committed) take; returns how many of those came with old bytes.
  std::size_t FinishReleases(const PageRuns& deferred, const PageRuns& fresh) noexcept
      MEMARENA_REQUIRES(lock_);
  std::size_t MoveIntoHoles(std::uintptr_t first, std::uintptr_t end, const PageRuns& holes,
                            int* hole, std::uintptr_t* next) noexcept MEMARENA_REQUIRES(lock_);
  // Where the segment of [at, end) that starts at `at` ends: the end of the run of `runs`
  // `at` lies in (`*inside`), or the next run's start.
  static std::uintptr_t SegmentEnd(const PageRuns& runs, std::uintptr_t at, std::uintptr_t end,
                                   bool* inside) noexcept;
  // Gives the pages [first_page, end_page) of free spans back to the OS.
  void ReturnPages(std::uintptr_t first_page, std::uintptr_t end_page) noexcept
      MEMARENA_REQUIRES(lock_);
  bool MovesAllowed() const noexcept MEMARENA_REQUIRES(lock_);
  // Whether fresh large blocks ask for transparent huge pages now: SetHugePages on, not
  // switched off by slow faults, and the OS offers them.
  bool HugePagesInEffect() const noexcept;
  // MovesAllowed, once the mappings are counted again where kMapCountInterval calls
  // came since the last count (too_many_mappings_).
  bool MayMove() noexcept MEMARENA_REQUIRES(lock_);
  std::size_t KeptFreeBound() const noexcept MEMARENA_REQUIRES(lock_);
  void TrimBeforeGrowLocked(std::size_t bytes, std::uintptr_t keep_lo = 0,
                            std::uintptr_t keep_hi = 0,
                            PageRuns* deferred = nullptr) noexcept MEMARENA_REQUIRES(lock_);
  void ScavengeLocked() noexcept MEMARENA_REQUIRES(lock_);
  bool ReserveHeld(std::size_t bytes) noexcept;
  void CheckIfEnabled() const noexcept MEMARENA_REQUIRES(lock_);
  std::size_t ReturnedPagesAfter(const Span* span, std::size_t pages) const noexcept
      MEMARENA_REQUIRES(lock_);
  void CountNew(Span* span, std::size_t requested) noexcept MEMARENA_REQUIRES(lock_);
  void CountLarge(Span* span, std::size_t added_bytes, std::size_t requested) noexcept
      MEMARENA_REQUIRES(lock_);
  Span* NewRecord() noexcept MEMARENA_REQUIRES(lock_);
  void DeleteRecord(Span* span) noexcept MEMARENA_REQUIRES(lock_);
  const char* CheckInvariantsLocked() const noexcept MEMARENA_REQUIRES(lock_);

  // Invariants (PageHeap::CheckInvariants checks each; s is kFree or kReturned):
  //   free_bytes_[s] == sum of span->Bytes() over free_[s][1..kMaxPages] and large_[s]
  //   held_ == in_use_bytes_ + free_bytes_[kFree]
  //   reserved_bytes_ == in_use_bytes_ + free_bytes_[kFree] + free_bytes_[kReturned]
  //   reserved_bytes_ == sum of r->num_pages * kPageSize over reservations_
  //   bit n of nonempty_[s] == !free_[s][n].Empty() for 1 <= n <= kMaxPages
  //   open_end_span_ == the free span ending at open_end_ (nullptr: none, or open_end_ == 0)
  //   num_spare_records_ == length of spare_records_ <= kMaxSpareRecords
  //   ceiling_ == 0 || held_ <= ceiling_
  //   no span in free_[kReturned] or large_[kReturned] has huge_advised set
  mutable SpinLock lock_;
  Pagemap* pagemap_;
  std::size_t grow_bytes_;
  SpanList free_[kStates][kMaxPages + 1] MEMARENA_GUARDED_BY(lock_) = {};
  // Bit n % 64 of word n / 64: free_[s][n] holds a span (FindFit skips the empty lists).
  std::uint64_t nonempty_[kStates][kMaxPages / 64 + 1] MEMARENA_GUARDED_BY(lock_) = {};
  // Free spans above kMaxPages, searched best-fit.
  SpanList large_[kStates] MEMARENA_GUARDED_BY(lock_) = {};
  Span* spare_records_ MEMARENA_GUARDED_BY(lock_) = nullptr;
  // One record per reservation, linked through `next`.
  Span* reservations_ MEMARENA_GUARDED_BY(lock_) = nullptr;
  // The page after the newest reservation when no reservation begins there (else 0), and
  // the free span that ends there (else nullptr). That span's last page keeps no slot of its
  // own (Insert): no span can follow it to look it up, and the slot lies on a pagemap page
  // near the reservation's far end that a small program otherwise never writes (4 KiB of
  // its RSS). Grow closes the end (CloseOpenEnd) before a new reservation may border it.
  std::uintptr_t open_end_ MEMARENA_GUARDED_BY(lock_) = 0;
  Span* open_end_span_ MEMARENA_GUARDED_BY(lock_) = nullptr;
  std::size_t num_spare_records_ MEMARENA_GUARDED_BY(lock_) = 0;
  std::size_t free_bytes_[kStates] MEMARENA_GUARDED_BY(lock_) = {};
  std::size_t in_use_bytes_ MEMARENA_GUARDED_BY(lock_) = 0;
  // Some decommit left its pages as they were (platform::DecommitPages: locked memory), so a
  // returned span may hold old bytes: no span is marked zero_pages from then on.
  bool decommit_failed_ MEMARENA_GUARDED_BY(lock_) = false;
  std::size_t reserved_bytes_ MEMARENA_GUARDED_BY(lock_) = 0;
  std::uint64_t num_reserves_ MEMARENA_GUARDED_BY(lock_) = 0;
  std::uint64_t num_releases_ MEMARENA_GUARDED_BY(lock_) = 0;
  std::uint64_t bytes_released_ MEMARENA_GUARDED_BY(lock_) = 0;
  std::uint64_t bytes_moved_ MEMARENA_GUARDED_BY(lock_) = 0;
  std::uint64_t num_moves_ MEMARENA_GUARDED_BY(lock_) = 0;
  std::uint64_t moves_refused_ MEMARENA_GUARDED_BY(lock_) = 0;
  std::uint32_t growths_since_map_count_ MEMARENA_GUARDED_BY(lock_) = kMapCountInterval;
  bool too_many_mappings_ MEMARENA_GUARDED_BY(lock_) = false;
  std::uint32_t deletes_since_scavenge_ MEMARENA_GUARDED_BY(lock_) = 0;
  // In-use span bytes, highest in this window of kWindowOps operations and the one before.
  RecentPeak<kWindowOps> recent_in_use_ MEMARENA_GUARDED_BY(lock_);
  // Large-block counters live under the heap lock, which New/Delete hold anyway: no extra
  // atomic read-modify-write on the large path. The two atomics are only written there.
  std::uint64_t large_allocs_ MEMARENA_GUARDED_BY(lock_) = 0;
  std::uint64_t large_frees_ MEMARENA_GUARDED_BY(lock_) = 0;
  std::size_t max_large_request_ MEMARENA_GUARDED_BY(lock_) = 0;
  std::uint64_t huge_page_blocks_ MEMARENA_GUARDED_BY(lock_) = 0;
  std::uint64_t huge_pages_committed_ MEMARENA_GUARDED_BY(lock_) = 0;
  std::atomic<bool> huge_pages_{true};
  HugeFaultWatch huge_faults_;
  std::atomic<std::size_t> large_in_use_{0};
  std::atomic<std::size_t> large_requested_{0};
  std::atomic<std::size_t> held_{0};
  std::atomic<std::size_t> peak_held_{0};
  std::atomic<std::size_t> ceiling_{0};
  std::atomic<std::size_t> threshold_{0};  // ratio * ceiling
  double release_ratio_ MEMARENA_GUARDED_BY(lock_) = 0.8;
};

}  // namespace memarena::host

namespace memarena::host {
template <typename T>
class MetaPool;
// The pool of span records shared by every PageHeap (its lock is taken around fork).
MetaPool<Span>& SpanRecords() noexcept;
// The process heap's page heap and pagemap (heap.cc).
PageHeap& ProcessPageHeap() noexcept;
Pagemap& ProcessPagemap() noexcept;
}  // namespace memarena::host
