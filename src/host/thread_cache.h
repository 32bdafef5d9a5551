// ThreadCache: one per thread, a bounded free list per size class. The fast path only
// touches the calling thread's cache: no lock, no atomic read-modify-write. Its counters
// are relaxed atomics written by the owner only, so Stats() can fold them from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "host/size_classes.h"

namespace memarena::host {

struct alignas(64) ThreadCache {
  struct List {
    void* head = nullptr;
    std::uint32_t length = 0;
    std::uint32_t max_length = 0;  // grows by a batch on each overflow (slow start)
  };

  List lists[kNumClasses + 1];
  std::atomic<std::size_t> cached_bytes{0};
  std::size_t max_bytes = 0;      // HostConfig::thread_cache_bytes when last synced
  std::uint64_t seen_epoch = 0;   // last flush request honoured
  std::int64_t net_out = 0;       // bytes taken from central minus bytes given back
  std::int64_t folded_in_use = 0; // this thread's in-use bytes last added to the total
  std::atomic<std::uint64_t> allocs[kNumClasses + 1] = {};
  std::atomic<std::uint64_t> frees[kNumClasses + 1] = {};
  ThreadCache* next = nullptr;    // registry of live caches
  ThreadCache* prev = nullptr;
};

// Owner-only increment: a plain load and store, not a locked instruction.
inline void BumpCounter(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

inline void*& NextObject(void* object) noexcept { return *static_cast<void**>(object); }

}  // namespace memarena::host
