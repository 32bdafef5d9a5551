// ThreadCache: one per thread, a bounded free list per size class. The fast path only
// touches the calling thread's cache: no lock, no atomic read-modify-write. Counters are
// relaxed atomics written by the owner only, so Stats() can fold them from any thread.
//
// Bound: a list may hold max_length objects; the sum of max_length * size over all lists
// (capacity_bytes) never exceeds max_bytes, the thread's budget, which grows on demand from
// the process-wide pool of HostConfig::thread_cache_bytes (cache_budget.h) and goes back
// to it when the cache shrinks; the free fast path checks only its list's length.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "host/size_classes.h"
#include "host/span.h"
#include "platform/cpu.h"

namespace memarena::host {

struct alignas(64) ThreadCache {
  // 32 bytes on a 32-byte boundary: one line holds all that an allocation or a free touches
  // of its class (the free's object-start constants are in the pagemap slot it reads).
  struct alignas(32) List {
    void* head = nullptr;
    std::atomic<std::uint32_t> length{0};
    std::uint32_t max_length = 0;  // starts at 0 and grows with use (slow start)
    // Objects of this class allocated through this cache: the fast path's one counter, on
    // the line its pop writes anyway (in an array of its own it was a third line).
    std::atomic<std::uint64_t> allocs{0};
  };
  static_assert(sizeof(List) == 32);

  // First in the cache, so that a list's address is the cache's plus class * 32: the fast
  // paths index it with one shift (at offset 32, an add more in every allocation).
  List lists[kNumClasses + 1];
  // Bytes this thread may still allocate before its next heap sample (heap_sampler.h): the
  // fast path's one extra subtraction. sampler::kOffInterval when sampling is off.
  std::int64_t sample_left = 0;
  std::uint64_t sample_epoch = 0;  // sampler::Epoch() when sample_left was drawn
  // Objects taken from the central cache minus objects given back, per class. With the
  // list lengths this yields in-use objects (net_out - length) and so the frees
  // (allocs - in use) without counting frees on the fast path.
  std::atomic<std::int64_t> net_out[kNumClasses + 1] = {};
  std::int64_t folded_live[kNumClasses + 1] = {};  // in-use objects last added to the total
  std::size_t capacity_bytes = 0;  // sum of max_length * size
  std::size_t max_bytes = 0;       // this thread's budget, claimed from the pool
  std::uint64_t seen_epoch = 0;    // last flush request honoured
  // Where the next steal of list capacity starts (0 visits the unused class 0 first): zero,
  // so that heap.cc's g_no_cache is all zero and sits in .bss, not in the library's .data.
  std::uint32_t next_victim = 0;
  ThreadCache* next = nullptr;     // registry of live caches
  ThreadCache* prev = nullptr;
  // What this thread kept from its last sampled free for its next sample, so that a sample
  // and its free take no lock: a free sampler entry (0: none) and the one-page span
  // (nullptr: none). The page heap still counts the span in use; Stats() takes it out.
  std::uint32_t spare_sample_entry = 0;
  std::atomic<Span*> spare_sampled_span{nullptr};
  // Spare spans handed to a new sample (an allocation and a free the page heap did not
  // see). Their bytes and requested moves are counted globally (heap.cc g_spare_span_bytes).
  std::atomic<std::uint64_t> sampled_span_reuses{0};
  // Budget policy (heap.cc MakeRoom/Scavenge). Falls of this thread's in-use bytes not yet
  // added to the global count (<= 0: a fall cannot raise a peak, so it waits for the next
  // rise or a flush instead of taking a locked add on every overflow).
  std::int64_t unfolded_bytes = 0;
  // Per class, length + allocs - net_out at the last scavenge (or at the last refill, with
  // length 0): base - allocs + net_out is then a lower bound of the list's low-water mark
  // since, without a counter on the fast path (allocations only lower the length, and
  // releases only lower net_out).
  std::int64_t low_water_base[kNumClasses + 1] = {};
  // The scavenge's clock: bytes this thread allocated are sample_origin - sample_left,
  // modulo 2^64 (sample_origin moves with every new sampling interval, so the fast path's
  // countdown doubles as the clock); the last scavenge ran at scavenged_at of them.
  std::uint64_t sample_origin = 0;
  std::uint64_t scavenged_at = 0;
  // Per class, what the list did since the last scavenge (kRanEmpty, kOverflowed), and how
  // often it overflowed since its bound last changed (heap.cc GrowOnUse, FreeOverflow).
  std::uint8_t list_events[kNumClasses + 1] = {};
  std::uint8_t overages[kNumClasses + 1] = {};
  // Per class, objects of larger classes borrowed since the class last carved its own
  // (heap.cc BorrowOrSlow, kMaxBorrowStreak).
  std::uint8_t borrow_streak[kNumClasses + 1] = {};
  // Bit cls (word cls / 64): classes whose list this thread ever refilled or bounded above
  // 0. Only they can hold objects or counts, so a flush and the thread's exit visit these
  // instead of every class: an exit then costs what the thread used (issue 12: larson's
  // threads each use one to a few dozen classes, and exit 4,800 times).
  std::uint64_t touched[(kNumClasses + 64) / 64] = {};
};
static_assert(offsetof(ThreadCache, lists) == 0,
              "the fast paths index the lists from the cache's address");

// Owner-only update: not a locked instruction (platform::AddOwnedCounter).
template <typename T>
inline void AddOwned(std::atomic<T>& counter, T by) noexcept {
  platform::AddOwnedCounter(counter, by);
}

inline void*& NextObject(void* object) noexcept { return *static_cast<void**>(object); }

}  // namespace memarena::host
