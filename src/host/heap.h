// Process-wide host heap controls and statistics beyond host_api.h, used by
// HostAllocator(), the tests and the benchmarks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "host/size_classes.h"
#include "memarena/stats.h"

namespace memarena::host {

// Requests above this are page runs from the page heap (large spans), not objects of the
// classes above it: a freed run merges with its free neighbours and serves any length, where
// a block cached for its class (thread cache, central list, partly used span) served only
// that class. The testsuite workload, whose cases allocate 16 B - 256 KiB log-uniformly,
// peaked at 31.6 MiB with classes up to 256 KiB and at 27.0 with page runs above 64 KiB, at
// level CPU (issue 12; docs/host.md, "Every workload beside the four peers"). Lower bounds
// save more (live_set_1t's peak RSS 15.2 -> 10.8 MiB with runs above 8 KiB), but each run's
// two locked page-heap operations (each lock a full barrier) and the slow paths around them
// cost random_slots (16 B - 32 KiB, free-then-malloc) 2.1-2.8x its best peer's CPU and its RSS
// bar (runs split at new offsets touch pages that class objects written only at their ends
// never do), and mixed_heap (up to 64 KiB) 1.7-2.1x its CPU; a per-thread stash of freed
// runs leaves 1.5-1.9x (docs/host.md, "Lower run bounds, measured"). heap.cc's fast path
// still looks in the class's list (empty unless an aligned request was rounded up into that
// class) before its slow path gets here.
inline constexpr std::size_t kMaxClassRequest = std::size_t{64} << 10;
static_assert(kMaxClassRequest < kMaxSmallSize && kMaxClassRequest % kPageSize == 0);

// Borrowing (heap.cc BorrowOrSlow): a request of a class of kBorrowMinSize and up whose class
// has no freed object (its thread list is empty, its central list holds none) takes a freed
// object of one of the next kBorrowClasses classes, first from the thread's lists (no lock),
// then from the central lists, before a never-used object of its own class is carved. At
// most 2^(4/8) - 1 = 41 % of the object goes unused. After kMaxBorrowStreak borrows in a
// row the class carves one object of its own (then borrows again): without the bound a class
// that borrows all the time pays a call for each allocation (random_slots: 2.7 % of its
// allocations, 5 % more CPU; with it, level). live_set_1t's peak RSS 15.1 -> 12.1 MiB (11.9
// without the bound; 8 classes instead of 4 gained nothing under it). docs/host.md,
// "Borrowing from the classes above".
inline constexpr std::size_t kBorrowMinSize = std::size_t{4} << 10;
inline constexpr std::size_t kBorrowClasses = 4;
inline constexpr std::uint8_t kMaxBorrowStreak = 255;

// Folds every thread's counters into one snapshot. Takes locks; not for hot paths.
AllocatorStats Stats() noexcept;

// The per-class counters, class 1 first (memarena::HostSizeClassStats()). Takes the same
// lock as Stats(); never allocates.
void SizeClasses(std::span<SizeClassStats, kNumClasses> out) noexcept;

// Peaks restart from the current values.
void ResetPeaks() noexcept;

// Flushes the calling thread's cache, asks every other thread cache to flush at its next
// slow path, and decommits free spans until at most `keep_bytes` of them stay committed.
// Returns the bytes given back to the OS.
std::size_t ReleaseUnused(std::size_t keep_bytes = 0) noexcept;

// The warm working set memarena::ReleaseUnusedSpans() keeps committed (release_keep).
void SetReleaseKeep(std::size_t bytes) noexcept;
std::size_t ReleaseKeep() noexcept;

// Sets the ceiling on held bytes (0 = none), releasing free memory first if needed.
// False (nothing changed) when more than `bytes` stays held.
bool SetCeiling(std::size_t bytes) noexcept;
std::size_t Ceiling() noexcept;

// The calling thread's cache budget beside the process-wide pool it grows from (tests).
struct ThreadCacheBudget {
  std::size_t budget_bytes = 0;    // claimed by this thread from the pool
  std::size_t capacity_bytes = 0;  // the sum of its lists' bounds (<= budget_bytes)
  std::int64_t pool_unclaimed = 0;  // claimed by no live thread
  std::size_t pool_total = 0;       // HostConfig::thread_cache_bytes
};
ThreadCacheBudget CallingThreadCacheBudget() noexcept;

// Objects of class `cls` in the calling thread's cache (tests).
std::size_t CallingThreadCachedObjects(std::size_t cls) noexcept;

// Free objects of class `cls` in the central lists: transfer cache, span free lists and
// never-used objects of partly used spans (tests).
std::size_t CentralFreeObjects(std::size_t cls) noexcept;

// Bytes held now (one relaxed load; no lock).
std::size_t HeldBytes() noexcept;

// Checks the invariants of the central lists, the small spans on them, the page heap's
// spans, counters and pagemap (the equations in central_cache.h, span.h, page_heap.h);
// nullptr when they hold, else what is broken.
const char* CheckHeap() noexcept;

}  // namespace memarena::host
