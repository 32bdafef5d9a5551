// A bounded pool of recycled CUDA events (timing disabled) for one device: events are created
// only when the pool is empty and never beyond kMaxLiveEvents, so a long run of frees cannot
// grow the number of events.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "common/mutex.h"
#include "device_runtime.h"

namespace memarena::cuda {

class EventPool {
 public:
  static constexpr std::size_t kMaxLiveEvents = 1024;

  EventPool(std::shared_ptr<DeviceRuntime> runtime, int device);
  ~EventPool();
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  // A free event, or {0} when kMaxLiveEvents are out or creation failed (callers then wait
  // for completion later instead of tracking more points). Costs a lock; an event creation
  // only when the pool is empty.
  DeviceEvent Take() noexcept;
  // Back to the pool; `healthy` false (its query failed) destroys it instead.
  void Return(DeviceEvent event, bool healthy = true) noexcept;

  // cudaEventRecord / cudaEventQuery on one of this pool's events; counted (GetEventCounters).
  DeviceResult Record(DeviceEvent event, DeviceStream stream) noexcept;
  DeviceResult Query(DeviceEvent event) noexcept;

  std::size_t live() const noexcept;
  DeviceRuntime& runtime() const noexcept { return *runtime_; }
  int device() const noexcept { return device_; }

 private:
  std::shared_ptr<DeviceRuntime> runtime_;
  int device_;
  mutable common::Mutex mutex_;
  std::vector<DeviceEvent> free_ MEMARENA_GUARDED_BY(mutex_);
  std::size_t live_ MEMARENA_GUARDED_BY(mutex_) = 0;
};

}  // namespace memarena::cuda
