// AllocatorSet, and the set of live arenas that memarena::ReleaseUnusedSpans() releases.
#include "common/release_registry.h"

#include <algorithm>

#include "memarena/allocator.h"

namespace memarena::common {
namespace {

// Leaked on purpose: arenas may be destroyed during static destruction, after a
// function-local static registry would already be gone.
AllocatorSet& TheRegistry() {
  static AllocatorSet* registry = new AllocatorSet;
  return *registry;
}

}  // namespace

void AllocatorSet::Add(Allocator* allocator) {
  common::MutexLock lock(mutex_);
  allocators_.push_back(allocator);
}

void AllocatorSet::Remove(Allocator* allocator) noexcept {
  common::MutexLock lock(mutex_);
  std::erase(allocators_, allocator);
}

void AllocatorSet::ForEach(const std::function<void(Allocator&)>& visit) {
  common::MutexLock lock(mutex_);
  for (Allocator* a : allocators_) visit(*a);
}

void RegisterReleasable(Allocator* allocator) { TheRegistry().Add(allocator); }

void UnregisterReleasable(Allocator* allocator) noexcept { TheRegistry().Remove(allocator); }

std::size_t ReleaseAllRegistered() {
  std::size_t released = 0;
  TheRegistry().ForEach([&released](Allocator& a) { released += a.ReleaseUnusedSpans(); });
  return released;
}

void ForEachRegistered(const std::function<void(Allocator&)>& visit) {
  TheRegistry().ForEach(visit);
}

}  // namespace memarena::common
