// LazyEventFence: numbered frees, events recorded on demand from the pool, non-blocking polls.
#include "lazy_event_fence.h"

#include "device_guard.h"

namespace memarena::cuda {

bool IsPerThreadHandle(StreamHandle handle) noexcept { return (handle & 3) == 3; }

DeviceStream StreamOfHandle(StreamHandle handle) noexcept {
  return IsPerThreadHandle(handle) ? kPerThreadStream : DeviceStream{handle};
}

LazyEventFence::LazyEventFence(std::shared_ptr<EventPool> events)
    : events_(std::move(events)), runtime_(events_->runtime()) {}

LazyEventFence::~LazyEventFence() {
  for (auto& [handle, state] : streams_) {
    for (const InFlight& f : state.in_flight) events_->Return(f.event);
  }
}

bool LazyEventFence::RecordOn(StreamState& state, DeviceStream stream) noexcept {
  if (state.in_flight.size() >= kMaxInFlightPerStream) {
    // Move the newest point forward: it then also covers this free (later is still safe).
    InFlight& newest = state.in_flight.back();
    if (!events_->Record(newest.event, stream).ok()) return false;
    newest.mark = state.recorded;
    return true;
  }
  const DeviceEvent event = events_->Take();
  if (event.value == 0) return false;
  if (!events_->Record(event, stream).ok()) {
    runtime_.ClearLastError();
    events_->Return(event, /*healthy=*/false);
    return false;
  }
  try {
    state.in_flight.push_back({state.recorded, event});
  } catch (...) {
    events_->Return(event);
    return false;
  }
  return true;
}

std::uint64_t LazyEventFence::Record(StreamHandle stream) noexcept {
  common::MutexLock lock(mutex_);
  StreamState* state = nullptr;
  try {
    state = &streams_[stream];
  } catch (...) {
    return ~std::uint64_t{0};  // cannot track: never handed to another stream (safe)
  }
  const std::uint64_t seq = ++state->recorded;
  // Only the owning thread can name its per-thread stream; record now, before it is gone.
  if (IsPerThreadHandle(stream) && captures_.load(std::memory_order_acquire) == 0 &&
      runtime_.ResolveStream(kPerThreadStream) == stream) {
    CaptureStatus capture = CaptureStatus::kNone;
    runtime_.StreamCaptureStatus(kPerThreadStream, &capture);
    if (capture == CaptureStatus::kNone) {
      DeviceGuard guard(runtime_, events_->device());
      if (guard.ok()) RecordOn(*state, kPerThreadStream);
    }
  }
  return seq;
}

void LazyEventFence::Poll(StreamState& state) noexcept {
  while (!state.in_flight.empty()) {  // events on one stream complete in order
    const InFlight front = state.in_flight.front();
    const DeviceResult result = events_->Query(front.event);
    if (result.kind == DeviceErrorKind::kNotReady) break;
    // Success, or an error that means the work will never run: either way it is over.
    if (!result.ok()) runtime_.ClearLastError();
    state.in_flight.pop_front();
    if (front.mark > state.completed) state.completed = front.mark;
    events_->Return(front.event, result.ok());
  }
}

bool LazyEventFence::HasCompleted(StreamHandle stream, std::uint64_t seq) noexcept {
  common::MutexLock lock(mutex_);
  const auto it = streams_.find(stream);
  if (it == streams_.end()) return true;
  StreamState& state = it->second;
  if (seq <= state.completed) return true;
  if (captures_.load(std::memory_order_acquire) != 0) return false;
  DeviceGuard guard(runtime_, events_->device());
  if (!guard.ok()) return false;
  Poll(state);
  if (seq <= state.completed) return true;
  const bool covered = !state.in_flight.empty() && state.in_flight.back().mark >= seq;
  if (covered || IsPerThreadHandle(stream)) return false;
  // Memory freed during a capture belongs to the graph: never recorded, never handed on.
  const DeviceStream device_stream = StreamOfHandle(stream);
  CaptureStatus capture = CaptureStatus::kNone;
  runtime_.StreamCaptureStatus(device_stream, &capture);
  if (capture != CaptureStatus::kNone) return false;
  if (RecordOn(state, device_stream)) Poll(state);
  return seq <= state.completed;
}

}  // namespace memarena::cuda
