// The one check every CUDA factory makes before touching a device.
#pragma once

#include "device_runtime.h"

namespace memarena::cuda {

// Throws std::runtime_error naming the device, the device count and the runtime's reason
// when `device` cannot be used through `runtime`.
void RequireDevice(DeviceRuntime& runtime, int device);

}  // namespace memarena::cuda
