// memarena::Allocator: the one interface that the host allocator, every arena, the
// planned arena and every wrapper (tracing, limiting) implement.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "memarena/errors.h"
#include "memarena/stats.h"

namespace memarena {

enum class AllocatorKind { kHost, kDevice };

// The alignment a plain Allocate(bytes) gets, as malloc gives.
inline constexpr std::size_t kDefaultAlignment = alignof(std::max_align_t);

class Allocator {
 public:
  virtual ~Allocator() = default;

  // Returns `bytes` bytes aligned to `alignment` (a power of two; any size, also above
  // the page size). Allocate(0) returns nullptr or a unique pointer; either may be
  // passed to Deallocate. Throws OutOfMemory (what() is the diagnostic) when the
  // request cannot be served, and std::invalid_argument when `alignment` is not a
  // power of two. Costs what TryAllocate costs.
  void* Allocate(std::size_t bytes, std::size_t alignment = kDefaultAlignment);

  // Like Allocate, but returns nullptr instead of throwing. Never throws, never formats.
  virtual void* TryAllocate(std::size_t bytes,
                            std::size_t alignment = kDefaultAlignment) noexcept = 0;

  // Frees a pointer from this allocator. nullptr is a no-op.
  virtual void Deallocate(void* ptr) noexcept = 0;

  // Bytes usable at `ptr` (at least what was asked for). 0 for nullptr.
  virtual std::size_t UsableSize(const void* ptr) const noexcept = 0;

  // A snapshot of the counters. May lock and fold per-thread counters; not for hot paths.
  virtual AllocatorStats GetStats() const = 0;

  // Peaks restart from the current values.
  virtual void ResetPeakStats() = 0;

  // Returns free memory to the OS or device; returns the bytes given back.
  virtual std::size_t ReleaseUnusedSpans() = 0;

  virtual AllocatorKind kind() const noexcept = 0;
  virtual std::string_view name() const noexcept = 0;

  // The diagnostic for a failed request of `bytes`: requested, in use, held, limit,
  // releasable, largest free block, fragmentation and which knob helps. The default
  // builds it from GetStats(); allocators override it to name their own knobs.
  virtual std::string DescribeFailure(std::size_t bytes, std::size_t alignment) const;
};

// True when `alignment` is a non-zero power of two.
constexpr bool IsValidAlignment(std::size_t alignment) noexcept {
  return alignment != 0 && (alignment & (alignment - 1)) == 0;
}

}  // namespace memarena
