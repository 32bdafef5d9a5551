// VmmMemorySource: the expandable arena's source on a CUDA device (the virtual-memory API):
// one cuMemAddressReserve range; each granule committed is its own cuMemCreate allocation,
// mapped (cuMemMap) and made accessible (cuMemSetAccess); decommit unmaps and releases it.
#pragma once

#include <memory>
#include <unordered_map>

#include "device_runtime.h"
#include "memarena/virtual_memory_source.h"

namespace memarena::cuda {

class VmmMemorySource final : public VirtualMemorySource {
 public:
  // Reserves `reserve_bytes` of device address space (0: four times the device's memory, so
  // free address space never runs out before memory does), rounded up to the device's
  // minimum allocation granularity. Throws std::runtime_error naming the device call that
  // failed when the device has no virtual-memory support or refuses the reservation.
  VmmMemorySource(std::shared_ptr<DeviceRuntime> runtime, int device, std::size_t reserve_bytes = 0);
  ~VmmMemorySource() override;

  std::optional<SourceCapacity> Capacity() const noexcept override;
  AllocatorKind kind() const noexcept override { return AllocatorKind::kDevice; }
  std::string_view name() const noexcept override { return "cuda_vmm"; }

 protected:
  bool CommitGranules(std::uintptr_t addr, std::size_t bytes) noexcept override;
  void DecommitGranules(std::uintptr_t addr, std::size_t bytes) noexcept override;

 private:
  struct Reservation {
    std::shared_ptr<DeviceRuntime> runtime;
    int device;
    std::uintptr_t base;
    std::size_t bytes;
    std::size_t granularity;
  };
  static Reservation Reserve(std::shared_ptr<DeviceRuntime> runtime, int device, std::size_t bytes);
  explicit VmmMemorySource(Reservation r);
  // Unmaps and releases the granule at `addr` (mapped by CommitGranules).
  void Unmap(std::uintptr_t addr) noexcept;

  std::shared_ptr<DeviceRuntime> runtime_;
  const int device_;
  // Physical allocation behind each committed granule, by address. Touched only under the
  // base class's lock (CommitGranules, DecommitGranules) and in the destructor.
  std::unordered_map<std::uintptr_t, DeviceMemHandle> handles_;
};

}  // namespace memarena::cuda
