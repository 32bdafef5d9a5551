// Sampled heap profiles: estimated live bytes track the true live bytes (>= 100 MiB live),
// freed samples leave the table, and the written file has gperftools' heap-profile form.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "memarena/memarena.h"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

struct Block {
  void* ptr;
  std::size_t bytes;
};

// Mixed sizes (16 B to 256 KiB, log-uniform, plus a few 2 MiB blocks) until `live` bytes.
std::vector<Block> AllocateMixed(std::size_t live, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> log_size(std::log(16.0), std::log(256.0 * 1024));
  std::vector<Block> blocks;
  std::size_t total = 0;
  while (total < live) {
    const std::size_t bytes = blocks.size() % 97 == 0
                                  ? 2 * kMiB
                                  : static_cast<std::size_t>(std::exp(log_size(rng)));
    blocks.push_back({memarena::HostAllocator().Allocate(bytes), bytes});
    total += bytes;
  }
  return blocks;
}

void FreeAll(std::vector<Block>& blocks) {
  for (const Block& b : blocks) memarena::HostAllocator().Deallocate(b.ptr);
  blocks.clear();
}

TEST(HeapProfile, EstimatedLiveBytesWithinTenPercentOfTrueOnAQuarterGiB) {
  memarena::SetHeapSampleInterval(memarena::kDefaultHeapSampleInterval);
  // Churn first: samples of freed blocks must leave the table.
  std::vector<Block> churn = AllocateMixed(64 * kMiB, 1);
  FreeAll(churn);
  std::vector<Block> live = AllocateMixed(256 * kMiB, 2);
  std::size_t true_bytes = 0;
  for (const Block& b : live) true_bytes += b.bytes;
  const memarena::HeapProfileTotals totals = memarena::SampledHeapTotals();
  const double error = totals.estimated_bytes / static_cast<double>(true_bytes) - 1.0;
  RecordProperty("estimate_error_percent", std::to_string(error * 100.0));
  std::printf("live %zu B, estimated %.0f B from %zu samples: error %+.2f %%\n", true_bytes,
              totals.estimated_bytes, totals.samples, error * 100.0);
  EXPECT_GT(totals.samples, 200u);
  EXPECT_LT(std::abs(error), 0.10);
  FreeAll(live);
  EXPECT_EQ(memarena::SampledHeapTotals().samples, 0u);
  memarena::SetHeapSampleInterval(0);
}

TEST(HeapProfile, WritesTheHeapProfileTextFormat) {
  memarena::SetHeapSampleInterval(64 * 1024);
  std::vector<Block> live = AllocateMixed(16 * kMiB, 3);
  const std::string path = ::testing::TempDir() + "memarena_profile_%p.heap";
  memarena::WriteHeapProfile(path);
  const std::string expanded = ::testing::TempDir() + "memarena_profile_" +
                               std::to_string(getpid()) + ".heap";
  std::ifstream in(expanded);
  ASSERT_TRUE(in) << expanded;
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("heap profile: ", 0), 0u) << header;
  EXPECT_NE(header.find("] @ heapprofile"), std::string::npos) << header;
  std::string bucket;
  std::getline(in, bucket);
  EXPECT_NE(bucket.find("] @ 0x"), std::string::npos) << bucket;
  std::stringstream rest;
  rest << in.rdbuf();
  EXPECT_NE(rest.str().find("\nMAPPED_LIBRARIES:\n"), std::string::npos);
  FreeAll(live);
  std::remove(expanded.c_str());  // one file per process id: runs would pile them up
  memarena::SetHeapSampleInterval(0);
  EXPECT_THROW(memarena::WriteHeapProfile(path), std::runtime_error);
}

// A thread that allocates nothing small (a worker handing out tensors) is sampled too: the
// countdown lives in the thread cache, which its first large allocation builds.
TEST(HeapProfile, AThreadThatOnlyAllocatesLargeBlocksIsSampled) {
  memarena::SetHeapSampleInterval(64 * 1024);
  const std::size_t samples_before = memarena::SampledHeapTotals().samples;
  std::size_t samples_while_live = 0;
  std::thread worker([&samples_while_live] {
    std::vector<void*> tensors;
    for (int i = 0; i < 16; ++i) tensors.push_back(memarena::HostAllocator().Allocate(kMiB));
    samples_while_live = memarena::SampledHeapTotals().samples;
    for (void* p : tensors) memarena::HostAllocator().Deallocate(p);
  });
  worker.join();
  // Each 1 MiB block is 16 mean intervals: sampled unless a draw exceeds 1 MiB (e^-16).
  EXPECT_GE(samples_while_live, samples_before + 15);
  EXPECT_EQ(memarena::SampledHeapTotals().samples, samples_before);
  memarena::SetHeapSampleInterval(0);
}

}  // namespace
