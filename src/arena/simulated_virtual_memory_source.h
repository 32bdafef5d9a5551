// SimulatedVirtualMemorySource: a VirtualMemorySource with no memory behind it, for tests and
// benchmarks. It logs every commit and decommit and refuses commits on demand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/mutex.h"
#include "memarena/virtual_memory_source.h"

namespace memarena::arena {

class SimulatedVirtualMemorySource final : public VirtualMemorySource {
 public:
  struct Options {
    std::size_t reserve_bytes = std::size_t{64} << 30;
    std::size_t granularity = std::size_t{2} << 20;  // CUDA's usual allocation granularity
    std::size_t capacity = 0;  // refuse commits that would put more than this behind the range; 0 = unlimited
    AllocatorKind kind = AllocatorKind::kDevice;
  };
  enum class CallKind { kCommit, kDecommit };
  struct Call {
    CallKind kind;
    std::uintptr_t addr;
    std::size_t bytes;
    bool refused;
  };

  SimulatedVirtualMemorySource() : SimulatedVirtualMemorySource(Options{}) {}
  // Throws std::invalid_argument when the granularity is not a power of two >= 256.
  explicit SimulatedVirtualMemorySource(Options options);

  std::optional<SourceCapacity> Capacity() const noexcept override;
  AllocatorKind kind() const noexcept override { return options_.kind; }
  std::string_view name() const noexcept override { return "simulated_virtual"; }

  // Fault injection: the next `n` commits are refused; every commit is refused; undo both.
  void FailNextCommits(std::size_t n);
  void FailAlways();
  void ClearFailures();

  std::vector<Call> calls() const;

 protected:
  bool CommitGranules(std::uintptr_t addr, std::size_t bytes) noexcept override;
  void DecommitGranules(std::uintptr_t addr, std::size_t bytes) noexcept override;

 private:
  Options options_;
  mutable common::Mutex mutex_;
  std::size_t committed_ MEMARENA_GUARDED_BY(mutex_) = 0;
  std::size_t fail_next_ MEMARENA_GUARDED_BY(mutex_) = 0;
  bool fail_always_ MEMARENA_GUARDED_BY(mutex_) = false;
  std::vector<Call> calls_ MEMARENA_GUARDED_BY(mutex_);
};

}  // namespace memarena::arena
