// The set of live arenas that memarena::ReleaseUnusedSpans() releases.
#include "common/release_registry.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "memarena/allocator.h"

namespace memarena::common {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<Allocator*> allocators;
};

// Leaked on purpose: arenas may be destroyed during static destruction, after a
// function-local static registry would already be gone.
Registry& TheRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

}  // namespace

void RegisterReleasable(Allocator* allocator) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.allocators.push_back(allocator);
}

void UnregisterReleasable(Allocator* allocator) noexcept {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::erase(r.allocators, allocator);
}

std::size_t ReleaseAllRegistered() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::size_t released = 0;
  for (Allocator* a : r.allocators) released += a->ReleaseUnusedSpans();
  return released;
}

void ForEachRegistered(const std::function<void(Allocator&)>& visit) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (Allocator* a : r.allocators) visit(*a);
}

}  // namespace memarena::common
