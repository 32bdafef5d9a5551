// Device discovery, the device-arena factories, and the stream handle mapping.
#include <fmt/format.h>

#include <stdexcept>

#include "device_check.h"
#include "device_memory_source.h"
#include "lazy_event_fence.h"
#include "memarena/cuda.h"
#include "vmm_memory_source.h"

namespace memarena::cuda {

int DeviceCount(std::string* reason) noexcept {
  std::shared_ptr<DeviceRuntime> runtime;
  try {
    runtime = GetDeviceRuntime();
  } catch (...) {
    return 0;
  }
  int count = 0;
  const DeviceResult status = runtime->DeviceCount(&count);
  if (!status.ok() || count == 0) {
    runtime->ClearLastError();
    if (reason != nullptr) {
      try {
        *reason = status.ok() ? "the CUDA runtime reports no device" : runtime->ErrorText(status);
      } catch (...) {
        reason->clear();
      }
    }
    return 0;
  }
  return count;
}

void RequireDevice(DeviceRuntime& runtime, int device) {
  int count = 0;
  const DeviceResult status = runtime.DeviceCount(&count);
  if (!status.ok()) runtime.ClearLastError();
  if (device < 0 || device >= count) {
    const std::string reason = status.ok() ? "" : runtime.ErrorText(status);
    throw std::runtime_error(fmt::format("memarena: CUDA device {} is not usable ({} device(s){}{})",
                                         device, count, reason.empty() ? "" : ": ", reason));
  }
}

std::shared_ptr<MemorySource> MakeDeviceMemorySource(int device) {
  auto runtime = GetDeviceRuntime();
  RequireDevice(*runtime, device);
  return std::make_shared<DeviceMemorySource>(std::move(runtime), device);
}

std::shared_ptr<VirtualMemorySource> MakeDeviceVirtualMemorySource(int device,
                                                                  std::size_t reserve_bytes) {
  auto runtime = GetDeviceRuntime();
  RequireDevice(*runtime, device);
  return std::make_shared<VmmMemorySource>(std::move(runtime), device, reserve_bytes);
}

std::shared_ptr<StreamFence> MakeEventFence(int device) {
  auto runtime = GetDeviceRuntime();
  RequireDevice(*runtime, device);
  return std::make_shared<LazyEventFence>(std::make_shared<EventPool>(std::move(runtime), device));
}

std::shared_ptr<BfcArena> MakeDeviceArena(int device, ArenaConfig config) {
  auto runtime = GetDeviceRuntime();
  RequireDevice(*runtime, device);
  std::shared_ptr<MemorySource> source;
  if (config.expandable_segments) {
    source = std::make_shared<VmmMemorySource>(runtime, device);
  } else {
    source = std::make_shared<DeviceMemorySource>(runtime, device);
  }
  auto fence = std::make_shared<LazyEventFence>(std::make_shared<EventPool>(runtime, device));
  return std::make_shared<BfcArena>(std::move(source), config, std::move(fence));
}

StreamHandle ToStreamHandle(CUstream_st* stream) noexcept {
  // Never 0 (the arena's "no stream"): the default stream maps to the legacy stream's handle,
  // the per-thread stream to this thread's own key.
  return GetDeviceRuntime()->ResolveStream(DeviceStream{reinterpret_cast<std::uintptr_t>(stream)});
}

}  // namespace memarena::cuda
