// LimitingAllocator and StatisticsAllocator beyond the conformance suite: exact requested
// bytes, the limit counted at usable size and held under concurrency, the diagnostics and
// whose knob they name, and what a stack of adaptors each counts.
#include <gtest/gtest.h>

#include <atomic>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "memarena/adaptors.h"
#include "memarena/arena.h"
#include "memarena/host.h"

namespace memarena {
namespace {

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * kKiB;

std::string FailureText(Allocator& allocator, std::size_t bytes) {
  try {
    allocator.Allocate(bytes);
  } catch (const OutOfMemory& e) {
    return e.what();
  }
  ADD_FAILURE() << "a request of " << bytes << " bytes succeeded";
  return "";
}

// An allocator that is always full and whose diagnostic text finds no memory, as a
// std::string from a heap at its ceiling would not.
class FullAllocatorWithoutRoomForItsText final : public Allocator {
 public:
  void ResetPeakStats() override {}
  std::size_t ReleaseUnusedSpans() override { return 0; }
  AllocatorKind kind() const noexcept override { return AllocatorKind::kHost; }
  std::string_view name() const noexcept override { return "full"; }
  std::string DescribeFailure(std::size_t, std::size_t) const override {
    throw std::bad_alloc();
  }

 private:
  void* DoAllocate(std::size_t, std::size_t, StreamHandle) noexcept override { return nullptr; }
  FreeResult DoDeallocate(void*, StreamHandle) noexcept override { return FreeResult::kNotOwned; }
  std::size_t DoUsableSize(const void*) const noexcept override { return 0; }
  AllocatorStats DoGetStats() const override { return AllocatorStats{}; }
};

// Allocate's OutOfMemory names the caller's request even when DescribeFailure's text cannot
// be allocated: the message is then written into the exception object.
TEST(Allocator, OutOfMemoryNamesTheRequestWhenTheDiagnosticFindsNoMemory) {
  FullAllocatorWithoutRoomForItsText full;
  const std::string text = FailureText(full, 4 * kMiB);
  EXPECT_NE(text.find("full could not allocate 4.00 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("Raise the allocator's limit"), std::string::npos) << text;
}

TEST(StatisticsAllocator, CountsExactlyTheRequestedBytesNotTheUpstreamsRounding) {
  BfcArena arena(std::make_shared<HostMemorySource>());
  StatisticsAllocator statistics(arena);
  const std::vector<std::size_t> sizes = {1, 100, 1000, 4097, 3 * kMiB + 5};
  std::vector<void*> blocks;
  std::size_t requested = 0;
  std::size_t usable = 0;
  for (std::size_t size : sizes) {
    blocks.push_back(statistics.Allocate(size));
    requested += size;
    usable += arena.UsableSize(blocks.back());
    EXPECT_EQ(statistics.RequestedSize(blocks.back()), size);
  }
  AllocatorStats s = statistics.GetStats();
  EXPECT_EQ(s.bytes_requested, requested);
  EXPECT_EQ(s.peak_bytes_requested, requested);
  EXPECT_EQ(s.bytes_in_use, usable);
  EXPECT_GT(s.bytes_in_use, s.bytes_requested) << "the arena rounds to 256 B";
  EXPECT_EQ(s.num_allocs, sizes.size());

  statistics.Deallocate(blocks[3]);
  s = statistics.GetStats();
  EXPECT_EQ(s.bytes_requested, requested - 4097);
  EXPECT_EQ(s.peak_bytes_requested, requested);
  EXPECT_EQ(statistics.RequestedSize(blocks[3]), 0u) << "a freed block is no longer known";
  statistics.ResetPeakStats();
  EXPECT_EQ(statistics.GetStats().peak_bytes_requested, requested - 4097);
  for (std::size_t i : {0, 1, 2, 4}) statistics.Deallocate(blocks[i]);
  s = statistics.GetStats();
  EXPECT_EQ(s.bytes_requested, 0u);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.num_frees, sizes.size());
}

TEST(StatisticsAllocator, ReportsTheUpstreamsLimitAndDiagnostic) {
  ArenaConfig config;
  config.max_mem = 4 * kMiB;
  BfcArena arena(std::make_shared<HostMemorySource>(), config);
  StatisticsAllocator statistics(arena);
  EXPECT_EQ(statistics.GetStats().limit_bytes, 4 * kMiB);
  const std::string what = FailureText(statistics, 8 * kMiB);
  EXPECT_NE(what.find("bfc_arena"), std::string::npos) << what;
  EXPECT_NE(what.find("max_mem"), std::string::npos) << what;
  EXPECT_EQ(statistics.GetStats().num_ooms, 1u);
  EXPECT_EQ(statistics.name(), "statistics(bfc_arena(host_mmap))");
}

TEST(LimitingAllocator, FailsPastTheLimitWithItsOwnDiagnosticThenRecovers) {
  LimitingAllocator limiting(HostAllocator(), 1 * kMiB);
  void* half = limiting.Allocate(512 * kKiB);
  EXPECT_EQ(limiting.TryAllocate(600 * kKiB), nullptr);
  const std::string what = FailureText(limiting, 600 * kKiB);
  for (const char* word : {"limiting(host)", "600.00 KiB", "in use 512.00 KiB", "held",
                           "limit 1.00 MiB", "LimitingAllocator's limit"}) {
    EXPECT_NE(what.find(word), std::string::npos) << "lacks '" << word << "': " << what;
  }
  AllocatorStats s = limiting.GetStats();
  EXPECT_EQ(s.num_ooms, 2u);
  EXPECT_EQ(s.limit_bytes, 1 * kMiB);
  EXPECT_EQ(s.bytes_held, s.bytes_in_use);
  limiting.Deallocate(half);
  void* fits = limiting.Allocate(600 * kKiB);
  EXPECT_NE(fits, nullptr);
  limiting.Deallocate(fits);
  EXPECT_EQ(limiting.GetStats().bytes_in_use, 0u);
  EXPECT_LE(limiting.GetStats().peak_bytes_held, 1 * kMiB);
}

TEST(LimitingAllocator, CountsTheUpstreamsUsableSizeAgainstTheLimit) {
  BfcArena arena(std::make_shared<HostMemorySource>());  // rounds every request to 256 B
  LimitingAllocator limiting(arena, 1000);
  EXPECT_EQ(limiting.TryAllocate(900), nullptr) << "900 B takes 1 KiB of the arena";
  EXPECT_EQ(arena.GetStats().bytes_in_use, 0u) << "the refused block went back upstream";
  const std::string what = FailureText(limiting, 900);
  EXPECT_NE(what.find("limit of 1000 B"), std::string::npos) << what;
  void* p = limiting.Allocate(700);
  EXPECT_EQ(limiting.GetStats().bytes_in_use, 768u);
  limiting.Deallocate(p);
}

TEST(LimitingAllocator, AnUpstreamFailureKeepsTheUpstreamsDiagnostic) {
  ArenaConfig config;
  config.max_mem = 2 * kMiB;
  BfcArena arena(std::make_shared<HostMemorySource>(), config);
  LimitingAllocator limiting(arena, 64 * kMiB);
  const std::string what = FailureText(limiting, 4 * kMiB);
  EXPECT_NE(what.find("bfc_arena"), std::string::npos) << what;
  EXPECT_EQ(what.find("LimitingAllocator"), std::string::npos) << what;
  EXPECT_EQ(limiting.GetStats().num_ooms, 1u);
}

TEST(LimitingAllocator, ZeroIsNotALimit) {
  EXPECT_THROW(LimitingAllocator(HostAllocator(), 0), ConfigError);
}

TEST(LimitingAllocator, ConcurrentRequestsNeverPassTheLimitTogether) {
  constexpr std::size_t kLimit = 4 * kMiB;
  constexpr std::size_t kBlock = 64 * kKiB;
  LimitingAllocator limiting(HostAllocator(), kLimit);
  std::atomic<std::size_t> granted{0};
  auto worker = [&] {
    std::vector<void*> mine;
    for (int round = 0; round < 50; ++round) {
      while (void* p = limiting.TryAllocate(kBlock)) mine.push_back(p);
      for (void* p : mine) limiting.Deallocate(p);
      granted += mine.size();
      mine.clear();
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  const AllocatorStats s = limiting.GetStats();
  EXPECT_LE(s.peak_bytes_held, kLimit);
  EXPECT_GE(s.peak_bytes_held, kLimit - 4 * kBlock) << "the limit was reached";
  EXPECT_EQ(s.num_allocs, granted.load());
  EXPECT_EQ(s.bytes_in_use, 0u);
}

TEST(AdaptorStack, EachLayerCountsWhatPassesThroughIt) {
  BfcArena arena(std::make_shared<HostMemorySource>());
  StatisticsAllocator statistics(arena);
  LimitingAllocator limiting(statistics, 1 * kMiB);
  EXPECT_EQ(limiting.name(), "limiting(statistics(bfc_arena(host_mmap)))");
  void* p = limiting.Allocate(1000);
  EXPECT_EQ(limiting.TryAllocate(2 * kMiB), nullptr);
  EXPECT_EQ(statistics.GetStats().num_allocs, 1u) << "the limit refused before the upstream";
  EXPECT_EQ(statistics.GetStats().num_ooms, 0u);
  EXPECT_EQ(statistics.GetStats().bytes_requested, 1000u);
  EXPECT_EQ(limiting.GetStats().bytes_requested, 1000u);
  EXPECT_EQ(limiting.GetStats().bytes_in_use, 1024u);
  EXPECT_EQ(limiting.GetStats().num_ooms, 1u);
  limiting.Deallocate(p);
  EXPECT_EQ(statistics.GetStats().num_frees, 1u);
  EXPECT_EQ(arena.GetStats().bytes_in_use, 0u);
}

}  // namespace
}  // namespace memarena
