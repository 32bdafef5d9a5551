// The thread caches' budget policy on the heap's own accounting: a busy thread's budget
// grows from the process-wide pool (thread_cache_bytes), another thread gets only what the
// pool has left, idle lists give back by their low-water mark, and exits and flushes
// return every budget to the pool.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
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
    const std::size_t idle_cls = ClassFor(48 << 10);
    std::vector<void*> blocks;
    for (int i = 0; i < 32; ++i) blocks.push_back(Allocate(48 << 10, 0));
    for (void* p : blocks) Free(p);
    const std::size_t idle_before = CallingThreadCachedObjects(idle_cls);
    ASSERT_GE(idle_before, 8u);
    // Other classes grow the budget: every shortfall scavenges, and the 48 KiB list, never
    // used since, stays above its low-water mark and gives back half each time.
    UseManyClasses();
    EXPECT_LE(CallingThreadCachedObjects(idle_cls) * 4, idle_before);
    ExpectWithinBudget(CallingThreadCacheBudget());
  });
  worker.join();
  ExpectPoolWhole();
}

}  // namespace
}  // namespace memarena::host
