// Stream-ordered reuse on the CPU: a fake fence stands in for CUDA events, so the rule
// "freed on A, reused on B only after A's fence completed" is tested without a GPU.
#include <map>
#include <mutex>

#include "arena_test_util.h"

namespace memarena::testing {
namespace {

class FakeFence final : public StreamFence {
 public:
  std::uint64_t Record(StreamHandle stream) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    return ++recorded_[stream];
  }
  bool HasCompleted(StreamHandle stream, std::uint64_t seq) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    return seq <= completed_[stream];
  }
  // Everything queued on `stream` so far has run.
  void Drain(StreamHandle stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    completed_[stream] = recorded_[stream];
  }

 private:
  std::mutex mutex_;
  std::map<StreamHandle, std::uint64_t> recorded_;
  std::map<StreamHandle, std::uint64_t> completed_;
};

constexpr StreamHandle kA = 0xa0;
constexpr StreamHandle kB = 0xb0;

TEST(ArenaStreams, TheSameStreamReusesAtOnce) {
  auto fence = std::make_shared<FakeFence>();
  SimulatedArena t({}, {}, fence);
  void* p = t.arena->TryAllocateOnStream(4096, 256, kA);
  t.arena->DeallocateOnStream(p, kA);
  EXPECT_EQ(t.arena->TryAllocateOnStream(4096, 256, kA), p);
}

TEST(ArenaStreams, AnotherStreamWaitsForTheFence) {
  auto fence = std::make_shared<FakeFence>();
  SimulatedArena t({}, {}, fence);
  void* p = t.arena->TryAllocateOnStream(4096, 256, kA);
  t.arena->DeallocateOnStream(p, kA);
  void* q = t.arena->TryAllocateOnStream(4096, 256, kB);
  EXPECT_NE(q, p) << "B reused memory A may still be using";
  void* r = t.arena->TryAllocate(4096);  // no stream: also must wait
  EXPECT_NE(r, p);
  fence->Drain(kA);
  void* s = t.arena->TryAllocateOnStream(4096, 256, kB);
  EXPECT_EQ(s, p) << "A's work completed, so B may reuse the chunk";
  for (void* x : {q, r, s}) t.arena->Deallocate(x);
}

TEST(ArenaStreams, PlainDeallocateUsesTheAllocationStream) {
  auto fence = std::make_shared<FakeFence>();
  SimulatedArena t({}, {}, fence);
  void* p = t.arena->TryAllocateOnStream(8192, 256, kA);
  t.arena->Deallocate(p);
  void* q = t.arena->TryAllocateOnStream(8192, 256, kB);
  EXPECT_NE(q, p);
  EXPECT_EQ(t.arena->TryAllocateOnStream(8192, 256, kA), p);
  t.arena->Deallocate(q);
}

TEST(ArenaStreams, RegionsWithPendingFreesAreNotReleased) {
  auto fence = std::make_shared<FakeFence>();
  ArenaConfig config;
  config.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
  SimulatedArena t(config, {}, fence);
  void* p = t.arena->TryAllocateOnStream(kMiB, 256, kA);
  t.arena->DeallocateOnStream(p, kA);
  EXPECT_EQ(t.arena->ReleaseUnusedSpans(), 0u) << "A may still be using the region";
  EXPECT_EQ(t.arena->GetStats().bytes_releasable, 0u);
  fence->Drain(kA);
  EXPECT_EQ(t.arena->GetStats().bytes_releasable, kMiB);
  EXPECT_EQ(t.arena->ReleaseUnusedSpans(), kMiB);
  EXPECT_EQ(t.source->held(), 0u);
}

TEST(ArenaStreams, WithoutAFenceStreamsAreIgnored) {
  SimulatedArena t;
  void* p = t.arena->TryAllocateOnStream(4096, 256, kA);
  t.arena->DeallocateOnStream(p, kA);
  EXPECT_EQ(t.arena->TryAllocateOnStream(4096, 256, kB), p);
}

TEST(ArenaStreams, FreeNeighboursOnDifferentStreamsStaySeparate) {
  auto fence = std::make_shared<FakeFence>();
  ArenaConfig config;
  config.max_dead_bytes_per_chunk = 0;
  SimulatedArena t(config, {}, fence);
  void* a = t.arena->TryAllocateOnStream(4096, 256, kA);
  void* b = t.arena->TryAllocateOnStream(4096, 256, kB);
  void* guard = t.arena->TryAllocateOnStream(4096, 256, kA);
  t.arena->DeallocateOnStream(a, kA);
  t.arena->DeallocateOnStream(b, kB);
  // A merged 8 KiB chunk would let stream A reuse B's bytes before B's fence.
  void* c = t.arena->TryAllocateOnStream(8192, 256, kA);
  EXPECT_NE(c, a);
  fence->Drain(kB);
  fence->Drain(kA);
  for (void* x : {c, guard}) t.arena->Deallocate(x);
}

}  // namespace
}  // namespace memarena::testing
