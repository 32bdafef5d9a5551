// VirtualMemorySource: the bookkeeping every virtual-memory source shares (the used range,
// committed granules, contract checks and counters) around the derived class's OS or device
// commit and decommit calls.
#include "memarena/virtual_memory_source.h"

#include "arena/interval_set.h"
#include "common/mutex.h"

namespace memarena {

struct VirtualMemorySource::State {
  mutable common::Mutex mutex;
  std::uintptr_t top MEMARENA_GUARDED_BY(mutex) = 0;  // end of the used range
  // Ranges Reserve returned and Release has not taken back.
  arena::IntervalSet handed_out MEMARENA_GUARDED_BY(mutex);
  arena::IntervalSet committed MEMARENA_GUARDED_BY(mutex);
  VirtualMemoryStats stats MEMARENA_GUARDED_BY(mutex);
};

VirtualMemorySource::VirtualMemorySource(std::uintptr_t base, std::size_t reserved_bytes,
                                         std::size_t granularity)
    : base_(base),
      reserved_(base == 0 ? 0 : reserved_bytes),
      granularity_(granularity),
      state_(std::make_unique<State>()) {
  state_->top = base_;
  state_->stats.reserved_bytes = reserved_;
}

VirtualMemorySource::~VirtualMemorySource() = default;

void* VirtualMemorySource::Reserve(std::size_t bytes) noexcept {
  State& s = *state_;
  common::MutexLock lock(s.mutex);
  const std::size_t room = base_ + reserved_ - s.top;
  if (bytes == 0 || bytes > room) return nullptr;
  const std::size_t length = (bytes + granularity_ - 1) / granularity_ * granularity_;
  if (length > room) return nullptr;
  const std::uintptr_t addr = s.top;
  if (!CommitGranules(addr, length)) {
    ++s.stats.num_refused_commits;
    return nullptr;
  }
  ++s.stats.num_commits;
  s.committed.Add(addr, addr + length);
  s.handed_out.Add(addr, addr + length);
  s.top = addr + length;
  return reinterpret_cast<void*>(addr);
}

void VirtualMemorySource::Release(void* ptr, std::size_t bytes) noexcept {
  State& s = *state_;
  common::MutexLock lock(s.mutex);
  const auto addr = reinterpret_cast<std::uintptr_t>(ptr);
  const std::size_t length = (bytes + granularity_ - 1) / granularity_ * granularity_;
  if (addr % granularity_ != 0 || !s.handed_out.Covers(addr, addr + length)) {
    ++s.stats.num_contract_violations;
    return;
  }
  // Counted in locals: the analysis checks the lambda without the lock held here.
  std::uint64_t decommits = 0;
  std::uint64_t decommitted = 0;
  s.committed.ForEachInside(addr, addr + length, [&](std::uintptr_t b, std::uintptr_t e) {
    DecommitGranules(b, e - b);
    ++decommits;
    decommitted += e - b;
  });
  s.stats.num_decommits += decommits;
  s.stats.bytes_decommitted += decommitted;
  s.committed.Remove(addr, addr + length);
  s.handed_out.Remove(addr, addr + length);
  // The top falls back to the end of the highest range still handed out.
  std::uintptr_t top = base_;
  s.handed_out.ForEachInside(base_, s.top, [&top](std::uintptr_t, std::uintptr_t e) { top = e; });
  s.top = top;
}

bool VirtualMemorySource::Commit(void* ptr, std::size_t bytes) noexcept {
  State& s = *state_;
  common::MutexLock lock(s.mutex);
  const auto addr = reinterpret_cast<std::uintptr_t>(ptr);
  if (bytes == 0 || addr % granularity_ != 0 || bytes % granularity_ != 0 ||
      !s.handed_out.Covers(addr, addr + bytes) || s.committed.BytesInside(addr, addr + bytes) != 0) {
    ++s.stats.num_contract_violations;
    return false;
  }
  if (!CommitGranules(addr, bytes)) {
    ++s.stats.num_refused_commits;
    return false;
  }
  ++s.stats.num_commits;
  s.committed.Add(addr, addr + bytes);
  return true;
}

void VirtualMemorySource::Decommit(void* ptr, std::size_t bytes) noexcept {
  State& s = *state_;
  common::MutexLock lock(s.mutex);
  const auto addr = reinterpret_cast<std::uintptr_t>(ptr);
  if (bytes == 0 || addr % granularity_ != 0 || bytes % granularity_ != 0 ||
      !s.committed.Covers(addr, addr + bytes)) {
    ++s.stats.num_contract_violations;
    return;
  }
  DecommitGranules(addr, bytes);
  ++s.stats.num_decommits;
  s.stats.bytes_decommitted += bytes;
  s.committed.Remove(addr, addr + bytes);
}

VirtualMemoryStats VirtualMemorySource::VirtualStats() const noexcept {
  common::MutexLock lock(state_->mutex);
  VirtualMemoryStats stats = state_->stats;
  stats.used_bytes = state_->top - base_;
  stats.committed_bytes = state_->committed.bytes();
  return stats;
}

}  // namespace memarena
