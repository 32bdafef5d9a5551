// PyTorch's CUDAPluggableAllocator C ABI: one stream-aware BfcArena per device, configured
// from MEMARENA_CUDA_CONF on first use.
#include <array>
#include <cstdio>
#include <exception>
#include <mutex>

#include "memarena/cuda.h"

namespace memarena::cuda {
namespace {

constexpr int kMaxDevices = 64;
// 256 B, as cudaMalloc guarantees and PyTorch expects of an allocator.
constexpr std::size_t kDeviceAlignment = 256;

struct PluggableArenas {
  std::mutex mutex;
  std::array<std::shared_ptr<BfcArena>, kMaxDevices> arenas;
  std::array<bool, kMaxDevices> failed{};
};

// Leaked on purpose: PyTorch may free tensors during interpreter teardown, after static
// destructors would have run.
PluggableArenas& Arenas() {
  static PluggableArenas* arenas = new PluggableArenas;
  return *arenas;
}

void ReportOnce(const char* what) noexcept {
  std::fprintf(stderr, "memarena_cuda: cannot create the device arena: %s\n", what);
}

// The device's arena, or nullptr when it cannot be created (reported once on stderr).
BfcArena* ArenaFor(int device) noexcept {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  PluggableArenas& a = Arenas();
  std::lock_guard<std::mutex> lock(a.mutex);
  auto& slot = a.arenas[static_cast<std::size_t>(device)];
  if (slot == nullptr && !a.failed[static_cast<std::size_t>(device)]) {
    try {
      slot = MakeDeviceArena(device, ArenaConfig::FromEnvironment("MEMARENA_CUDA_CONF"));
    } catch (const std::exception& e) {
      a.failed[static_cast<std::size_t>(device)] = true;
      ReportOnce(e.what());
    }
  }
  return slot.get();
}

}  // namespace
}  // namespace memarena::cuda

extern "C" {

void* memarena_cuda_malloc(std::size_t size, int device, CUstream_st* stream) {
  memarena::BfcArena* arena = memarena::cuda::ArenaFor(device);
  if (arena == nullptr) return nullptr;
  return arena->TryAllocateOnStream(size, memarena::cuda::kDeviceAlignment,
                                    memarena::cuda::ToStreamHandle(stream));
}

void memarena_cuda_free(void* ptr, std::size_t, int device, CUstream_st* stream) {
  if (ptr == nullptr) return;
  memarena::BfcArena* arena = memarena::cuda::ArenaFor(device);
  if (arena != nullptr) arena->DeallocateOnStream(ptr, memarena::cuda::ToStreamHandle(stream));
}

std::size_t memarena_cuda_release_unused(int device) {
  memarena::BfcArena* arena = memarena::cuda::ArenaFor(device);
  return arena == nullptr ? 0 : arena->ReleaseUnusedSpans();
}

}  // extern "C"
