// The default DeviceRuntime of a build without CUDA: there is no device, and every call says
// so. The device-logic tests install a FakeDeviceRuntime instead.
#include "device_runtime.h"

namespace memarena::cuda {
namespace {

constexpr DeviceResult kNone{DeviceErrorKind::kNoDevice, 100};

class NoDeviceRuntime final : public DeviceRuntime {
 public:
  DeviceResult DeviceCount(int* count) noexcept override { *count = 0; return kNone; }
  DeviceResult GetDevice(int*) noexcept override { return kNone; }
  DeviceResult SetDevice(int) noexcept override { return kNone; }
  DeviceResult Malloc(void** ptr, std::size_t) noexcept override { *ptr = nullptr; return kNone; }
  DeviceResult Free(void*) noexcept override { return kNone; }
  DeviceResult MemGetInfo(std::size_t*, std::size_t*) noexcept override { return kNone; }
  DeviceResult StreamCreate(DeviceStream*) noexcept override { return kNone; }
  DeviceResult StreamDestroy(DeviceStream) noexcept override { return kNone; }
  DeviceResult StreamSynchronize(DeviceStream) noexcept override { return kNone; }
  DeviceResult StreamQuery(DeviceStream) noexcept override { return kNone; }
  DeviceResult StreamCaptureStatus(DeviceStream, CaptureStatus* status,
                                   std::uint64_t*) noexcept override {
    *status = CaptureStatus::kNone;
    return kNone;
  }
  StreamKey ResolveStream(DeviceStream s) noexcept override {
    return s.value == 0 ? kLegacyStream.value : s.value;
  }
  bool RecordableFromAnyThread(DeviceStream s) noexcept override {
    return !(s == kPerThreadStream);
  }
  DeviceResult EventCreate(DeviceEvent*) noexcept override { return kNone; }
  DeviceResult EventDestroy(DeviceEvent) noexcept override { return kNone; }
  DeviceResult EventRecord(DeviceEvent, DeviceStream) noexcept override { return kNone; }
  DeviceResult EventQuery(DeviceEvent) noexcept override { return kNone; }
  DeviceResult EventSynchronize(DeviceEvent) noexcept override { return kNone; }
  void ClearLastError() noexcept override {}
  std::string ErrorText(DeviceResult) const override {
    return "memarena was built without CUDA: no device";
  }
  bool SupportsVirtualMemory(int) noexcept override { return false; }
  DeviceResult MemGranularity(int, bool, std::size_t*) noexcept override { return kNone; }
  DeviceResult MemAddressReserve(std::uintptr_t*, std::size_t, std::size_t) noexcept override {
    return kNone;
  }
  DeviceResult MemAddressFree(std::uintptr_t, std::size_t) noexcept override { return kNone; }
  DeviceResult MemCreate(DeviceMemHandle*, std::size_t, int) noexcept override { return kNone; }
  DeviceResult MemRelease(DeviceMemHandle) noexcept override { return kNone; }
  DeviceResult MemMap(std::uintptr_t, std::size_t, DeviceMemHandle, std::size_t) noexcept override {
    return kNone;
  }
  DeviceResult MemUnmap(std::uintptr_t, std::size_t) noexcept override { return kNone; }
  DeviceResult MemSetAccess(std::uintptr_t, std::size_t, int) noexcept override { return kNone; }
};

}  // namespace

std::shared_ptr<DeviceRuntime> MakeDefaultDeviceRuntime() {
  return std::make_shared<NoDeviceRuntime>();
}

}  // namespace memarena::cuda
