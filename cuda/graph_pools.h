// Private memory pools for CUDA graphs (PyTorch's beginAllocateToPool / endAllocateToPool /
// releasePool): while a pool is being captured into, allocations on capturing streams come
// from the pool's own arena, so memory a graph uses is never handed to other work; frees of
// pool blocks go back to the pool; a released pool gives its memory back once nothing in it
// is in use.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "common/mutex.h"
#include "device_memory_source.h"
#include "lazy_event_fence.h"
#include "memarena/arena.h"

namespace memarena::cuda {

class GraphPools {
 public:
  GraphPools(std::shared_ptr<DeviceMemorySource> source, std::shared_ptr<LazyEventFence> fence,
             ArenaConfig config)
      : source_(std::move(source)), fence_(std::move(fence)), config_(config) {}

  // A capture into `pool_id` begins (creating the pool on first use; several graphs may
  // share one id). While any capture is underway the fence makes no event call.
  void Begin(std::uint64_t pool_id);
  void End(std::uint64_t pool_id);
  // The graph that owned `pool_id` was destroyed: the pool goes once nothing in it is in use.
  void Release(std::uint64_t pool_id);

  // True while some pool exists (only then do allocations and frees look here).
  bool any() const noexcept { return pools_alive_.load(std::memory_order_acquire) != 0; }
  bool capturing() const noexcept { return captures_.load(std::memory_order_acquire) != 0; }

  // When a capture is underway and `stream` is capturing: allocates from the newest active
  // pool, sets *routed and returns the block (nullptr when the pool is out of memory).
  void* TryAllocate(std::size_t bytes, std::size_t alignment, StreamHandle stream, bool* routed);
  // True when a pool owned `ptr` (it is then freed there).
  bool Free(void* ptr, StreamHandle stream);
  std::size_t ReleaseUnusedSpans();
  // Adds the pools' in-use, requested and held bytes to `stats`.
  void AddTo(AllocatorStats& stats) const;
  // The pool arena `ptr` would fail in, for the diagnostic; nullptr when none is active.
  std::shared_ptr<BfcArena> ActiveArena() const;

 private:
  struct Pool {
    std::shared_ptr<BfcArena> arena;
    int captures = 0;
    bool released = false;
  };
  void DropIfDone(std::map<std::uint64_t, Pool>::iterator it) MEMARENA_REQUIRES(mutex_);

  std::shared_ptr<DeviceMemorySource> source_;
  std::shared_ptr<LazyEventFence> fence_;
  ArenaConfig config_;
  mutable common::Mutex mutex_;
  std::map<std::uint64_t, Pool> pools_ MEMARENA_GUARDED_BY(mutex_);
  // Pools being captured into, newest last.
  std::vector<std::uint64_t> active_ MEMARENA_GUARDED_BY(mutex_);
  std::atomic<std::size_t> pools_alive_{0};
  std::atomic<int> captures_{0};
};

}  // namespace memarena::cuda
