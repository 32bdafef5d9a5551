// Private memory pools for CUDA graphs (PyTorch's beginAllocateToPool / endAllocateToPool /
// releasePool): while a pool is being allocated to, allocations on the streams its filter
// accepts come from the pool's own arena, so memory a graph uses is never handed to other
// work; frees of pool blocks go back to the pool; a pool gives its memory back once every
// graph that began allocating to it has been released and nothing in it is in use.
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
#include "memarena/cuda.h"

namespace memarena::cuda {

// Which streams allocate to a pool (PyTorch's std::function<bool(cudaStream_t)> filter, passed
// through the C ABI): `accepts(context, stream)` returns nonzero for a stream of this pool. A
// null `accepts` stands for "any stream that is being captured".
struct PoolFilter {
  memarena_cuda_stream_filter accepts = nullptr;
  void* context = nullptr;
};

class GraphPools {
 public:
  GraphPools(std::shared_ptr<DeviceMemorySource> source, std::shared_ptr<LazyEventFence> fence,
             ArenaConfig config)
      : source_(std::move(source)), fence_(std::move(fence)), config_(config) {}

  // Allocation to `pool_id` begins for the streams `filter` accepts (creating the pool on
  // first use; several graphs may share one id, each Begin counts as one user of the pool).
  // While any is underway the fence makes no event call. `filter.context` must stay valid
  // until the matching End returns.
  void Begin(std::uint64_t pool_id, PoolFilter filter = {});
  // Ends the newest Begin of `pool_id` still underway; no-op when there is none.
  void End(std::uint64_t pool_id);
  // One user of `pool_id` (a graph) is gone: when none is left, the pool goes once nothing in
  // it is in use.
  void Release(std::uint64_t pool_id);

  // True while some pool exists (only then do allocations and frees look here).
  bool any() const noexcept { return pools_alive_.load(std::memory_order_acquire) != 0; }
  // True while some allocation to a pool is underway (between Begin and End).
  bool capturing() const noexcept { return captures_.load(std::memory_order_acquire) != 0; }

  // Routes an allocation on `stream` (as the caller passed it; `handle` is the arena's key for
  // it): the newest underway pool whose filter accepts the stream takes it, as PyTorch's
  // get_pool does. Returns the block and sets *routed to that pool's arena (nullptr when no
  // pool takes the stream; the block is then nullptr too). A null block with *routed set means
  // the pool is out of memory.
  void* TryAllocate(std::size_t bytes, std::size_t alignment, DeviceStream stream,
                    StreamHandle handle, std::shared_ptr<BfcArena>* routed);
  // True when a pool owned `ptr` (it is then freed there).
  bool Free(void* ptr, StreamHandle stream);
  std::size_t ReleaseUnusedSpans();
  // Adds the pools' in-use, requested and held bytes to `stats`.
  void AddTo(AllocatorStats& stats) const;

 private:
  struct Pool {
    std::shared_ptr<BfcArena> arena;
    int captures = 0;  // Begins not yet ended
    int users = 0;     // Begins not yet released
  };
  struct Underway {
    std::uint64_t pool_id;
    PoolFilter filter;
  };
  // The arena of the pool `stream` allocates to, or nullptr.
  std::shared_ptr<BfcArena> Route(DeviceStream stream) MEMARENA_REQUIRES(mutex_);
  void DropIfDone(std::map<std::uint64_t, Pool>::iterator it) MEMARENA_REQUIRES(mutex_);

  std::shared_ptr<DeviceMemorySource> source_;
  std::shared_ptr<LazyEventFence> fence_;
  ArenaConfig config_;
  mutable common::Mutex mutex_;
  std::map<std::uint64_t, Pool> pools_ MEMARENA_GUARDED_BY(mutex_);
  // Allocations to pools underway, oldest first.
  std::vector<Underway> underway_ MEMARENA_GUARDED_BY(mutex_);
  std::atomic<std::size_t> pools_alive_{0};
  std::atomic<int> captures_{0};
};

}  // namespace memarena::cuda
