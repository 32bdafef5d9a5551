// The thread caches' budget policy on the heap's own accounting: a busy thread's budget
// grows from the process-wide pool (thread_cache_bytes), another thread gets only what the
// pool has left, idle lists give back by their low-water mark, lists grow with the thread's
// own churn (a class used now and then stays cached; a producer's and a consumer's lists
// stay within a batch), allocations that may fail count on the scavenge's clock, big blocks
// that realloc moved away from are not cached, and exits and flushes return every budget to
// the pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "host/heap.h"
#include "host/host_api.h"
#include "host/size_classes.h"
#include "memarena/config.h"

namespace memarena::host {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// What the old fixed per-thread bound was: a busy thread now outgrows it.
constexpr std::size_t kOldPerThreadBound = 4 * kMiB;

// glibc's malloc benchmark shape (bench/workloads random_slots): 1,024 slots, each step
// frees a random slot and refills it with a log-uniform 16 B - 32 KiB block. About 88
// classes stay in use at once; the thread caches far more than 4 MiB if its budget lets it.
void UseManyClasses() {
  constexpr int kSlots = 1024;
  std::vector<void*> slots(kSlots, nullptr);
  std::uint64_t state = 0x9e3779b97f4a7c15;
  auto next = [&state] {
    state = state * 6364136223846793005u + 1442695040888963407u;
    return static_cast<std::uint32_t>(state >> 33);
  };
  for (int step = 0; step < 300000; ++step) {
    void*& slot = slots[next() % kSlots];
    Free(slot);
    const std::size_t size = std::size_t{16} << (next() % 11);  // 16 B .. 16 KiB
    slot = Allocate(size + next() % size, 0);                   // .. 32 KiB
  }
  for (void* p : slots) Free(p);
}

std::size_t CachedBytes() {
  std::size_t bytes = 0;
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
    bytes += CallingThreadCachedObjects(cls) * ClassSize(cls);
  }
  return bytes;
}

void ExpectWithinBudget(const ThreadCacheBudget& b) {
  EXPECT_LE(CachedBytes(), b.capacity_bytes);
  EXPECT_LE(b.capacity_bytes, b.budget_bytes);
  EXPECT_LE(b.budget_bytes, b.pool_total);
  EXPECT_LE(static_cast<std::int64_t>(b.budget_bytes) + b.pool_unclaimed,
            static_cast<std::int64_t>(b.pool_total));
}

// Every budget is back in the pool once the other threads exited and this one flushed.
void ExpectPoolWhole() {
  ReleaseUnused();
  const ThreadCacheBudget b = CallingThreadCacheBudget();
  EXPECT_EQ(b.budget_bytes, 0u);
  EXPECT_EQ(b.pool_unclaimed, static_cast<std::int64_t>(b.pool_total));
  const char* problem = CheckHeap();
  EXPECT_EQ(problem, nullptr) << problem;
}

TEST(ThreadCacheBudget, ABusyThreadGrowsItsBudgetFromThePool) {
  ExpectPoolWhole();
  ThreadCacheBudget seen;
  std::thread worker([&] {
    EXPECT_EQ(CallingThreadCacheBudget().budget_bytes, 0u) << "a budget is claimed on demand";
    UseManyClasses();
    seen = CallingThreadCacheBudget();
    ExpectWithinBudget(seen);
    EXPECT_GT(CachedBytes(), kOldPerThreadBound);
  });
  worker.join();
  EXPECT_EQ(seen.pool_total, HostConfig{}.thread_cache_bytes);
  EXPECT_GT(seen.budget_bytes, kOldPerThreadBound);
  ExpectPoolWhole();
}

TEST(ThreadCacheBudget, AnotherThreadGetsOnlyWhatThePoolHasLeft) {
  HostConfig config;
  config.thread_cache_bytes = 12 * kMiB;
  ApplyConfig(config);
  ExpectPoolWhole();
  std::mutex mutex;
  std::condition_variable changed;
  bool first_done = false;
  bool second_done = false;
  ThreadCacheBudget first;
  ThreadCacheBudget second;
  std::thread a([&] {
    UseManyClasses();
    first = CallingThreadCacheBudget();
    std::unique_lock<std::mutex> lock(mutex);
    first_done = true;
    changed.notify_all();
    changed.wait(lock, [&] { return second_done; });  // keeps its budget meanwhile
  });
  {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return first_done; });
  }
  std::thread b([&] {
    UseManyClasses();
    second = CallingThreadCacheBudget();
    ExpectWithinBudget(second);
    std::lock_guard<std::mutex> lock(mutex);
    second_done = true;
    changed.notify_all();
  });
  b.join();
  a.join();
  ExpectWithinBudget(first);
  EXPECT_GT(first.budget_bytes, config.thread_cache_bytes / 2) << "the first took most";
  EXPECT_LE(first.budget_bytes + second.budget_bytes, config.thread_cache_bytes);
  EXPECT_LE(static_cast<std::int64_t>(second.budget_bytes),
            static_cast<std::int64_t>(config.thread_cache_bytes - first.budget_bytes));
  ExpectPoolWhole();
  ApplyConfig(HostConfig{});
  ExpectPoolWhole();
}

TEST(ThreadCacheBudget, IdleListsShrinkByTheirLowWaterMark) {
  ExpectPoolWhole();
  std::thread worker([] {
    // 64 KiB: no class that UseManyClasses allocates (up to 32 KiB) borrows from it
    // (kBorrowClasses), so nothing takes from the list.
    const std::size_t idle_cls = ClassFor(64 << 10);
    std::vector<void*> blocks;
    for (int i = 0; i < 32; ++i) blocks.push_back(Allocate(64 << 10, 0));
    for (void* p : blocks) Free(p);
    const std::size_t idle_before = CallingThreadCachedObjects(idle_cls);
    ASSERT_GE(idle_before, 8u);
    // The scavenge runs every 64 MiB the thread allocates (UseManyClasses allocates about
    // 1 GiB), and the 64 KiB list, never used since, stays above its low-water mark and
    // gives back half each time.
    UseManyClasses();
    EXPECT_LE(CallingThreadCachedObjects(idle_cls) * 4, idle_before);
    ExpectWithinBudget(CallingThreadCacheBudget());
  });
  worker.join();
  ExpectPoolWhole();
}

// Fills this thread's list of 48 KiB blocks, then leaves it and allocates `churn_bytes`
// through `allocate` from small classes only: 1,024 random slots of 16 B - 8 KiB, so the
// small lists keep taking slow paths, where the scavenges run. Returns the 48 KiB list's
// length before and after.
template <typename AllocateFn>
std::pair<std::size_t, std::size_t> LeaveABigListAndChurn(std::size_t churn_bytes,
                                                          AllocateFn allocate) {
  const std::size_t big_cls = ClassFor(48 << 10);
  std::vector<void*> blocks;
  for (int i = 0; i < 32; ++i) blocks.push_back(Allocate(48 << 10, 0));
  for (void* p : blocks) Free(p);
  const std::size_t before = CallingThreadCachedObjects(big_cls);
  std::vector<void*> slots(1024, nullptr);
  std::uint64_t state = 0x2545f4914f6cdd1d;
  auto next = [&state] {
    state = state * 6364136223846793005u + 1442695040888963407u;
    return static_cast<std::uint32_t>(state >> 33);
  };
  for (std::size_t allocated = 0; allocated < churn_bytes;) {
    void*& slot = slots[next() % slots.size()];
    Free(slot);
    const std::size_t size = std::size_t{16} << (next() % 9);  // 16 B .. 4 KiB
    slot = allocate(size + next() % size);                      // .. 8 KiB
    allocated += size;
  }
  for (void* p : slots) Free(p);
  return {before, CallingThreadCachedObjects(big_cls)};
}

// realloc's headroom goes through AllocateIfAvailable: it counts on the scavenge's clock
// (and the sampler's) like any allocation. It did not, and realloc_grow, whose moves are
// nearly all of its allocations, never scavenged. 208 MiB of churn pass the 64 MiB clock
// three times: the first scavenge finds the list's low-water mark at 0 (it was refilled
// since the last one), the next two give back half of it each.
TEST(ThreadCacheBudget, AllocationsThatMayFailCountOnTheScavengeClock) {
  ExpectPoolWhole();
  std::thread worker([] {
    const auto [before, after] = LeaveABigListAndChurn(
        208 * kMiB, [](std::size_t size) { return AllocateIfAvailable(size, 0); });
    ASSERT_GE(before, 8u);
    EXPECT_LE(after * 3, before) << before << " cached, " << after << " left";
    ExpectWithinBudget(CallingThreadCacheBudget());
  });
  worker.join();
  ExpectPoolWhole();
}

// Whether an allocation of `cls` now takes an object this thread caches: one of its class, or
// one it may borrow from the classes above (kBorrowClasses), also without the central lists.
bool ServedFromThisThreadsLists(std::size_t cls) {
  if (CallingThreadCachedObjects(cls) != 0) return true;
  if (ClassSize(cls) < kBorrowMinSize) return false;
  for (std::size_t lender = cls + 1; lender <= std::min(cls + kBorrowClasses, kNumClasses);
       ++lender) {
    if (CallingThreadCachedObjects(lender) != 0) return true;
  }
  return false;
}

// The testsuite workload's shape: each round (a test case) uses about a third of the
// classes up to kMaxClassRequest (requests above it are page runs, which no list caches),
// one or two blocks each, and frees everything at its end. Counted on
// the heap's own books: an allocation is a hit when the thread's list of its class held an
// object before it. Scavenging at every budget shortfall (the policy before) drained the
// lists a round had not used, and most allocations refilled from the central lists.
TEST(ThreadCacheBudget, ClassesUsedOnceInAFewRoundsStayCached) {
  ExpectPoolWhole();
  std::thread worker([] {
    std::uint64_t state = 12345;
    auto next = [&state] {
      state = state * 6364136223846793005u + 1442695040888963407u;
      return static_cast<std::uint32_t>(state >> 33);
    };
    constexpr int kWarmUpRounds = 50;
    constexpr int kRounds = 300;
    std::size_t hits = 0;
    std::size_t counted = 0;
    std::vector<void*> live;
    for (int round = 0; round < kRounds; ++round) {
      for (std::size_t cls = 1; cls <= ClassFor(kMaxClassRequest); ++cls) {
        if (next() % 3 != 0) continue;
        const int blocks = 1 + static_cast<int>(next() % 2);
        for (int i = 0; i < blocks; ++i) {
          if (round >= kWarmUpRounds) {
            ++counted;
            if (ServedFromThisThreadsLists(cls)) ++hits;
          }
          live.push_back(Allocate(ClassSize(cls), 0));
        }
      }
      for (void* p : live) Free(p);
      live.clear();
    }
    EXPECT_GE(hits * 10, counted * 9) << hits << " of " << counted << " from the cache";
    ExpectWithinBudget(CallingThreadCacheBudget());
  });
  worker.join();
  ExpectPoolWhole();
}

// Lists grow past one batch only when the thread both runs them empty and overflows them: a
// consumer that only frees, and a producer that only allocates, each keep at most a batch
// per class, and their bounds claim no more of the pool than that.
TEST(ThreadCacheBudget, AProducerAndAConsumerKeepAtMostABatchPerClass) {
  ExpectPoolWhole();
  constexpr std::size_t kSizesUsed[] = {64, 1024, 4096, 40 << 10};
  constexpr int kPerClass = 4000;
  std::size_t batches_bytes = 0;
  for (const std::size_t size : kSizesUsed) {
    batches_bytes += std::size_t{ClassInfo(ClassFor(size)).batch} * ClassSize(ClassFor(size));
  }
  std::vector<void*> handed;
  std::thread producer([&] {
    for (int i = 0; i < kPerClass; ++i) {
      for (const std::size_t size : kSizesUsed) handed.push_back(Allocate(size, 0));
    }
    const ThreadCacheBudget b = CallingThreadCacheBudget();
    ExpectWithinBudget(b);
    EXPECT_LE(b.capacity_bytes, batches_bytes);
  });
  producer.join();
  std::thread consumer([&] {
    for (void* p : handed) Free(p);
    for (const std::size_t size : kSizesUsed) {
      const std::size_t cls = ClassFor(size);
      EXPECT_LE(CallingThreadCachedObjects(cls), ClassInfo(cls).batch) << "class of " << size;
    }
    const ThreadCacheBudget b = CallingThreadCacheBudget();
    ExpectWithinBudget(b);
    EXPECT_LE(b.capacity_bytes, batches_bytes);
  });
  consumer.join();
  ExpectPoolWhole();
}

// realloc_grow's shape on the heap directly: 64 buffers at once, each grown by realloc's
// moves (50 % headroom through AllocateIfAvailable, the old block freed by `free_moved`)
// from 8-32 KiB up to 256 KiB, then started again. Returns the most bytes the thread
// cached at once in the classes of 8 KiB and up.
template <typename FreeMovedFn>
std::size_t MostCachedWhileACohortGrows(FreeMovedFn free_moved) {
  constexpr std::size_t kFrom = 8 << 10;
  struct Buffer {
    void* block = nullptr;
    std::size_t usable = 0;
  };
  std::uint64_t state = 0x5851f42d4c957f2d;
  auto next = [&state] {
    state = state * 6364136223846793005u + 1442695040888963407u;
    return static_cast<std::uint32_t>(state >> 33);
  };
  auto start = [&](Buffer& b) {
    b.block = Allocate(kFrom + next() % (3 * kFrom), 0);
    b.usable = UsableSize(b.block);
  };
  std::vector<Buffer> cohort(64);
  for (Buffer& b : cohort) start(b);
  std::size_t most = 0;
  for (int step = 0; step < 40000; ++step) {
    Buffer& b = cohort[next() % cohort.size()];
    const std::size_t grown = b.usable + b.usable / 2;
    if (grown > kMaxSmallSize) {
      free_moved(b.block, b.usable);
      start(b);
    } else {
      void* fresh = AllocateIfAvailable(grown, 0);
      free_moved(b.block, b.usable);
      b = {fresh, UsableSize(fresh)};
    }
    if (step % 64 != 0) continue;
    std::size_t cached = 0;
    for (std::size_t cls = ClassFor(kFrom); cls <= ClassFor(kMaxClassRequest); ++cls) {
      cached += CallingThreadCachedObjects(cls) * ClassSize(cls);
    }
    most = std::max(most, cached);
  }
  for (Buffer& b : cohort) Free(b.block);
  return most;
}

// A realloc that moves a block of 8 KiB and up frees it to its span (FreeMoved): the
// cohort's lists then hold no more than a refill leaves, at most a batch less one object of
// each class from 8 KiB to kMaxClassRequest (batch 2-8, one handed out; the cohort's blocks
// above it are page runs, which no list caches), where through Free they grew as
// the cohort passed and never ran above their low-water mark at a scavenge (62.8 MiB peak
// RSS in realloc_grow, 17 MiB of it cached).
TEST(ThreadCacheBudget, BigBlocksReallocMovedAwayFromAreNotCached) {
  ExpectPoolWhole();
  std::size_t refill_leftovers = 0;
  for (std::size_t cls = ClassFor(8 << 10); cls <= ClassFor(kMaxClassRequest); ++cls) {
    refill_leftovers += (std::size_t{ClassInfo(cls).batch} - 1) * ClassSize(cls);
  }
  std::thread through_free([&] {
    const std::size_t most = MostCachedWhileACohortGrows([](void* p, std::size_t) { Free(p); });
    ASSERT_GT(most, 2 * refill_leftovers) << "the cohort must grow the lists when they cache it";
    ExpectWithinBudget(CallingThreadCacheBudget());
  });
  through_free.join();
  ExpectPoolWhole();
  std::thread through_free_moved([&] {
    EXPECT_LE(MostCachedWhileACohortGrows(FreeMoved), refill_leftovers);
    ExpectWithinBudget(CallingThreadCacheBudget());
  });
  through_free_moved.join();
  ExpectPoolWhole();
}

}  // namespace
}  // namespace memarena::host
