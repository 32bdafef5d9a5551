// The ceiling on held bytes: never crossed under two allocating threads, a request past it
// fails cleanly and explains itself, and the heap keeps working afterwards.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <utility>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "host/heap.h"
#include "host/host_api.h"
#include "memarena/memarena.h"

namespace memarena {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// Sets a ceiling on an emptied heap with fresh peaks; restores "no ceiling" afterwards.
class CeilingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ReleaseUnusedSpans();
    ASSERT_TRUE(SetCeiling(kCeiling));
    HostAllocator().ResetPeakStats();
  }
  void TearDown() override {
    EXPECT_TRUE(SetCeiling(0));
    const char* problem = host::CheckHeap();
    EXPECT_EQ(problem, nullptr) << problem;
  }
  static constexpr std::size_t kCeiling = 64 * kMiB;
};

TEST_F(CeilingTest, TwoThreadsUnderPressureNeverPushHeldPastTheCeiling) {
  Allocator& host = HostAllocator();
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> max_seen{0};
  std::atomic<std::uint64_t> failures{0};
  std::atomic<std::uint64_t> successes{0};
  std::thread sampler([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      const std::size_t held = host.GetStats().bytes_held;
      std::size_t seen = max_seen.load();
      while (held > seen && !max_seen.compare_exchange_weak(seen, held)) {
      }
      std::this_thread::yield();
    }
  });
  auto worker = [&](unsigned seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::pair<void*, std::size_t>> live;
    std::size_t live_bytes = 0;
    for (int op = 0; op < 6000; ++op) {
      // Each thread wants up to 48 MiB: together they press on the 64 MiB ceiling.
      if (live.empty() || (live_bytes < 48 * kMiB && rng() % 100 < 60)) {
        const std::size_t n = rng() % 4 == 0 ? 64 * 1024 + rng() % (3 * kMiB)
                                             : 1 + rng() % 8192;
        void* p = host.TryAllocate(n);
        if (p == nullptr) {
          ++failures;
          continue;
        }
        ++successes;
        std::memset(p, 0x3c, std::min<std::size_t>(n, 256));
        live.emplace_back(p, n);
        live_bytes += n;
      } else {
        const std::size_t i = rng() % live.size();
        host.Deallocate(live[i].first);
        live_bytes -= live[i].second;
        live[i] = live.back();
        live.pop_back();
      }
    }
    for (auto& [p, n] : live) host.Deallocate(p);
  };
  std::thread a(worker, 1u);
  std::thread b(worker, 2u);
  a.join();
  b.join();
  stop = true;
  sampler.join();
  const AllocatorStats s = host.GetStats();
  EXPECT_LE(max_seen.load(), kCeiling);
  EXPECT_LE(s.peak_bytes_held, kCeiling);
  EXPECT_GT(successes.load(), 5000u);
  // The workload is sized to reach the ceiling, so the limit really was exercised.
  EXPECT_GT(s.peak_bytes_held, kCeiling / 2);
  EXPECT_GE(s.num_ooms, failures.load());
}

TEST_F(CeilingTest, AnOverCeilingRequestFailsCleanlyAndSmallerOnesSucceedAfter) {
  Allocator& host = HostAllocator();
  const std::uint64_t ooms = host.GetStats().num_ooms;
  void* keep = host.Allocate(40 * kMiB);
  try {
    host.Allocate(32 * kMiB);
    FAIL() << "40 MiB + 32 MiB fit under a 64 MiB ceiling";
  } catch (const OutOfMemory& e) {
    const std::string what = e.what();
    for (const char* word : {"32.00 MiB", "requested", "in use", "held", "ceiling", "releasable",
                             "MEMARENA_CONF=ceiling", "SetCeiling", "ReleaseUnusedSpans"}) {
      EXPECT_NE(what.find(word), std::string::npos) << "lacks '" << word << "': " << what;
    }
  }
  EXPECT_EQ(host.TryAllocate(32 * kMiB), nullptr);
  EXPECT_EQ(host.GetStats().num_ooms, ooms + 2);
  EXPECT_LE(host.GetStats().peak_bytes_held, kCeiling);
  // Smaller requests still succeed, up to what the ceiling leaves.
  std::vector<void*> after;
  for (int i = 0; i < 20; ++i) after.push_back(host.Allocate(kMiB));
  for (int i = 0; i < 1000; ++i) after.push_back(host.Allocate(100));
  for (void* p : after) host.Deallocate(p);
  host.Deallocate(keep);
  void* now_fits = host.Allocate(60 * kMiB);  // after the frees, the big one fits
  host.Deallocate(now_fits);
}

// A size or alignment past what the heap can map fails before the ceiling is asked: the
// message must not send the user to raise it.
TEST_F(CeilingTest, ARequestNoBlockCanSpanSaysSoInsteadOfBlamingTheCeiling) {
  Allocator& host = HostAllocator();
  const std::size_t kMax = host::kMaxAllocationBytes;
  const std::pair<std::size_t, std::size_t> requests[] = {
      {kMax + 1, 16}, {std::size_t{1} << 62, 16}, {kMax - 8, 16}, {64, kMax}, {64, kMax << 4}};
  for (const auto& [bytes, alignment] : requests) {
    try {
      host.Allocate(bytes, alignment);
      FAIL() << bytes << " B aligned to " << alignment << " were handed out";
    } catch (const OutOfMemory& e) {
      const std::string what = e.what();
      for (const char* words : {"no block of that size and alignment fits in the 256.00 TiB",
                                "no memory was asked of the OS",
                                "Check how the size and alignment were computed"}) {
        EXPECT_NE(what.find(words), std::string::npos) << "lacks '" << words << "': " << what;
      }
      EXPECT_EQ(what.find("Raise the ceiling"), std::string::npos) << what;
    }
  }
  // A block that could exist is the ceiling's to refuse, and the message says that.
  EXPECT_EQ(host.TryAllocate(kMax / 2), nullptr);
  EXPECT_NE(host.DescribeFailure(kMax / 2, 16).find("would cross the ceiling"), std::string::npos);
}

TEST_F(CeilingTest, FreeSpansAndIdleCachesAreReleasedBeforeARequestFails) {
  Allocator& host = HostAllocator();
  // Fill most of the ceiling with small objects, then free them: they now sit in the
  // thread cache, the central lists and committed free spans, all counted as held.
  std::vector<void*> blocks;
  for (int i = 0; i < 7000; ++i) blocks.push_back(host.Allocate(7000));
  for (void* p : blocks) host.Deallocate(p);
  EXPECT_GT(host.GetStats().bytes_held, 40 * kMiB);
  // A large request needs that memory back: the heap releases and retries, no OOM.
  const std::uint64_t ooms = host.GetStats().num_ooms;
  void* big = host.Allocate(56 * kMiB);
  EXPECT_EQ(host.GetStats().num_ooms, ooms);
  EXPECT_LE(host.GetStats().peak_bytes_held, kCeiling);
  host.Deallocate(big);
}

TEST_F(CeilingTest, SetCeilingBelowWhatStaysHeldIsRefused) {
  void* keep = HostAllocator().Allocate(16 * kMiB);
  EXPECT_FALSE(SetCeiling(8 * kMiB));
  EXPECT_EQ(Ceiling(), kCeiling);
  EXPECT_TRUE(SetCeiling(32 * kMiB));
  EXPECT_EQ(Ceiling(), 32 * kMiB);
  HostAllocator().Deallocate(keep);
}

TEST_F(CeilingTest, HeldAboveTheThresholdReleasesFreeSpansBeforeTakingMore) {
  Allocator& host = HostAllocator();
  HostConfig config;
  config.ceiling = kCeiling;
  config.release_threshold_ratio = 0.5;
  host::ApplyConfig(config);
  const std::uint64_t releases = host.GetStats().num_releases;
  // 24 MiB in 1 MiB blocks, every other one freed: 12 MiB of committed free spans
  // that cannot serve a 2 MiB request. The 2 MiB requests cross 32 MiB = 0.5 x ceiling.
  std::vector<void*> blocks;
  for (int i = 0; i < 24; ++i) blocks.push_back(host.Allocate(kMiB));
  for (int i = 0; i < 24; i += 2) host.Deallocate(blocks[i]);
  std::vector<void*> big;
  for (int i = 0; i < 12; ++i) big.push_back(host.Allocate(2 * kMiB));
  const AllocatorStats s = host.GetStats();
  EXPECT_GT(s.num_releases, releases) << "crossing the threshold released nothing";
  EXPECT_LE(s.bytes_held, 12 * kMiB + 24 * kMiB + kMiB);
  for (void* p : big) host.Deallocate(p);
  for (int i = 1; i < 24; i += 2) host.Deallocate(blocks[i]);
  host::ApplyConfig(HostConfig{});
}

}  // namespace
}  // namespace memarena
