// UsageCounters: the in-use, requested and held counters with their peaks, kept the same
// way by every allocator that counts for itself (BFC arena, planned arena, adaptors).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "memarena/stats.h"

namespace memarena::common {

// The counters are the AllocatorStats fields themselves, so an owner reads them as it reads
// any stats record. Not synchronised: the owner updates it under its own lock.
struct UsageCounters : AllocatorStats {
  // A block of `usable` bytes handed out for a request of `requested` bytes.
  void OnAllocate(std::size_t usable, std::size_t requested) noexcept {
    ++num_allocs;
    bytes_in_use += usable;
    bytes_requested += requested;
    peak_bytes_in_use = std::max(peak_bytes_in_use, bytes_in_use);
    peak_bytes_requested = std::max(peak_bytes_requested, bytes_requested);
    max_alloc_size = std::max(max_alloc_size, usable);
  }
  void OnFree(std::size_t usable, std::size_t requested) noexcept {
    ++num_frees;
    bytes_in_use -= usable;
    bytes_requested -= requested;
  }
  // Held grows by `bytes` (memory taken from the source or the upstream).
  void OnHold(std::size_t bytes) noexcept {
    bytes_held += bytes;
    peak_bytes_held = std::max(peak_bytes_held, bytes_held);
  }
  // Held shrinks by `bytes` handed back with the block that held them (an adaptor's free).
  void OnUnhold(std::size_t bytes) noexcept { bytes_held -= bytes; }
  // `bytes` in `regions` regions given back to the source (a release, counted as one).
  void OnRelease(std::size_t bytes, std::uint64_t regions) noexcept {
    bytes_held -= bytes;
    bytes_released += bytes;
    num_releases += regions;
  }
  void OnFailure() noexcept { ++num_ooms; }
  void ResetPeaks() noexcept {
    peak_bytes_in_use = bytes_in_use;
    peak_bytes_requested = bytes_requested;
    peak_bytes_held = bytes_held;
  }
};

}  // namespace memarena::common
