// AllocatorStats: the one stats record every memarena allocator fills in.
// Field names follow the glossary in docs/glossary.md (in use, requested, held, releasable, peak).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace memarena {

// Free spans of one length range (AllocatorStats::free_spans_by_length).
struct FreeSpanCount {
  std::uint64_t spans = 0;
  std::size_t bytes = 0;
};
// Bucket b of free_spans_by_length holds the spans of kFreeSpanBucketBase << b bytes up to
// twice that (the host heap's 8 KiB page, 2-3 pages, 4-7 pages, ...); the last bucket also
// every longer span (1 MiB and up).
inline constexpr std::size_t kFreeSpanBuckets = 8;
inline constexpr std::size_t kFreeSpanBucketBase = std::size_t{8} << 10;

struct AllocatorStats {
  // Current values.
  std::size_t bytes_in_use = 0;      // handed to callers, at the size reserved for them
  std::size_t bytes_requested = 0;   // sum of the sizes callers asked for
  std::size_t bytes_held = 0;        // obtained from the OS/device and not yet returned
  std::size_t bytes_releasable = 0;  // held bytes ReleaseUnusedSpans() could return now
  std::size_t largest_free_block = 0;
  double fragmentation = 0.0;        // 1 - largest_free_block / free bytes inside held

  // Peaks since start or since ResetPeakStats().
  std::size_t peak_bytes_in_use = 0;
  std::size_t peak_bytes_requested = 0;
  std::size_t peak_bytes_held = 0;

  // Limit on held bytes; 0 means unlimited (host: ceiling, arena: max_mem / bytes_limit).
  std::size_t limit_bytes = 0;

  // Event counters.
  std::uint64_t num_allocs = 0;
  std::uint64_t num_frees = 0;
  std::uint64_t num_reserves = 0;          // regions/spans obtained from the OS or device
  std::uint64_t num_releases = 0;          // regions/spans given back
  std::uint64_t bytes_released = 0;        // total bytes given back
  std::uint64_t num_ooms = 0;              // failed allocations
  std::uint64_t num_arena_extensions = 0;  // growth steps still held (BFC; a shrink lowers it, as ORT)
  std::uint64_t num_arena_extensions_total = 0;  // growth steps ever taken (never decreases)
  std::uint64_t num_arena_shrinkages = 0;  // regions freed by shrinking (BFC; ORT counts one per region)
  std::size_t max_alloc_size = 0;          // largest single allocation served

  // Expandable BFC arenas (expandable_segments:1) only; there held = committed bytes.
  std::size_t virtual_bytes_reserved = 0;  // the virtual range reserved up front
  std::size_t virtual_bytes_used = 0;      // the part of it the arena's chunks span
  std::uint64_t num_commits = 0;           // granule runs given memory (growth excluded)
  std::uint64_t num_decommits = 0;         // granule runs whose memory went back
  std::uint64_t bytes_decommitted = 0;     // total bytes decommitted

  // Host allocator only: where held bytes that are not in use sit. bytes_releasable is the
  // free spans; the rest of held beyond these is the unused tail of partly used spans.
  std::size_t bytes_in_thread_caches = 0;  // free objects cached by threads
  std::size_t bytes_in_central_lists = 0;  // free objects in the central (shared) lists
  // Part of bytes_in_central_lists: objects of partly carved spans never handed out. A page
  // no object of it was carved on may never have been written, so RSS can stay below held
  // by up to this much.
  std::size_t bytes_uncarved = 0;
  std::size_t bytes_metadata = 0;          // span records, thread caches: not in held
  // Host allocator only: the free spans (bytes_releasable) by length. Many short spans and a
  // short longest one is fragmentation: a longer request commits fresh pages while the short
  // spans stay held.
  std::array<FreeSpanCount, kFreeSpanBuckets> free_spans_by_length{};
  // Host allocator only: free pages that a growth took over with mremap instead of faulting
  // fresh ones in (docs/host.md, "Held bytes and the ceiling", step 6); they are counted in
  // bytes_released too, since their old place went back.
  std::uint64_t bytes_moved = 0;

  // Host allocator only: transparent huge pages (HostConfig::huge_pages). They are asked
  // for while huge_page_size != 0, huge_pages_enabled and huge_page_slow_fault_nanos == 0.
  std::size_t huge_page_size = 0;         // the kernel's transparent huge page; 0: none here
  bool huge_pages_enabled = false;        // the huge_pages key
  std::uint64_t huge_page_blocks = 0;     // large blocks that asked for huge pages
  std::uint64_t huge_pages_committed = 0;  // whole huge pages committed for smaller requests
  // A huge page's first write fault above this counts as slow: 2 ms, or what the same bytes
  // cost in base-page faults on this machine once that was measured.
  std::uint64_t huge_page_fault_bound_nanos = 0;
  // The slow fault (the second before fast ones made up for the one before) that switched
  // huge pages off; 0 while they are on.
  std::uint64_t huge_page_slow_fault_nanos = 0;
};

// Per-size-class counters of the host allocator (memarena::HostSizeClassStats() in host.h);
// no other allocator has size classes, so they stay out of AllocatorStats.
struct SizeClassStats {
  std::size_t size = 0;        // bytes handed out for one object of this class
  std::uint64_t num_allocs = 0;
  std::uint64_t num_frees = 0;
  std::size_t bytes_in_use = 0;  // live objects * size
  // Free objects of this class, as AllocatorStats' fields of the same names count them for
  // all classes: the class's share of held-not-in-use, which no other class can use.
  std::size_t bytes_in_thread_caches = 0;
  std::size_t bytes_in_central_lists = 0;  // transfer batches, span free lists, uncarved
  std::size_t bytes_uncarved = 0;          // part of bytes_in_central_lists
};

// A human-readable report of `stats` (fmt), titled with the allocator's name: a summary
// first (process id and command, RSS, held and where it sits), then the current/peak table,
// then, as detail on request, one row per size class of `size_classes` that was ever used
// (pass HostSizeClassStats() for the host; empty leaves the rows out). Allocates; never
// call it on a hot path.
std::string FormatStats(const AllocatorStats& stats, std::string_view allocator_name,
                        std::span<const SizeClassStats> size_classes = {});

// "1.50 GiB"-style rendering used in every message and table.
std::string FormatBytes(std::size_t bytes);

}  // namespace memarena
