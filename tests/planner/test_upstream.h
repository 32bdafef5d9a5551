// A plain upstream Allocator for PlannedArena tests: aligned_alloc with exact accounting,
// an optional limit on held bytes, and a record of the peak held.
#pragma once

#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "memarena/allocator.h"

namespace memarena::testing {

class MallocUpstream final : public Allocator {
 public:
  explicit MallocUpstream(std::size_t limit = 0) : limit_(limit) {}
  ~MallocUpstream() override {
    for (auto& [p, n] : sizes_) std::free(p);
  }

  void ResetPeakStats() override {
    std::lock_guard lock(mutex_);
    stats_.peak_bytes_held = stats_.bytes_held;
  }
  std::size_t ReleaseUnusedSpans() override { return 0; }
  AllocatorKind kind() const noexcept override { return AllocatorKind::kHost; }
  std::string_view name() const noexcept override { return "malloc_upstream"; }

 private:
  void* DoAllocate(std::size_t bytes, std::size_t alignment, StreamHandle) noexcept override {
    std::lock_guard lock(mutex_);
    const std::size_t usable = bytes == 0 ? 1 : bytes;
    if (limit_ != 0 && (usable > limit_ || stats_.bytes_held > limit_ - usable)) {
      ++stats_.num_ooms;
      return nullptr;
    }
    const std::size_t align = alignment < sizeof(void*) ? sizeof(void*) : alignment;
    void* p = std::aligned_alloc(align, (usable + align - 1) / align * align);
    if (p == nullptr) return nullptr;
    sizes_[p] = usable;
    stats_.bytes_held += usable;
    stats_.bytes_in_use += usable;
    stats_.bytes_requested += bytes;
    stats_.peak_bytes_held = std::max(stats_.peak_bytes_held, stats_.bytes_held);
    stats_.peak_bytes_in_use = stats_.peak_bytes_held;
    ++stats_.num_allocs;
    return p;
  }
  FreeResult DoDeallocate(void* ptr, StreamHandle) noexcept override {
    std::lock_guard lock(mutex_);
    auto it = sizes_.find(ptr);
    if (it == sizes_.end()) return FreeResult::kNotOwned;
    stats_.bytes_held -= it->second;
    stats_.bytes_in_use -= it->second;
    ++stats_.num_frees;
    sizes_.erase(it);
    std::free(ptr);
    return FreeResult::kFreed;
  }
  std::size_t DoUsableSize(const void* ptr) const noexcept override {
    std::lock_guard lock(mutex_);
    auto it = sizes_.find(const_cast<void*>(ptr));
    return it == sizes_.end() ? 0 : it->second;
  }
  AllocatorStats DoGetStats() const override {
    std::lock_guard lock(mutex_);
    AllocatorStats s = stats_;
    s.limit_bytes = limit_;
    return s;
  }
  const std::size_t limit_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::size_t> sizes_;
  AllocatorStats stats_;
};

}  // namespace memarena::testing
