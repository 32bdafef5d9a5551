// How much a BFC arena asks its source for when it must grow: ORT's kNextPowerOfTwo
// doubling with max_power_of_two_extend_bytes, kSameAsRequested, and the 0.9x backoff.
#pragma once

#include <cstddef>

#include "memarena/arena.h"

namespace memarena::arena {

// ORT gives up backing off below this size (a 10% cut is undone by 256 B rounding near 2.5 KiB).
inline constexpr std::size_t kMinBackoffBytes = 8 * 1024;

class GrowthPolicy {
 public:
  explicit GrowthPolicy(const ArenaConfig& config) noexcept;

  // The size of the next extension for a request of `rounded` bytes (already including any
  // alignment slack), before it is clamped to what max_mem leaves. Advances the doubling.
  std::size_t NextExtension(std::size_t rounded) noexcept;

  // After a shrink, kNextPowerOfTwo grows again from initial_growth_chunk_size_bytes.
  void ResetAfterShrink() noexcept { current_ = initial_growth_; }

  std::size_t current() const noexcept { return current_; }

 private:
  ArenaExtendStrategy strategy_;
  std::size_t initial_growth_;
  std::size_t cap_;
  std::size_t current_;
};

// The next, smaller size to try after the source refused `bytes`: 0.9x, rounded to 256 B,
// computed in float as ORT does.
std::size_t BackoffBytes(std::size_t bytes) noexcept;

}  // namespace memarena::arena
