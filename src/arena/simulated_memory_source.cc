// SimulatedMemorySource: fake address ranges with fault injection and a call log.
#include "arena/simulated_memory_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace memarena::arena {
namespace {

// Far from anything the process maps, and never dereferenced.
constexpr std::uintptr_t kFakeBase = std::uintptr_t{1} << 44;

std::uintptr_t AlignUp(std::uintptr_t value, std::size_t alignment) {
  return (value + alignment - 1) & ~(std::uintptr_t{alignment} - 1);
}

}  // namespace

SimulatedMemorySource::SimulatedMemorySource(Options options)
    : options_(options), next_addr_(kFakeBase) {
  if (options_.alignment < 256 || !IsValidAlignment(options_.alignment)) {
    throw std::invalid_argument(fmt::format(
        "SimulatedMemorySource: alignment {} is not a power of two >= 256", options_.alignment));
  }
}

void* SimulatedMemorySource::Reserve(std::size_t bytes) noexcept {
  common::MutexLock lock(mutex_);
  bool refuse = fail_always_ || bytes == 0 ||
                (options_.capacity != 0 && bytes > options_.capacity - std::min(held_, options_.capacity));
  if (fail_next_ > 0) {
    --fail_next_;
    refuse = true;
  } else if (fail_after_armed_) {
    if (succeed_then_fail_ == 0) {
      refuse = true;
    } else if (!refuse) {
      --succeed_then_fail_;
    }
  }
  if (refuse) {
    ++failed_reserves_;
    RecordLocked({CallKind::kReserve, 0, bytes});
    return nullptr;
  }
  const std::uintptr_t addr = AlignUp(next_addr_, options_.alignment);
  // Reserve is noexcept: when the source's own bookkeeping cannot grow (operator new
  // fails, as the arena's metadata-failure tests arrange), it refuses like a real
  // source out of memory instead of terminating.
  try {
    outstanding_.emplace(addr, bytes);
  } catch (const std::bad_alloc&) {
    ++failed_reserves_;
    RecordLocked({CallKind::kReserve, 0, bytes});
    return nullptr;
  }
  // A gap keeps ranges apart unless the source simulates contiguous growth.
  next_addr_ = addr + bytes + (options_.contiguous ? 0 : options_.alignment);
  held_ += bytes;
  RecordLocked({CallKind::kReserve, addr, bytes});
  return reinterpret_cast<void*>(addr);
}

void SimulatedMemorySource::RecordLocked(const Call& call) noexcept {
  try {
    calls_.push_back(call);
  } catch (const std::bad_alloc&) {
    ++unrecorded_calls_;  // the call log is for tests; the books above stay exact
  }
}

void SimulatedMemorySource::Release(void* ptr, std::size_t bytes) noexcept {
  common::MutexLock lock(mutex_);
  const auto addr = reinterpret_cast<std::uintptr_t>(ptr);
  RecordLocked({CallKind::kRelease, addr, bytes});
  const auto it = outstanding_.find(addr);
  if (it == outstanding_.end() || it->second != bytes) {
    ++bad_releases_;
    return;
  }
  held_ -= bytes;
  outstanding_.erase(it);
}

std::optional<SourceCapacity> SimulatedMemorySource::Capacity() const noexcept {
  common::MutexLock lock(mutex_);
  if (options_.capacity == 0) return std::nullopt;
  return SourceCapacity{options_.capacity - std::min(held_, options_.capacity), options_.capacity};
}

void SimulatedMemorySource::FailNext(std::size_t n) {
  common::MutexLock lock(mutex_);
  fail_next_ = n;
}

void SimulatedMemorySource::FailAfter(std::size_t n) {
  common::MutexLock lock(mutex_);
  fail_after_armed_ = true;
  succeed_then_fail_ = n;
}

void SimulatedMemorySource::FailAlways() {
  common::MutexLock lock(mutex_);
  fail_always_ = true;
}

void SimulatedMemorySource::ClearFailures() {
  common::MutexLock lock(mutex_);
  fail_next_ = 0;
  fail_after_armed_ = false;
  succeed_then_fail_ = 0;
  fail_always_ = false;
}

void SimulatedMemorySource::SetCapacity(std::size_t bytes) {
  common::MutexLock lock(mutex_);
  options_.capacity = bytes;
}

std::vector<SimulatedMemorySource::Call> SimulatedMemorySource::calls() const {
  common::MutexLock lock(mutex_);
  return calls_;
}

std::vector<std::size_t> SimulatedMemorySource::ReservedSizes() const {
  common::MutexLock lock(mutex_);
  std::vector<std::size_t> sizes;
  for (const Call& c : calls_) {
    if (c.kind == CallKind::kReserve && c.addr != 0) sizes.push_back(c.bytes);
  }
  return sizes;
}

std::size_t SimulatedMemorySource::held() const {
  common::MutexLock lock(mutex_);
  return held_;
}

std::size_t SimulatedMemorySource::num_failed_reserves() const {
  common::MutexLock lock(mutex_);
  return failed_reserves_;
}

std::size_t SimulatedMemorySource::num_bad_releases() const {
  common::MutexLock lock(mutex_);
  return bad_releases_;
}

std::size_t SimulatedMemorySource::num_unrecorded_calls() const {
  common::MutexLock lock(mutex_);
  return unrecorded_calls_;
}

}  // namespace memarena::arena
