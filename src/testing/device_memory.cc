// The test guards' view of device memory: which allocators count as device memory (device
// BfcArenas from the release registry plus watched allocators) and their summed numbers.
#include "memarena/testing/device_memory.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "common/release_registry.h"
#include "memarena/arena.h"

namespace memarena::testing {
namespace {

// Leaked on purpose, as the release registry: watched allocators may unregister during
// static destruction.
common::AllocatorSet& Watched() {
  static common::AllocatorSet* watched = new common::AllocatorSet;
  return *watched;
}

// Calls `visit(allocator, arena_or_null)` once for every device allocator, under the locks
// that keep each one alive. Only BfcArenas are taken from the registry: every other
// registered allocator wraps an upstream whose memory would be counted twice.
void ForEachDeviceAllocator(const std::function<void(Allocator&, const BfcArena*)>& visit) {
  std::vector<const Allocator*> from_registry;
  common::ForEachRegistered([&](Allocator& a) {
    const auto* arena = dynamic_cast<const BfcArena*>(&a);
    if (arena == nullptr || a.kind() != AllocatorKind::kDevice) return;
    from_registry.push_back(&a);
    visit(a, arena);
  });
  Watched().ForEach([&](Allocator& a) {
    if (std::find(from_registry.begin(), from_registry.end(), &a) != from_registry.end()) return;
    visit(a, dynamic_cast<const BfcArena*>(&a));
  });
}

}  // namespace

DeviceMemorySnapshot ReadDeviceMemory() {
  DeviceMemorySnapshot snap;
  std::vector<const MemorySource*> sources;  // each device counted once
  ForEachDeviceAllocator([&](Allocator& a, const BfcArena* arena) {
    const AllocatorStats s = a.GetStats();
    ++snap.num_allocators;
    snap.bytes_in_use += s.bytes_in_use;
    snap.bytes_held += s.bytes_held;
    snap.peak_bytes_in_use += s.peak_bytes_in_use;
    snap.peak_bytes_held += s.peak_bytes_held;
    if (arena == nullptr) return;
    const MemorySource* source = &arena->source();
    if (std::find(sources.begin(), sources.end(), source) != sources.end()) return;
    sources.push_back(source);
    if (const auto capacity = source->Capacity()) {
      snap.device_used_bytes =
          snap.device_used_bytes.value_or(0) + (capacity->total_bytes - capacity->free_bytes);
      snap.device_total_bytes = snap.device_total_bytes.value_or(0) + capacity->total_bytes;
    }
  });
  return snap;
}

void ResetDevicePeaks() {
  ForEachDeviceAllocator([](Allocator& a, const BfcArena*) { a.ResetPeakStats(); });
}

std::size_t ReleaseDeviceMemory() {
  std::size_t released = 0;
  ForEachDeviceAllocator([&](Allocator& a, const BfcArena*) { released += a.ReleaseUnusedSpans(); });
  return released;
}

void WatchDeviceAllocator(Allocator& allocator) { Watched().Add(&allocator); }

void UnwatchDeviceAllocator(Allocator& allocator) noexcept { Watched().Remove(&allocator); }

}  // namespace memarena::testing
