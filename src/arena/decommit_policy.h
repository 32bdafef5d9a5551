// DecommitPolicy: when an expandable arena (expandable_segments:1) gives free granules back.
// Held may exceed in use by up to ArenaConfig::expandable_decommit_threshold; past it, free
// granules go back until held exceeds in use by half the threshold (the hysteresis).
// "In use" is the most in use over the current and the previous epoch of kEpochFrees frees,
// so memory goes back once it has stayed unused for a whole epoch, not on every dip of a
// workload whose in use swings by hundreds of MiB between layers (decommitting and
// recommitting those granules each time cost about 10x the plain arena's ops/s on the batched
// inference trace). Counted in frees, not time, so the rule is deterministic.
// Not thread-safe; BfcArena locks around it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace memarena::arena {

class DecommitPolicy {
 public:
  static constexpr std::uint32_t kEpochFrees = 2048;

  explicit DecommitPolicy(std::size_t threshold) noexcept : threshold_(threshold) {}

  // After an allocation: `in_use` is the arena's bytes in use now.
  void NoteInUse(std::size_t in_use) noexcept { epoch_peak_ = std::max(epoch_peak_, in_use); }

  // Before committing so that held becomes `held_after` with `in_use_after` in use: the bytes
  // of other free granules to decommit first (0: none).
  std::size_t ExcessBeforeCommit(std::size_t held_after, std::size_t in_use_after) const noexcept {
    return Excess(held_after, std::max(in_use_after, RecentPeak()));
  }

  // After a free: at the end of an epoch, the bytes to decommit now (else 0).
  std::size_t ExcessAfterFree(std::size_t held, std::size_t in_use) noexcept {
    if (++frees_ < kEpochFrees) return 0;
    frees_ = 0;
    previous_peak_ = epoch_peak_;
    epoch_peak_ = in_use;
    return Excess(held, RecentPeak());
  }

  // ReleaseUnusedSpans gave back every free granule: the epochs start again from `in_use`.
  void Restart(std::size_t in_use) noexcept {
    frees_ = 0;
    previous_peak_ = epoch_peak_ = in_use;
  }

 private:
  std::size_t RecentPeak() const noexcept { return std::max(epoch_peak_, previous_peak_); }
  std::size_t Excess(std::size_t held, std::size_t in_use) const noexcept {
    const std::size_t excess = held - std::min(held, in_use);
    return excess > threshold_ ? excess - threshold_ / 2 : 0;
  }

  const std::size_t threshold_;
  std::uint32_t frees_ = 0;
  std::size_t epoch_peak_ = 0;
  std::size_t previous_peak_ = 0;
};

}  // namespace memarena::arena
