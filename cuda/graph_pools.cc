// GraphPools: per-graph arenas, routing of capture-time allocations, and release.
#include "graph_pools.h"

#include <algorithm>

namespace memarena::cuda {

void GraphPools::Begin(std::uint64_t pool_id) {
  common::MutexLock lock(mutex_);
  auto [it, inserted] = pools_.try_emplace(pool_id);
  if (inserted) {
    it->second.arena = std::make_shared<BfcArena>(source_, config_, fence_);
    pools_alive_.fetch_add(1, std::memory_order_acq_rel);
  }
  it->second.released = false;
  ++it->second.captures;
  active_.push_back(pool_id);
  captures_.fetch_add(1, std::memory_order_acq_rel);
  fence_->BeginCapture();
}

void GraphPools::End(std::uint64_t pool_id) {
  common::MutexLock lock(mutex_);
  const auto active = std::find(active_.rbegin(), active_.rend(), pool_id);
  if (active == active_.rend()) return;  // not capturing into it: nothing to end
  active_.erase(std::next(active).base());
  --pools_[pool_id].captures;
  captures_.fetch_sub(1, std::memory_order_acq_rel);
  fence_->EndCapture();
}

void GraphPools::Release(std::uint64_t pool_id) {
  common::MutexLock lock(mutex_);
  const auto it = pools_.find(pool_id);
  if (it == pools_.end()) return;
  it->second.released = true;
  DropIfDone(it);
}

void GraphPools::DropIfDone(std::map<std::uint64_t, Pool>::iterator it) {
  const Pool& pool = it->second;
  if (!pool.released || pool.captures != 0 || pool.arena->GetStats().bytes_in_use != 0) return;
  pools_.erase(it);  // the arena's destructor gives its regions back to the device
  pools_alive_.fetch_sub(1, std::memory_order_acq_rel);
}

void* GraphPools::TryAllocate(std::size_t bytes, std::size_t alignment, StreamHandle stream,
                              bool* routed) {
  *routed = false;
  if (!capturing()) return nullptr;
  DeviceRuntime& runtime = source_->runtime();
  CaptureStatus status = CaptureStatus::kNone;
  runtime.StreamCaptureStatus(StreamOfHandle(stream), &status);
  if (status != CaptureStatus::kActive) return nullptr;
  std::shared_ptr<BfcArena> arena = ActiveArena();
  if (arena == nullptr) return nullptr;
  *routed = true;
  return arena->TryAllocateOnStream(bytes, alignment, stream);
}

std::shared_ptr<BfcArena> GraphPools::ActiveArena() const {
  common::MutexLock lock(mutex_);
  if (active_.empty()) return nullptr;
  return pools_.at(active_.back()).arena;
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
