// VmmMemorySource: granules of one reserved device range, each mapped onto its own physical
// allocation through the runtime seam's cuMem* calls.
#include "vmm_memory_source.h"

#include <fmt/format.h>

#include <stdexcept>

#include "device_memory_source.h"

namespace memarena::cuda {
namespace {

[[noreturn]] void Refuse(DeviceRuntime& runtime, int device, std::string_view call, DeviceResult r) {
  throw std::runtime_error(fmt::format("memarena: VmmMemorySource on CUDA device {}: {} failed: {}",
                                       device, call, runtime.ErrorText(r)));
}

}  // namespace

VmmMemorySource::Reservation VmmMemorySource::Reserve(std::shared_ptr<DeviceRuntime> runtime,
                                                      int device, std::size_t bytes) {
  if (!runtime->SupportsVirtualMemory(device)) {
    throw std::runtime_error(fmt::format(
        "memarena: CUDA device {} does not support the virtual-memory API (cuMemCreate); use "
        "expandable_segments:0",
        device));
  }
  std::size_t granularity = 0;
  if (const DeviceResult r = runtime->MemGranularity(device, /*recommended=*/false, &granularity);
      !r.ok() || granularity == 0) {
    Refuse(*runtime, device, "cuMemGetAllocationGranularity", r);
  }
  if (bytes == 0) {
    const std::optional<SourceCapacity> capacity = DeviceCapacity(*runtime, device);
    if (!capacity) {
      throw std::runtime_error(fmt::format(
          "memarena: VmmMemorySource: cannot read the memory size of CUDA device {}; pass "
          "reserve_bytes",
          device));
    }
    bytes = 4 * capacity->total_bytes;
  }
  bytes = (bytes + granularity - 1) / granularity * granularity;
  std::uintptr_t base = 0;
  if (const DeviceResult r = runtime->MemAddressReserve(&base, bytes, granularity); !r.ok()) {
    Refuse(*runtime, device, fmt::format("cuMemAddressReserve of {} bytes", bytes), r);
  }
  return {std::move(runtime), device, base, bytes, granularity};
}

VmmMemorySource::VmmMemorySource(std::shared_ptr<DeviceRuntime> runtime, int device,
                                 std::size_t reserve_bytes)
    : VmmMemorySource(Reserve(std::move(runtime), device, reserve_bytes)) {}

VmmMemorySource::VmmMemorySource(Reservation r)
    : VirtualMemorySource(r.base, r.bytes, r.granularity),
      runtime_(std::move(r.runtime)),
      device_(r.device) {}

VmmMemorySource::~VmmMemorySource() {
  // An arena gives its ranges back before it goes; anything still mapped goes here.
  while (!handles_.empty()) Unmap(handles_.begin()->first);
  runtime_->MemAddressFree(base(), VirtualStats().reserved_bytes);
}

bool VmmMemorySource::CommitGranules(std::uintptr_t addr, std::size_t bytes) noexcept {
  const std::size_t g = Granularity();
  for (std::uintptr_t at = addr; at < addr + bytes; at += g) {
    DeviceMemHandle handle;
    DeviceResult r = runtime_->MemCreate(&handle, g, device_);
    if (r.ok()) {
      r = runtime_->MemMap(at, g, handle, 0);
      if (!r.ok()) runtime_->MemRelease(handle);
    }
    if (r.ok()) {
      handles_.emplace(at, handle);
      r = runtime_->MemSetAccess(at, g, device_);
    }
    if (!r.ok()) {
      // All or nothing: the granules of this call that made it go back.
      runtime_->ClearLastError();
      for (std::uintptr_t done = addr; done <= at; done += g) {
        if (handles_.count(done) != 0) Unmap(done);
      }
      return false;
    }
  }
  return true;
}

void VmmMemorySource::DecommitGranules(std::uintptr_t addr, std::size_t bytes) noexcept {
  for (std::uintptr_t at = addr; at < addr + bytes; at += Granularity()) Unmap(at);
}

void VmmMemorySource::Unmap(std::uintptr_t addr) noexcept {
  const auto it = handles_.find(addr);
  if (it == handles_.end()) return;
  runtime_->MemUnmap(addr, Granularity());
  runtime_->MemRelease(it->second);
  handles_.erase(it);
}

std::optional<SourceCapacity> VmmMemorySource::Capacity() const noexcept {
  return DeviceCapacity(*runtime_, device_);
}

}  // namespace memarena::cuda
