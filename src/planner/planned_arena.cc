// PlannedArena: serves a run's allocations at planned offsets in one upstream block,
// records runs it has no pattern for, and falls back to the upstream allocator whenever
// a request does not match the pattern exactly.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <system_error>

#include "common/asan.h"
#include "common/format.h"
#include "common/release_registry.h"
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

PlannedArena::PlannedArena(Allocator& upstream, PlannedArenaOptions options)
    : upstream_(upstream), options_(options), cache_(options.cache_capacity) {
  common::RegisterReleasable(this);
}

PlannedArena::~PlannedArena() {
  common::UnregisterReleasable(this);
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    jobs_.clear();
  }
  plan_cv_.notify_all();
  if (plan_thread_.joinable()) plan_thread_.join();
  std::lock_guard lock(mutex_);
  if (block_ != nullptr) {
    UnpoisonInBlock(upstream_, block_, block_size_);
    upstream_.Deallocate(block_);
  }
}

void PlannedArena::BeginRun(const ShapeSignature& shapes) {
  std::shared_ptr<const MemoryPattern> pattern = cache_.Find(shapes);
  std::lock_guard lock(mutex_);
  if (run_open_) {
    throw std::logic_error("memarena PlannedArena: BeginRun called while a run is open; "
                           "call EndRun first");
  }
  std::size_t size = 0;
  std::size_t alignment = kDefaultAlignment;
  if (pattern != nullptr) {
    size = pattern->plan.arena_size;
    for (const PlanTensor& t : pattern->tensors) alignment = std::max(alignment, t.alignment);
  }
  const bool block_fits = block_ != nullptr && block_size_ == size && block_alignment_ >= alignment;
  if (!block_fits) {
    // Give the old block back before taking the new one, so two never coexist
    // (ONNX Runtime #14477). While tensors still live in it, serve this run upstream.
    if (!planned_live_.empty()) {
      pattern = nullptr;
    } else {
      ReleaseBlockLocked();
      if (pattern != nullptr && size > 0) {
        void* block = upstream_.TryAllocate(size, alignment);
        if (block == nullptr) {
          ++stats_.num_ooms;
          throw OutOfMemory(common::OutOfMemoryMessage(
              name(), size, alignment, SnapshotLocked(upstream_.GetStats().limit_bytes),
              "the pattern block could not be obtained",
              "Free memory in the upstream allocator or raise its limit."));
        }
        PoisonInBlock(upstream_, block, size);
        block_ = static_cast<std::byte*>(block);
        block_size_ = size;
        block_alignment_ = alignment;
        ++stats_.num_reserves;
        stats_.bytes_held += size;
        stats_.peak_bytes_held = std::max(stats_.peak_bytes_held, stats_.bytes_held);
      }
    }
  }
  run_open_ = true;
  ++run_;
  run_shapes_ = shapes;
  pattern_ = std::move(pattern);
  pattern_broken_ = false;
  next_slot_ = 0;
  trace_.clear();
  next_trace_id_ = 0;
  planned_hits_ = 0;
  fallbacks_ = 0;
}

void PlannedArena::EndRun() {
  std::unique_lock lock(mutex_);
  if (!run_open_) throw std::logic_error("memarena PlannedArena: EndRun without BeginRun");
  run_open_ = false;
  const bool served = pattern_ != nullptr && !pattern_broken_;
  pattern_ = nullptr;
  if (served || trace_.empty()) return;
  PlanJob job{run_shapes_, std::move(trace_)};
  trace_.clear();
  // A newer run of the same shapes replaces one still waiting: only the latest counts.
  for (PlanJob& queued : jobs_) {
    if (queued.shapes == job.shapes) {
      queued = std::move(job);
      return;
    }
  }
  if (!plan_thread_.joinable()) {
    try {
      plan_thread_ = std::thread([this] { PlanLoop(); });
    } catch (const std::system_error&) {
      // No thread to be had: plan here, but still without the lock.
      lock.unlock();
      PlanAndCache(job);
      return;
    }
  }
  jobs_.push_back(std::move(job));
  plan_cv_.notify_all();
}

void PlannedArena::PlanLoop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    plan_cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    PlanJob job = std::move(jobs_.front());
    jobs_.pop_front();
    planning_ = true;
    lock.unlock();
    PlanAndCache(job);  // the long part: no lock held, allocations go on
    lock.lock();
    planning_ = false;
    plan_cv_.notify_all();
  }
}

void PlannedArena::PlanAndCache(const PlanJob& job) {
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
  std::lock_guard lock(mutex_);
  if (!error.empty()) plan_error_ = std::move(error);
}

void PlannedArena::WaitForPlans() {
  std::unique_lock lock(mutex_);
  plan_cv_.wait(lock, [this] { return stopping_ || (jobs_.empty() && !planning_); });
}

bool PlannedArena::Planning() const {
  std::lock_guard lock(mutex_);
  return planning_ || !jobs_.empty();
}

std::string PlannedArena::LastPlanError() const {
  std::lock_guard lock(mutex_);
  return plan_error_;
}

bool PlannedArena::ServingPattern() const {
  std::lock_guard lock(mutex_);
  return run_open_ && pattern_ != nullptr && !pattern_broken_;
}

std::size_t PlannedArena::PatternBlockSize() const {
  std::lock_guard lock(mutex_);
  return block_size_;
}

std::uint64_t PlannedArena::PlannedHits() const {
  std::lock_guard lock(mutex_);
  return planned_hits_;
}

std::uint64_t PlannedArena::FallbackAllocations() const {
  std::lock_guard lock(mutex_);
  return fallbacks_;
}

void* PlannedArena::TryServePlannedLocked(std::size_t bytes, std::size_t alignment) {
  if (!run_open_ || pattern_ == nullptr || pattern_broken_ || bytes == 0) return nullptr;
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

void* PlannedArena::TryAllocate(std::size_t bytes, std::size_t alignment) noexcept {
  if (!IsValidAlignment(alignment)) return nullptr;
  std::lock_guard lock(mutex_);
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
        if (bytes != 0) ++stats_.num_ooms;
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
    ++stats_.num_ooms;
    return nullptr;
  }
}

void PlannedArena::NoteAllocLocked(void* ptr, const Live& live) {
  live_.emplace(ptr, live);  // the only step that may throw; counters follow
  if (!live.planned) {
    stats_.bytes_held += live.usable;
    stats_.peak_bytes_held = std::max(stats_.peak_bytes_held, stats_.bytes_held);
  }
  stats_.bytes_in_use += live.usable;
  stats_.bytes_requested += live.bytes;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  stats_.peak_bytes_requested = std::max(stats_.peak_bytes_requested, stats_.bytes_requested);
  stats_.max_alloc_size = std::max(stats_.max_alloc_size, live.bytes);
  ++stats_.num_allocs;
}

void PlannedArena::Deallocate(void* ptr) noexcept {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return;  // not from this arena: nothing we may touch
  const Live live = it->second;
  live_.erase(it);
  if (live.planned) {
    planned_live_.erase(static_cast<std::size_t>(static_cast<std::byte*>(ptr) - block_));
    PoisonInBlock(upstream_, ptr, live.bytes);
  } else {
    upstream_.Deallocate(ptr);
    stats_.bytes_held -= live.usable;
  }
  stats_.bytes_in_use -= live.usable;
  stats_.bytes_requested -= live.bytes;
  ++stats_.num_frees;
  if (run_open_ && live.run == run_ && live.trace_id != kNotTraced) {
    try {
      trace_.push_back({TraceAction::kFree, live.trace_id, 0, 1, 0, 0, 0});
    } catch (...) {
      // Without the free the trace would keep the tensor live to the end: still a
      // safe (if looser) pattern, so nothing else to do.
    }
  }
}

std::size_t PlannedArena::UsableSize(const void* ptr) const noexcept {
  if (ptr == nullptr) return 0;
  std::lock_guard lock(mutex_);
  auto it = live_.find(ptr);
  return it == live_.end() ? 0 : it->second.usable;
}

AllocatorStats PlannedArena::GetStats() const {
  const std::size_t limit = upstream_.GetStats().limit_bytes;
  std::lock_guard lock(mutex_);
  return SnapshotLocked(limit);
}

AllocatorStats PlannedArena::SnapshotLocked(std::size_t limit) const {
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
  std::lock_guard lock(mutex_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
  stats_.peak_bytes_requested = stats_.bytes_requested;
  stats_.peak_bytes_held = stats_.bytes_held;
}

bool PlannedArena::ReleaseBlockLocked() noexcept {
  if (block_ == nullptr) return false;
  UnpoisonInBlock(upstream_, block_, block_size_);
  upstream_.Deallocate(block_);
  ++stats_.num_releases;
  stats_.bytes_released += block_size_;
  stats_.bytes_held -= block_size_;
  block_ = nullptr;
  block_size_ = 0;
  block_alignment_ = 0;
  return true;
}

std::size_t PlannedArena::ReleaseUnusedSpans() {
  std::size_t released = 0;
  {
    std::lock_guard lock(mutex_);
    // The block is needed by an open run even while nothing lives in it yet.
    if (!run_open_ && planned_live_.empty()) {
      released = block_size_;
      if (ReleaseBlockLocked()) ++stats_.num_arena_shrinkages;
    }
  }
  return released + upstream_.ReleaseUnusedSpans();
}

std::string PlannedArena::DescribeFailure(std::size_t bytes, std::size_t alignment) const {
  return common::OutOfMemoryMessage(
      name(), bytes, alignment, GetStats(),
      fmt::format("the upstream allocator '{}' could not serve it (in use and held "
                  "count the pattern block plus requests sent upstream)",
                  upstream_.name()),
      fmt::format("Requests outside the pattern go to the upstream allocator '{}': raise its "
                  "limit or free memory there.",
                  upstream_.name()));
}

}  // namespace memarena
