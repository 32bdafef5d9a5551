// StreamUses: the record_stream bookkeeping and the deferred frees it causes.
#include "stream_uses.h"

#include "device_guard.h"
#include "lazy_event_fence.h"

namespace memarena::cuda {

StreamUses::~StreamUses() {
  for (const Deferred& d : deferred_) {
    for (DeviceEvent e : d.events) events_->Return(e);
  }
}

void StreamUses::Add(void* ptr, StreamHandle stream) {
  common::MutexLock lock(mutex_);
  auto [it, inserted] = uses_.try_emplace(ptr);
  for (StreamHandle s : it->second) {
    if (s == stream) return;
  }
  it->second.push_back(stream);
  if (inserted) tracked_.fetch_add(1, std::memory_order_acq_rel);
}

bool StreamUses::DeferFreeSlow(void* ptr, StreamHandle alloc_stream) {
  common::MutexLock lock(mutex_);
  const auto it = uses_.find(ptr);
  if (it == uses_.end()) return false;
  const std::vector<StreamHandle> streams = std::move(it->second);
  uses_.erase(it);
  tracked_.fetch_sub(1, std::memory_order_acq_rel);

  DeviceRuntime& runtime = events_->runtime();
  DeviceGuard guard(runtime, events_->device());
  Deferred deferred{ptr, alloc_stream, {}};
  for (StreamHandle used : streams) {
    if (used == alloc_stream) continue;  // the arena's own stream ordering covers it
    // Only the owning thread can name a per-thread stream.
    if (IsPerThreadHandle(used) && runtime.ResolveStream(kPerThreadStream) != used) continue;
    const DeviceStream stream = StreamOfHandle(used);
    CaptureStatus capture = CaptureStatus::kNone;
    runtime.StreamCaptureStatus(stream, &capture);
    if (capture != CaptureStatus::kNone) continue;  // a graph's memory stays in its pool
    const DeviceEvent event = events_->Take();
    if (event.value != 0 && events_->Record(event, stream).ok()) {
      deferred.events.push_back(event);
      continue;
    }
    // No event to track the point: wait for that stream's work (bounded, and rare).
    if (event.value != 0) events_->Return(event, /*healthy=*/false);
    runtime.ClearLastError();
    runtime.StreamSynchronize(stream);
  }
  if (deferred.events.empty()) return false;
  deferred_.push_back(std::move(deferred));
  pending_.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

std::vector<StreamUses::Ready> StreamUses::CollectReady() {
  std::vector<Ready> ready;
  common::MutexLock lock(mutex_);
  DeviceRuntime& runtime = events_->runtime();
  DeviceGuard guard(runtime, events_->device());
  for (auto it = deferred_.begin(); it != deferred_.end();) {
    bool done = true;
    for (DeviceEvent e : it->events) {
      const DeviceResult r = events_->Query(e);
      if (r.kind == DeviceErrorKind::kNotReady) {
        done = false;
        break;
      }
    }
    if (!done) {
      ++it;
      continue;
    }
    for (DeviceEvent e : it->events) events_->Return(e);
    ready.push_back({it->ptr, it->stream});
    it = deferred_.erase(it);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
  return ready;
}

}  // namespace memarena::cuda
