// EventPool: bounded creation, recycling, and destruction on the pool's device.
#include "event_pool.h"

#include "device_guard.h"

namespace memarena::cuda {

EventPool::EventPool(std::shared_ptr<DeviceRuntime> runtime, int device)
    : runtime_(std::move(runtime)), device_(device) {
  free_.reserve(64);
}

EventPool::~EventPool() {
  DeviceGuard guard(*runtime_, device_);
  for (DeviceEvent e : free_) runtime_->EventDestroy(e);
}

DeviceEvent EventPool::Take() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!free_.empty()) {
    const DeviceEvent e = free_.back();
    free_.pop_back();
    return e;
  }
  if (live_ >= kMaxLiveEvents) return {};
  DeviceGuard guard(*runtime_, device_);
  DeviceEvent e;
  if (!guard.ok() || !runtime_->EventCreate(&e).ok()) {
    runtime_->ClearLastError();
    return {};
  }
  ++live_;
  return e;
}

void EventPool::Return(DeviceEvent event, bool healthy) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (healthy) {
    try {
      free_.push_back(event);
      return;
    } catch (...) {
      // no room to keep it: destroy below
    }
  }
  DeviceGuard guard(*runtime_, device_);
  runtime_->EventDestroy(event);
  --live_;
}

std::size_t EventPool::live() const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_;
}

}  // namespace memarena::cuda
