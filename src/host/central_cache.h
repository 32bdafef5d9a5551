// CentralCache: one locked free list per size class, between the thread caches and the
// page heap. Objects move in batches; a span whose objects are all free goes back to the
// page heap at once, so the central lists never sit on whole free spans.
#pragma once

#include <cstddef>
#include <cstdint>

#include "host/page_heap.h"
#include "host/pagemap.h"
#include "host/size_classes.h"
#include "host/span.h"
#include "host/spin_lock.h"

namespace memarena::host {

class CentralCache {
 public:
  constexpr CentralCache(PageHeap* heap, Pagemap* pagemap) noexcept
      : heap_(heap), pagemap_(pagemap) {}
  CentralCache(const CentralCache&) = delete;
  CentralCache& operator=(const CentralCache&) = delete;

  // Takes up to `count` objects of class `cls`, linked through their first word from
  // *head to *tail (whose link is nullptr). Returns how many; 0 on failure, with
  // *failure saying why.
  int Remove(std::size_t cls, int count, void** head, void** tail, Failure* failure) noexcept;

  // Gives back `count` objects of class `cls` linked through their first word.
  void Insert(std::size_t cls, void* head, int count) noexcept;

  // Free objects of class `cls` held here (on span free lists or not yet carved).
  std::size_t FreeObjects(std::size_t cls) const noexcept;

  // Fork handlers take every class lock, in class order.
  void LockAll() noexcept;
  void UnlockAll() noexcept;

 private:
  struct alignas(64) ClassList {  // one cache line each: classes do not contend
    mutable SpinLock lock;
    SpanList spans;  // spans of this class with a free or never-used object
    std::size_t free_objects = 0;
  };

  PageHeap* heap_;
  Pagemap* pagemap_;
  ClassList lists_[kNumClasses + 1] = {};
};

}  // namespace memarena::host
