// The heap sampler's table and draw, and the sampled spans a thread keeps: the fast -ln
// matches std::log, an entry comes back through the thread's spare, a snapshot never shows
// a half-written entry while other threads sample and free, and with every allocation
// sampled the host statistics stay exact through spare spans, their reuse and their drop.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "host/heap_sampler.h"
#include "memarena/memarena.h"

namespace {

namespace sampler = memarena::host::sampler;

TEST(HeapSampler, NegativeLogMatchesStdLog) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> points = {1.0, 0.5, 0.25, std::sqrt(0.5), std::nextafter(std::sqrt(0.5), 1.0),
                                0.999999999, 1e-300, 5.5e-17};
  for (int i = 0; i < 100000; ++i) points.push_back(unit(rng));
  for (int e = 1; e < 60; ++e) points.push_back(std::ldexp(unit(rng), -e));
  for (const double u : points) {
    if (u <= 0.0) continue;
    const double expected = -std::log(u);
    EXPECT_NEAR(sampler::NegativeLog(u), expected, 1e-10 * std::max(1.0, expected)) << u;
  }
}

void* FakeBlock(std::uintptr_t id) { return reinterpret_cast<void*>(id << 4); }

bool InSnapshot(const void* ptr, std::size_t* bytes = nullptr, std::uint32_t* depth = nullptr) {
  for (const sampler::Sample& s : sampler::Snapshot()) {
    if (s.ptr != ptr) continue;
    if (bytes != nullptr) *bytes = s.bytes;
    if (depth != nullptr) *depth = s.depth;
    return true;
  }
  return false;
}

TEST(HeapSampler, AnEntryGoesBackThroughTheThreadsSpare) {
  std::uint32_t spare = 0;
  void* block = FakeBlock(0x1234);
  const std::uint32_t entry = sampler::Record(block, 48, &spare);
  ASSERT_NE(entry, 0u);
  std::size_t bytes = 0;
  std::uint32_t depth = 0;
  ASSERT_TRUE(InSnapshot(block, &bytes, &depth));
  EXPECT_EQ(bytes, 48u);
  EXPECT_GE(depth, 1u);  // at least this test's frame

  sampler::Remove(entry, &spare);
  EXPECT_EQ(spare, entry);  // kept for the next sample, not given back
  EXPECT_FALSE(InSnapshot(block));

  void* next = FakeBlock(0x5678);
  EXPECT_EQ(sampler::Record(next, 64, &spare), entry);
  EXPECT_EQ(spare, 0u);
  EXPECT_TRUE(InSnapshot(next));

  // A thread whose spare is taken gives the entry back to the shared list.
  std::uint32_t full = sampler::Record(FakeBlock(0x9abc), 16, nullptr);
  ASSERT_NE(full, 0u);
  sampler::Remove(entry, &full);
  EXPECT_NE(full, entry);
  sampler::Remove(full, &spare);
  EXPECT_EQ(spare, full);
  sampler::ReleaseSpare(&spare);
  EXPECT_EQ(spare, 0u);
  EXPECT_TRUE(sampler::Snapshot().empty());
}

// Each thread records fake blocks whose size is a function of the pointer and removes them
// again; every entry a concurrent snapshot returns must be whole.
TEST(HeapSampler, SnapshotsNeverShowAHalfWrittenEntry) {
  const auto bytes_of = [](const void* ptr) {
    return static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(ptr) >> 4) * 2654435761u) &
           0xFFFFF;
  };
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> recorded{0};
  std::vector<std::thread> writers;
  for (std::uintptr_t t = 1; t <= 2; ++t) {
    writers.emplace_back([&, t] {
      std::uint32_t spare = 0;
      std::vector<std::uint32_t> live;
      for (std::uintptr_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        void* ptr = FakeBlock((t << 36) | i);
        if (const std::uint32_t entry = sampler::Record(ptr, bytes_of(ptr), &spare)) {
          live.push_back(entry);
          recorded.fetch_add(1, std::memory_order_relaxed);
        }
        if (live.size() > 8) {
          sampler::Remove(live.front(), &spare);
          live.erase(live.begin());
        }
      }
      for (const std::uint32_t entry : live) sampler::Remove(entry, &spare);
      sampler::ReleaseSpare(&spare);
    });
  }
  // Snapshots until the writers recorded 100,000 blocks and some were seen (bounded by the
  // writers' progress, not by time: a snapshot that never sees a live entry fails).
  std::size_t seen = 0;
  while (recorded.load() < 100000 || (seen < 100 && recorded.load() < 20000000)) {
    for (const sampler::Sample& s : sampler::Snapshot()) {
      ASSERT_EQ(s.bytes, bytes_of(s.ptr)) << s.ptr;
      ASSERT_LE(s.depth, static_cast<std::uint32_t>(sampler::kMaxFrames));
      ++seen;
    }
  }
  stop = true;
  for (std::thread& w : writers) w.join();
  EXPECT_GE(seen, 100u);
  EXPECT_TRUE(sampler::Snapshot().empty());
}

// With a mean of one byte every allocation is sampled, so each block gets a span of its own
// and each free of a one-page block leaves the thread a spare span.
class EverySampled : public ::testing::Test {
 protected:
  void SetUp() override {
    memarena::SetHeapSampleInterval(1);
    // A thread's first allocation builds its cache and is not sampled, and the fast path
    // notices a new interval at the next slow path, which a block above the small sizes
    // takes.
    memarena::Allocator& host = memarena::HostAllocator();
    host.Deallocate(host.Allocate(16));
    host.Deallocate(host.Allocate(std::size_t{1} << 20));
  }
  void TearDown() override { memarena::SetHeapSampleInterval(0); }
};

TEST_F(EverySampled, StatisticsStayExactThroughSpareSpans) {
  memarena::Allocator& host = memarena::HostAllocator();
  constexpr std::size_t kPage = 8192;
  std::vector<void*> blocks(64);
  std::vector<std::size_t> sizes(blocks.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) sizes[i] = 16 + i * 61;  // 16 B to ~3.9 KiB

  for (int round = 0; round < 3; ++round) {  // the later rounds reuse the spare span
    const memarena::AllocatorStats before = host.GetStats();
    const std::size_t samples_before = memarena::SampledHeapTotals().samples;
    std::size_t requested = 0;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      blocks[i] = host.Allocate(sizes[i]);
      requested += sizes[i];
    }
    const memarena::AllocatorStats live = host.GetStats();
    EXPECT_EQ(memarena::SampledHeapTotals().samples - samples_before, blocks.size()) << "round " << round;
    // Each block has a page of its own (from round 1 on the first is the kept spare).
    EXPECT_EQ(live.bytes_in_use - before.bytes_in_use, blocks.size() * kPage);
    EXPECT_EQ(live.bytes_requested - before.bytes_requested, requested);
    EXPECT_EQ(live.num_allocs - before.num_allocs, blocks.size());
    for (void* block : blocks) host.Deallocate(block);
    const memarena::AllocatorStats after = host.GetStats();
    EXPECT_EQ(after.bytes_in_use, before.bytes_in_use) << "round " << round;
    EXPECT_EQ(after.bytes_requested, before.bytes_requested) << "round " << round;
    EXPECT_EQ(after.num_frees - before.num_frees, blocks.size());
    EXPECT_EQ(after.num_allocs - after.num_frees, before.num_allocs - before.num_frees);
    EXPECT_EQ(memarena::SampledHeapTotals().samples, samples_before);
    // The last free left this thread a spare span: memory its cache keeps.
    EXPECT_GE(after.bytes_in_thread_caches, kPage);
  }

  // Releasing drops the spare: nothing stays in this thread's cache.
  memarena::ReleaseUnusedSpans();
  EXPECT_EQ(host.GetStats().bytes_in_thread_caches, 0u);
}

TEST_F(EverySampled, FreeingASpareSpanAgainIsADoubleFree) {
  memarena::Allocator& host = memarena::HostAllocator();
  const memarena::InvalidFreeAction action = memarena::GetInvalidFreeAction();
  memarena::SetInvalidFreeAction(memarena::InvalidFreeAction::kReport);
  void* block = host.Allocate(100);
  host.Deallocate(block);  // the span becomes this thread's spare
  const std::uint64_t invalid = memarena::InvalidFreeCount();
  ::testing::internal::CaptureStderr();
  host.Deallocate(block);
  const std::string report = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(memarena::InvalidFreeCount(), invalid + 1);
  EXPECT_NE(report.find("double free"), std::string::npos) << report;
  EXPECT_EQ(host.UsableSize(block), 0u);
  memarena::SetInvalidFreeAction(action);
  // The spare still serves the next sample.
  void* again = host.Allocate(200);
  EXPECT_EQ(again, block);
  host.Deallocate(again);
}

TEST_F(EverySampled, ABlockFreedByAnotherThreadLeavesTheTable) {
  memarena::Allocator& host = memarena::HostAllocator();
  const std::size_t samples_before = memarena::SampledHeapTotals().samples;
  std::vector<void*> blocks;
  for (int i = 0; i < 32; ++i) blocks.push_back(host.Allocate(64 + i));
  EXPECT_EQ(memarena::SampledHeapTotals().samples - samples_before, blocks.size());
  const memarena::AllocatorStats before_free = host.GetStats();
  std::thread([&] {
    // A cache first (its first allocation is not sampled), so the frees below may keep a
    // spare span, which the thread's exit must give back.
    host.Deallocate(host.Allocate(8));
    for (void* block : blocks) host.Deallocate(block);
  }).join();
  EXPECT_EQ(memarena::SampledHeapTotals().samples, samples_before);
  const memarena::AllocatorStats after = host.GetStats();
  EXPECT_EQ(before_free.bytes_in_use - after.bytes_in_use, blocks.size() * 8192);
  EXPECT_EQ(before_free.num_allocs - before_free.num_frees - blocks.size(),
            after.num_allocs - after.num_frees);
  EXPECT_EQ(after.bytes_in_thread_caches, before_free.bytes_in_thread_caches);
}

// The peaks are folded lazily (on a large allocation, and where a thread's in-use bytes
// rise) from the page heap's counts, which see a spare span as in use and keep the requested
// bytes of the block first freed into it: threads that each leave a chain of spares used to
// raise peak requested by those bytes every time (8.6 MiB for a true 1.1 MiB under the
// drop-in's heap_profile, after 2,000 such threads).
TEST_F(EverySampled, SpareSpansDoNotRaiseThePeaks) {
  memarena::Allocator& host = memarena::HostAllocator();
  for (int t = 0; t < 64; ++t) {
    std::thread([&host] {
      host.Deallocate(host.Allocate(8));  // a cache first: its first allocation is unsampled
      for (int i = 0; i < 8; ++i) host.Deallocate(host.Allocate(4000));  // a chain of spares
    }).join();
  }
  void* spare_maker = host.Allocate(3000);
  host.Deallocate(spare_maker);  // this thread keeps a spare span
  host.ResetPeakStats();
  const memarena::AllocatorStats start = host.GetStats();
  ASSERT_EQ(start.peak_bytes_requested, start.bytes_requested);
  ASSERT_EQ(start.peak_bytes_in_use, start.bytes_in_use);
  // A large block folds the peaks; a second one after the first is freed must not raise
  // them past the one block's figures, nor should the spare this thread keeps count.
  void* block = host.Allocate(std::size_t{1} << 20);
  const memarena::AllocatorStats live = host.GetStats();
  host.Deallocate(block);
  block = host.Allocate(std::size_t{1} << 20);
  host.Deallocate(block);
  const memarena::AllocatorStats end = host.GetStats();
  EXPECT_EQ(end.peak_bytes_requested, live.bytes_requested);
  EXPECT_EQ(end.peak_bytes_in_use, live.bytes_in_use);
}

}  // namespace
