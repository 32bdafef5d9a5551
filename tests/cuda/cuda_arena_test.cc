// BfcArena on real device memory: the conformance suite, ORT behaviours, two-stream reuse
// through CUDA events, and the PyTorch pluggable-allocator functions. Every test skips with
// the runtime's reason when no device is usable.
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "conformance/conformance_suite.h"
#include "memarena/cuda.h"

namespace memarena {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

class DeviceEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string reason;
    if (cuda::DeviceCount(&reason) == 0) GTEST_SKIP() << "no usable CUDA device: " << reason;
  }
};
::testing::Environment* const kDeviceEnvironment =
    ::testing::AddGlobalTestEnvironment(new DeviceEnvironment);

struct DeviceArenaFactory {
  static std::shared_ptr<Allocator> Make(std::size_t limit_bytes) {
    ArenaConfig config;
    config.max_mem = limit_bytes;
    return cuda::MakeDeviceArena(0, config);
  }
  static constexpr std::size_t kMaxAlignment = kMiB;
  static constexpr bool kHasLimit = true;
  static constexpr bool kAddressable = false;
};

TEST(DeviceArena, SizesOneTo1023AreRoundedAndUsable) {
  auto arena = cuda::MakeDeviceArena(0);
  std::vector<void*> ptrs;
  for (std::size_t n = 1; n < 1024; ++n) {
    void* p = arena->Allocate(n);
    ASSERT_EQ(arena->UsableSize(p), (n + 255) / 256 * 256);
    ptrs.push_back(p);
  }
  ASSERT_EQ(cudaMemset(ptrs.back(), 0x5a, 1023), cudaSuccess);
  for (void* p : ptrs) arena->Deallocate(p);
  void* again = arena->Allocate(1);
  EXPECT_EQ(again, ptrs.front()) << "free chunks did not coalesce";
  EXPECT_EQ(arena->GetStats().num_arena_extensions, 1u);
}

TEST(DeviceArena, BothOrtMessagesAndRecovery) {
  ArenaConfig config;
  config.max_mem = 64 * kMiB;
  auto limited = cuda::MakeDeviceArena(0, config);
  try {
    limited->Allocate(128 * kMiB);
    FAIL() << "a request above max_mem succeeded";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("Available memory of"), std::string::npos) << e.what();
  }
  EXPECT_NE(limited->Allocate(kMiB), nullptr);
  ArenaConfig exact;
  exact.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
  auto unlimited = cuda::MakeDeviceArena(0, exact);
  const std::size_t total = unlimited->source().Capacity().value().total_bytes;
  try {
    unlimited->Allocate(total + 1024 * kMiB);
    FAIL() << "a request above the device's memory succeeded";
  } catch (const OutOfMemory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Failed to allocate memory for requested buffer"), std::string::npos) << what;
    EXPECT_NE(what.find("source free"), std::string::npos) << what;
  }
  EXPECT_NE(unlimited->Allocate(kMiB), nullptr);
  EXPECT_EQ(unlimited->GetStats().bytes_held, kMiB);
}

TEST(DeviceArena, ShrinkCountsUnderEachStrategy) {
  auto doubling = cuda::MakeDeviceArena(0);
  std::vector<void*> p;
  for (int i = 0; i < 4; ++i) p.push_back(doubling->Allocate(kMiB));
  EXPECT_EQ(doubling->GetStats().bytes_held, 7 * kMiB);  // 1 + 2 + 4 MiB regions
  for (void* q : p) doubling->Deallocate(q);
  EXPECT_EQ(doubling->ReleaseUnusedSpans(), 6 * kMiB);
  EXPECT_EQ(doubling->GetStats().num_arena_shrinkages, 2u);
  EXPECT_EQ(doubling->GetStats().num_arena_extensions, 1u);

  ArenaConfig config;
  config.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
  auto exact = cuda::MakeDeviceArena(0, config);
  void* a = exact->Allocate(3 * kMiB);
  void* b = exact->Allocate(kMiB);
  exact->Deallocate(a);
  EXPECT_EQ(exact->ReleaseUnusedSpans(), 3 * kMiB);
  exact->Deallocate(b);
  EXPECT_EQ(exact->ReleaseUnusedSpans(), kMiB);
  EXPECT_EQ(exact->GetStats().num_arena_shrinkages, 2u);
  EXPECT_EQ(exact->GetStats().bytes_held, 0u);
}

TEST(DeviceArena, NextPowerOfTwoStopsAtTheCap) {
  ArenaConfig config;
  config.max_power_of_two_extend_bytes = 4 * kMiB;
  auto arena = cuda::MakeDeviceArena(0, config);
  for (int i = 0; i < 15; ++i) arena->Allocate(kMiB);  // regions 1, 2, 4, 4, 4 MiB
  EXPECT_EQ(arena->GetStats().bytes_held, 15 * kMiB);
  EXPECT_EQ(arena->GetStats().num_arena_extensions, 5u);
  EXPECT_NE(arena->Allocate(9 * kMiB), nullptr);  // above the cap: a 16 MiB region
  EXPECT_EQ(arena->GetStats().bytes_held, 31 * kMiB);
}

TEST(DeviceArena, SameAsRequestedReusesFreedChunks) {
  ArenaConfig config;
  config.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
  auto arena = cuda::MakeDeviceArena(0, config);
  for (int run = 0; run < 50; ++run) {
    std::vector<void*> p;
    for (std::size_t size : {4 * kMiB, kMiB + 4096, std::size_t{65536}}) p.push_back(arena->Allocate(size));
    for (void* q : p) arena->Deallocate(q);
  }
  EXPECT_EQ(arena->GetStats().num_arena_extensions, 3u);
  EXPECT_EQ(arena->GetStats().bytes_held, 5 * kMiB + 4096 + 65536);
}

void BlockUntilSet(void* flag) {
  auto* f = static_cast<std::atomic<bool>*>(flag);
  while (!f->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(DeviceArena, TwoStreamReuseWaitsForTheEvent) {
  auto arena = cuda::MakeDeviceArena(0);
  cudaStream_t a = nullptr;
  cudaStream_t b = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  std::atomic<bool> go{false};
  ASSERT_EQ(cudaLaunchHostFunc(a, BlockUntilSet, &go), cudaSuccess);  // A is busy
  void* p = arena->TryAllocateOnStream(kMiB, 256, cuda::ToStreamHandle(a));
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(cudaMemsetAsync(p, 1, kMiB, a), cudaSuccess);
  arena->DeallocateOnStream(p, cuda::ToStreamHandle(a));
  EXPECT_EQ(arena->TryAllocateOnStream(kMiB, 256, cuda::ToStreamHandle(a)), p)
      << "the same stream reuses at once";
  arena->DeallocateOnStream(p, cuda::ToStreamHandle(a));
  void* q = arena->TryAllocateOnStream(kMiB, 256, cuda::ToStreamHandle(b));
  EXPECT_NE(q, p) << "stream B got memory stream A is still using";
  go = true;
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  arena->DeallocateOnStream(q, cuda::ToStreamHandle(b));
  ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  EXPECT_EQ(arena->TryAllocateOnStream(kMiB, 256, cuda::ToStreamHandle(b)), p)
      << "A's event completed, so B reuses the chunk";
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}

TEST(DeviceArena, ConcurrentThreads) {
  auto arena = cuda::MakeDeviceArena(0);
  auto worker = [&](unsigned seed) {
    std::vector<void*> mine;
    for (unsigned i = 0; i < 3000; ++i) {
      mine.push_back(arena->Allocate(1 + (seed * 7919u + i * 104729u) % (256 * 1024)));
      if (mine.size() > 64) {
        for (void* p : mine) arena->Deallocate(p);
        mine.clear();
      }
    }
    for (void* p : mine) arena->Deallocate(p);
  };
  std::thread t1(worker, 1u), t2(worker, 2u), t3(worker, 3u);
  t1.join();
  t2.join();
  t3.join();
  EXPECT_EQ(arena->GetStats().bytes_in_use, 0u);
}

TEST(PluggableAbi, MallocFreeAndRelease) {
  void* p = memarena_cuda_malloc(4096, 0, nullptr);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(cudaMemset(p, 0, 4096), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  memarena_cuda_free(p, 4096, 0, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(memarena_cuda_malloc(4096, 0, nullptr), p) << "the free was not reused";
  memarena_cuda_free(p, 4096, 0, nullptr);
  void* big = memarena_cuda_malloc(64 * kMiB, 0, nullptr);
  ASSERT_NE(big, nullptr);
  memarena_cuda_free(big, 64 * kMiB, 0, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_GE(memarena_cuda_release_unused(0), 64 * kMiB);
  EXPECT_EQ(memarena_cuda_malloc(0, 0, nullptr), nullptr);
}

// Issue 10's table on a real device: the rows device_logic_test checks on the fake runtime.
// A stream is held busy by a host function until the test lets it go.
TEST(PluggableOnDevice, OutOfMemoryRaisesAndTheProcessGoesOn) {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  try {
    void* p = memarena_cuda_malloc(2 * total_bytes, 0, nullptr);
    FAIL() << "allocated " << p << " beyond the device's memory";
  } catch (const std::bad_alloc& e) {
    EXPECT_NE(std::string(e.what()).find("cannot allocate"), std::string::npos) << e.what();
  }
  void* p = memarena_cuda_malloc(kMiB, 0, nullptr);
  ASSERT_NE(p, nullptr);
  memarena_cuda_free(p, kMiB, 0, nullptr);
}

TEST(PluggableOnDevice, RecordStreamWaitsForTheOtherStream) {
  cudaStream_t s1 = nullptr;
  cudaStream_t s2 = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  std::atomic<bool> go{false};
  void* x = memarena_cuda_malloc(kMiB, 0, s1);
  memarena_cuda_record_stream(x, s2);
  ASSERT_EQ(cudaLaunchHostFunc(s2, BlockUntilSet, &go), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(x, 1, kMiB, s2), cudaSuccess);  // s2 still writes x
  memarena_cuda_free(x, kMiB, 0, s1);
  void* y = memarena_cuda_malloc(kMiB, 0, s1);
  EXPECT_NE(y, x) << "the new tensor got the block s2 is still writing";
  go = true;
  ASSERT_EQ(cudaStreamSynchronize(s2), cudaSuccess);
  memarena_cuda_free(y, kMiB, 0, s1);
  ASSERT_EQ(cudaStreamSynchronize(s1), cudaSuccess);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

TEST(PluggableOnDevice, TwoHundredThousandPairsOnOneStreamUseNoEvents) {
  cudaStream_t s = nullptr;
  cudaStream_t other = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  memarena_cuda_free(memarena_cuda_malloc(256, 0, s), 256, 0, s);
  const cuda::EventCounters before = cuda::GetEventCounters();
  for (int i = 0; i < 200000; ++i) {
    const std::size_t size = i % 3 == 0 ? 256 : i % 3 == 1 ? 64 * 1024 : 4 * kMiB;
    memarena_cuda_free(memarena_cuda_malloc(size, 0, s), size, 0, s);
  }
  const cuda::EventCounters after = cuda::GetEventCounters();
  EXPECT_EQ(after.created, before.created);
  EXPECT_EQ(after.recorded, before.recorded);
  EXPECT_EQ(after.queried, before.queried);
  void* q = memarena_cuda_malloc(256, 0, other);  // the first allocation on another stream
  const cuda::EventCounters crossed = cuda::GetEventCounters();
  EXPECT_LE(crossed.created - after.created, 1u);
  EXPECT_LE(crossed.queried - after.queried, 8u);
  memarena_cuda_free(q, 256, 0, other);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaStreamDestroy(s);
  cudaStreamDestroy(other);
}

TEST(PluggableOnDevice, EmptyCacheGivesFreedMemoryToTheDriver) {
  void* big = memarena_cuda_malloc(256 * kMiB, 0, nullptr);
  memarena_cuda_free(big, 256 * kMiB, 0, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  memarena_stats before{};
  ASSERT_EQ(memarena_cuda_get_stats(0, &before), 0);
  memarena_cuda_empty_cache();
  memarena_stats after{};
  ASSERT_EQ(memarena_cuda_get_stats(0, &after), 0);
  EXPECT_GE(before.bytes_held - after.bytes_held, 256 * kMiB);
}

TEST(PluggableOnDevice, PerThreadStreamsOfTwoThreadsAreTwoStreams) {
  std::atomic<bool> go{false};
  std::atomic<bool> freed{false};
  void* first = nullptr;
  StreamHandle first_handle = 0;
  std::thread t1([&] {
    first = memarena_cuda_malloc(kMiB, 0, cudaStreamPerThread);
    first_handle = cuda::ToStreamHandle(cudaStreamPerThread);
    cudaLaunchHostFunc(cudaStreamPerThread, BlockUntilSet, &go);  // this thread's stream is busy
    memarena_cuda_free(first, kMiB, 0, cudaStreamPerThread);
    freed = true;
    while (!go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    cudaStreamSynchronize(cudaStreamPerThread);
  });
  while (!freed.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  void* second = nullptr;
  StreamHandle second_handle = 0;
  std::thread t2([&] {
    second = memarena_cuda_malloc(kMiB, 0, cudaStreamPerThread);
    second_handle = cuda::ToStreamHandle(cudaStreamPerThread);
    memarena_cuda_free(second, kMiB, 0, cudaStreamPerThread);
  });
  t2.join();
  go = true;
  t1.join();
  EXPECT_NE(first_handle, second_handle);
  EXPECT_NE(first, second) << "thread 2 got a block thread 1's stream was still using";
}

TEST(PluggableOnDevice, GlobalModeCaptureStaysValidWithAPrivatePool) {
  constexpr unsigned long long kPool = 77;
  cudaStream_t capturing = nullptr;
  cudaStream_t other = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&capturing, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  std::atomic<bool> go{false};
  void* busy = memarena_cuda_malloc(4 * kMiB, 0, other);
  ASSERT_EQ(cudaLaunchHostFunc(other, BlockUntilSet, &go), cudaSuccess);
  memarena_cuda_free(busy, 4 * kMiB, 0, other);  // other streams must ask the fence for it

  memarena_cuda_begin_graph_pool(0, kPool);
  ASSERT_EQ(cudaStreamBeginCapture(capturing, cudaStreamCaptureModeGlobal), cudaSuccess);
  void* in_graph = memarena_cuda_malloc(64 * kMiB, 0, capturing);  // grows the pool
  ASSERT_EQ(cudaMemsetAsync(in_graph, 0, 64 * kMiB, capturing), cudaSuccess);
  memarena_cuda_free(in_graph, 64 * kMiB, 0, capturing);
  void* outside = memarena_cuda_malloc(4 * kMiB, 0, nullptr);
  EXPECT_NE(outside, in_graph);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(capturing, &graph), cudaSuccess) << "the capture was invalidated";
  memarena_cuda_end_graph_pool(0, kPool);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, capturing), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(capturing), cudaSuccess);
  memarena_stats with_pool{};
  ASSERT_EQ(memarena_cuda_get_stats(0, &with_pool), 0);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  memarena_cuda_release_graph_pool(0, kPool);
  memarena_stats released{};
  ASSERT_EQ(memarena_cuda_get_stats(0, &released), 0);
  EXPECT_GE(with_pool.bytes_held - released.bytes_held, 64 * kMiB);
  go = true;
  ASSERT_EQ(cudaStreamSynchronize(other), cudaSuccess);
  memarena_cuda_free(outside, 4 * kMiB, 0, nullptr);
  cudaStreamDestroy(capturing);
  cudaStreamDestroy(other);
}

}  // namespace
}  // namespace memarena

namespace memarena::testing {
INSTANTIATE_TYPED_TEST_SUITE_P(DeviceArena, AllocatorConformance,
                               ::testing::Types<memarena::DeviceArenaFactory>);
}  // namespace memarena::testing
