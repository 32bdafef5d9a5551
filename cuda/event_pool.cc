// EventPool: bounded creation, recycling, and destruction on the pool's device.
#include "event_pool.h"

#include <atomic>

#include "device_guard.h"
#include "memarena/cuda.h"

namespace memarena::cuda {
namespace {

// Process-wide, relaxed: only the event paths touch them, never a same-stream pair.
struct Counters {
  std::atomic<std::uint64_t> created{0}, destroyed{0}, recorded{0}, queried{0};
};
Counters& EventActivity() noexcept {
  static Counters counters;
  return counters;
}

}  // namespace

EventCounters GetEventCounters() noexcept {
  const Counters& c = EventActivity();
  return {c.created.load(std::memory_order_relaxed), c.destroyed.load(std::memory_order_relaxed),
          c.recorded.load(std::memory_order_relaxed), c.queried.load(std::memory_order_relaxed)};
}

EventPool::EventPool(std::shared_ptr<DeviceRuntime> runtime, int device)
    : runtime_(std::move(runtime)), device_(device) {
  free_.reserve(64);
}

EventPool::~EventPool() {
  DeviceGuard guard(*runtime_, device_);
  for (DeviceEvent e : free_) runtime_->EventDestroy(e);
  EventActivity().destroyed.fetch_add(free_.size(), std::memory_order_relaxed);
}

DeviceEvent EventPool::Take() noexcept {
  common::MutexLock lock(mutex_);
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
  EventActivity().created.fetch_add(1, std::memory_order_relaxed);
  return e;
}

void EventPool::Return(DeviceEvent event, bool healthy) noexcept {
  common::MutexLock lock(mutex_);
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
  EventActivity().destroyed.fetch_add(1, std::memory_order_relaxed);
}

DeviceResult EventPool::Record(DeviceEvent event, DeviceStream stream) noexcept {
  EventActivity().recorded.fetch_add(1, std::memory_order_relaxed);
  return runtime_->EventRecord(event, stream);
}

DeviceResult EventPool::Query(DeviceEvent event) noexcept {
  EventActivity().queried.fetch_add(1, std::memory_order_relaxed);
  return runtime_->EventQuery(event);
}

std::size_t EventPool::live() const noexcept {
  common::MutexLock lock(mutex_);
  return live_;
}

}  // namespace memarena::cuda
