// Which DeviceRuntime the backend uses: the process default, or the one a test installed.
#include "device_runtime.h"

#include "common/mutex.h"


namespace memarena::cuda {
namespace {

struct RuntimeSlot {
  common::Mutex mutex;
  std::shared_ptr<DeviceRuntime> runtime MEMARENA_GUARDED_BY(mutex);
};

// Leaked on purpose: arenas freed during static destruction still reach their runtime.
RuntimeSlot& Slot() {
  static RuntimeSlot* slot = new RuntimeSlot;
  return *slot;
}

}  // namespace

std::shared_ptr<DeviceRuntime> GetDeviceRuntime() {
  RuntimeSlot& slot = Slot();
  common::MutexLock lock(slot.mutex);
  if (slot.runtime == nullptr) slot.runtime = MakeDefaultDeviceRuntime();
  return slot.runtime;
}

void SetDeviceRuntime(std::shared_ptr<DeviceRuntime> runtime) {
  RuntimeSlot& slot = Slot();
  common::MutexLock lock(slot.mutex);
  slot.runtime = std::move(runtime);
}

}  // namespace memarena::cuda
