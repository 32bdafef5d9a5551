// Which DeviceRuntime the backend uses: the process default, or the one a test installed.
#include "device_runtime.h"

#include <mutex>

namespace memarena::cuda {
namespace {

struct RuntimeSlot {
  std::mutex mutex;
  std::shared_ptr<DeviceRuntime> runtime;
};

// Leaked on purpose: arenas freed during static destruction still reach their runtime.
RuntimeSlot& Slot() {
  static RuntimeSlot* slot = new RuntimeSlot;
  return *slot;
}

}  // namespace

std::shared_ptr<DeviceRuntime> GetDeviceRuntime() {
  RuntimeSlot& slot = Slot();
  std::lock_guard<std::mutex> lock(slot.mutex);
  if (slot.runtime == nullptr) slot.runtime = MakeDefaultDeviceRuntime();
  return slot.runtime;
}

void SetDeviceRuntime(std::shared_ptr<DeviceRuntime> runtime) {
  RuntimeSlot& slot = Slot();
  std::lock_guard<std::mutex> lock(slot.mutex);
  slot.runtime = std::move(runtime);
}

}  // namespace memarena::cuda
