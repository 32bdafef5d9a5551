// The process-wide host heap: constant-initialized globals (pagemap, page heap, central
// cache, thread-cache registry), the malloc fast paths of host_api.h, their slow paths,
// the flush-request epoch, fork and thread-exit hooks, and the folded statistics.
#include "host/heap.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <iterator>
#include <utility>

#include "common/asan.h"
#include "common/large_bss.h"
#include "host/cache_budget.h"
#include "host/central_cache.h"
#include "host/check.h"
#include "host/heap_sampler.h"
#include "host/host_api.h"
#include "host/invalid_free.h"
#include "host/meta_pool.h"
#include "host/object_start.h"
#include "host/page_heap.h"
#include "host/pagemap.h"
#include "host/thread_cache.h"
#include "host/watermarks.h"
#include "memarena/allocator.h"
#include "platform/cpu.h"
#include "platform/os.h"
#include "platform/stack.h"

namespace memarena::host {
namespace {

constexpr std::uint32_t kMaxListLength = 8192;
// One list may take at most this much, and at most half of the pool: a list of big objects
// that kept growing would otherwise fill the budget and halve every list (a walk over all
// classes) again and again.
constexpr std::size_t kMaxListBytes = std::size_t{2} << 20;
constexpr std::size_t kDefaultThreadCacheBytes = std::size_t{32} << 20;  // HostConfig's default
// A thread's budget grows from the pool by at least this much at a time.
constexpr std::size_t kBudgetStep = std::size_t{256} << 10;
// Falls of a thread's in-use bytes wait in ThreadCache::unfolded_bytes until this much.
constexpr std::int64_t kFoldSlack = std::int64_t{256} << 10;
// A thread's lists give back what they did not use (Scavenge) once per this many bytes the
// thread allocates. Scavenging at every budget shortfall instead kept a thread that uses
// ~90 classes about once each per 2 MiB (the testsuite workload) refilling 640 k of its
// 813 k allocations from the central lists: each scavenge drained the lists it had not
// used since the last one, and the next shortfall came a few allocations later. Shorter
// clocks cost memory as well as time: every 16 MiB, random_slots peaked at 12.8 MiB
// against 10.9 and live_set_1t at 17.9 against 15.7 (drained objects land in partly used
// spans, and the refills that follow take others).
constexpr std::uint64_t kScavengeInterval = std::uint64_t{64} << 20;
// A list above one batch that overflows this many times without running empty since the
// last scavenge is longer than the thread needs (a consumer's) and shrinks by a batch, as
// in tcmalloc.
constexpr std::uint8_t kMaxOverages = 3;
// ThreadCache::list_events bits: what a list did since the last scavenge.
constexpr std::uint8_t kRanEmpty = 1;
constexpr std::uint8_t kOverflowed = 2;

// realloc's moves free blocks of this size and up to their spans, not to the thread cache
// (FreeMoved). A buffer realloc grows never comes back for the class it left, and a cohort
// of growing buffers frees a steady stream into every class it passes: the lists grew as it
// passed and each ran empty within every scavenge period, so nothing was ever given back
// (realloc_grow: 17 MiB cached at its 62.8 MiB peak, 13 MiB in classes of 36 KiB and up;
// 48.2 MiB from 8 KiB up, 49.2 from 16 KiB up, 50.7 from 32 KiB up, 48.4 from 4 KiB up, all
// at level CPU). At these sizes the copy that came before costs far more than the central
// list's lock.
constexpr std::size_t kMovedUncachedSize = std::size_t{8} << 10;

constexpr auto kSizes = [] {
  std::array<std::uint32_t, kNumClasses + 1> sizes{};
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) sizes[cls] = detail::kClasses[cls].size;
  return sizes;
}();

// The small sizes' lookup falls through: g++ laid it out of line, behind two taken jumps,
// and the fast-path workloads' blocks are nearly all small.
inline std::size_t FastClassFor(std::size_t size) noexcept {
  if (size <= detail::kSmallTableMax) [[likely]] return detail::kSmallTable[(size + 15) >> 4];
  return detail::kLargeTable[(size + 127) >> 7];
}

// FastClassFor, or 0 above kMaxSmallSize, for the fast paths: a size up to kSmallTableMax
// takes one compare instead of two (kMaxSmallSize's, then the tables' split). The fast
// paths need no test of the 0: class 0's list never holds an object (no span has class 0),
// so an allocation finds it empty, and a sized free's entry of class 0 fails its start test.
inline std::size_t FastClassOrZero(std::size_t size) noexcept {
  if (size <= detail::kSmallTableMax) [[likely]] return detail::kSmallTable[(size + 15) >> 4];
  return size <= kMaxSmallSize ? detail::kLargeTable[(size + 127) >> 7] : 0;
}

MEMARENA_LARGE_BSS(pagemap) constinit Pagemap g_pagemap;  // 128 KiB of root, one entry per 16 GiB
constinit PageHeap g_page_heap{&g_pagemap, PageHeap::kDefaultGrowBytes};
MEMARENA_LARGE_BSS(central) constinit CentralCache g_central;  // zero (.bss): the two above are its defaults
// Each thread cache on pages of its own: two threads' caches in one 4 KiB page put both
// threads' fast-path lines where the L2 streamer prefetches (as false_sharing's objects).
// One line into its page: the list of class c is then at page offset 64 + 32 c, where no
// object of a class of 128 B or more (a power of two) lies in its page. At offset 32 c the
// 1 KiB class's list shared its page offset with every fourth 1 KiB object, and an
// allocation's store of the freed mark (object + 8) made the list length's update
// (list + 8) wait as if it read that store (4 KiB aliasing): BM_Pair<Host>/1024 15.8 ns
// against 10.4 at 512 and 4096 on an AMD family-23 VM.
inline constexpr std::size_t kThreadCacheOffset = 64;
constinit MetaPool<ThreadCache> g_cache_pool{4096, kThreadCacheOffset};

struct Registry {
  SpinLock lock;
  ThreadCache* head MEMARENA_GUARDED_BY(lock) = nullptr;
  // Counters of exited threads and of allocations made without a cache, per class.
  std::atomic<std::uint64_t> allocs[kNumClasses + 1] = {};
  std::atomic<std::int64_t> net_out[kNumClasses + 1] = {};
  // The sampled-span reuses of exited threads (ThreadCache).
  std::atomic<std::uint64_t> sampled_span_reuses{0};
};
constinit Registry g_registry;

// Bumped to ask every thread cache to flush at its next slow path (ceiling pressure,
// ReleaseUnusedSpans, a new thread_cache_bytes).
constinit std::atomic<std::uint64_t> g_flush_epoch{0};
constinit CacheBudgetPool g_budget_pool{kDefaultThreadCacheBytes};
// Free committed bytes memarena::ReleaseUnusedSpans() leaves in place, so a test suite that
// releases after every test does not fault the same pages in again (release_keep).
constinit std::atomic<std::size_t> g_release_keep{0};

// In-use accounting for peaks: small objects are folded in from thread caches at their
// slow paths (exact to within what the caches hold); large spans count at once.
constinit std::atomic<std::int64_t> g_small_in_use{0};
constinit std::atomic<std::size_t> g_peak_in_use{0};
constinit std::atomic<std::size_t> g_peak_requested{0};
// Spare sampled spans (KeepSpareSampledSpan) are in use to the page heap and free to the
// program: their bytes now, and the net change that keeping and reusing them made to
// Span::requested outside the page heap (its large_requested plus this is exact). Global,
// not per thread, so that the lazily folded peaks (UpdatePeaks) correct for them as Stats()
// does: from per-thread counts they did not, and a thread's chain of spares raised peak
// requested by the first block's bytes for good. One locked add per keep or reuse: a sample
// comes once per 512 KiB allocated by default.
constinit std::atomic<std::size_t> g_spare_span_bytes{0};
constinit std::atomic<std::int64_t> g_spare_requested_moved{0};
constinit std::atomic<std::uint64_t> g_ooms{0};

// What a thread without a cache (not made yet, or exited) finds in t_cache: every list
// empty and every bound 0, so the fast paths need no null test: an allocation finds no
// object and a checked free finds its list full, and both go to their slow paths. Nothing
// ever writes it.
MEMARENA_LARGE_BSS(no_cache) constinit ThreadCache g_no_cache;  // all zero: never resident, only read
thread_local ThreadCache* t_cache __attribute__((tls_model("initial-exec"))) = &g_no_cache;
// The same cache, nullptr when the thread has none: for the slow paths, and for the
// unchecked free, which keeps the one-uop null test it had instead of the checked free's
// bound test before its push (host_bench prices the checks against it).
thread_local ThreadCache* t_own_cache __attribute__((tls_model("initial-exec"))) = nullptr;

ThreadCache* OwnCache() noexcept { return t_own_cache; }
thread_local bool t_exited __attribute__((tls_model("initial-exec"))) = false;

void UpdateMax(std::atomic<std::size_t>& peak, std::size_t value) noexcept {
  std::size_t seen = peak.load(std::memory_order_relaxed);
  while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

// Large blocks in use and what their callers asked for: the page heap's counts less what
// the spare sampled spans hold. Read racily: clamped at 0.
std::size_t LargeInUse() noexcept {
  const std::size_t spare = g_spare_span_bytes.load(std::memory_order_relaxed);
  const std::size_t in_use = g_page_heap.LargeInUse();
  return in_use > spare ? in_use - spare : 0;
}
std::size_t LargeRequested() noexcept {
  const auto requested = static_cast<std::int64_t>(g_page_heap.LargeRequested()) +
                         g_spare_requested_moved.load(std::memory_order_relaxed);
  return static_cast<std::size_t>(std::max<std::int64_t>(requested, 0));
}

void UpdatePeaks() noexcept {
  const std::int64_t small = std::max<std::int64_t>(g_small_in_use.load(std::memory_order_relaxed), 0);
  const auto small_bytes = static_cast<std::size_t>(small);
  UpdateMax(g_peak_in_use, small_bytes + LargeInUse());
  UpdateMax(g_peak_requested, small_bytes + LargeRequested());
}

// Adds what this thread's folds held back to the global in-use count.
void PublishFolded(ThreadCache* tc) noexcept {
  if (tc->unfolded_bytes == 0) return;
  g_small_in_use.fetch_add(tc->unfolded_bytes, std::memory_order_relaxed);
  tc->unfolded_bytes = 0;
}

// Adds this thread's change of in-use objects of `cls` since the last fold to the total.
// A fall waits (up to kFoldSlack) for the next rise or flush: the global count only feeds
// the peaks, which a fall cannot raise, and its locked add was most of an overflow's cost.
// A rise publishes everything held back first, so peaks are what they were.
void Fold(ThreadCache* tc, std::size_t cls) noexcept {
  const std::int64_t live = tc->net_out[cls].load(std::memory_order_relaxed) -
                            tc->lists[cls].length.load(std::memory_order_relaxed);
  const std::int64_t delta = live - tc->folded_live[cls];
  if (delta == 0) return;
  tc->folded_live[cls] = live;
  tc->unfolded_bytes += delta * static_cast<std::int64_t>(kSizes[cls]);
  if (delta < 0 && tc->unfolded_bytes > -kFoldSlack) return;
  PublishFolded(tc);
  if (delta > 0) UpdatePeaks();
}

void MarkTouched(ThreadCache* tc, std::size_t cls) noexcept {
  tc->touched[cls / 64] |= std::uint64_t{1} << (cls % 64);
}

// Calls visit(cls) for every class the thread touched (ThreadCache::touched), in order.
template <typename Visit>
void ForEachTouchedClass(const ThreadCache* tc, Visit visit) noexcept {
  for (std::size_t word = 0; word < std::size(tc->touched); ++word) {
    for (std::uint64_t bits = tc->touched[word]; bits != 0; bits &= bits - 1) {
      visit(word * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
    }
  }
}

// Moves up to `count` objects of list `cls` back to the central cache.
void ReleaseFromList(ThreadCache* tc, std::size_t cls, std::uint32_t count,
                     BatchTo batch_to = BatchTo::kTransferCache) noexcept {
  ThreadCache::List& list = tc->lists[cls];
  const std::uint32_t length = list.length.load(std::memory_order_relaxed);
  count = std::min(count, length);
  if (count == 0) return;
  MarkTouched(tc, cls);  // net_out changes: the exit must carry it (a list without a bound too)
  void* head = list.head;
  void* last = head;
  for (std::uint32_t i = 1; i < count; ++i) last = NextObject(last);
  list.head = NextObject(last);
  list.length.store(length - count, std::memory_order_relaxed);
  NextObject(last) = nullptr;
  AddOwned<std::int64_t>(tc->net_out[cls], -static_cast<std::int64_t>(count));
  g_central.Insert(cls, head, last, static_cast<int>(count), batch_to);
}

void SetMaxLength(ThreadCache* tc, std::size_t cls, std::uint32_t max_length) noexcept {
  if (max_length != 0) MarkTouched(tc, cls);  // a list can take objects only with a bound
  ThreadCache::List& list = tc->lists[cls];
  tc->capacity_bytes -= std::size_t{list.max_length} * kSizes[cls];
  list.max_length = max_length;
  tc->capacity_bytes += std::size_t{max_length} * kSizes[cls];
  tc->overages[cls] = 0;
}

// Gives the thread's spare sampled span (see KeepSpareSampledSpan) back to the page heap.
void DropSpareSampledSpan(ThreadCache* tc) noexcept {
  Span* span = tc->spare_sampled_span.load(std::memory_order_relaxed);
  if (span == nullptr) return;
  tc->spare_sampled_span.store(nullptr, std::memory_order_relaxed);
  span->sample_entry = 0;
  g_spare_span_bytes.fetch_sub(span->Bytes(), std::memory_order_relaxed);
  g_page_heap.Delete(span);  // its requested is 0 already
}

// Empties the cache and gives its whole budget back to the pool. The objects go back to
// their spans, never whole into the transfer cache: after an exit or a release no thread
// asks for those batches soon (a new thread's slow-start refills ask for less than a batch,
// and only a whole batch is taken from there), so they pinned their spans while new ones
// were carved. larson's 1,200 exits left held creeping from 3.9 to 5.2 MiB that way.
void FlushAll(ThreadCache* tc) noexcept {
  DropSpareSampledSpan(tc);
  ForEachTouchedClass(tc, [tc](std::size_t cls) {
    ReleaseFromList(tc, cls, tc->lists[cls].length.load(std::memory_order_relaxed),
                    BatchTo::kSpans);
    SetMaxLength(tc, cls, 0);
    tc->list_events[cls] = 0;
    Fold(tc, cls);
  });
  PublishFolded(tc);
  g_budget_pool.Return(std::exchange(tc->max_bytes, 0));
}

// The lower bound of list `cls`'s low-water mark since the last scavenge or refill (see
// ThreadCache::low_water_base), at most its length.
std::int64_t LowWater(const ThreadCache* tc, std::size_t cls) noexcept {
  const std::int64_t length = tc->lists[cls].length.load(std::memory_order_relaxed);
  const std::int64_t low = tc->low_water_base[cls] -
                           static_cast<std::int64_t>(tc->lists[cls].allocs.load(std::memory_order_relaxed)) +
                           tc->net_out[cls].load(std::memory_order_relaxed);
  return std::min(low, length);
}

void StartLowWater(ThreadCache* tc, std::size_t cls) noexcept {
  tc->low_water_base[cls] = tc->lists[cls].length.load(std::memory_order_relaxed) +
                            static_cast<std::int64_t>(tc->lists[cls].allocs.load(std::memory_order_relaxed)) -
                            tc->net_out[cls].load(std::memory_order_relaxed);
}

// Bytes this thread allocated so far (ThreadCache::sample_origin), modulo 2^64: a request
// of 2^62 bytes counts as such, so only differences of it are meaningful.
std::uint64_t AllocatedBytes(const ThreadCache* tc) noexcept {
  return tc->sample_origin - static_cast<std::uint64_t>(tc->sample_left);
}

// Starts the thread's next sampling interval; AllocatedBytes stays what it was.
void DrawSampleInterval(ThreadCache* tc) noexcept {
  const std::int64_t interval = sampler::NextInterval();
  tc->sample_origin +=
      static_cast<std::uint64_t>(interval) - static_cast<std::uint64_t>(tc->sample_left);
  tc->sample_left = interval;
}

// Counts `bytes` allocated against the thread's interval, drawn afresh first when sampling
// changed since; returns whether the interval ran out (the caller samples, then draws).
bool SpendSampleInterval(ThreadCache* tc, std::size_t bytes) noexcept {
  const std::uint64_t epoch = sampler::Epoch();
  if (tc->sample_epoch != epoch) {
    tc->sample_epoch = epoch;
    DrawSampleInterval(tc);
  }
  tc->sample_left -= static_cast<std::int64_t>(bytes);
  return tc->sample_left < 0;
}

// gperftools' scavenge: every list that stayed above its low-water mark since the last
// scavenge did not need that many objects; it gives half of them back to the central
// cache, and a bound above one batch shrinks by a batch (not below one: a list the thread
// filled past a batch is likely to be that busy again). A thread that no longer uses a
// class thus gives its objects back, one that uses what it holds keeps it; budget beyond
// `headroom` above what the lists may hold goes back to the pool.
void Scavenge(ThreadCache* tc, std::size_t headroom) noexcept {
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
    const std::int64_t low = LowWater(tc, cls);
    if (low > 0) {
      ReleaseFromList(tc, cls, static_cast<std::uint32_t>(std::max<std::int64_t>(low / 2, 1)));
      const std::uint32_t max_length = tc->lists[cls].max_length;
      const std::uint32_t batch = ClassInfo(cls).batch;
      if (max_length > batch) SetMaxLength(tc, cls, std::max(max_length - batch, batch));
    }
    StartLowWater(tc, cls);
    tc->list_events[cls] = 0;
  }
  if (tc->max_bytes > tc->capacity_bytes + headroom) {
    const std::size_t surplus = tc->max_bytes - tc->capacity_bytes - headroom;
    tc->max_bytes -= surplus;
    g_budget_pool.Return(surplus);
  }
  tc->scavenged_at = AllocatedBytes(tc);
}

// The scavenge runs at the first slow path after every kScavengeInterval bytes allocated:
// a clock of work done, not of budget shortfalls (see kScavengeInterval).
void ScavengeIfDue(ThreadCache* tc) noexcept {
  if (AllocatedBytes(tc) - tc->scavenged_at >= kScavengeInterval) Scavenge(tc, kBudgetStep);
}

// Makes room for `bytes` more capacity by halving other lists' bounds, round robin from
// where the last steal stopped, until enough is free (as tcmalloc's thread cache does).
// Halving every list at once instead made a cache that is often full walk all classes
// at each miss. Returns whether the room is there.
bool Steal(ThreadCache* tc, std::size_t keep_cls, std::size_t bytes) noexcept {
  // Hopeless when even the whole capacity of the other lists would not do: say so without
  // walking them (a cache whose budget one list fills would walk every class per miss).
  const std::size_t kept = std::size_t{tc->lists[keep_cls].max_length} * kSizes[keep_cls];
  if (kept + bytes > tc->max_bytes) return false;
  for (std::size_t visited = 0; visited < kNumClasses; ++visited) {
    if (tc->capacity_bytes + bytes <= tc->max_bytes) return true;
    const std::size_t cls = tc->next_victim;
    tc->next_victim = cls == kNumClasses ? 1 : static_cast<std::uint32_t>(cls + 1);
    ThreadCache::List& list = tc->lists[cls];
    if (cls == keep_cls || list.max_length == 0) continue;
    const std::uint32_t max_length = list.max_length / 2;
    const std::uint32_t length = list.length.load(std::memory_order_relaxed);
    if (length > max_length) ReleaseFromList(tc, cls, length - max_length);
    SetMaxLength(tc, cls, max_length);
  }
  return tc->capacity_bytes + bytes <= tc->max_bytes;
}

// Makes room in the budget for `bytes` more capacity: the budget grows from the pool by a
// step (or the shortfall). Lists only grow when the thread's own use asks for it (see
// FreeOverflow), and idle ones give back on the scavenge's clock, so this is what a busy
// thread needs. When the pool is spent, the idle lists are scavenged at once, and then
// list `keep_cls` takes capacity from the others.
bool MakeRoom(ThreadCache* tc, std::size_t keep_cls, std::size_t bytes) noexcept {
  const auto fits = [&] { return tc->capacity_bytes + bytes <= tc->max_bytes; };
  if (fits()) return true;
  const std::size_t short_by = tc->capacity_bytes + bytes - tc->max_bytes;
  tc->max_bytes += g_budget_pool.Claim(std::max(short_by, kBudgetStep));
  if (fits()) return true;
  Scavenge(tc, std::max(bytes, kBudgetStep));
  return fits() || Steal(tc, keep_cls, bytes);
}

// Raises list `cls`'s bound by `by` objects if the cache's byte bound allows, taking
// capacity from other lists first when it is full.
bool TryGrow(ThreadCache* tc, std::size_t cls, std::uint32_t by) noexcept {
  ThreadCache::List& list = tc->lists[cls];
  by = std::min(by, kMaxListLength - std::min(kMaxListLength, list.max_length));
  if (by == 0) return false;
  const std::size_t bytes = std::size_t{by} * kSizes[cls];
  const std::size_t list_limit = std::min(kMaxListBytes, g_budget_pool.Total() / 2);
  if (std::size_t{list.max_length} * kSizes[cls] + bytes > list_limit) return false;
  if (!MakeRoom(tc, cls, bytes)) return false;
  SetMaxLength(tc, cls, list.max_length + by);
  return true;
}

// A list's bound follows what the thread's own use of it asks (tcmalloc's policy, with a
// signal that also suits a bound counted against the budget): below one batch it grows by
// one at each miss or overflow (slow start); above, it grows by a batch at a miss or an
// overflow only when the list also did the other since the last scavenge: it is too short
// for this thread's own churn (a tree built and freed, a test case's teardown). A
// consumer's lists never run empty and a producer's never overflow, so neither claims
// budget for objects it would never keep (tcmalloc grows at every miss, but its budget
// counts cached bytes, not bounds). `event` is the kRanEmpty or kOverflowed that brought the
// thread here.
void GrowOnUse(ThreadCache* tc, std::size_t cls, std::uint8_t event) noexcept {
  const std::uint32_t batch = ClassInfo(cls).batch;
  tc->list_events[cls] |= event;
  if (tc->lists[cls].max_length < batch) {
    TryGrow(tc, cls, 1);
  } else if (tc->list_events[cls] == (kRanEmpty | kOverflowed)) {
    TryGrow(tc, cls, batch);
  }
}

// Honours a flush request published through the epoch (the budget goes back to the pool
// with it). Returns true when it flushed.
bool SyncEpoch(ThreadCache* tc) noexcept {
  const std::uint64_t epoch = g_flush_epoch.load(std::memory_order_acquire);
  if (epoch == tc->seen_epoch) return false;
  tc->seen_epoch = epoch;
  FlushAll(tc);
  return true;
}

// The fork handlers take every heap lock in one function and drop them in another, which
// the analysis cannot follow; the order (registry, classes, page heap, metadata) is the
// lock order of the heap. The sampler's lock comes last: no other lock is taken under it.
// Cold: run at a fork only, never at start-up, so they stay out of .text.memarena_startup
// (docs/dropin.md).
[[gnu::cold]] void ForkPrepare() MEMARENA_NO_THREAD_SAFETY_ANALYSIS {
  g_registry.lock.lock();
  g_central.LockAll();
  g_page_heap.lock().lock();
  SpanRecords().lock().lock();
  g_cache_pool.lock().lock();
  MetaLockAll();
  sampler::LockForFork();
}

[[gnu::cold]] void ForkRelease() MEMARENA_NO_THREAD_SAFETY_ANALYSIS {
  sampler::UnlockAfterFork();
  MetaUnlockAll();
  g_cache_pool.lock().unlock();
  SpanRecords().lock().unlock();
  g_page_heap.lock().unlock();
  g_central.UnlockAll();
  g_registry.lock.unlock();
}

void ThreadExitHook(void* arg) {
  auto* tc = static_cast<ThreadCache*>(arg);
  FlushAll(tc);
  sampler::ReleaseSpare(&tc->spare_sample_entry);
  {
    SpinLockHolder hold(g_registry.lock);
    g_registry.sampled_span_reuses.fetch_add(
        tc->sampled_span_reuses.load(std::memory_order_relaxed), std::memory_order_relaxed);
    // Only touched classes have counts: two locked adds per class used, not per class.
    ForEachTouchedClass(tc, [tc](std::size_t cls) {
      g_registry.allocs[cls].fetch_add(tc->lists[cls].allocs.load(std::memory_order_relaxed),
                                       std::memory_order_relaxed);
      g_registry.net_out[cls].fetch_add(tc->net_out[cls].load(std::memory_order_relaxed),
                                        std::memory_order_relaxed);
    });
    if (tc->prev != nullptr) {
      tc->prev->next = tc->next;
    } else {
      g_registry.head = tc->next;
    }
    if (tc->next != nullptr) tc->next->prev = tc->prev;
  }
  // The thread may still allocate in later TLS destructors: it then goes cacheless.
  if (t_cache == tc) {
    t_cache = &g_no_cache;
    t_own_cache = nullptr;
  }
  t_exited = true;
  g_cache_pool.Delete(tc);
}

}  // namespace

constinit std::atomic<int> g_fork_handlers_state{0};

// Called before a thread takes a heap lock (SpinLock::lock) and before it builds its cache,
// until the handlers are registered. A thread that finds the registration in progress goes
// on without waiting: a fork between another thread's claim and its pthread_atfork would
// leave the child waiting for a registration that never ends, and a thread forking inside
// glibc's atfork lock (another library's prepare handler that allocates) would wait for a
// registration that waits for that lock. The window this leaves, a fork by a third thread
// while a second holds a heap lock during the first one's registration, is closed by
// registering at load (below), before the program can start a thread.
void RegisterForkHandlersSlow() noexcept {
  int expected = 0;
  if (g_fork_handlers_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    platform::OnFork(&ForkPrepare, &ForkRelease, &ForkRelease);
    g_fork_handlers_state.store(2, std::memory_order_release);
  }
}

namespace {

// At load, before another thread can reach the heap: at program start for the drop-in and a
// linked heap, inside dlopen for a library that carries a heap of its own (no other thread
// holds its functions yet). So a process that starts threads before it allocates (a server
// that spawns its workers first) finds the handlers in at its first heap lock. A heap used
// before this constructor runs (ld.so, an earlier library's constructor) registers at that
// first use, still before the program's threads. Cost: one pthread_atfork per process that
// loads the heap, which the drop-in paid at load already (its private runtime allocates then).
__attribute__((constructor)) void RegisterForkHandlersAtLoad() { RegisterForkHandlersOnce(); }

ThreadCache* CreateThreadCache() noexcept {
  // Before any lock of the build: the drop-in's malloc, called by pthread_atfork, may build
  // this thread's cache meanwhile, which is then the one kept.
  RegisterForkHandlersOnce();
  if (ThreadCache* own = OwnCache()) return own;
  ThreadCache* tc = g_cache_pool.New();
  if (tc == nullptr) return nullptr;
  tc->seen_epoch = g_flush_epoch.load(std::memory_order_acquire);
  tc->sample_epoch = sampler::Epoch();
  DrawSampleInterval(tc);
  {
    SpinLockHolder hold(g_registry.lock);
    tc->next = g_registry.head;
    if (g_registry.head != nullptr) g_registry.head->prev = tc;
    g_registry.head = tc;
  }
  // Published before anything that may call malloc (pthread_setspecific), so a recursive
  // malloc finds this cache instead of building another.
  t_cache = tc;
  t_own_cache = tc;
  platform::OnThreadExit(&ThreadExitHook, tc);
  return tc;
}

ThreadCache* CurrentCache() noexcept {
  ThreadCache* tc = OwnCache();
  if (tc != nullptr || t_exited) return tc;
  return CreateThreadCache();
}

void* AllocateUncached(std::size_t cls, Failure* failure) noexcept {
  void* head = nullptr;
  void* tail = nullptr;
  if (g_central.Remove(cls, 1, &head, &tail, failure) == 0) return nullptr;
  common::UnpoisonForUse(head, kSizes[cls]);
  MarkWord(head) = 0;
  g_registry.allocs[cls].fetch_add(1, std::memory_order_relaxed);
  g_registry.net_out[cls].fetch_add(1, std::memory_order_relaxed);
  g_small_in_use.fetch_add(static_cast<std::int64_t>(kSizes[cls]), std::memory_order_relaxed);
  UpdatePeaks();
  return head;
}

// Hands out the head of this thread's non-empty list of `cls`: the fast path's pop, off it,
// unfolded as the fast path's are (the class's next refill or overflow folds it).
void* PopUnfolded(ThreadCache* tc, std::size_t cls) noexcept {
  ThreadCache::List& list = tc->lists[cls];
  void* object = list.head;
  common::UnpoisonForUse(object, kSizes[cls]);
  list.head = NextObject(object);
  MarkWord(object) = 0;
  AddOwned<std::uint32_t>(list.length, static_cast<std::uint32_t>(-1));
  AddOwned<std::uint64_t>(list.allocs, 1);
  return object;
}

// Borrowing (heap.h kBorrowMinSize). Why: a heap of size classes otherwise holds each
// class's peak apart, and classes with a few large objects each peak at different times.
// live_set's classes from 4 KiB up peak at 11.1 MiB together for 4.7 MiB in use; with
// borrowing, 7.6 (a model of its run: docs/host.md, "Borrowing from the classes above").

// Pops a lender's object off this thread's lists; nullptr when they are all empty.
void* BorrowFromList(ThreadCache* tc, std::size_t cls) noexcept {
  const std::size_t last = std::min(cls + kBorrowClasses, kNumClasses);
  for (std::size_t lender = cls + 1; lender <= last; ++lender) {
    if (tc->lists[lender].head != nullptr) return PopUnfolded(tc, lender);
  }
  return nullptr;
}

// Takes a lender's freed object from the central lists (a refill's last try before it
// carves); nullptr when none holds one.
void* BorrowFromCentral(ThreadCache* tc, std::size_t cls) noexcept {
  const std::size_t last = std::min(cls + kBorrowClasses, kNumClasses);
  for (std::size_t lender = cls + 1; lender <= last; ++lender) {
    void* object = nullptr;
    void* tail = nullptr;
    if (!g_central.MayHaveFreed(lender) || g_central.RemoveFreed(lender, 1, &object, &tail) == 0) {
      continue;
    }
    // Taken from the central list and handed out at once: net_out counts it, the list's
    // length never does.
    MarkTouched(tc, lender);
    common::UnpoisonForUse(object, kSizes[lender]);
    MarkWord(object) = 0;
    AddOwned<std::int64_t>(tc->net_out[lender], 1);
    AddOwned<std::uint64_t>(tc->lists[lender].allocs, 1);
    Fold(tc, lender);
    return object;
  }
  return nullptr;
}

// `may_borrow`: the request takes any object of 16-byte alignment (a larger class's object
// need not meet a larger alignment that `cls` was chosen for).
void* AllocateSmall(std::size_t cls, bool may_borrow, Failure* failure) noexcept {
  ThreadCache* tc = CurrentCache();
  if (tc == nullptr) return AllocateUncached(cls, failure);  // exiting, or no memory
  ThreadCache::List& list = tc->lists[cls];
  if (list.head == nullptr) {
    SyncEpoch(tc);
    ScavengeIfDue(tc);
    // Fetch as many as the list may hold (at least one, at most a batch).
    GrowOnUse(tc, cls, kRanEmpty);
    const std::uint32_t batch = ClassInfo(cls).batch;
    const std::uint32_t want = std::clamp<std::uint32_t>(list.max_length, 1, batch);
    void* head = nullptr;
    void* tail = nullptr;
    // New objects are carved for this cache, so two threads refilled from one class write
    // no common 4 KiB page (the false_sharing workload; CentralCache::Remove), in whole
    // 128-byte line pairs. The list's bound takes in the extra: lists then reach a whole
    // batch, which the transfer cache serves, sooner (cut to the exact count, prodcons
    // peaked 1 MiB higher while batches waited there and new spans were carved).
    int got = 0;
    if (may_borrow && kSizes[cls] >= kBorrowMinSize && tc->borrow_streak[cls] < kMaxBorrowStreak) {
      if (g_central.MayHaveFreed(cls)) {
        got = g_central.RemoveFreed(cls, static_cast<int>(want), &head, &tail);
      }
      if (got == 0) {
        // The fast path's own try (BorrowOrSlow) leaves the lists to this one when the
        // sampler's countdown ran out.
        void* object = BorrowFromList(tc, cls);
        if (object == nullptr) object = BorrowFromCentral(tc, cls);
        if (object != nullptr) {
          ++tc->borrow_streak[cls];
          return object;
        }
      }
    }
    if (got == 0) {
      // A class whose borrows ran to the bound takes one object of its own, not a batch:
      // lenders served it so far and may serve it again.
      const int carve = tc->borrow_streak[cls] >= kMaxBorrowStreak ? 1 : static_cast<int>(want);
      got = g_central.Remove(cls, carve, &head, &tail, failure, CarveEnd::kLinePair, tc);
      tc->borrow_streak[cls] = 0;
    }
    if (got == 0) return nullptr;
    MarkTouched(tc, cls);
    if (static_cast<std::uint32_t>(got) > list.max_length) {
      TryGrow(tc, cls, static_cast<std::uint32_t>(got) - list.max_length);
    }
    NextObject(tail) = list.head;
    list.head = head;
    AddOwned<std::uint32_t>(list.length, static_cast<std::uint32_t>(got));
    AddOwned<std::int64_t>(tc->net_out[cls], got);
    // When the budget would not take the extra in, what the bound does not allow (beside the
    // object handed out now) goes back at once: the cache stays within its budget.
    const std::uint32_t keep = list.max_length + 1;
    if (static_cast<std::uint32_t>(got) > keep) {
      ReleaseFromList(tc, cls, static_cast<std::uint32_t>(got) - keep);
    }
    // The list was empty: its low-water mark since the last scavenge is 0.
    tc->low_water_base[cls] =
        static_cast<std::int64_t>(tc->lists[cls].allocs.load(std::memory_order_relaxed)) -
        tc->net_out[cls].load(std::memory_order_relaxed);
  }
  void* object = PopUnfolded(tc, cls);
  Fold(tc, cls);
  return object;
}

static_assert(kMaxAllocationBytes == std::size_t{1} << Pagemap::kAddressBits,
              "the limit the failure messages state is the pagemap's reach");

void* AllocateLarge(std::size_t bytes, std::size_t alignment, Failure* failure) noexcept {
  if (NoBlockCanSpan(bytes, alignment)) {
    *failure = Failure::kOs;
    return nullptr;
  }
  std::size_t pages = (bytes + kPageSize - 1) >> kPageShift;
  if (pages == 0) pages = 1;
  const std::size_t align_pages = alignment > kPageSize ? alignment >> kPageShift : 1;
  Span* span = g_page_heap.New(pages, align_pages, 0, bytes, failure);
  if (span == nullptr) return nullptr;
  UpdatePeaks();
  return span->Start();
}

void* AllocateOnce(std::size_t bytes, std::size_t alignment, Failure* failure) noexcept {
  std::size_t cls = 0;
  if (bytes <= kMaxClassRequest) {  // else a page run (cls 0)
    if (alignment <= kMinAlign) {
      cls = FastClassFor(bytes);
    } else if (alignment <= kPageSize) {
      cls = ClassForAligned(bytes, alignment);
    }
  }
  return cls != 0 ? AllocateSmall(cls, alignment <= kMinAlign, failure)
                  : AllocateLarge(bytes, alignment, failure);
}

// Ceiling pressure: give back what this thread caches, ask the others to do the same, and
// return every free span to the OS (ReleaseUnused) before the one retry.
void Relieve() noexcept { ReleaseUnused(); }

// One attempt, without relief. `alignment` is 0 or a power of two: every caller checked it
// (the Allocator base class, the drop-in's memalign/posix_memalign/aligned_alloc rules).
void* AllocateChecked(std::size_t bytes, std::size_t alignment) noexcept {
  if (alignment == 0) alignment = kMinAlign;
  Failure failure = Failure::kNone;
  return AllocateOnce(bytes, alignment, &failure);
}

// A freed sampled span of one page stays with the freeing thread for its next sample
// (heap_sampler.h: with the kept entry, a sample and its free then take no lock). The page
// heap still counts it in use; it is told nothing until the span is dropped (FlushAll), so
// the span's requested goes to 0 here and every change of it is counted in
// g_spare_requested_moved, and its bytes in g_spare_span_bytes, which LargeInUse and
// LargeRequested (Stats(), the peaks) take out. False when the thread keeps one already.
bool KeepSpareSampledSpan(ThreadCache* tc, Span* span) noexcept {
  if (span->num_pages != 1 || tc->spare_sampled_span.load(std::memory_order_relaxed) != nullptr) {
    return false;
  }
  g_spare_requested_moved.fetch_sub(static_cast<std::int64_t>(span->requested),
                                    std::memory_order_relaxed);
  g_spare_span_bytes.fetch_add(span->Bytes(), std::memory_order_relaxed);
  span->requested = 0;
  span->sample_entry = kSpareSampledSpan;  // a second free of the block is a double free
  span->fresh_pages = span->zero_pages = false;  // its program wrote it
  common::PoisonFree(span->Start(), span->Bytes());
  tc->spare_sampled_span.store(span, std::memory_order_relaxed);
  return true;
}

// The thread's spare span, made the in-use block of a sample of `bytes`; nullptr if none.
Span* ReuseSpareSampledSpan(ThreadCache* tc, std::size_t bytes) noexcept {
  Span* span = tc->spare_sampled_span.load(std::memory_order_relaxed);
  if (span == nullptr) return nullptr;
  tc->spare_sampled_span.store(nullptr, std::memory_order_relaxed);
  AddOwned<std::uint64_t>(tc->sampled_span_reuses, 1);
  g_spare_requested_moved.fetch_add(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
  g_spare_span_bytes.fetch_sub(span->Bytes(), std::memory_order_relaxed);
  span->requested = bytes;
  span->sample_entry = 0;
  common::UnpoisonForUse(span->Start(), span->Bytes());
  return span;
}

// A sampled block: a span of its own (so its free takes the large path, where the sampler
// hears of it) whose record names its table entry, recorded with the caller's stack. A
// block of at most a page takes the thread's spare span when it has one. nullptr when no
// span could be had; the caller then allocates as usual.
MEMARENA_ALLOCATION_ENTRY void* AllocateSampled(std::size_t bytes, std::size_t alignment,
                                                ThreadCache* tc) noexcept {
  if (alignment == 0) alignment = kMinAlign;
  Span* span = bytes <= kPageSize && alignment <= kPageSize ? ReuseSpareSampledSpan(tc, bytes)
                                                            : nullptr;
  if (span == nullptr) {
    Failure failure = Failure::kNone;
    void* ptr = AllocateLarge(std::max<std::size_t>(bytes, 1), alignment, &failure);
    if (ptr == nullptr) return nullptr;
    span = g_pagemap.Get(Pagemap::PageOf(ptr));
  }
  span->sample_entry = sampler::Record(span->Start(), bytes, &tc->spare_sample_entry);
  return span->Start();
}

// Counts `bytes` against this thread's sampling interval (the fast path only counts when
// it serves the request itself) and takes a sample when the interval ran out. The countdown
// lives in the thread cache, so while sampling is on a thread's first allocation builds its
// cache even when it is large: with OwnCache() a thread that only allocated large blocks (a
// worker handing out tensors through HostAllocator) was never sampled, and its blocks were
// missing from every heap profile. With sampling off no cache is built just to count.
MEMARENA_ALLOCATION_ENTRY void* MaybeSample(std::size_t bytes, std::size_t alignment) noexcept {
  ThreadCache* tc = sampler::MeanInterval() != 0 ? CurrentCache() : OwnCache();
  if (tc == nullptr) return nullptr;
  const std::size_t counted = std::min<std::size_t>(bytes, std::size_t{1} << 62);
  if (!SpendSampleInterval(tc, counted)) return nullptr;
  void* ptr = nullptr;
  if (sampler::MeanInterval() != 0 && !sampler::Busy()) ptr = AllocateSampled(bytes, alignment, tc);
  // Drawn after the sample: the next draw's chain (see NextInterval) then overlaps the
  // caller's next work instead of the sample's own.
  DrawSampleInterval(tc);
  return ptr;
}

// The slow path of an attempt the caller can do without (AllocateIfAvailable, realloc's
// headroom), and the first try of every other: the sample and the clock count it as any
// allocation, and a level it crosses fires at once; a failure neither relieves memory nor
// counts as out of memory.
MEMARENA_ALLOCATION_ENTRY void* AllocateSlowIfAvailable(std::size_t bytes,
                                                        std::size_t alignment) noexcept {
  if constexpr (kChecked) {
    if ((alignment & (alignment - 1)) != 0) HeapCorrupted("alignment is not a power of two");
  }
  watermarks::Check();  // re-arms levels that held fell below since the last check
  void* ptr = MaybeSample(bytes, alignment);
  if (ptr == nullptr) ptr = AllocateChecked(bytes, alignment);
  watermarks::Check();
  return ptr;
}

MEMARENA_ALLOCATION_ENTRY void* AllocateSlow(std::size_t bytes, std::size_t alignment) noexcept {
  void* ptr = AllocateSlowIfAvailable(bytes, alignment);
  if (ptr == nullptr) [[unlikely]] {
    // No relief makes room for a block that cannot exist: releasing every free span for
    // such a request (CPython's tests make them on purpose) only costs the next ones faults.
    if (!NoBlockCanSpan(bytes, alignment)) {
      Relieve();
      ptr = AllocateChecked(bytes, alignment);
    }
    if (ptr == nullptr) g_ooms.fetch_add(1, std::memory_order_relaxed);
    watermarks::Check();
  }
  return ptr;
}

// The list of `cls` went past its bound: grow the bound if the thread's use asks for it
// (GrowOnUse) and the budget allows, else hand a batch back to the central cache. A list
// above a batch that keeps overflowing without running empty shrinks by a batch.
[[gnu::noinline]] void FreeOverflow(ThreadCache* tc, std::size_t cls) noexcept {
  if (SyncEpoch(tc)) return;  // flushed everything, this object included
  ScavengeIfDue(tc);
  ThreadCache::List& list = tc->lists[cls];
  const std::uint32_t batch = ClassInfo(cls).batch;
  GrowOnUse(tc, cls, kOverflowed);
  if ((tc->list_events[cls] & kRanEmpty) == 0 && list.max_length > batch &&
      ++tc->overages[cls] > kMaxOverages) {
    SetMaxLength(tc, cls, list.max_length - batch);
  }
  const std::uint32_t length = list.length.load(std::memory_order_relaxed);
  if (length > list.max_length) {
    ReleaseFromList(tc, cls, std::max(batch, length - list.max_length));
  }
  Fold(tc, cls);
}

// Why a pointer whose page has no size class is not a live large block: its page is free
// (a double free: the page's record says so while it still covers the page, else the page
// heap's free lists do), or it points inside a block or outside the heap.
[[gnu::cold]] Misuse LargeMisuse(const void* ptr, const Span* span) noexcept {
  const std::uintptr_t page = Pagemap::PageOf(ptr);
  const bool covers = span != nullptr && page >= span->first_page && page <= span->LastPage();
  if (covers && (span->state != SpanState::kInUse || span->sample_entry == kSpareSampledSpan)) {
    return Misuse::kDoubleFree;
  }
  if (covers && span->size_class == 0) return Misuse::kInteriorFree;
  if (!g_page_heap.Reserved(page)) return Misuse::kForeignFree;
  // The page's slot names no span that holds it (a merge retired the record, or the slot
  // was never set): a freed block's page if a free span holds it.
  return g_page_heap.InFreeSpan(page) ? Misuse::kDoubleFree : Misuse::kInteriorFree;
}

bool IsLiveLargeStart(const void* ptr, const Span* span) noexcept {
  return span != nullptr && span->state == SpanState::kInUse && span->size_class == 0 &&
         span->Start() == ptr && span->sample_entry != kSpareSampledSpan;
}

// The span of the live large block that starts at `ptr`; nullptr for any other pointer
// (null, a class object, inside a block, freed, a kept spare sampled span, not the heap's).
Span* LiveLargeSpan(const void* ptr) noexcept {
  Span* span = g_pagemap.Get(Pagemap::PageOf(ptr));  // page 0 has no leaf: nullptr
  return IsLiveLargeStart(ptr, span) ? span : nullptr;
}

void FreeLarge(void* ptr) noexcept {
  Span* span = g_pagemap.Get(Pagemap::PageOf(ptr));
  if (!IsLiveLargeStart(ptr, span)) [[unlikely]] {
    ReportInvalidFree(ptr, LargeMisuse(ptr, span), "free", 0);
    return;
  }
  if (span->sample_entry != 0) {
    ThreadCache* tc = OwnCache();
    sampler::Remove(std::exchange(span->sample_entry, 0u),
                    tc != nullptr ? &tc->spare_sample_entry : nullptr);
    if (tc != nullptr && KeepSpareSampledSpan(tc, span)) return;
  }
  g_page_heap.Delete(span);
  watermarks::Check();
}

// A small object whose free failed the fast path's check: not at an object start, or
// already carrying its freed mark.
[[gnu::cold, gnu::noinline]] void RejectSmallFree(void* ptr, std::uint64_t entry,
                                                  std::size_t cls) noexcept {
  const Misuse misuse = IsObjectStart(ptr, entry) ? Misuse::kDoubleFree : Misuse::kInteriorFree;
  ReportInvalidFree(ptr, misuse, "free", cls);
}

// The two checks of a small free: `ptr` starts an object (one multiply, one subtraction and
// one compare against the pagemap entry, object_start.h), and does not carry the freed mark.
// True when it may be freed.
inline bool MayFree(const void* ptr, std::uint64_t entry, std::uintptr_t mark,
                    const ObjectStartTest& test) noexcept {
  return IsObjectStart(ptr, entry, test) && MarkWord(ptr) != mark;
}
inline bool MayFree(const void* ptr, std::uint64_t entry, std::uintptr_t mark) noexcept {
  return MayFree(ptr, entry, mark, detail::kObjectStartTests[entry & Pagemap::kClassMask]);
}

// Marks a small object that passed MayFree as free.
inline void MarkFree(void* ptr, std::uintptr_t mark, std::size_t cls) noexcept {
  MarkWord(ptr) = mark;
  // ASAN builds: all but the link and the mark (the heap's own words) is off limits until
  // the object is handed out again, so a use after free is reported.
  if constexpr (common::kAsan) {
    common::PoisonFree(static_cast<char*>(ptr) + 16, kSizes[cls] - 16);
  }
}

// The checked free's push, for Free and FreeSized: a small object that passed MayFree is
// marked free and pushed on `list`, this thread's list of its class, when the list has room.
// False, with nothing done, when it has none: a full list (FreeOverflow's case) or a thread
// without a cache (g_no_cache's bounds are 0) goes to FreeSlow. The bound is tested before
// anything is written so that FreeSlow can check the object again as it was.
inline bool MarkAndPushIfRoom(ThreadCache::List& list, std::size_t cls, void* ptr,
                              std::uintptr_t mark) noexcept {
  const std::uint32_t length = list.length.load(std::memory_order_relaxed) + 1;
  if (length > list.max_length) [[unlikely]] return false;
  MarkFree(ptr, mark, cls);
  NextObject(ptr) = list.head;
  list.head = ptr;
  list.length.store(length, std::memory_order_relaxed);
  return true;
}

// Pushes a freed small object on `list`, this thread's list of its class.
inline void PushFree(ThreadCache* tc, ThreadCache::List& list, std::size_t cls,
                     void* ptr) noexcept {
  NextObject(ptr) = list.head;
  list.head = ptr;
  const std::uint32_t length = list.length.load(std::memory_order_relaxed) + 1;
  list.length.store(length, std::memory_order_relaxed);
  if (length > list.max_length) [[unlikely]] FreeOverflow(tc, cls);
}
inline void PushFree(ThreadCache* tc, std::size_t cls, void* ptr) noexcept {
  PushFree(tc, tc->lists[cls], cls, ptr);
}

// Every free the fast path did not take: large blocks, frees without a thread cache, and
// the small frees whose checks failed (reported here).
[[gnu::noinline]] void FreeSlow(void* ptr, std::uint64_t entry) noexcept {
  const std::size_t cls = entry & Pagemap::kClassMask;
  if (cls == 0) {
    if (ptr == nullptr) return;  // FreeFast leaves it to this path (entry 0)
    FreeLarge(ptr);
    return;
  }
  const std::uintptr_t mark = g_pagemap.Find(ptr).freed_mark;
  if (!MayFree(ptr, entry, mark)) [[unlikely]] {
    RejectSmallFree(ptr, entry, cls);
    return;
  }
  MarkFree(ptr, mark, cls);
  ThreadCache* tc = CurrentCache();
  if (tc == nullptr) {
    NextObject(ptr) = nullptr;
    g_registry.net_out[cls].fetch_sub(1, std::memory_order_relaxed);
    g_small_in_use.fetch_sub(static_cast<std::int64_t>(kSizes[cls]), std::memory_order_relaxed);
    g_central.Insert(cls, ptr, ptr, 1);
    return;
  }
  PushFree(tc, cls, ptr);
}

// Where the allocation fast path goes when the thread's list cannot serve: a borrow from
// the thread's lists of the classes above (no lock: random_slots borrows for 2.7 % of its
// allocations, and through the whole slow path that cost it 7-10 % more time), else kSlow.
template <auto kSlow, typename... SlowArgs>
[[gnu::noinline]] void* BorrowOrSlow(std::size_t bytes, std::size_t alignment,
                                     SlowArgs... slow_args) {
  if (alignment <= kMinAlign) {
    const std::size_t cls = FastClassOrZero(bytes);
    ThreadCache* tc = t_cache;
    if (kSizes[cls] >= kBorrowMinSize && tc->lists[cls].head == nullptr &&
        tc->borrow_streak[cls] < kMaxBorrowStreak && !g_central.MayHaveFreed(cls)) {
      const std::int64_t sample_left = tc->sample_left - static_cast<std::int64_t>(bytes);
      if (sample_left >= 0) {
        if (void* object = BorrowFromList(tc, cls)) {
          tc->sample_left = sample_left;
          ++tc->borrow_streak[cls];
          return object;
        }
      }
    }
  }
  return kSlow(bytes, alignment, slow_args...);
}

// The fast paths. kChecked = false leaves out the misuse checks (the freed mark's clear on
// allocation; the object-start test and the mark on free): only host_bench takes that
// variant, to price the checks side by side with the real paths (issue 17).
// `kSlow(bytes, alignment, slow_args...)` serves what the thread's list cannot.
template <bool kChecked, auto kSlow, typename... SlowArgs>
inline void* AllocateFast(std::size_t bytes, std::size_t alignment, SlowArgs... slow_args) {
  if (alignment <= kMinAlign) [[likely]] {
    const std::size_t cls = FastClassOrZero(bytes);  // 0 (an empty list) for a large size
    ThreadCache* tc = t_cache;  // g_no_cache's lists are empty: no null test
    ThreadCache::List* list = &tc->lists[cls];
    // g++ otherwise computes the addresses of the list's two atomic counters apart from the
    // list's own (two lea of the allocation's ~37 instructions); the empty asm makes it one.
    asm("" : "+r"(list));
    void* object = list->head;
    if (object != nullptr) [[likely]] {
      // The sampler's whole fast-path cost: one subtraction and a sign test. The countdown
      // is stored only when it holds (the slow path counts the bytes otherwise), so no copy
      // of the old value is kept to put back.
      const std::int64_t sample_left = tc->sample_left - static_cast<std::int64_t>(bytes);
      if (sample_left >= 0) [[likely]] {
        tc->sample_left = sample_left;
        if constexpr (common::kAsan) common::UnpoisonForUse(object, kSizes[cls]);
        void* next = NextObject(object);
        list->head = next;
        // The next pop loads the next object's link (perf: the pop's stall when the list's
        // objects are cold, as in trees and random_slots); start it now, as tcmalloc does.
        // Not when the list ran empty: a prefetch of address 0 walks the page table for a
        // page that is not there, and on an AMD family-23 VM that cost 33 ns, at every pop
        // of a list that a free-then-allocate loop keeps between 0 and 1 objects (a new
        // thread's, in larson_fixed: 1.9x tcmalloc's time, 0.7x with the test).
        if (next != nullptr) [[likely]] platform::Prefetch(next);
        if constexpr (kChecked) MarkWord(object) = 0;  // no longer free: it may be freed again
        AddOwned<std::uint32_t>(list->length, static_cast<std::uint32_t>(-1));
        AddOwned<std::uint64_t>(list->allocs, 1);
        return object;
      }
    }
  }
  return BorrowOrSlow<kSlow>(bytes, alignment, slow_args...);
}

// Checked, the class test and the cache test are left to the checks: a page of class 0
// (large, free, foreign) fails the object-start test (class 0's test is all zero), which
// sends large frees to FreeSlow too, and every pointer on a thread without a cache finds
// g_no_cache's list full. The test's constants are the entry's class's (Pagemap::Find),
// from a table of 1.5 KiB that stays in L1, so the check and the push each wait on one
// more load after the pagemap's two, side by side.
//
// Nor is nullptr tested here: page 0 is never a heap page, so its entry is 0 (or no leaf
// covers it), it fails the checks, and FreeSlow returns for it. free(nullptr) takes the slow
// path's call; every other free saves the test and its branch.
template <bool kChecked>
inline void FreeFast(void* ptr) noexcept {
  const Pagemap::Lookup page = g_pagemap.Find(ptr);
  const std::uint64_t entry = page.entry;
  const std::size_t cls = entry & Pagemap::kClassMask;
  if constexpr (kChecked) {
    ThreadCache::List* list = &t_cache->lists[cls];
    // g++ otherwise computes the list's address twice (once for its atomic length): 3
    // instructions of the free's 40; the empty asm makes it one value.
    asm("" : "+r"(list));
    if (MayFree(ptr, entry, page.freed_mark, page.start_test) &&
        MarkAndPushIfRoom(*list, cls, ptr, page.freed_mark)) [[likely]] {
      return;
    }
  } else if (ThreadCache* tc = t_own_cache; cls != 0 && tc != nullptr) [[likely]] {
    PushFree(tc, cls, ptr);
    return;
  }
  FreeSlow(ptr, entry);
}

// The sized free: the list comes from the size's class, which does not wait on the pagemap,
// so the entry's load overlaps the list's instead of preceding it. The entry must name the
// same class (a block of another class, a large or sampled one, or a wrong size go to
// Free, which frees by the entry), and passes the same object-start and mark checks, so
// every misuse the plain free catches is caught here too.
inline void FreeSizedFast(void* ptr, std::size_t bytes) noexcept {
  const std::size_t cls = FastClassOrZero(bytes);  // 0 for a large size: Free below
  ThreadCache* tc = t_cache;
  ThreadCache::List* list = &tc->lists[cls];
  std::size_t test_cls = cls;
  // Past the class test the compiler knows the entry's class equals `cls` and would index
  // the list and the test with the entry's, which arrives two loads later; the empty asm
  // hides that.
  asm("" : "+r"(list), "+r"(test_cls));
  const Pagemap::Lookup page = g_pagemap.Find(ptr);  // no leaf (nullptr too): entry 0
  if ((page.entry & Pagemap::kClassMask) == cls &&
      MayFree(ptr, page.entry, page.freed_mark, pagemap_detail::StartTestOf(test_cls)) &&
      MarkAndPushIfRoom(*list, cls, ptr, page.freed_mark)) [[likely]] {
    return;
  }
  Free(ptr);
}

// A failed allocation handed to the caller's `on_failure` (host_api.h AllocateOr).
template <typename Failure>
[[gnu::always_inline]] inline void* SlowOr(std::size_t bytes, std::size_t alignment,
                                           Failure on_failure)
    noexcept(noexcept(on_failure(0, 0))) {
  void* ptr = AllocateSlow(bytes, alignment);
  if (ptr != nullptr) [[likely]] return ptr;
  return on_failure(bytes, alignment);
}

// SlowOr for each failure type. Not a template: g++ drops the section attribute of a
// template's instantiations, and the fast paths tail-call these, so each is the outermost
// heap frame of a sampled malloc or new. Outside the section it headed every such stack of
// a heap profile (SampledStack.EveryEntryPointStartsInItsCaller).
MEMARENA_ALLOCATION_ENTRY void* AllocateSlowOr(std::size_t bytes, std::size_t alignment,
                                               AllocationFailure on_failure) noexcept {
  return SlowOr(bytes, alignment, on_failure);
}
MEMARENA_ALLOCATION_ENTRY void* AllocateSlowOrThrow(std::size_t bytes, std::size_t alignment,
                                                    ThrowingAllocationFailure on_failure) {
  return SlowOr(bytes, alignment, on_failure);
}

}  // namespace

PageHeap& ProcessPageHeap() noexcept { return g_page_heap; }
Pagemap& ProcessPagemap() noexcept { return g_pagemap; }

// ---- host_api.h -------------------------------------------------------------------------

// The fast-path entry points start on a 64-byte boundary (instruction fetch blocks). A pair
// runs ~60 fused uops near the core's 6-per-cycle limit, so where a function lands among the
// fetch blocks moved it by up to 10 %: unpinned, the checked and unchecked variants landed
// differently and the checks looked free up to 1 KiB and cost 12 % above (issue 17).
#define MEMARENA_FAST_PATH_ALIGNED __attribute__((aligned(64)))

MEMARENA_FAST_PATH_ALIGNED MEMARENA_ALLOCATION_ENTRY void* Allocate(
    std::size_t bytes, std::size_t alignment) noexcept {
  return AllocateFast<true, AllocateSlow>(bytes, alignment);
}

MEMARENA_FAST_PATH_ALIGNED MEMARENA_ALLOCATION_ENTRY void* AllocateOr(
    std::size_t bytes, std::size_t alignment, AllocationFailure on_failure) noexcept {
  return AllocateFast<true, AllocateSlowOr>(bytes, alignment, on_failure);
}

MEMARENA_FAST_PATH_ALIGNED MEMARENA_ALLOCATION_ENTRY void* AllocateOrThrow(
    std::size_t bytes, std::size_t alignment, ThrowingAllocationFailure on_failure) {
  return AllocateFast<true, AllocateSlowOrThrow>(bytes, alignment, on_failure);
}

// The alignment is a constant here, so AllocateFast's alignment test folds away.
MEMARENA_FAST_PATH_ALIGNED MEMARENA_ALLOCATION_ENTRY void* AllocateMinAlignedOr(
    std::size_t bytes, AllocationFailure on_failure) noexcept {
  return AllocateFast<true, AllocateSlowOr>(bytes, kMinAlign, on_failure);
}

MEMARENA_FAST_PATH_ALIGNED MEMARENA_ALLOCATION_ENTRY void* AllocateMinAlignedOrThrow(
    std::size_t bytes, ThrowingAllocationFailure on_failure) {
  return AllocateFast<true, AllocateSlowOrThrow>(bytes, kMinAlign, on_failure);
}

MEMARENA_FAST_PATH_ALIGNED MEMARENA_ALLOCATION_ENTRY void* AllocateUnchecked(
    std::size_t bytes, std::size_t alignment) noexcept {
  return AllocateFast<false, AllocateSlow>(bytes, alignment);
}

MEMARENA_ALLOCATION_ENTRY void* AllocateIfAvailable(std::size_t bytes,
                                                    std::size_t alignment) noexcept {
  return AllocateFast<true, AllocateSlowIfAvailable>(bytes, alignment);
}

MEMARENA_FAST_PATH_ALIGNED void Free(void* ptr) noexcept { FreeFast<true>(ptr); }

MEMARENA_FAST_PATH_ALIGNED void FreeSized(void* ptr, std::size_t bytes) noexcept {
  FreeSizedFast(ptr, bytes);
}

void FreeMoved(void* ptr, std::size_t usable) noexcept {
  if (usable < kMovedUncachedSize || usable > kMaxSmallSize) return Free(ptr);  // a jump
  Free(ptr);
  ThreadCache* tc = OwnCache();
  if (tc == nullptr) return;
  // Free pushed the block on its list unless the push overflowed (a batch went back, maybe
  // with it) or honoured a flush: it is then the list's head, and only then is given back.
  const std::size_t cls = ClassFor(usable);
  if (tc->lists[cls].head == ptr) ReleaseFromList(tc, cls, 1, BatchTo::kSpans);
}

MEMARENA_FAST_PATH_ALIGNED void FreeUnchecked(void* ptr) noexcept { FreeFast<false>(ptr); }

namespace {

// ReallocateOr's move of a live small block of class `cls` below kMovedUncachedSize, which
// MayFree passed with its pagemap entry and freed mark. Apart so that ReallocateOr's tests
// and tail calls need no frame (realloc_grow's calls mostly keep their block or are large).
MEMARENA_ALLOCATION_ENTRY void* MoveSmall(void* ptr, std::size_t bytes, std::size_t cls,
                                          std::uint64_t entry, std::uintptr_t mark,
                                          ReallocFallback general) noexcept {
  const std::size_t usable = kSizes[cls];
  const std::size_t roomy = ReallocRoomy(usable);  // headroom, for a block that grows
  const std::size_t size = bytes > usable && roomy > bytes ? roomy : bytes;
  void* fresh = AllocateFast<true, AllocateSlowIfAvailable>(size, kMinAlign);
  if (fresh == nullptr) [[unlikely]] return general(ptr, bytes);
  std::size_t copy = bytes < usable ? bytes : usable;
  // g++ inlines a copy it knows to be under 8 KiB as `rep movsq`, which starts slowly; the
  // empty asm hides the bound, so the copy is libc's memcpy.
  asm("" : "+r"(copy));
  std::memcpy(fresh, ptr, copy);
  ThreadCache::List* list = &t_cache->lists[cls];
  if (!MarkAndPushIfRoom(*list, cls, ptr, mark)) [[unlikely]] FreeSlow(ptr, entry);
  return fresh;
}

// ReallocateOr's large block (or a pointer in no class: freed pages, foreign): kept when it
// still fits and stays half used, as the general path would; realloc_grow's calls are mostly
// such, and the general path would look the block up again.
MEMARENA_ALLOCATION_ENTRY void* KeepLargeOr(void* ptr, std::size_t bytes,
                                            ReallocFallback general) noexcept {
  const Span* span = LiveLargeSpan(ptr);
  if (span != nullptr && bytes != 0 && ReallocKeeps(span->Bytes(), bytes)) {
    return ptr;
  }
  return general(ptr, bytes);
}

}  // namespace

// One pagemap lookup serves the whole move: the checks, the old size and the old block's
// push (realloc's general path looked the block up twice, in UsableSize and in Free, and
// called four functions: about 170 instructions a move in `minimizer`). The rules are the
// general path's (dropin::ReallocBlock). Anything else, and a new block that is not
// available at once, goes to `general`, which finds `ptr` as it was.
MEMARENA_ALLOCATION_ENTRY void* ReallocateOr(void* ptr, std::size_t bytes,
                                             ReallocFallback general) noexcept {
  const Pagemap::Lookup page = g_pagemap.Find(ptr);
  const std::size_t cls = page.entry & Pagemap::kClassMask;
  if (cls == 0) return KeepLargeOr(ptr, bytes, general);
  if (bytes == 0 || !MayFree(ptr, page.entry, page.freed_mark, page.start_test)) [[unlikely]] {
    return general(ptr, bytes);
  }
  const std::size_t usable = kSizes[cls];
  if (ReallocKeeps(usable, bytes)) return ptr;
  if (usable >= kMovedUncachedSize) return general(ptr, bytes);  // FreeMoved's case
  return MoveSmall(ptr, bytes, cls, page.entry, page.freed_mark, general);
}

bool GrowInPlace(void* ptr, std::size_t bytes) noexcept {
  Span* span = LiveLargeSpan(ptr);
  // A sampled block keeps the size its sample recorded: it moves.
  if (span == nullptr || span->sample_entry != 0) return false;
  if (bytes <= span->Bytes()) return true;
  if (bytes > (std::size_t{1} << Pagemap::kAddressBits)) return false;
  const std::size_t pages = (bytes + kPageSize - 1) >> kPageShift;
  const auto added = static_cast<std::int64_t>((pages - span->num_pages) << kPageShift);
  // The added pages count against the thread's sampling interval (and the scavenge's clock
  // on it) as an allocation's would. While sampling is on, a growth the interval would run
  // out in moves instead, so the new block's allocation takes the sample. While it is off,
  // the interval is only that clock, and a growth past its end starts the next one, as
  // MaybeSample does (refusing had realloc copy a growth of n bytes in n / 64 MiB of calls).
  ThreadCache* tc = OwnCache();
  if (tc != nullptr && sampler::MeanInterval() != 0 &&
      (tc->sample_epoch != sampler::Epoch() || tc->sample_left < added)) {
    return false;
  }
  if (!g_page_heap.GrowInPlace(span, pages, bytes)) return false;
  if (tc != nullptr && SpendSampleInterval(tc, static_cast<std::size_t>(added))) {
    DrawSampleInterval(tc);
  }
  UpdatePeaks();
  watermarks::Check();
  return true;
}

void PrefaultForWrite(void* ptr, std::size_t bytes) noexcept {
  if (Span* span = LiveLargeSpan(ptr)) g_page_heap.PrefaultForWrite(span, bytes);
}

void ZeroNew(void* ptr, std::size_t bytes) noexcept {
  if (bytes > kMaxClassRequest) {  // else a class object, which never comes fresh
    Span* span = LiveLargeSpan(ptr);
    if (span != nullptr && std::exchange(span->zero_pages, false)) return;
  }
  std::memset(ptr, 0, bytes);
}

std::size_t UsableSize(const void* ptr) noexcept {
  if (ptr == nullptr) return 0;
  const Pagemap::Lookup page = g_pagemap.Find(ptr);
  const std::uint64_t entry = page.entry;
  if (const std::size_t cls = entry & Pagemap::kClassMask) {
    const bool live = MayFree(ptr, entry, page.freed_mark);
    return live ? kSizes[cls] : 0;
  }
  const Span* span = LiveLargeSpan(ptr);
  return span != nullptr ? span->Bytes() : 0;
}

void ReportInvalidPointer(const void* ptr, const char* operation) noexcept {
  const std::uint64_t entry = g_pagemap.EntryOf(ptr);
  const std::size_t cls = entry & Pagemap::kClassMask;
  if (cls != 0) {
    const Misuse misuse = IsObjectStart(ptr, entry) ? Misuse::kDoubleFree : Misuse::kInteriorFree;
    ReportInvalidFree(ptr, misuse, operation, cls);
    return;
  }
  ReportInvalidFree(ptr, LargeMisuse(ptr, g_pagemap.Get(Pagemap::PageOf(ptr))), operation, 0);
}

bool Owns(const void* ptr) noexcept {
  if (ptr == nullptr) return false;
  const std::uintptr_t page = Pagemap::PageOf(ptr);
  return g_pagemap.Get(page) != nullptr || g_page_heap.Reserved(page);
}

void FlushThreadCache() noexcept {
  if (ThreadCache* tc = OwnCache()) FlushAll(tc);
}

void ApplyConfig(const HostConfig& config) {
  memarena::SetInvalidFreeAction(config.on_invalid_free);
  g_budget_pool.SetTotal(config.thread_cache_bytes);
  SetReleaseKeep(config.release_keep);
  g_page_heap.SetHugePages(config.huge_pages);
  g_page_heap.SetReleaseRatio(config.release_threshold_ratio);
  if (!SetCeiling(config.ceiling)) {
    const std::string message = fmt::format(
        "memarena: ceiling:{} refused: {} stays held after releasing every free span; keeping "
        "the ceiling at {} B\n",
        config.ceiling, g_page_heap.Held(), g_page_heap.Ceiling());
    platform::WriteStderr(message.data(), message.size());
  }
  // Caches flush at their next slow path, giving their budgets back to the new pool.
  g_flush_epoch.fetch_add(1, std::memory_order_acq_rel);
}

// ---- heap.h -------------------------------------------------------------------------------

std::size_t ReleaseUnused(std::size_t keep_bytes) noexcept {
  if (ThreadCache* tc = OwnCache()) FlushAll(tc);
  const std::uint64_t epoch = g_flush_epoch.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (ThreadCache* tc = OwnCache()) tc->seen_epoch = epoch;
  g_central.Drain();
  const std::size_t released = g_page_heap.ReleaseFree(keep_bytes);
  watermarks::Check();
  return released;
}

void SetReleaseKeep(std::size_t bytes) noexcept {
  g_release_keep.store(bytes, std::memory_order_relaxed);
}

std::size_t ReleaseKeep() noexcept { return g_release_keep.load(std::memory_order_relaxed); }

bool SetCeiling(std::size_t bytes) noexcept {
  if (g_page_heap.TrySetCeiling(bytes)) return true;
  ReleaseUnused();
  return g_page_heap.TrySetCeiling(bytes);
}

std::size_t Ceiling() noexcept { return g_page_heap.Ceiling(); }

std::size_t HeldBytes() noexcept { return g_page_heap.Held(); }

ThreadCacheBudget CallingThreadCacheBudget() noexcept {
  ThreadCacheBudget budget;
  if (const ThreadCache* tc = OwnCache()) {
    budget.budget_bytes = tc->max_bytes;
    budget.capacity_bytes = tc->capacity_bytes;
  }
  budget.pool_unclaimed = g_budget_pool.Unclaimed();
  budget.pool_total = g_budget_pool.Total();
  return budget;
}

std::size_t CallingThreadCachedObjects(std::size_t cls) noexcept {
  const ThreadCache* tc = OwnCache();
  return tc != nullptr ? tc->lists[cls].length.load(std::memory_order_relaxed) : 0;
}

std::size_t CentralFreeObjects(std::size_t cls) noexcept { return g_central.FreeObjects(cls); }

const char* CheckHeap() noexcept {
  if (const char* problem = g_central.CheckInvariants()) return problem;
  return g_page_heap.CheckInvariants();
}

namespace {

// Every thread's per-class counters folded together (under the registry lock), the one
// read that Stats() and SizeClasses() share.
struct ClassCounters {
  std::uint64_t allocs[kNumClasses + 1];
  std::int64_t live[kNumClasses + 1];  // objects out of the central cache and not cached
  std::size_t cached_objects[kNumClasses + 1] = {};  // in thread caches
  std::size_t cached = 0;
  std::size_t largest_free_object = 0;  // in a thread cache (central lists are added later)
  // Sampled spans (KeepSpareSampledSpan): spares kept now, and reuses.
  std::size_t spare_sampled_spans = 0;
  std::uint64_t sampled_span_reuses = 0;
};

// Cold: never runs at start-up, so it stays out of .text.memarena_startup (docs/dropin.md).
[[gnu::cold]] void FoldClassCounters(ClassCounters& out) noexcept {
  SpinLockHolder hold(g_registry.lock);
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
    out.allocs[cls] = g_registry.allocs[cls].load(std::memory_order_relaxed);
    out.live[cls] = g_registry.net_out[cls].load(std::memory_order_relaxed);
  }
  out.sampled_span_reuses = g_registry.sampled_span_reuses.load(std::memory_order_relaxed);
  for (const ThreadCache* tc = g_registry.head; tc != nullptr; tc = tc->next) {
    if (tc->spare_sampled_span.load(std::memory_order_relaxed) != nullptr) {
      ++out.spare_sampled_spans;
      out.cached += kPageSize;  // a spare is memory the thread keeps, as its lists are
    }
    out.sampled_span_reuses += tc->sampled_span_reuses.load(std::memory_order_relaxed);
    for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
      const std::uint32_t length = tc->lists[cls].length.load(std::memory_order_relaxed);
      out.allocs[cls] += tc->lists[cls].allocs.load(std::memory_order_relaxed);
      out.live[cls] += tc->net_out[cls].load(std::memory_order_relaxed) - length;
      out.cached_objects[cls] += length;
      out.cached += std::size_t{length} * kSizes[cls];
      if (length != 0) {
        out.largest_free_object = std::max<std::size_t>(out.largest_free_object, kSizes[cls]);
      }
    }
  }
}

SizeClassStats ClassStats(const ClassCounters& counters, std::size_t cls) noexcept {
  // Counters are read racily while threads run: clamp what cannot be negative.
  const auto in_use = static_cast<std::uint64_t>(std::max<std::int64_t>(counters.live[cls], 0));
  SizeClassStats c;
  c.size = kSizes[cls];
  c.num_allocs = counters.allocs[cls];
  c.num_frees = c.num_allocs > in_use ? c.num_allocs - in_use : 0;
  c.bytes_in_use = static_cast<std::size_t>(in_use) * c.size;
  c.bytes_in_thread_caches = counters.cached_objects[cls] * c.size;
  std::size_t uncarved = 0;
  c.bytes_in_central_lists = g_central.FreeObjects(cls, &uncarved) * c.size;  // the class's lock
  c.bytes_uncarved = uncarved * c.size;
  return c;
}

}  // namespace

// Cold: never runs at start-up, so it stays out of .text.memarena_startup (docs/dropin.md).
[[gnu::cold]] void SizeClasses(std::span<SizeClassStats, kNumClasses> out) noexcept {
  ClassCounters counters;
  FoldClassCounters(counters);
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) out[cls - 1] = ClassStats(counters, cls);
}

[[gnu::cold]] AllocatorStats Stats() noexcept {
  ClassCounters counters;
  FoldClassCounters(counters);
  std::size_t largest_free_object = counters.largest_free_object;
  AllocatorStats s;
  std::size_t small_in_use = 0;
  std::size_t central_free = 0;
  std::size_t largest_class_used = 0;
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
    const SizeClassStats c = ClassStats(counters, cls);
    small_in_use += c.bytes_in_use;
    central_free += c.bytes_in_central_lists;
    s.bytes_uncarved += c.bytes_uncarved;
    if (c.bytes_in_central_lists != 0) {
      largest_free_object = std::max(largest_free_object, c.size);
    }
    s.num_allocs += c.num_allocs;
    s.num_frees += c.num_frees;
    if (c.num_allocs != 0) largest_class_used = c.size;
  }
  const PageHeapStats heap = g_page_heap.Stats();
  s.bytes_in_use = small_in_use + LargeInUse();
  s.bytes_requested = small_in_use + LargeRequested();
  s.bytes_held = heap.held;
  s.bytes_releasable = heap.free_committed;
  // The largest block a request could get without committing pages: a free span, or, when
  // every free byte sits in cached and central objects, the largest such object.
  s.largest_free_block = std::max(heap.largest_free_committed, largest_free_object);
  const std::size_t free_inside_held = heap.free_committed + counters.cached + central_free;
  s.fragmentation = free_inside_held == 0
                        ? 0.0
                        : 1.0 - static_cast<double>(s.largest_free_block) /
                                    static_cast<double>(free_inside_held);
  // The exact in-use figure computed here also raises the lazily folded peaks, so a peak
  // read later never falls below an in-use figure already reported.
  UpdateMax(g_peak_in_use, s.bytes_in_use);
  UpdateMax(g_peak_requested, s.bytes_requested);
  s.peak_bytes_in_use = g_peak_in_use.load(std::memory_order_relaxed);
  s.peak_bytes_requested = g_peak_requested.load(std::memory_order_relaxed);
  s.peak_bytes_held = heap.peak_held;
  s.limit_bytes = heap.ceiling;
  s.num_allocs += heap.large_allocs + counters.sampled_span_reuses;
  s.num_frees += heap.large_frees + counters.sampled_span_reuses + counters.spare_sampled_spans;
  s.num_reserves = heap.num_reserves;
  s.num_releases = heap.num_releases;
  s.bytes_released = heap.bytes_released;
  s.bytes_moved = heap.bytes_moved;
  s.num_ooms = g_ooms.load(std::memory_order_relaxed);
  s.max_alloc_size = std::max(largest_class_used, heap.max_large_request);
  s.bytes_in_thread_caches = counters.cached;
  s.bytes_in_central_lists = central_free;
  s.bytes_metadata = MetaBytes();
  s.free_spans_by_length = heap.free_by_length;
  s.huge_page_size = platform::HugePageSize();
  s.huge_pages_enabled = heap.huge_pages_on;
  s.huge_page_blocks = heap.huge_page_blocks;
  s.huge_pages_committed = heap.huge_pages_committed;
  s.huge_page_fault_bound_nanos = heap.huge_fault_bound_nanos;
  s.huge_page_slow_fault_nanos = heap.slow_huge_fault_nanos;
  return s;
}

void ResetPeaks() noexcept {
  const AllocatorStats now = Stats();
  g_peak_in_use.store(now.bytes_in_use, std::memory_order_relaxed);
  g_peak_requested.store(now.bytes_requested, std::memory_order_relaxed);
  g_page_heap.ResetPeak();
}

}  // namespace memarena::host
