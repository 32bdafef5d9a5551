// The CUDA virtual-memory source of the expandable arena on the fake device runtime (no GPU):
// the conformance suite over it, held == the device memory the granules took, refused
// cuMemCreate calls recovered from, and everything unmapped and released at the end.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "conformance/arena_factory.h"
#include "conformance/conformance_suite.h"
#include "fake_device_runtime.h"
#include "memarena/cuda.h"
#include "support/expandable_config.h"
#include "vmm_memory_source.h"

namespace memarena::cuda {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kDeviceBytes = std::size_t{1} << 30;
constexpr std::size_t kReserve = 256 * kMiB;

using memarena::testing::ExpandableConfig;

// Device memory the fake runtime has handed out (cuMemCreate'd and not released).
std::size_t DeviceUsed(FakeDeviceRuntime& runtime) {
  std::size_t free_bytes = 0, total_bytes = 0;
  EXPECT_TRUE(runtime.MemGetInfo(&free_bytes, &total_bytes).ok());
  return total_bytes - free_bytes;
}

// One fake device for every arena the conformance suite makes (it frees what it allocates).
std::shared_ptr<MemorySource> FakeVmmSource() {
  static const auto runtime = std::make_shared<FakeDeviceRuntime>(1, kDeviceBytes);
  return std::make_shared<VmmMemorySource>(runtime, 0, kReserve);
}

// The fake reserves address space in host memory, so blocks are filled and verified.
using FakeVmmFactory = testing::ArenaFactory<FakeVmmSource, testing::ArenaMode::kExpandable,
                                             testing::CpuAccess::kAddressable>;

TEST(VmmMemorySource, GranulesAreDeviceAllocationsAndHeldMatchesTheDevice) {
  auto runtime = std::make_shared<FakeDeviceRuntime>(1, kDeviceBytes);
  {
    auto source = std::make_shared<VmmMemorySource>(runtime, 0, kReserve);
    EXPECT_EQ(source->Granularity(), FakeDeviceRuntime::kGranularity);
    EXPECT_EQ(source->name(), "cuda_vmm");
    BfcArena arena(source, ExpandableConfig());
    std::mt19937_64 rng(10);
    std::vector<void*> live;
    for (int i = 0; i < 2000; ++i) {
      if (live.size() >= 40 || (!live.empty() && rng() % 100 < 50)) {
        const std::size_t k = rng() % live.size();
        arena.Deallocate(live[k]);
        live[k] = live.back();
        live.pop_back();
      } else {
        live.push_back(arena.Allocate(1 + rng() % (6 * kMiB)));
      }
      if (i % 250 == 0) arena.ReleaseUnusedSpans();
      const AllocatorStats s = arena.GetStats();
      ASSERT_EQ(s.bytes_held, DeviceUsed(*runtime)) << "step " << i;
      ASSERT_EQ(s.bytes_held, source->VirtualStats().committed_bytes);
    }
    EXPECT_GT(arena.GetStats().num_decommits, 0u);
    EXPECT_EQ(source->VirtualStats().num_contract_violations, 0u);
    for (void* p : live) arena.Deallocate(p);
  }
  EXPECT_EQ(DeviceUsed(*runtime), 0u);  // every granule unmapped and released
}

TEST(VmmMemorySource, ARefusedCuMemCreateFailsTheRequestAndTheNextOneSucceeds) {
  auto runtime = std::make_shared<FakeDeviceRuntime>(1, kDeviceBytes);
  auto source = std::make_shared<VmmMemorySource>(runtime, 0, kReserve);
  BfcArena arena(source, ExpandableConfig());
  void* a = arena.Allocate(3 * kMiB);
  runtime->InjectOutOfMemory(1);  // nothing is free to decommit, so no retry
  EXPECT_EQ(arena.TryAllocate(8 * kMiB), nullptr);
  const std::string text = arena.DescribeFailure(8 * kMiB, kDefaultAlignment);
  EXPECT_NE(text.find("Failed to allocate memory for requested buffer"), std::string::npos) << text;
  EXPECT_EQ(arena.GetStats().bytes_held, DeviceUsed(*runtime));
  void* b = arena.Allocate(8 * kMiB);
  EXPECT_EQ(arena.GetStats().bytes_held, DeviceUsed(*runtime));
  EXPECT_EQ(arena.GetStats().num_ooms, 1u);
  arena.Deallocate(a);
  arena.Deallocate(b);
}

TEST(VmmMemorySource, MaxMemAndTheDeviceBothCapCommittedMemory) {
  auto runtime = std::make_shared<FakeDeviceRuntime>(1, 64 * kMiB);
  auto source = std::make_shared<VmmMemorySource>(runtime, 0, kReserve);
  BfcArena arena(source, ExpandableConfig(/*decommit_threshold=*/0, /*max_mem=*/32 * kMiB));
  void* a = arena.Allocate(30 * kMiB);
  EXPECT_EQ(arena.TryAllocate(4 * kMiB), nullptr);  // max_mem, not the device
  EXPECT_NE(arena.DescribeFailure(4 * kMiB, kDefaultAlignment).find("max_mem"), std::string::npos);
  EXPECT_LE(arena.GetStats().peak_bytes_held, 32 * kMiB);
  arena.Deallocate(a);
  void* b = arena.Allocate(32 * kMiB);
  arena.Deallocate(b);
}

TEST(VmmMemorySource, MakeDeviceArenaUsesItForExpandableSegments) {
  auto runtime = std::make_shared<FakeDeviceRuntime>(1, kDeviceBytes);
  SetDeviceRuntime(runtime);
  {
    auto arena = MakeDeviceArena(0, ArenaConfig::Parse("expandable_segments:1"));
    EXPECT_EQ(arena->source().name(), "cuda_vmm");
    void* p = arena->Allocate(5 * kMiB);
    EXPECT_EQ(DeviceUsed(*runtime), 6 * kMiB);
    arena->Deallocate(p);
    auto source = MakeDeviceVirtualMemorySource(0, kReserve);
    EXPECT_EQ(source->VirtualStats().reserved_bytes, kReserve);
  }
  SetDeviceRuntime(nullptr);
}

}  // namespace
}  // namespace memarena::cuda

namespace memarena::testing {
INSTANTIATE_TYPED_TEST_SUITE_P(FakeCudaExpandableArena, AllocatorConformance,
                               ::testing::Types<memarena::cuda::FakeVmmFactory>);
}  // namespace memarena::testing
