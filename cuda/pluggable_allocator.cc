// PyTorch's CUDAPluggableAllocator C ABI: one stream-aware BfcArena per device (configured
// from MEMARENA_CUDA_CONF on first use), record_stream, empty_cache, stats, memory fraction
// and CUDA-graph pools. After the first call on a device, malloc and free take no lock but
// the arena's own.
#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <atomic>
#include <stdexcept>

#include "common/c_stats.h"
#include "common/mutex.h"
#include "device_check.h"
#include "device_memory_source.h"
#include "graph_pools.h"
#include "lazy_event_fence.h"
#include "memarena/cuda.h"
#include "memarena/errors.h"
#include "stream_uses.h"
#include "vmm_memory_source.h"

namespace memarena::cuda {
namespace {

constexpr int kMaxDevices = 64;
// 256 B, as cudaMalloc guarantees and PyTorch expects of an allocator.
constexpr std::size_t kDeviceAlignment = 256;

// With expandable_segments:1 (PyTorch's expandable_segments:True) the device's arena grows
// in one virtual range; otherwise it takes cudaMalloc regions from `source`.
std::shared_ptr<MemorySource> ArenaSource(const std::shared_ptr<DeviceRuntime>& runtime, int device,
                                          const ArenaConfig& config,
                                          std::shared_ptr<DeviceMemorySource> source) {
  if (!config.expandable_segments) return source;
  return std::make_shared<VmmMemorySource>(runtime, device);
}

// CUDA graphs' private pools stay on cudaMalloc regions: a pool lives as long as its graph
// and is released whole, so a virtual range would gain nothing there.
ArenaConfig GraphPoolConfig(ArenaConfig config) {
  config.expandable_segments = false;
  return config;
}

// Everything the ABI keeps for one device. Never destroyed: PyTorch may free tensors during
// interpreter teardown, after static destructors would have run.
struct DeviceState {
  DeviceState(std::shared_ptr<DeviceRuntime> rt, int device, ArenaConfig config)
      : runtime(std::move(rt)),
        source(std::make_shared<DeviceMemorySource>(runtime, device)),
        events(std::make_shared<EventPool>(runtime, device)),
        fence(std::make_shared<LazyEventFence>(events)),
        arena(ArenaSource(runtime, device, config, source), config, fence),
        uses(events),
        pools(source, fence, GraphPoolConfig(config)) {}

  std::shared_ptr<DeviceRuntime> runtime;
  // cudaMalloc regions: the arena's (unless expandable) and the graph pools'.
  std::shared_ptr<DeviceMemorySource> source;
  std::shared_ptr<EventPool> events;
  std::shared_ptr<LazyEventFence> fence;
  BfcArena arena;
  StreamUses uses;
  GraphPools pools;
};

struct Registry {
  common::Mutex create_mutex;  // only the first call on each device takes it
  std::array<std::atomic<DeviceState*>, kMaxDevices> states{};
};

Registry& Devices() {
  static Registry* registry = new Registry;
  return *registry;
}

// The device's state, created on first use. Throws std::runtime_error naming the device and
// the reason when it cannot be used (a bad index, no driver, a bad MEMARENA_CUDA_CONF).
DeviceState& StateFor(int device) {
  if (device < 0 || device >= kMaxDevices) {
    throw std::runtime_error(fmt::format(
        "memarena_cuda: device {} is out of range (memarena supports devices 0..{})", device,
        kMaxDevices - 1));
  }
  Registry& r = Devices();
  auto& slot = r.states[static_cast<std::size_t>(device)];
  if (DeviceState* s = slot.load(std::memory_order_acquire)) return *s;
  common::MutexLock lock(r.create_mutex);
  if (DeviceState* s = slot.load(std::memory_order_acquire)) return *s;
  auto runtime = GetDeviceRuntime();
  RequireDevice(*runtime, device);
  auto* s = new DeviceState(std::move(runtime), device,
                            ArenaConfig::FromEnvironment("MEMARENA_CUDA_CONF"));
  slot.store(s, std::memory_order_release);
  return *s;
}

// The state that already exists for `device`, or nullptr (queries never create one).
DeviceState* ExistingState(int device) noexcept {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  return Devices().states[static_cast<std::size_t>(device)].load(std::memory_order_acquire);
}

void FreeDeferred(DeviceState& s) {
  s.uses.Collect(s.pools.capturing(), [&s](void* ptr, StreamHandle stream) {
    if (!s.pools.any() || !s.pools.Free(ptr, stream)) s.arena.DeallocateOnStream(ptr, stream);
  });
}

[[noreturn]] void ThrowOutOfMemory(DeviceState& s, const BfcArena& arena, std::size_t size,
                                   int device) {
  std::string message = fmt::format("memarena_cuda: cannot allocate {} bytes on device {}: {}",
                                    size, device, arena.DescribeFailure(size, kDeviceAlignment));
  const std::string device_error = s.source->DescribeDeviceError();
  if (!device_error.empty()) message += fmt::format(" ({})", device_error);
  throw OutOfMemory(std::move(message));
}

}  // namespace
}  // namespace memarena::cuda

using memarena::cuda::DeviceState;
using memarena::cuda::StateFor;

extern "C" {

void* memarena_cuda_malloc(std::size_t size, int device, CUstream_st* stream) {
  if (size == 0) return nullptr;  // PyTorch keeps a null data pointer for empty tensors
  DeviceState& s = StateFor(device);
  const memarena::cuda::DeviceStream raw{reinterpret_cast<std::uintptr_t>(stream)};
  const memarena::StreamHandle handle = s.runtime->ResolveStream(raw);
  memarena::cuda::FreeDeferred(s);
  if (s.pools.capturing()) {
    std::shared_ptr<memarena::BfcArena> pool;
    void* p = s.pools.TryAllocate(size, memarena::cuda::kDeviceAlignment, raw, handle, &pool);
    if (p != nullptr) return p;
    if (pool != nullptr) memarena::cuda::ThrowOutOfMemory(s, *pool, size, device);
  }
  if (void* p = s.arena.TryAllocateOnStream(size, memarena::cuda::kDeviceAlignment, handle)) {
    return p;
  }
  memarena::cuda::ThrowOutOfMemory(s, s.arena, size, device);
}

void memarena_cuda_free(void* ptr, std::size_t, int device, CUstream_st* stream) {
  if (ptr == nullptr) return;
  DeviceState& s = StateFor(device);
  const memarena::StreamHandle handle =
      s.runtime->ResolveStream({reinterpret_cast<std::uintptr_t>(stream)});
  if (s.uses.DeferFree(ptr, handle)) return;
  if (!s.pools.any() || !s.pools.Free(ptr, handle)) s.arena.DeallocateOnStream(ptr, handle);
  memarena::cuda::FreeDeferred(s);
}

std::size_t memarena_cuda_release_unused(int device) {
  DeviceState* s = memarena::cuda::ExistingState(device);
  if (s == nullptr) return 0;
  memarena::cuda::FreeDeferred(*s);
  return s->arena.ReleaseAllUnusedRegions() + s->pools.ReleaseUnusedSpans();
}

void memarena_cuda_empty_cache(void) {
  for (int d = 0; d < memarena::cuda::kMaxDevices; ++d) memarena_cuda_release_unused(d);
}

void memarena_cuda_record_stream(void* ptr, CUstream_st* stream) {
  if (ptr == nullptr) return;
  for (int d = 0; d < memarena::cuda::kMaxDevices; ++d) {
    DeviceState* s = memarena::cuda::ExistingState(d);
    if (s == nullptr || s->arena.UsableSize(ptr) == 0) continue;
    s->uses.Add(ptr, s->runtime->ResolveStream({reinterpret_cast<std::uintptr_t>(stream)}));
    return;
  }
  // A block of a graph pool: its memory is private to the graph anyway, nothing to track.
}

int memarena_cuda_get_stats(int device, memarena_stats* out) {
  if (out == nullptr) return EINVAL;
  DeviceState* s = memarena::cuda::ExistingState(device);
  memarena::AllocatorStats stats;
  if (s != nullptr) {
    try {
      stats = s->arena.GetStats();
      s->pools.AddTo(stats);
    } catch (...) {
      return ENOMEM;
    }
  }
  *out = memarena::common::ToCStats(stats);
  return 0;
}

void memarena_cuda_reset_peak_stats(int device) {
  DeviceState* s = memarena::cuda::ExistingState(device);
  if (s != nullptr) s->arena.ResetPeakStats();
}

int memarena_cuda_set_memory_fraction(double fraction, int device) {
  if (!(fraction > 0.0 && fraction <= 1.0)) return EINVAL;
  DeviceState& s = StateFor(device);
  // The cap lives in the cudaMalloc source; an expandable arena commits through the
  // virtual-memory API instead, so it would not be honoured: say so rather than ignore it.
  if (s.arena.config().expandable_segments) return ENOTSUP;
  const std::optional<memarena::SourceCapacity> capacity = s.source->Capacity();
  if (!capacity) return ENODEV;
  s.source->SetLimit(static_cast<std::size_t>(fraction * static_cast<double>(capacity->total_bytes)));
  return 0;
}

void memarena_cuda_begin_graph_pool(int device, unsigned long long pool_id) {
  StateFor(device).pools.Begin(pool_id);
}

void memarena_cuda_begin_graph_pool_filtered(int device, unsigned long long pool_id,
                                             memarena_cuda_stream_filter filter, void* context) {
  StateFor(device).pools.Begin(pool_id, {filter, context});
}

void memarena_cuda_end_graph_pool(int device, unsigned long long pool_id) {
  StateFor(device).pools.End(pool_id);
}

void memarena_cuda_release_graph_pool(int device, unsigned long long pool_id) {
  StateFor(device).pools.Release(pool_id);
}

}  // extern "C"
