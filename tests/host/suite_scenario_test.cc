// The test-suite scenario: 5,000 simulated test cases in one process, each allocating about
// 2 MiB of mixed sizes and freeing them, under a 1 GiB ceiling; once releasing between
// cases, once relying on threshold reclaim. No case may fail and held stays under the ceiling.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "host/heap.h"
#include "host/host_api.h"
#include "memarena/memarena.h"

namespace memarena {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr int kCases = 5000;

// One simulated test case: ~2 MiB of mixed sizes (many small, a few large), touched,
// then freed. The size mix varies by case so spans of many classes come and go.
void RunCase(Allocator& host, std::mt19937_64& rng, std::vector<void*>& blocks) {
  std::size_t total = 0;
  const std::size_t target = 2 * kMiB - kMiB / 8 + rng() % (kMiB / 4);
  const std::size_t small_cap = 64 + (rng() % 8) * 512;
  while (total < target) {
    const std::size_t n = rng() % 10 == 0 ? (16u << 10) + rng() % (512u << 10)
                                          : 1 + rng() % small_cap;
    void* p = host.Allocate(n);  // throws OutOfMemory on failure: the test then fails
    static_cast<unsigned char*>(p)[0] = 1;
    static_cast<unsigned char*>(p)[n - 1] = 2;
    blocks.push_back(p);
    total += n;
  }
  for (void* p : blocks) host.Deallocate(p);
  blocks.clear();
}

struct Outcome {
  std::size_t max_held = 0;
  AllocatorStats stats;
};

Outcome RunSuite(std::size_t ceiling, double ratio, bool release_between_cases) {
  Allocator& host = HostAllocator();
  ReleaseUnusedSpans();
  HostConfig config;
  config.ceiling = ceiling;
  config.release_threshold_ratio = ratio;
  host::ApplyConfig(config);
  host.ResetPeakStats();
  std::mt19937_64 rng(99);
  std::vector<void*> blocks;
  blocks.reserve(20000);
  Outcome outcome;
  for (int i = 0; i < kCases; ++i) {
    RunCase(host, rng, blocks);
    if (release_between_cases) ReleaseUnusedSpans();
    if (i % 250 == 0) outcome.max_held = std::max(outcome.max_held, host.GetStats().bytes_held);
  }
  outcome.stats = host.GetStats();
  host::ApplyConfig(HostConfig{});
  return outcome;
}

// The suite under a 1 GiB ceiling, releasing between cases or not: no case fails, and held
// never passes the ceiling.
Outcome RunSuiteExpectingNoFailure(bool release_between_cases) {
  const std::uint64_t ooms = HostAllocator().GetStats().num_ooms;
  const Outcome o = RunSuite(1024 * kMiB, 0.8, release_between_cases);
  EXPECT_EQ(o.stats.num_ooms, ooms);
  EXPECT_LE(o.stats.peak_bytes_held, 1024 * kMiB);
  EXPECT_LE(o.max_held, 1024 * kMiB);
  return o;
}

TEST(TestSuiteScenario, ReleasingBetweenCasesNeverFails) {
  const Outcome o = RunSuiteExpectingNoFailure(true);
  EXPECT_GT(o.stats.num_releases, static_cast<std::uint64_t>(kCases) / 2);
  const char* problem = host::CheckHeap();
  EXPECT_EQ(problem, nullptr) << problem;
}

TEST(TestSuiteScenario, ThresholdReclaimAloneNeverFails) { RunSuiteExpectingNoFailure(false); }

// The same suite under a ceiling only a few cases wide: here threshold reclaim (and the
// release-and-retry under pressure) must do real work for no case to fail.
TEST(TestSuiteScenario, ThresholdReclaimUnderATightCeilingNeverFails) {
  const AllocatorStats before = HostAllocator().GetStats();
  const Outcome o = RunSuite(12 * kMiB, 0.5, false);
  EXPECT_EQ(o.stats.num_ooms, before.num_ooms);
  EXPECT_LE(o.stats.peak_bytes_held, 12 * kMiB);
  EXPECT_GT(o.stats.num_releases, before.num_releases) << "the threshold never triggered";
}

}  // namespace
}  // namespace memarena
