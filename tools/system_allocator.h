// SystemAllocator: the C library's malloc behind memarena::Allocator, the baseline that
// `memarena replay --allocator system` and `compare` measure the others against.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>

#include "memarena/allocator.h"

namespace memarena::tools {

// malloc/free with counters. The C library keeps no per-caller record of what it holds, so
// bytes_held is reported equal to bytes_in_use (malloc_usable_size of live blocks): a lower
// bound on what glibc really holds. `limit_bytes` (0 = none) fails requests that would push
// in use above it, to replay a trace under a cap. Thread-safe.
class SystemAllocator final : public Allocator {
 public:
  explicit SystemAllocator(std::size_t limit_bytes = 0) : limit_(limit_bytes) {}

  void ResetPeakStats() override;
  std::size_t ReleaseUnusedSpans() override;  // malloc_trim(0); returns 0 (glibc reports no count)
  AllocatorKind kind() const noexcept override { return AllocatorKind::kHost; }
  std::string_view name() const noexcept override { return "system"; }

 private:
  void* DoAllocate(std::size_t bytes, std::size_t alignment, StreamHandle) noexcept override;
  // free() cannot tell a foreign pointer: every pointer counts as this allocator's.
  FreeResult DoDeallocate(void* ptr, StreamHandle) noexcept override;
  std::size_t DoUsableSize(const void* ptr) const noexcept override;
  AllocatorStats DoGetStats() const override;

  const std::size_t limit_;
  mutable std::mutex mutex_;
  AllocatorStats stats_;
};

}  // namespace memarena::tools
