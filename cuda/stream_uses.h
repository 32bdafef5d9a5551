// record_stream: blocks used on streams other than the one they were allocated on. Their free
// is deferred until an event recorded on each such stream at the free has completed (as
// PyTorch's caching allocator does); only these blocks ever cost events.
#pragma once

#include <atomic>
#include <cstddef>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "event_pool.h"
#include "memarena/arena.h"

namespace memarena::cuda {

class StreamUses {
 public:
  explicit StreamUses(std::shared_ptr<EventPool> events) : events_(std::move(events)) {}
  ~StreamUses();

  // Remembers that `ptr` (in use) is also used by the work queued on `stream`. Throws
  // std::bad_alloc when the bookkeeping cannot grow.
  void Add(void* ptr, StreamHandle stream);

  // When `ptr` has recorded uses: records an event on each using stream, keeps the free for
  // later and returns true (the caller must not free it now). When no block has recorded uses
  // it costs one atomic load and returns false.
  bool DeferFree(void* ptr, StreamHandle alloc_stream) {
    if (tracked_.load(std::memory_order_acquire) == 0) return false;
    return DeferFreeSlow(ptr, alloc_stream);
  }

  // Frees (through `free_now(ptr, stream)`) every deferred block whose events completed.
  // Never blocks; does nothing while `capturing` (an event query would break the capture).
  template <typename FreeNow>
  void Collect(bool capturing, FreeNow&& free_now) {
    if (pending_.load(std::memory_order_acquire) == 0 || capturing) return;
    for (const Ready& r : CollectReady()) free_now(r.ptr, r.stream);
  }

  std::size_t pending() const noexcept { return pending_.load(std::memory_order_acquire); }

 private:
  struct Deferred {
    void* ptr;
    StreamHandle stream;
    std::vector<DeviceEvent> events;
  };
  struct Ready {
    void* ptr;
    StreamHandle stream;
  };

  bool DeferFreeSlow(void* ptr, StreamHandle alloc_stream);
  std::vector<Ready> CollectReady();

  std::shared_ptr<EventPool> events_;
  common::Mutex mutex_;
  std::unordered_map<void*, std::vector<StreamHandle>> uses_ MEMARENA_GUARDED_BY(mutex_);
  std::vector<Deferred> deferred_ MEMARENA_GUARDED_BY(mutex_);
  std::atomic<std::size_t> tracked_{0};
  std::atomic<std::size_t> pending_{0};
};

}  // namespace memarena::cuda
