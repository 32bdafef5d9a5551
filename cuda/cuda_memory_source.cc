// The device MemorySource: cudaMalloc/cudaFree regions and cudaMemGetInfo capacity.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <string>

#include "device_check.h"
#include "device_guard.h"
#include "memarena/cuda.h"

namespace memarena::cuda {
namespace {

class CudaMemorySource final : public MemorySource {
 public:
  explicit CudaMemorySource(int device)
      : device_(device), name_(fmt::format("cuda:{}", device)) {}

  void* Reserve(std::size_t bytes) noexcept override {
    DeviceGuard guard(device_);
    void* ptr = nullptr;
    if (cudaMalloc(&ptr, bytes) != cudaSuccess) {
      cudaGetLastError();  // an out-of-memory error is not sticky; clear it for the caller
      return nullptr;
    }
    return ptr;
  }

  void Release(void* ptr, std::size_t) noexcept override {
    DeviceGuard guard(device_);
    if (cudaFree(ptr) != cudaSuccess) cudaGetLastError();
  }

  // cudaMalloc guarantees 256 B; adjacent allocations are separate driver objects (IPC,
  // peer copies and cudaFree work per allocation), so a chunk must never straddle two.
  std::size_t Alignment() const noexcept override { return 256; }
  bool MergesAdjacent() const noexcept override { return false; }

  std::optional<SourceCapacity> Capacity() const noexcept override {
    DeviceGuard guard(device_);
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      cudaGetLastError();
      return std::nullopt;
    }
    return SourceCapacity{free_bytes, total_bytes};
  }

  AllocatorKind kind() const noexcept override { return AllocatorKind::kDevice; }
  std::string_view name() const noexcept override { return name_; }

 private:
  int device_;
  std::string name_;
};

}  // namespace

std::shared_ptr<MemorySource> MakeDeviceMemorySource(int device) {
  RequireDevice(device);
  return std::make_shared<CudaMemorySource>(device);
}

}  // namespace memarena::cuda
