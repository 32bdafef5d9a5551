// The one check every CUDA factory makes before touching a device.
#pragma once

namespace memarena::cuda {

// Throws std::runtime_error naming the device, the device count and the runtime's reason
// when `device` cannot be used.
void RequireDevice(int device);

}  // namespace memarena::cuda
