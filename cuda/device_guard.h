// Makes `device` current for a scope and restores the caller's device after, so the arena's
// source and fence never change which device the caller's thread works on. A failed switch
// is kept (result()) so the caller reports it instead of working on the wrong device.
#pragma once

#include "device_runtime.h"

namespace memarena::cuda {

class DeviceGuard {
 public:
  DeviceGuard(DeviceRuntime& runtime, int device) noexcept : runtime_(runtime) {
    if (!runtime_.GetDevice(&previous_).ok()) {
      runtime_.ClearLastError();
      previous_ = -1;
    }
    if (previous_ != device) result_ = runtime_.SetDevice(device);
  }
  ~DeviceGuard() {
    if (previous_ >= 0 && result_.ok()) {
      int now = -1;
      if (runtime_.GetDevice(&now).ok() && now != previous_) runtime_.SetDevice(previous_);
    }
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

  bool ok() const noexcept { return result_.ok(); }
  // The result of the switch (success when the device was already current).
  DeviceResult result() const noexcept { return result_; }

 private:
  DeviceRuntime& runtime_;
  int previous_ = -1;
  DeviceResult result_;
};

}  // namespace memarena::cuda
