// StreamControl on the fake runtime: holds and captures are the fake's own.
#pragma once

#include <atomic>
#include <memory>

#include "fake_device_runtime.h"
#include "stream_control.h"

namespace memarena::cuda {

class FakeStreamControl final : public StreamControl {
 public:
  explicit FakeStreamControl(std::shared_ptr<FakeDeviceRuntime> fake, std::size_t device_bytes)
      : fake_(std::move(fake)), device_bytes_(device_bytes) {}
  bool Usable(std::string*) override { return true; }
  bool fake() const override { return true; }
  int Device(int n) const override { return n; }
  std::size_t DeviceTotalBytes() override { return device_bytes_; }
  std::size_t DeviceBytesInUse() override { return fake_->counters().bytes_allocated; }
  void Hold(DeviceStream stream) override { fake_->Launch(stream); }
  void Release(DeviceStream stream) override { fake_->CompleteAll(stream); }
  std::uint64_t BeginCapture(DeviceStream stream) override {
    const std::uint64_t id = captures_.fetch_add(1) + 1;
    fake_->BeginCapture(stream, id);
    return id;
  }
  bool EndCapture(DeviceStream stream) override { return fake_->EndCapture(stream); }

 private:
  std::shared_ptr<FakeDeviceRuntime> fake_;
  std::size_t device_bytes_;
  std::atomic<std::uint64_t> captures_{1000};  // two threads may begin at once
};

}  // namespace memarena::cuda
