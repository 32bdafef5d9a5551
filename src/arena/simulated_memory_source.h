// SimulatedMemorySource: a MemorySource with no memory behind it, for fault injection,
// fast tests and benchmarks. It hands out fake addresses that must never be touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "common/mutex.h"
#include "memarena/memory_source.h"

namespace memarena::arena {

class SimulatedMemorySource final : public MemorySource {
 public:
  struct Options {
    std::size_t alignment = 256;  // every range starts on this boundary (power of two >= 256)
    bool contiguous = false;      // each range starts where the previous one ended
    std::size_t capacity = 0;     // refuse when held would exceed this; 0 = unlimited
    AllocatorKind kind = AllocatorKind::kDevice;
  };
  enum class CallKind { kReserve, kRelease };
  struct Call {
    CallKind kind;
    std::uintptr_t addr;  // 0 for a refused Reserve
    std::size_t bytes;
  };

  SimulatedMemorySource() : SimulatedMemorySource(Options{}) {}
  explicit SimulatedMemorySource(Options options);

  void* Reserve(std::size_t bytes) noexcept override;
  void Release(void* ptr, std::size_t bytes) noexcept override;
  std::size_t Alignment() const noexcept override { return options_.alignment; }
  bool MergesAdjacent() const noexcept override { return options_.contiguous; }
  bool GrowsContiguously() const noexcept override { return options_.contiguous; }
  std::optional<SourceCapacity> Capacity() const noexcept override;
  AllocatorKind kind() const noexcept override { return options_.kind; }
  std::string_view name() const noexcept override { return "simulated"; }

  // Fault injection: the next `n` Reserve calls fail; every Reserve after the next `n`
  // fails; every Reserve fails. ClearFailures undoes all three.
  void FailNext(std::size_t n);
  void FailAfter(std::size_t n);
  void FailAlways();
  void ClearFailures();
  void SetCapacity(std::size_t bytes);

  // Every Reserve and Release in order (a call the log could not store, because
  // operator new failed, is counted in num_unrecorded_calls instead).
  std::vector<Call> calls() const;
  std::vector<std::size_t> ReservedSizes() const;  // successful Reserve sizes, in order
  std::size_t held() const;                        // bytes reserved and not released
  std::size_t num_failed_reserves() const;
  // Releases that did not match an outstanding range exactly (an arena bug).
  std::size_t num_bad_releases() const;
  std::size_t num_unrecorded_calls() const;

 private:
  void RecordLocked(const Call& call) noexcept MEMARENA_REQUIRES(mutex_);

  Options options_;
  mutable common::Mutex mutex_;
  std::uintptr_t next_addr_ MEMARENA_GUARDED_BY(mutex_);
  std::size_t fail_next_ MEMARENA_GUARDED_BY(mutex_) = 0;
  std::size_t succeed_then_fail_ MEMARENA_GUARDED_BY(mutex_) = 0;
  bool fail_after_armed_ MEMARENA_GUARDED_BY(mutex_) = false;
  bool fail_always_ MEMARENA_GUARDED_BY(mutex_) = false;
  std::size_t held_ MEMARENA_GUARDED_BY(mutex_) = 0;
  std::size_t failed_reserves_ MEMARENA_GUARDED_BY(mutex_) = 0;
  std::size_t bad_releases_ MEMARENA_GUARDED_BY(mutex_) = 0;
  std::size_t unrecorded_calls_ MEMARENA_GUARDED_BY(mutex_) = 0;
  std::map<std::uintptr_t, std::size_t> outstanding_ MEMARENA_GUARDED_BY(mutex_);
  std::vector<Call> calls_ MEMARENA_GUARDED_BY(mutex_);
};

}  // namespace memarena::arena
