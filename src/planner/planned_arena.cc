// PlannedArena: serves a run's allocations at planned offsets in one upstream block,
// records runs it has no pattern for, and falls back to the upstream allocator whenever
// a request does not match the pattern exactly.
#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "common/asan.h"
#include "common/format.h"
#include "common/helper_thread.h"
#include "common/mutex.h"
#include "common/release_registry.h"
#include "common/usage_counters.h"
#include "memarena/planner.h"

namespace memarena {
namespace {

// ASAN builds poison the parts of the pattern block no planned tensor holds, so a use after
// free of a planned tensor is reported. Only over a host upstream: device memory has no
// host shadow. The block goes back to the upstream unpoisoned, as the upstream handed it out.
void PoisonInBlock(const Allocator& upstream, const void* ptr, std::size_t bytes) {
  if constexpr (common::kAsan) {
    if (upstream.kind() == AllocatorKind::kHost) common::PoisonFree(ptr, bytes);
  }
}

void UnpoisonInBlock(const Allocator& upstream, const void* ptr, std::size_t bytes) {
  if constexpr (common::kAsan) {
    if (upstream.kind() == AllocatorKind::kHost) common::UnpoisonForUse(ptr, bytes);
  }
}

}  // namespace

// Everything behind the public header: the run, the pattern block, the live blocks, the
// counters and the planning thread, all under `mutex_` except the plan itself.
struct PlannedArena::Impl {
  static constexpr std::uint64_t kNotTraced = ~std::uint64_t{0};
  struct Live {
    std::size_t bytes;
    std::size_t usable;
    bool planned;
    std::uint64_t run;       // the run that allocated it (its trace ids belong to that run)
    std::uint64_t trace_id;
  };
  struct PlanJob {
    ShapeSignature shapes;
    std::vector<TraceEvent> trace;
  };

  Impl(Allocator& upstream, PlannedArenaOptions options)
      : upstream_(upstream), options_(std::move(options)), cache_(options_.cache_capacity) {}

  void* TryServePlannedLocked(std::size_t bytes, std::size_t alignment)
      MEMARENA_REQUIRES(mutex_);
  void* AllocateLocked(std::size_t bytes, std::size_t alignment) noexcept
      MEMARENA_REQUIRES(mutex_);
  FreeResult DeallocateLocked(void* ptr) noexcept MEMARENA_REQUIRES(mutex_);
  void PlanLoop() MEMARENA_EXCLUDES(mutex_);
  void PlanAndCache(const PlanJob& job) MEMARENA_EXCLUDES(mutex_);  // the plan runs unlocked
  bool ReleaseBlockLocked() noexcept MEMARENA_REQUIRES(mutex_);
  void NoteAllocLocked(void* ptr, const Live& live) MEMARENA_REQUIRES(mutex_);
  AllocatorStats SnapshotLocked(std::size_t limit) const MEMARENA_REQUIRES(mutex_);

  Allocator& upstream_;
  const PlannedArenaOptions options_;
  PlanCache cache_;  // has its own lock
  mutable common::Mutex mutex_;
  bool run_open_ MEMARENA_GUARDED_BY(mutex_) = false;
  std::uint64_t run_ MEMARENA_GUARDED_BY(mutex_) = 0;  // counts BeginRun calls
  ShapeSignature run_shapes_ MEMARENA_GUARDED_BY(mutex_);
  // The pattern served in this run, and whether a request differed from it in this run.
  std::shared_ptr<const MemoryPattern> pattern_ MEMARENA_GUARDED_BY(mutex_);
  bool pattern_broken_ MEMARENA_GUARDED_BY(mutex_) = false;
  std::size_t next_slot_ MEMARENA_GUARDED_BY(mutex_) = 0;
  std::vector<TraceEvent> trace_ MEMARENA_GUARDED_BY(mutex_);  // every event of the open run
  std::uint64_t next_trace_id_ MEMARENA_GUARDED_BY(mutex_) = 0;
  std::byte* block_ MEMARENA_GUARDED_BY(mutex_) = nullptr;
  std::size_t block_size_ MEMARENA_GUARDED_BY(mutex_) = 0;
  std::size_t block_alignment_ MEMARENA_GUARDED_BY(mutex_) = 0;
  // offset -> end of live planned tensors
  std::map<std::size_t, std::size_t> planned_live_ MEMARENA_GUARDED_BY(mutex_);
  std::unordered_map<const void*, Live> live_ MEMARENA_GUARDED_BY(mutex_);
  std::uint64_t planned_hits_ MEMARENA_GUARDED_BY(mutex_) = 0;
  std::uint64_t fallbacks_ MEMARENA_GUARDED_BY(mutex_) = 0;
  common::UsageCounters stats_ MEMARENA_GUARDED_BY(mutex_);
  // Planning, all under mutex_ except the plan itself.
  std::deque<PlanJob> jobs_ MEMARENA_GUARDED_BY(mutex_);
  // The planning thread is working on a job / the destructor asks it to finish.
  bool planning_ MEMARENA_GUARDED_BY(mutex_) = false;
  bool stopping_ MEMARENA_GUARDED_BY(mutex_) = false;
  std::string plan_error_ MEMARENA_GUARDED_BY(mutex_);
  std::condition_variable_any plan_cv_;  // jobs_ grew, a job finished, or stopping_
  // Started under mutex_; joined by the destructor after stopping_ is set.
  std::thread plan_thread_;
};

PlannedArena::PlannedArena(Allocator& upstream, PlannedArenaOptions options)
    : impl_(std::make_unique<Impl>(upstream, std::move(options))) {
  common::RegisterReleasable(this);
}

PlannedArena::~PlannedArena() {
  common::UnregisterReleasable(this);
  Impl& m = *impl_;
  {
    common::MutexLock lock(m.mutex_);
    m.stopping_ = true;
    m.jobs_.clear();
  }
  m.plan_cv_.notify_all();
  if (m.plan_thread_.joinable()) m.plan_thread_.join();
  common::MutexLock lock(m.mutex_);
  if (m.block_ != nullptr) {
    UnpoisonInBlock(m.upstream_, m.block_, m.block_size_);
    m.upstream_.Deallocate(m.block_);
  }
}

void PlannedArena::BeginRun(const ShapeSignature& shapes) {
  Impl& m = *impl_;
  std::shared_ptr<const MemoryPattern> pattern = m.cache_.Find(shapes);
  common::MutexLock lock(m.mutex_);
  if (m.run_open_) {
    throw std::logic_error("memarena PlannedArena: BeginRun called while a run is open; "
                           "call EndRun first");
  }
  std::size_t size = 0;
  std::size_t alignment = kDefaultAlignment;
  if (pattern != nullptr) {
    size = pattern->plan.arena_size;
    for (const PlanTensor& t : pattern->tensors) alignment = std::max(alignment, t.alignment);
  }
  const bool block_fits =
      m.block_ != nullptr && m.block_size_ == size && m.block_alignment_ >= alignment;
  if (!block_fits) {
    // Give the old block back before taking the new one, so two never coexist
    // (ONNX Runtime #14477). While tensors still live in it, serve this run upstream.
    if (!m.planned_live_.empty()) {
      pattern = nullptr;
    } else {
      m.ReleaseBlockLocked();
      if (pattern != nullptr && size > 0) {
        void* block = m.upstream_.TryAllocate(size, alignment);
        if (block == nullptr) {
          m.stats_.OnFailure();
          throw OutOfMemory(common::OutOfMemoryMessage(
              name(), size, alignment, m.SnapshotLocked(m.upstream_.GetStats().limit_bytes),
              "the pattern block could not be obtained",
              "Free memory in the upstream allocator or raise its limit."));
        }
        PoisonInBlock(m.upstream_, block, size);
        m.block_ = static_cast<std::byte*>(block);
        m.block_size_ = size;
        m.block_alignment_ = alignment;
        ++m.stats_.num_reserves;
        m.stats_.OnHold(size);
      }
    }
  }
  m.run_open_ = true;
  ++m.run_;
  m.run_shapes_ = shapes;
  m.pattern_ = std::move(pattern);
  m.pattern_broken_ = false;
  m.next_slot_ = 0;
  m.trace_.clear();
  m.next_trace_id_ = 0;
  m.planned_hits_ = 0;
  m.fallbacks_ = 0;
}

void PlannedArena::EndRun() {
  Impl& m = *impl_;
  common::MutexLock lock(m.mutex_);
  if (!m.run_open_) throw std::logic_error("memarena PlannedArena: EndRun without BeginRun");
  m.run_open_ = false;
  const bool served = m.pattern_ != nullptr && !m.pattern_broken_;
  m.pattern_ = nullptr;
  if (served || m.trace_.empty()) return;
  Impl::PlanJob job{m.run_shapes_, std::move(m.trace_)};
  m.trace_.clear();
  // A newer run of the same shapes replaces one still waiting: only the latest counts.
  for (Impl::PlanJob& queued : m.jobs_) {
    if (queued.shapes == job.shapes) {
      queued = std::move(job);
      return;
    }
  }
  if (!m.plan_thread_.joinable()) {
    try {
      m.plan_thread_ = common::StartHelperThread([&m] { m.PlanLoop(); });
    } catch (const std::system_error&) {
      // No thread to be had: plan here, but still without the lock.
      m.mutex_.unlock();
      m.PlanAndCache(job);
      m.mutex_.lock();  // `lock` releases it on return
      return;
    }
  }
  m.jobs_.push_back(std::move(job));
  m.plan_cv_.notify_all();
}

void PlannedArena::Impl::PlanLoop() {
  common::MutexLock lock(mutex_);
  for (;;) {
    while (!stopping_ && jobs_.empty()) mutex_.Wait(plan_cv_);
    if (stopping_) return;
    PlanJob job = std::move(jobs_.front());
    jobs_.pop_front();
    planning_ = true;
    mutex_.unlock();
    PlanAndCache(job);  // the long part: no lock held, allocations go on
    mutex_.lock();
    planning_ = false;
    plan_cv_.notify_all();
  }
}

void PlannedArena::Impl::PlanAndCache(const PlanJob& job) {
  std::string error;
  try {
    auto pattern = std::make_shared<MemoryPattern>();
    pattern->tensors = TensorsFromTrace(job.trace);
    PlanOptions options;
    options.budget = options_.plan_budget;
    pattern->plan = options_.planner ? options_.planner(pattern->tensors, options)
                                     : PlanBest(pattern->tensors, options);
    cache_.Insert(job.shapes, std::move(pattern));
  } catch (const std::exception& e) {
    // The run stays unplanned: the next run with these shapes records again.
    error = fmt::format("planning a run of {} events failed: {}", job.trace.size(), e.what());
  }
  common::MutexLock lock(mutex_);
  if (!error.empty()) plan_error_ = std::move(error);
}

void PlannedArena::WaitForPlans() {
  Impl& m = *impl_;
  common::MutexLock lock(m.mutex_);
  while (!m.stopping_ && (!m.jobs_.empty() || m.planning_)) m.mutex_.Wait(m.plan_cv_);
}

bool PlannedArena::Planning() const {
  common::MutexLock lock(impl_->mutex_);
  return impl_->planning_ || !impl_->jobs_.empty();
}

std::string PlannedArena::LastPlanError() const {
  common::MutexLock lock(impl_->mutex_);
  return impl_->plan_error_;
}

bool PlannedArena::ServingPattern() const {
  common::MutexLock lock(impl_->mutex_);
  return impl_->run_open_ && impl_->pattern_ != nullptr && !impl_->pattern_broken_;
}

std::size_t PlannedArena::PatternBlockSize() const {
  common::MutexLock lock(impl_->mutex_);
  return impl_->block_size_;
}

std::uint64_t PlannedArena::PlannedHits() const {
  common::MutexLock lock(impl_->mutex_);
  return impl_->planned_hits_;
}

std::uint64_t PlannedArena::FallbackAllocations() const {
  common::MutexLock lock(impl_->mutex_);
  return impl_->fallbacks_;
}

const PlanCache& PlannedArena::cache() const noexcept { return impl_->cache_; }

AllocatorKind PlannedArena::kind() const noexcept { return impl_->upstream_.kind(); }

void* PlannedArena::Impl::TryServePlannedLocked(std::size_t bytes, std::size_t alignment) {
  if (!run_open_ || pattern_ == nullptr || pattern_broken_) return nullptr;
  const std::vector<PlanTensor>& tensors = pattern_->tensors;
  const std::size_t slot = next_slot_;
  bool ok = slot < tensors.size() && tensors[slot].size == bytes;
  std::size_t offset = 0;
  if (ok) {
    offset = pattern_->plan.offsets[slot];
    ok = reinterpret_cast<std::uintptr_t>(block_ + offset) % alignment == 0;
  }
  if (ok) {
    // The run must free in the recorded order too: a planned tensor still live where this
    // one goes means the pattern no longer describes the run.
    auto next = planned_live_.lower_bound(offset);
    if (next != planned_live_.end() && next->first < offset + bytes) ok = false;
    if (ok && next != planned_live_.begin() && std::prev(next)->second > offset) ok = false;
  }
  if (!ok) {
    pattern_broken_ = true;  // from here on, the whole run goes upstream
    return nullptr;
  }
  planned_live_.emplace(offset, offset + bytes);
  ++next_slot_;
  ++planned_hits_;
  UnpoisonInBlock(upstream_, block_ + offset, bytes);
  return block_ + offset;
}

void* PlannedArena::DoAllocate(std::size_t bytes, std::size_t alignment, StreamHandle) noexcept {
  common::MutexLock lock(impl_->mutex_);
  return impl_->AllocateLocked(bytes, alignment);
}

void* PlannedArena::Impl::AllocateLocked(std::size_t bytes, std::size_t alignment) noexcept {
  void* ptr = nullptr;
  bool planned = false;
  try {
    // Grow ahead (geometrically) so that the push below cannot throw.
    if (run_open_ && trace_.size() == trace_.capacity()) {
      trace_.reserve(std::max<std::size_t>(256, 2 * trace_.capacity()));
    }
    ptr = TryServePlannedLocked(bytes, alignment);
    planned = ptr != nullptr;
    std::size_t usable = bytes;
    if (!planned) {
      ptr = upstream_.TryAllocate(bytes, alignment);
      if (ptr == nullptr) {
        stats_.OnFailure();
        return nullptr;
      }
      usable = upstream_.UsableSize(ptr);
    }
    const bool traced = run_open_ && bytes != 0;
    NoteAllocLocked(ptr, Live{bytes, usable, planned, run_, traced ? next_trace_id_ : kNotTraced});
    if (traced) {
      trace_.push_back({TraceAction::kAllocate, next_trace_id_++, bytes, alignment, 0, 0, 0});
    }
    if (!planned && run_open_) ++fallbacks_;
    return ptr;
  } catch (...) {  // the bookkeeping could not grow: hand nothing out
    if (planned) {
      PoisonInBlock(upstream_, ptr, bytes);
      planned_live_.erase(static_cast<std::size_t>(static_cast<std::byte*>(ptr) - block_));
      --next_slot_;
      --planned_hits_;
    } else if (ptr != nullptr) {
      upstream_.Deallocate(ptr);
    }
    stats_.OnFailure();
    return nullptr;
  }
}

void PlannedArena::Impl::NoteAllocLocked(void* ptr, const Live& live) {
  live_.emplace(ptr, live);  // the only step that may throw; counters follow
  if (!live.planned) stats_.OnHold(live.usable);
  stats_.OnAllocate(live.usable, live.bytes);
}

FreeResult PlannedArena::DoDeallocate(void* ptr, StreamHandle) noexcept {
  common::MutexLock lock(impl_->mutex_);
  return impl_->DeallocateLocked(ptr);
}

FreeResult PlannedArena::Impl::DeallocateLocked(void* ptr) noexcept {
  auto it = live_.find(ptr);
  if (it == live_.end()) return FreeResult::kNotOwned;  // nothing here we may touch
  const Live live = it->second;
  live_.erase(it);
  if (live.planned) {
    planned_live_.erase(static_cast<std::size_t>(static_cast<std::byte*>(ptr) - block_));
    PoisonInBlock(upstream_, ptr, live.bytes);
  } else {
    upstream_.Deallocate(ptr);
    stats_.OnUnhold(live.usable);
  }
  stats_.OnFree(live.usable, live.bytes);
  if (run_open_ && live.run == run_ && live.trace_id != kNotTraced) {
    try {
      trace_.push_back({TraceAction::kFree, live.trace_id, 0, 1, 0, 0, 0});
    } catch (...) {
      // Without the free the trace would keep the tensor live to the end: still a
      // safe (if looser) pattern, so nothing else to do.
    }
  }
  return FreeResult::kFreed;
}

std::size_t PlannedArena::DoUsableSize(const void* ptr) const noexcept {
  common::MutexLock lock(impl_->mutex_);
  auto it = impl_->live_.find(ptr);
  return it == impl_->live_.end() ? 0 : it->second.usable;
}

AllocatorStats PlannedArena::DoGetStats() const {
  const std::size_t limit = impl_->upstream_.GetStats().limit_bytes;
  common::MutexLock lock(impl_->mutex_);
  return impl_->SnapshotLocked(limit);
}

AllocatorStats PlannedArena::Impl::SnapshotLocked(std::size_t limit) const {
  AllocatorStats s = stats_;
  s.limit_bytes = limit;
  std::size_t planned_bytes = 0;
  std::size_t largest_gap = 0;
  std::size_t cursor = 0;
  for (const auto& [begin, end] : planned_live_) {
    planned_bytes += end - begin;
    largest_gap = std::max(largest_gap, begin - cursor);
    cursor = end;
  }
  largest_gap = std::max(largest_gap, block_size_ - std::min(cursor, block_size_));
  const std::size_t free_in_block = block_size_ - std::min(planned_bytes, block_size_);
  s.bytes_releasable = (planned_live_.empty() && !run_open_) ? block_size_ : 0;
  s.largest_free_block = largest_gap;
  s.fragmentation = free_in_block == 0
                        ? 0.0
                        : 1.0 - static_cast<double>(largest_gap) / static_cast<double>(free_in_block);
  return s;
}

void PlannedArena::ResetPeakStats() {
  common::MutexLock lock(impl_->mutex_);
  impl_->stats_.ResetPeaks();
}

bool PlannedArena::Impl::ReleaseBlockLocked() noexcept {
  if (block_ == nullptr) return false;
  UnpoisonInBlock(upstream_, block_, block_size_);
  upstream_.Deallocate(block_);
  stats_.OnRelease(block_size_, 1);
  block_ = nullptr;
  block_size_ = 0;
  block_alignment_ = 0;
  return true;
}

std::size_t PlannedArena::ReleaseUnusedSpans() {
  Impl& m = *impl_;
  std::size_t released = 0;
  {
    common::MutexLock lock(m.mutex_);
    // The block is needed by an open run even while nothing lives in it yet.
    if (!m.run_open_ && m.planned_live_.empty()) {
      released = m.block_size_;
      if (m.ReleaseBlockLocked()) ++m.stats_.num_arena_shrinkages;
    }
  }
  return released + m.upstream_.ReleaseUnusedSpans();
}

std::string PlannedArena::DescribeFailure(std::size_t bytes, std::size_t alignment) const {
  const Allocator& upstream = impl_->upstream_;
  return common::OutOfMemoryMessage(
      name(), bytes, alignment, GetStats(),
      fmt::format("the upstream allocator '{}' could not serve it (in use and held "
                  "count the pattern block plus requests sent upstream)",
                  upstream.name()),
      fmt::format("Requests outside the pattern go to the upstream allocator '{}': raise its "
                  "limit or free memory there.",
                  upstream.name()));
}

}  // namespace memarena
