// SimulatedVirtualMemorySource: fake granules with a call log and refusals on demand.
#include "arena/simulated_virtual_memory_source.h"

#include <fmt/format.h>

#include <stdexcept>

namespace memarena::arena {
namespace {

// Far from anything the process maps (and from SimulatedMemorySource's fake ranges); never
// dereferenced.
constexpr std::uintptr_t kFakeBase = std::uintptr_t{1} << 45;

std::size_t CheckedGranularity(std::size_t granularity) {
  if (granularity < 256 || !IsValidAlignment(granularity)) {
    throw std::invalid_argument(fmt::format(
        "SimulatedVirtualMemorySource: granularity {} is not a power of two >= 256", granularity));
  }
  return granularity;
}

}  // namespace

SimulatedVirtualMemorySource::SimulatedVirtualMemorySource(Options options)
    : VirtualMemorySource(kFakeBase,
                          options.reserve_bytes / CheckedGranularity(options.granularity) *
                              options.granularity,
                          options.granularity),
      options_(options) {}

bool SimulatedVirtualMemorySource::CommitGranules(std::uintptr_t addr, std::size_t bytes) noexcept {
  common::MutexLock lock(mutex_);
  bool refuse = fail_always_ ||
                (options_.capacity != 0 && bytes > options_.capacity - std::min(committed_, options_.capacity));
  if (fail_next_ > 0) {
    --fail_next_;
    refuse = true;
  }
  calls_.push_back({CallKind::kCommit, addr, bytes, refuse});
  if (!refuse) committed_ += bytes;
  return !refuse;
}

void SimulatedVirtualMemorySource::DecommitGranules(std::uintptr_t addr, std::size_t bytes) noexcept {
  common::MutexLock lock(mutex_);
  calls_.push_back({CallKind::kDecommit, addr, bytes, false});
  committed_ -= bytes;
}

std::optional<SourceCapacity> SimulatedVirtualMemorySource::Capacity() const noexcept {
  common::MutexLock lock(mutex_);
  if (options_.capacity == 0) return std::nullopt;
  return SourceCapacity{options_.capacity - std::min(committed_, options_.capacity), options_.capacity};
}

void SimulatedVirtualMemorySource::FailNextCommits(std::size_t n) {
  common::MutexLock lock(mutex_);
  fail_next_ = n;
}

void SimulatedVirtualMemorySource::FailAlways() {
  common::MutexLock lock(mutex_);
  fail_always_ = true;
}

void SimulatedVirtualMemorySource::ClearFailures() {
  common::MutexLock lock(mutex_);
  fail_next_ = 0;
  fail_always_ = false;
}

std::vector<SimulatedVirtualMemorySource::Call> SimulatedVirtualMemorySource::calls() const {
  common::MutexLock lock(mutex_);
  return calls_;
}

}  // namespace memarena::arena
