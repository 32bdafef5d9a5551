// The device MemorySource through the runtime seam, and how its failures are described.
#include "device_memory_source.h"

#include <fmt/format.h>

#include "device_guard.h"

namespace memarena::cuda {

DeviceMemorySource::DeviceMemorySource(std::shared_ptr<DeviceRuntime> runtime, int device)
    : runtime_(std::move(runtime)), device_(device), name_(fmt::format("cuda:{}", device)) {}

void DeviceMemorySource::Remember(DeviceResult result, bool from_set_device) noexcept {
  last_kind_.store(static_cast<int>(result.kind), std::memory_order_relaxed);
  last_code_.store(result.code, std::memory_order_relaxed);
  last_from_set_device_.store(from_set_device, std::memory_order_relaxed);
  last_over_limit_.store(false, std::memory_order_relaxed);
  if (result.kind == DeviceErrorKind::kSticky) sticky_.store(true, std::memory_order_relaxed);
}

void* DeviceMemorySource::Reserve(std::size_t bytes) noexcept {
  if (sticky_.load(std::memory_order_relaxed)) return nullptr;
  DeviceGuard guard(*runtime_, device_);
  if (!guard.ok()) {
    Remember(guard.result(), /*from_set_device=*/true);
    return nullptr;
  }
  const std::size_t limit = limit_.load(std::memory_order_relaxed);
  if (limit != 0 && held_.load(std::memory_order_relaxed) + bytes > limit) {
    Remember({DeviceErrorKind::kOutOfMemory, 0}, /*from_set_device=*/false);
    last_over_limit_.store(true, std::memory_order_relaxed);
    return nullptr;
  }
  void* ptr = nullptr;
  const DeviceResult result = runtime_->Malloc(&ptr, bytes);
  if (result.ok()) {
    held_.fetch_add(bytes, std::memory_order_relaxed);
    return ptr;
  }
  // Out of memory is not sticky: clear it so the caller's next CUDA call does not see it.
  if (result.kind != DeviceErrorKind::kSticky) runtime_->ClearLastError();
  Remember(result, /*from_set_device=*/false);
  return nullptr;
}

void DeviceMemorySource::Release(void* ptr, std::size_t bytes) noexcept {
  held_.fetch_sub(bytes, std::memory_order_relaxed);
  DeviceGuard guard(*runtime_, device_);
  if (!runtime_->Free(ptr).ok()) runtime_->ClearLastError();
}

std::optional<SourceCapacity> DeviceCapacity(DeviceRuntime& runtime, int device) noexcept {
  DeviceGuard guard(runtime, device);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  if (!guard.ok() || !runtime.MemGetInfo(&free_bytes, &total_bytes).ok()) {
    runtime.ClearLastError();
    return std::nullopt;
  }
  return SourceCapacity{free_bytes, total_bytes};
}

std::optional<SourceCapacity> DeviceMemorySource::Capacity() const noexcept {
  return DeviceCapacity(*runtime_, device_);
}

DeviceResult DeviceMemorySource::LastError() const noexcept {
  return {static_cast<DeviceErrorKind>(last_kind_.load(std::memory_order_relaxed)),
          last_code_.load(std::memory_order_relaxed)};
}

std::string DeviceMemorySource::DescribeDeviceError() const {
  if (last_over_limit_.load(std::memory_order_relaxed)) {
    return fmt::format("device {} is capped at {} bytes by the memory fraction "
                       "(memarena_cuda_set_memory_fraction / "
                       "torch.cuda.set_per_process_memory_fraction); raise the fraction",
                       device_, limit_.load(std::memory_order_relaxed));
  }
  const DeviceResult last = LastError();
  if (last.ok() || last.kind == DeviceErrorKind::kOutOfMemory) return "";
  const std::string text = runtime_->ErrorText(last);
  if (last_from_set_device_.load(std::memory_order_relaxed)) {
    return fmt::format("cudaSetDevice({}) failed: {}; nothing was allocated", device_, text);
  }
  if (last.kind == DeviceErrorKind::kSticky) {
    return fmt::format("not out of memory: device {} hit a sticky CUDA error ({}); the CUDA "
                       "context is unusable, so memarena stopped calling cudaMalloc; restart "
                       "the process", device_, text);
  }
  return fmt::format("not out of memory: cudaMalloc on device {} failed with {}", device_, text);
}

}  // namespace memarena::cuda
