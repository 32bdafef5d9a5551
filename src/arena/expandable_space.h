// ExpandableSpace: the commit state of an expandable BFC arena (expandable_segments:1): which
// granules of its virtual range are decommitted holes, committing them before a chunk is
// handed out, and decommitting granules that lie wholly inside free chunks.
// Invariant: every hole granule lies wholly inside free chunks, so no commit or decommit
// ever touches a byte in use. Not thread-safe; BfcArena locks around it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "arena/chunk_store.h"
#include "arena/interval_set.h"
#include "memarena/stats.h"
#include "memarena/virtual_memory_source.h"

namespace memarena::arena {

class ExpandableSpace {
 public:
  // `stats` is the arena's: bytes_held, its peak and the commit counters are kept there.
  ExpandableSpace(VirtualMemorySource& source, AllocatorStats& stats) noexcept
      : source_(source), stats_(stats), granularity_(source.Granularity()) {}

  std::size_t granularity() const noexcept { return granularity_; }

  // Bytes of the decommitted granules that overlap [begin, end).
  std::size_t HolesIn(std::uintptr_t begin, std::uintptr_t end) const;

  // Commits every decommitted granule that overlaps [begin, end). Returns false when the
  // source refused; runs committed before the refusal stay committed (and counted).
  bool CommitCovering(std::uintptr_t begin, std::uintptr_t end);

  // Which free chunks may lose their memory now (not still in flight on a stream).
  using Eligible = std::function<bool(const Chunk&)>;

  // Decommits committed granules wholly inside eligible free chunks, largest chunks first,
  // never inside [keep_begin, keep_end), until at least `want` bytes went back or nothing
  // is left. Returns the bytes decommitted.
  std::size_t DecommitFree(const ChunkStore& store, const Eligible& eligible,
                           std::uintptr_t keep_begin, std::uintptr_t keep_end, std::size_t want);

  // Committed bytes that DecommitFree could give back now.
  std::size_t Decommittable(const ChunkStore& store, const Eligible& eligible) const;

  // The most committed bytes in one free chunk (the largest block usable without a commit).
  std::size_t LargestCommittedFree(const ChunkStore& store) const;

  // The region [begin, begin + size) went back to the source: forget its holes. Returns the
  // bytes of it that were committed (what held loses).
  std::size_t ForgetRegion(std::uintptr_t begin, std::size_t size);

  // The source's counters folded into arena stats (reserved and used address space).
  void FillStats(AllocatorStats& stats) const noexcept;

 private:
  // Calls fn(b, e) for each committed granule run wholly inside an eligible free chunk and
  // outside [keep_begin, keep_end), largest chunks first, until fn returns false.
  void ForEachDecommittable(const ChunkStore& store, const Eligible& eligible,
                            std::uintptr_t keep_begin, std::uintptr_t keep_end,
                            const std::function<bool(std::uintptr_t, std::uintptr_t)>& fn) const;
  std::uintptr_t Down(std::uintptr_t a) const noexcept { return a / granularity_ * granularity_; }
  std::uintptr_t Up(std::uintptr_t a) const noexcept {
    return (a + granularity_ - 1) / granularity_ * granularity_;
  }

  VirtualMemorySource& source_;
  AllocatorStats& stats_;
  const std::size_t granularity_;
  IntervalSet holes_;
};

}  // namespace memarena::arena
