// The device StreamFence without an event per free: Record only numbers the free; an event is
// recorded on the freeing stream when another stream first needs to know that the free is
// complete (covering every free on that stream so far), from a bounded recycled pool. During
// a CUDA graph capture it neither records nor queries, so the capture stays valid.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <unordered_map>

#include "common/mutex.h"
#include "event_pool.h"
#include "memarena/arena.h"

namespace memarena::cuda {

class LazyEventFence final : public StreamFence {
 public:
  // Events in flight per stream; with more frees the newest event is re-recorded.
  static constexpr std::size_t kMaxInFlightPerStream = 4;

  explicit LazyEventFence(std::shared_ptr<EventPool> events);
  ~LazyEventFence() override;

  // No CUDA call for an ordinary stream. The per-thread stream (whose handle means another
  // stream in another thread) records one event from its own thread, re-recording the newest
  // one when kMaxInFlightPerStream are in flight. A block freed on a per-thread stream from
  // another thread (Deallocate without a stream) cannot be marked: it stays with that stream
  // until its own thread frees again.
  std::uint64_t Record(StreamHandle stream) noexcept override;
  // Never blocks: queries at most the stream's in-flight events, records at most one. While
  // captures are underway, or `stream` itself is capturing, answers false without a call.
  bool HasCompleted(StreamHandle stream, std::uint64_t seq) noexcept override;

  // A CUDA graph capture began / ended on this device (graph pools call these): while any is
  // underway no event is queried, as cudaEventQuery would invalidate a global-mode capture.
  void BeginCapture() noexcept { captures_.fetch_add(1, std::memory_order_acq_rel); }
  void EndCapture() noexcept { captures_.fetch_sub(1, std::memory_order_acq_rel); }

  EventPool& events() const noexcept { return *events_; }

 private:
  struct InFlight {
    std::uint64_t mark;
    DeviceEvent event;
  };
  struct StreamState {
    std::uint64_t recorded = 0;
    std::uint64_t completed = 0;
    std::deque<InFlight> in_flight;
  };

  void Poll(StreamState& state) noexcept;
  bool RecordOn(StreamState& state, DeviceStream stream) noexcept;

  std::shared_ptr<EventPool> events_;
  DeviceRuntime& runtime_;
  std::atomic<int> captures_{0};
  common::Mutex mutex_;  // uncontended: the arena calls the fence under its own lock
  std::unordered_map<StreamHandle, StreamState> streams_ MEMARENA_GUARDED_BY(mutex_);
};

// The stream behind an arena stream handle (cuda::ToStreamHandle): per-thread keys ((n << 2)
// | 3) stand for cudaStreamPerThread, every other key is the stream's own handle.
DeviceStream StreamOfHandle(StreamHandle handle) noexcept;
bool IsPerThreadHandle(StreamHandle handle) noexcept;

}  // namespace memarena::cuda
