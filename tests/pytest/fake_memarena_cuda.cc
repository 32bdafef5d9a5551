// libmemarena_cuda_fake.so: the device-stats part of libmemarena_cuda.so's C ABI
// (memarena_cuda_get_stats, _reset_peak_stats, _release_unused) over a real BfcArena on a
// simulated 1 GiB device, plus calls for the test suite to take and free "device" memory.
// It lets the pytest guard's memarena-as-allocator path run in CI without a GPU.
#include <cerrno>
#include <cstddef>
#include <memory>

#include "arena/simulated_memory_source.h"
#include "common/c_stats.h"
#include "memarena/arena.h"
#include "memarena/c_api.h"

namespace {

constexpr std::size_t kDeviceBytes = std::size_t{1} << 30;

memarena::BfcArena& Device() {
  static memarena::BfcArena* arena = [] {
    memarena::arena::SimulatedMemorySource::Options source;
    source.capacity = kDeviceBytes;
    memarena::ArenaConfig config;
    config.max_mem = kDeviceBytes;
    // One region per request, so a release gives back exactly what the tests freed.
    config.arena_extend_strategy = memarena::ArenaExtendStrategy::kSameAsRequested;
    return new memarena::BfcArena(std::make_shared<memarena::arena::SimulatedMemorySource>(source),
                                  config);
  }();
  return *arena;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int memarena_cuda_get_stats(int device, memarena_stats* out) {
  if (out == nullptr) return EINVAL;
  if (device != 0) return ENODEV;
  *out = memarena::common::ToCStats(Device().GetStats());  // as libmemarena_cuda.so does
  return 0;
}

__attribute__((visibility("default"))) void memarena_cuda_reset_peak_stats(int device) {
  if (device == 0) Device().ResetPeakStats();
}

__attribute__((visibility("default"))) std::size_t memarena_cuda_release_unused(int device) {
  return device == 0 ? Device().ReleaseUnusedSpans() : 0;
}

// The test suite's tensors: simulated addresses, never to be touched.
__attribute__((visibility("default"))) void* fake_device_allocate(std::size_t bytes) {
  return Device().TryAllocate(bytes);
}

__attribute__((visibility("default"))) void fake_device_free(void* ptr) { Device().Deallocate(ptr); }

}  // extern "C"
