// SystemAllocator: malloc with the counters every memarena allocator keeps.
#include "system_allocator.h"

#include <malloc.h>

#include <algorithm>
#include <cstdlib>

namespace memarena::tools {

void* SystemAllocator::DoAllocate(std::size_t bytes, std::size_t alignment,
                                  StreamHandle) noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (limit_ != 0 && stats_.bytes_in_use + bytes > limit_) {
      ++stats_.num_ooms;
      return nullptr;
    }
  }
  void* ptr = nullptr;
  if (alignment <= kDefaultAlignment) {
    ptr = std::malloc(bytes);
  } else if (posix_memalign(&ptr, alignment, bytes) != 0) {
    ptr = nullptr;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (ptr == nullptr) {
    ++stats_.num_ooms;
    return nullptr;
  }
  const std::size_t usable = malloc_usable_size(ptr);
  stats_.bytes_in_use += usable;
  stats_.bytes_held = stats_.bytes_in_use;
  stats_.bytes_requested += usable;  // free() does not say what was asked; count usable
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  stats_.peak_bytes_requested = stats_.peak_bytes_in_use;
  stats_.peak_bytes_held = stats_.peak_bytes_in_use;
  stats_.max_alloc_size = std::max(stats_.max_alloc_size, bytes);
  ++stats_.num_allocs;
  return ptr;
}

FreeResult SystemAllocator::DoDeallocate(void* ptr, StreamHandle) noexcept {
  const std::size_t usable = malloc_usable_size(ptr);
  std::free(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.bytes_in_use -= usable;
  stats_.bytes_requested -= usable;
  stats_.bytes_held = stats_.bytes_in_use;
  ++stats_.num_frees;
  return FreeResult::kFreed;
}

std::size_t SystemAllocator::DoUsableSize(const void* ptr) const noexcept {
  return malloc_usable_size(const_cast<void*>(ptr));
}

AllocatorStats SystemAllocator::DoGetStats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  AllocatorStats s = stats_;
  s.limit_bytes = limit_;
  return s;
}

void SystemAllocator::ResetPeakStats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
  stats_.peak_bytes_requested = stats_.bytes_requested;
  stats_.peak_bytes_held = stats_.bytes_held;
}

std::size_t SystemAllocator::ReleaseUnusedSpans() {
  malloc_trim(0);
  return 0;
}

}  // namespace memarena::tools
