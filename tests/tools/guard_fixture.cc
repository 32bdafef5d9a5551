// A test program for gtest_guard_test, linked with memarena::gtest_main: host tests (clean,
// deliberately growing through the host allocator and through malloc, budget set in code)
// and device tests on a simulated device arena (one peaks far above the others, one sets its
// device budget in code).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "arena/simulated_memory_source.h"
#include "memarena/arena.h"
#include "memarena/host.h"
#include "memarena/testing/gtest_listener.h"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

void UseHost() { memarena::HostAllocator().Deallocate(memarena::HostAllocator().Allocate(1 * kMiB)); }

TEST(Guard, Clean) { UseHost(); }

// Keeps 32 MiB alive after it ends, as a cache that is never cleared would.
TEST(Guard, Growing) {
  static std::vector<void*> kept;
  for (int i = 0; i < 8; ++i) kept.push_back(memarena::HostAllocator().Allocate(4 * kMiB));
}

// Keeps 16 MiB from malloc alive after it ends: whichever heap is behind malloc (glibc's, a
// sanitizer's, the preloaded or linked drop-in) the guard must see it.
TEST(Guard, LeaksThroughMalloc) {
  static void* kept = nullptr;
  kept = std::malloc(16 * kMiB);
  ASSERT_NE(kept, nullptr);
  std::memset(kept, 1, 16 * kMiB);
}

TEST(Guard, CodeBudget) {
  memarena::testing::SetTestPeakBudget(1 * kMiB);
  void* p = memarena::HostAllocator().Allocate(8 * kMiB);
  memarena::HostAllocator().Deallocate(p);
}

}  // namespace

// A device arena over a simulated 1 GiB device, holding 16 MiB of "weights" for the whole
// run, as a model kept resident across tests does. Every request gets its own region
// (kSameAsRequested), so the release after a test gives back exactly what it freed.
namespace device {

std::shared_ptr<memarena::BfcArena> MakeDeviceArena() {
  memarena::arena::SimulatedMemorySource::Options source;
  source.capacity = 1024 * kMiB;
  source.kind = memarena::AllocatorKind::kDevice;
  memarena::ArenaConfig config;
  config.arena_extend_strategy = memarena::ArenaExtendStrategy::kSameAsRequested;
  return std::make_shared<memarena::BfcArena>(
      std::make_shared<memarena::arena::SimulatedMemorySource>(source), config);
}

memarena::BfcArena& Arena() {
  static const auto arena = MakeDeviceArena();
  return *arena;
}

[[maybe_unused]] void* const g_weights = Arena().Allocate(16 * kMiB);

void UseDevice(std::size_t bytes) { Arena().Deallocate(Arena().Allocate(bytes)); }

// Peaks 64 MiB above the weights: the one test in the suite that needs far more than the rest.
TEST(DeviceGuard, Peaky) { UseDevice(64 * kMiB); }
TEST(DeviceGuard, Small) { UseDevice(4 * kMiB); }
TEST(DeviceGuard, Medium) { UseDevice(24 * kMiB); }
TEST(DeviceGuard, HostOnly) { UseHost(); }

TEST(DeviceGuard, CodeBudget) {
  memarena::testing::SetTestDevicePeakBudget(1 * kMiB);
  UseDevice(8 * kMiB);
}

}  // namespace device
