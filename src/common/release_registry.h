// The registry behind the free function memarena::ReleaseUnusedSpans(): every live arena
// registers itself so one call gives back the free memory of the whole process.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "common/mutex.h"

namespace memarena {
class Allocator;
}

namespace memarena::common {

// A thread-safe set of allocators that are read or released together. The registry below is
// one; the test guards keep another for device allocators that are not arenas.
class AllocatorSet {
 public:
  void Add(Allocator* allocator);
  void Remove(Allocator* allocator) noexcept;
  // Calls `visit` on each member under the set's lock, so none leaves meanwhile.
  void ForEach(const std::function<void(Allocator&)>& visit);

 private:
  common::Mutex mutex_;
  std::vector<Allocator*> allocators_ MEMARENA_GUARDED_BY(mutex_);
};

// Adds `allocator` to the set released by ReleaseAllRegistered(). Call from the
// constructor; pair with UnregisterReleasable() in the destructor. Thread-safe.
void RegisterReleasable(Allocator* allocator);
void UnregisterReleasable(Allocator* allocator) noexcept;

// Calls ReleaseUnusedSpans() on every registered allocator; returns the bytes given back.
std::size_t ReleaseAllRegistered();

// Calls `visit` on every registered allocator, under the registry's lock so none of them is
// destroyed meanwhile (`visit` must not create or destroy an arena). For tools that read
// every live arena, such as the test guard's device accounting.
void ForEachRegistered(const std::function<void(Allocator&)>& visit);

}  // namespace memarena::common
