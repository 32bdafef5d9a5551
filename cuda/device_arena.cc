// Device discovery, the device-arena factory, and the stream handle mapping.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <stdexcept>

#include "device_check.h"

#include "memarena/cuda.h"

namespace memarena::cuda {

int DeviceCount(std::string* reason) noexcept {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (reason != nullptr) {
      try {
        *reason = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
      } catch (...) {
        reason->clear();
      }
    }
    return 0;
  }
  if (count == 0 && reason != nullptr) {
    try {
      *reason = "the CUDA runtime reports no device";
    } catch (...) {
    }
  }
  return count;
}

void RequireDevice(int device) {
  std::string reason;
  const int count = DeviceCount(&reason);
  if (device < 0 || device >= count) {
    throw std::runtime_error(fmt::format("memarena: CUDA device {} is not usable ({} device(s){}{})",
                                         device, count, reason.empty() ? "" : ": ", reason));
  }
}

std::shared_ptr<BfcArena> MakeDeviceArena(int device, ArenaConfig config) {
  auto source = MakeDeviceMemorySource(device);
  return std::make_shared<BfcArena>(std::move(source), config, MakeEventFence(device));
}

StreamHandle ToStreamHandle(CUstream_st* stream) noexcept {
  // +1 keeps the legacy default stream (nullptr) apart from the arena's "no stream" (0).
  return reinterpret_cast<StreamHandle>(stream) + 1;
}

}  // namespace memarena::cuda
