// The virtual-memory sources on their own: contiguous growth, commit and decommit with their
// contract checks, the host pages behind them, and the simulated source's log and refusals.
#include <gtest/gtest.h>

#include <cstring>

#include "arena/simulated_virtual_memory_source.h"
#include "memarena/virtual_memory_source.h"
#include "platform/os.h"

namespace memarena {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(HostVirtualMemorySource, ReservesGrowContiguouslyAndCommittedPagesAreWritable) {
  HostVirtualMemorySource source(64 * kMiB);
  const std::size_t page = platform::PageSize();
  EXPECT_EQ(source.Granularity(), page);
  auto* a = static_cast<char*>(source.Reserve(3 * page));
  auto* b = static_cast<char*>(source.Reserve(page + 1));  // rounds up to two pages
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(b, a + 3 * page);
  std::memset(a, 0x5a, 3 * page);
  std::memset(b, 0x6b, 2 * page);
  const VirtualMemoryStats s = source.VirtualStats();
  EXPECT_EQ(s.reserved_bytes, 64 * kMiB);
  EXPECT_EQ(s.used_bytes, 5 * page);
  EXPECT_EQ(s.committed_bytes, 5 * page);
  EXPECT_EQ(s.num_contract_violations, 0u);
}

TEST(HostVirtualMemorySource, DecommitGivesPagesBackAndRecommitReadsZeros) {
  HostVirtualMemorySource source(64 * kMiB);
  const std::size_t page = platform::PageSize();
  auto* a = static_cast<char*>(source.Reserve(4 * page));
  ASSERT_NE(a, nullptr);
  std::memset(a, 0x77, 4 * page);
  source.Decommit(a + page, 2 * page);
  EXPECT_EQ(source.VirtualStats().committed_bytes, 2 * page);
  EXPECT_EQ(a[0], 0x77);  // the neighbours keep their bytes
  EXPECT_EQ(a[3 * page], 0x77);
  ASSERT_TRUE(source.Commit(a + page, 2 * page));
  for (std::size_t i = page; i < 3 * page; ++i) ASSERT_EQ(a[i], 0) << "byte " << i;
  EXPECT_EQ(source.VirtualStats().num_contract_violations, 0u);
}

TEST(HostVirtualMemorySource, ReleaseLowersTheTopAndTheSpaceIsReused) {
  HostVirtualMemorySource source(64 * kMiB);
  const std::size_t page = platform::PageSize();
  void* a = source.Reserve(page);
  void* b = source.Reserve(2 * page);
  source.Release(b, 2 * page);
  EXPECT_EQ(source.VirtualStats().used_bytes, page);
  EXPECT_EQ(source.Reserve(page), b);
  source.Release(a, page);  // a hole below the top: the top stays
  EXPECT_EQ(source.VirtualStats().used_bytes, 2 * page);
  EXPECT_EQ(source.VirtualStats().committed_bytes, page);
}

TEST(HostVirtualMemorySource, BrokenContractsAreRefusedAndCounted) {
  HostVirtualMemorySource source(64 * kMiB);
  const std::size_t page = platform::PageSize();
  auto* a = static_cast<char*>(source.Reserve(2 * page));
  EXPECT_FALSE(source.Commit(a, page));                  // already committed
  EXPECT_FALSE(source.Commit(a + 2 * page, page));       // beyond what Reserve handed out
  EXPECT_FALSE(source.Commit(a + 1, page));              // unaligned
  source.Decommit(a, page);
  source.Decommit(a, page);                              // already decommitted
  source.Release(a + 2 * page, page);                    // never handed out
  EXPECT_EQ(source.VirtualStats().num_contract_violations, 5u);
}

TEST(HostVirtualMemorySource, ReserveBeyondTheReservationIsRefused) {
  HostVirtualMemorySource source(kMiB);
  EXPECT_EQ(source.Reserve(2 * kMiB), nullptr);
  EXPECT_NE(source.Reserve(kMiB), nullptr);
  EXPECT_EQ(source.Reserve(platform::PageSize()), nullptr);
}

TEST(HostVirtualMemorySource, BadGranularityAndSizeAreClearErrors) {
  EXPECT_THROW(HostVirtualMemorySource(kMiB, 3000), std::invalid_argument);
  EXPECT_THROW(HostVirtualMemorySource(0), std::invalid_argument);
}

TEST(SimulatedVirtualMemorySource, LogsEveryCommitAndDecommitAndRefusesOnDemand) {
  arena::SimulatedVirtualMemorySource source;
  const std::size_t g = source.Granularity();
  EXPECT_EQ(g, 2 * kMiB);
  const auto a = reinterpret_cast<std::uintptr_t>(source.Reserve(3 * kMiB));
  ASSERT_NE(a, 0u);
  source.Decommit(reinterpret_cast<void*>(a), g);
  source.FailNextCommits(1);
  EXPECT_FALSE(source.Commit(reinterpret_cast<void*>(a), g));
  EXPECT_TRUE(source.Commit(reinterpret_cast<void*>(a), g));
  const auto calls = source.calls();
  ASSERT_EQ(calls.size(), 4u);
  using K = arena::SimulatedVirtualMemorySource::CallKind;
  EXPECT_EQ(calls[0].kind, K::kCommit);
  EXPECT_EQ(calls[0].bytes, 2 * g);
  EXPECT_EQ(calls[1].kind, K::kDecommit);
  EXPECT_TRUE(calls[2].refused);
  EXPECT_FALSE(calls[3].refused);
  const VirtualMemoryStats s = source.VirtualStats();
  EXPECT_EQ(s.committed_bytes, 2 * g);
  EXPECT_EQ(s.num_refused_commits, 1u);
  EXPECT_EQ(s.num_contract_violations, 0u);
}

TEST(SimulatedVirtualMemorySource, CapacityRefusesCommitsBeyondIt) {
  arena::SimulatedVirtualMemorySource::Options options;
  options.capacity = 4 * kMiB;
  arena::SimulatedVirtualMemorySource source(options);
  EXPECT_NE(source.Reserve(4 * kMiB), nullptr);
  EXPECT_EQ(source.Reserve(2 * kMiB), nullptr);
  ASSERT_TRUE(source.Capacity().has_value());
  EXPECT_EQ(source.Capacity()->free_bytes, 0u);
}

}  // namespace
}  // namespace memarena
