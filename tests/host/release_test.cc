// ReleaseUnusedSpans() really gives memory back: after a workload of >= 512 MiB in mixed
// sizes is freed, the pages that held it are no longer resident (>= 90% of them dropped).
// Residency is read with mincore over the workload's own pages, not from the process RSS:
// under a sanitizer the RSS also holds shadow memory (1/8 of what ASAN sees touched, several
// times that under TSAN) that only the sanitizer can free, so an RSS-based bar depends on the
// machine and the sanitizer instead of on the allocator.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "memarena/memarena.h"
#include "platform/os.h"
#include "support/resident_pages.h"

namespace memarena {
namespace {

using testing::Block;
using testing::ResidentBytesOf;

TEST(Release, ResidentMemoryDropsAfterReleaseUnusedSpans) {
  Allocator& host = HostAllocator();
  ReleaseUnusedSpans();
  std::mt19937_64 rng(2024);
  std::vector<Block> blocks;
  blocks.reserve(400000);
  constexpr std::size_t kTarget = std::size_t{512} << 20;
  std::size_t total = 0;
  while (total < kTarget) {
    // Half the bytes in small objects (16 B - 4 KiB), half in large (64 KiB - 2 MiB).
    const bool small = rng() % 100 < 97;
    const std::size_t n = small ? 16 + rng() % 4081 : (64u << 10) + rng() % (2u << 20);
    void* p = host.Allocate(n);
    std::memset(p, 0x77, n);  // resident, not just reserved
    blocks.push_back({p, n});
    total += n;
  }
  const std::size_t resident_peak = ResidentBytesOf(blocks);
  const std::size_t rss_peak = platform::ResidentBytes();
  const std::uint64_t released_before = host.GetStats().bytes_released;
  for (const Block& b : blocks) host.Deallocate(const_cast<void*>(b.ptr));
  // Without a ceiling the page heap already returns free spans beyond a bound as they
  // are freed; ReleaseUnusedSpans() returns the rest.
  const std::size_t released = ReleaseUnusedSpans();
  const std::uint64_t released_total = host.GetStats().bytes_released - released_before;
  const std::size_t resident_after = ResidentBytesOf(blocks);
  const std::size_t rss_after = platform::ResidentBytes();
  ASSERT_GE(resident_peak, kTarget * 9 / 10) << "the workload's memory is not resident";
  const std::size_t dropped = resident_peak - std::min(resident_peak, resident_after);
  EXPECT_GE(dropped * 10, resident_peak * 9)
      << "workload pages resident: peak " << resident_peak << ", after " << resident_after
      << "; released " << released << "; process RSS (for reference) " << rss_peak << " -> "
      << rss_after;
  EXPECT_GE(released_total, kTarget * 9 / 10);
  const AllocatorStats s = host.GetStats();
  EXPECT_EQ(s.bytes_releasable, 0u);
  EXPECT_GT(s.num_releases, 0u);
  EXPECT_GE(s.bytes_released, released);
}

// release_keep: ReleaseUnusedSpans() leaves that much of the free spans committed (and
// resident), so a suite releasing after every test does not fault its working set in again;
// a second call finds nothing to do, and keep 0 returns the rest.
TEST(Release, ReleaseKeepLeavesAWarmWorkingSetCommitted) {
  Allocator& host = HostAllocator();
  constexpr std::size_t kBlock = std::size_t{512} << 10;
  constexpr std::size_t kKeep = std::size_t{4} << 20;
  constexpr int kPairs = 64;
  ReleaseUnusedSpans();
  SetReleaseKeep(kKeep);
  // Every other block stays live, so the freed ones cannot merge into one span.
  std::vector<Block> freed;
  std::vector<void*> live;
  for (int i = 0; i < kPairs; ++i) {
    void* a = host.Allocate(kBlock);
    std::memset(a, 0x5a, kBlock);
    freed.push_back({a, kBlock});
    live.push_back(host.Allocate(kBlock));
  }
  for (const Block& b : freed) host.Deallocate(const_cast<void*>(b.ptr));
  ASSERT_GE(host.GetStats().bytes_releasable, 2 * kKeep)
      << "the freed spans should stay committed until released";
  const std::size_t released = ReleaseUnusedSpans();
  const AllocatorStats kept = host.GetStats();
  EXPECT_LE(kept.bytes_releasable, kKeep);
  EXPECT_GE(kept.bytes_releasable + kBlock, kKeep) << "released " << released;
  EXPECT_GE(ResidentBytesOf(freed) + kBlock, kKeep) << "the kept spans stay resident";
  EXPECT_EQ(ReleaseUnusedSpans(), 0u) << "the kept spans are not touched again";
  SetReleaseKeep(0);
  EXPECT_GE(ReleaseUnusedSpans() + kBlock, kKeep);
  EXPECT_EQ(host.GetStats().bytes_releasable, 0u);
  for (void* p : live) host.Deallocate(p);
  ReleaseUnusedSpans();
}

// Relief (flushing the caches, releasing every free span) cannot make room for more than a
// block can span, so such a request leaves the free spans committed: CPython's tests ask for
// sizes like 2^63 on purpose, between real work, and each ask used to return them all.
TEST(Release, ARequestNoBlockCanSpanReleasesNothing) {
  Allocator& host = HostAllocator();
  constexpr std::size_t kBlock = std::size_t{2} << 20;
  void* live = host.Allocate(kBlock);
  void* freed = host.Allocate(kBlock);
  std::memset(freed, 0x5a, kBlock);
  host.Deallocate(freed);
  const AllocatorStats before = host.GetStats();
  ASSERT_GE(before.bytes_releasable, kBlock) << "the freed span should stay committed";
  for (const std::size_t bytes : {(std::size_t{1} << 48) + 1, std::size_t{1} << 62, SIZE_MAX}) {
    EXPECT_EQ(host.TryAllocate(bytes), nullptr) << bytes;
  }
  const AllocatorStats after = host.GetStats();
  EXPECT_EQ(after.bytes_releasable, before.bytes_releasable);
  EXPECT_EQ(after.bytes_released, before.bytes_released) << "a release ran";
  EXPECT_EQ(after.num_ooms, before.num_ooms + 3) << "each is still an out-of-memory event";
  host.Deallocate(live);
  ReleaseUnusedSpans();
}

}  // namespace
}  // namespace memarena
