// The device MemorySource: cudaMalloc/cudaFree regions and cudaMemGetInfo capacity, through
// the runtime seam, keeping the last device error so a failure is reported as what it was.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "device_runtime.h"
#include "memarena/memory_source.h"

namespace memarena::cuda {

// cudaMemGetInfo on `device` (switching to it for the call); nullopt when that fails.
std::optional<SourceCapacity> DeviceCapacity(DeviceRuntime& runtime, int device) noexcept;

class DeviceMemorySource final : public MemorySource {
 public:
  DeviceMemorySource(std::shared_ptr<DeviceRuntime> runtime, int device);

  // nullptr when the device refuses. After a sticky error (the context is corrupted) it
  // returns nullptr at once without calling the device again: retrying cannot help.
  void* Reserve(std::size_t bytes) noexcept override;
  void Release(void* ptr, std::size_t bytes) noexcept override;
  // cudaMalloc guarantees 256 B; adjacent allocations are separate driver objects (IPC,
  // peer copies and cudaFree work per allocation), so a chunk must never straddle two.
  std::size_t Alignment() const noexcept override { return 256; }
  bool MergesAdjacent() const noexcept override { return false; }
  std::optional<SourceCapacity> Capacity() const noexcept override;
  AllocatorKind kind() const noexcept override { return AllocatorKind::kDevice; }
  std::string_view name() const noexcept override { return name_; }

  // The last failure of Reserve (or of switching to the device); success when none.
  DeviceResult LastError() const noexcept;
  // "" when the last failure was plain out of memory (the arena's diagnostic says it all);
  // otherwise what happened, in the runtime's words, and whether retrying can help.
  std::string DescribeDeviceError() const;
  // Caps the bytes this source holds (torch.cuda.set_per_process_memory_fraction); 0 = none.
  // Reserve refuses what would cross it, and the failure then names the limit.
  void SetLimit(std::size_t bytes) noexcept { limit_.store(bytes, std::memory_order_relaxed); }
  DeviceRuntime& runtime() const noexcept { return *runtime_; }
  int device() const noexcept { return device_; }

 private:
  void Remember(DeviceResult result, bool from_set_device) noexcept;

  std::shared_ptr<DeviceRuntime> runtime_;
  int device_;
  std::string name_;
  std::atomic<int> last_kind_{0};
  std::atomic<int> last_code_{0};
  std::atomic<bool> last_from_set_device_{false};
  std::atomic<bool> sticky_{false};
  std::atomic<bool> last_over_limit_{false};
  std::atomic<std::size_t> limit_{0};
  std::atomic<std::size_t> held_{0};
};

}  // namespace memarena::cuda
