// GraphPools: per-graph arenas, routing of allocations by each pool's stream filter, release.
#include "graph_pools.h"

#include <algorithm>

namespace memarena::cuda {

void GraphPools::Begin(std::uint64_t pool_id, PoolFilter filter) {
  common::MutexLock lock(mutex_);
  auto [it, inserted] = pools_.try_emplace(pool_id);
  if (inserted) {
    it->second.arena = std::make_shared<BfcArena>(source_, config_, fence_);
    pools_alive_.fetch_add(1, std::memory_order_acq_rel);
  }
  ++it->second.captures;
  ++it->second.users;
  underway_.push_back({pool_id, filter});
  captures_.fetch_add(1, std::memory_order_acq_rel);
  fence_->BeginCapture();
}

void GraphPools::End(std::uint64_t pool_id) {
  common::MutexLock lock(mutex_);
  const auto entry = std::find_if(underway_.rbegin(), underway_.rend(),
                                  [pool_id](const Underway& u) { return u.pool_id == pool_id; });
  if (entry == underway_.rend()) return;  // not allocating to it: nothing to end
  underway_.erase(std::next(entry).base());
  const auto it = pools_.find(pool_id);
  --it->second.captures;
  captures_.fetch_sub(1, std::memory_order_acq_rel);
  fence_->EndCapture();
  DropIfDone(it);
}

void GraphPools::Release(std::uint64_t pool_id) {
  common::MutexLock lock(mutex_);
  const auto it = pools_.find(pool_id);
  if (it == pools_.end()) return;
  if (it->second.users > 0) --it->second.users;
  DropIfDone(it);
}

void GraphPools::DropIfDone(std::map<std::uint64_t, Pool>::iterator it) {
  const Pool& pool = it->second;
  if (pool.users != 0 || pool.captures != 0 || pool.arena->GetStats().bytes_in_use != 0) return;
  pools_.erase(it);  // the arena's destructor gives its regions back to the device
  pools_alive_.fetch_sub(1, std::memory_order_acq_rel);
}

std::shared_ptr<BfcArena> GraphPools::Route(DeviceStream stream) {
  // Asked at most once per allocation, and only when an unfiltered pool is underway.
  bool capture_known = false;
  bool stream_capturing = false;
  for (auto u = underway_.rbegin(); u != underway_.rend(); ++u) {
    bool accepted = false;
    if (u->filter.accepts != nullptr) {
      accepted = u->filter.accepts(u->filter.context,
                                   reinterpret_cast<CUstream_st*>(stream.value)) != 0;
    } else {
      if (!capture_known) {
        CaptureStatus status = CaptureStatus::kNone;
        source_->runtime().StreamCaptureStatus(stream, &status);
        stream_capturing = status == CaptureStatus::kActive;
        capture_known = true;
      }
      accepted = stream_capturing;
    }
    if (accepted) return pools_.at(u->pool_id).arena;
  }
  return nullptr;
}

void* GraphPools::TryAllocate(std::size_t bytes, std::size_t alignment, DeviceStream stream,
                              StreamHandle handle, std::shared_ptr<BfcArena>* routed) {
  routed->reset();
  if (!capturing()) return nullptr;
  {
    // The filters run under the lock: End may free a filter's context once it returns.
    common::MutexLock lock(mutex_);
    *routed = Route(stream);
  }
  if (*routed == nullptr) return nullptr;
  return (*routed)->TryAllocateOnStream(bytes, alignment, handle);
}

bool GraphPools::Free(void* ptr, StreamHandle stream) {
  common::MutexLock lock(mutex_);
  for (auto it = pools_.begin(); it != pools_.end(); ++it) {
    if (it->second.arena->UsableSize(ptr) == 0) continue;
    it->second.arena->DeallocateOnStream(ptr, stream);
    DropIfDone(it);
    return true;
  }
  return false;
}

std::size_t GraphPools::ReleaseUnusedSpans() {
  common::MutexLock lock(mutex_);
  std::size_t released = 0;
  for (auto& [id, pool] : pools_) released += pool.arena->ReleaseAllUnusedRegions();
  return released;
}

void GraphPools::AddTo(AllocatorStats& stats) const {
  common::MutexLock lock(mutex_);
  for (const auto& [id, pool] : pools_) {
    const AllocatorStats s = pool.arena->GetStats();
    stats.bytes_in_use += s.bytes_in_use;
    stats.bytes_requested += s.bytes_requested;
    stats.bytes_held += s.bytes_held;
    stats.bytes_releasable += s.bytes_releasable;
  }
}

}  // namespace memarena::cuda
