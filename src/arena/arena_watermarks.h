// BfcArena::SetWatermarks' check: notes the arena's held bytes under its lock as an
// operation starts and ends, and checks the levels only after the lock is released and only
// when held moved, so an allocation served from a free chunk never reaches the check.
#pragma once

#include <cstddef>
#include <string>

#include "common/watermark_levels.h"
#include "memarena/stats.h"

namespace memarena::arena {

class WatermarkWatch {
 public:
  // `stats` is the arena's, read only under its lock (by Reading); `limit` is max_mem
  // (0: none). Declare before the lock guard so the check runs after the unlock.
  WatermarkWatch(common::WatermarkLevels& levels, const AllocatorStats& stats,
                 std::size_t limit, const std::string& name) noexcept
      : levels_(levels), stats_(stats), limit_(limit), name_(name) {}
  WatermarkWatch(const WatermarkWatch&) = delete;
  WatermarkWatch& operator=(const WatermarkWatch&) = delete;
  ~WatermarkWatch() {
    if (held_before_ == held_after_) return;
    levels_.Check(held_after_, limit_, [this] { return Describe(); });
  }

  // Makes the check run even if held does not move (SetWatermarks: a level already crossed).
  void ForgetStart() noexcept { held_before_ = ~std::size_t{0}; }

  // Declare right after the lock guard: notes held when the lock is taken and before it is
  // released. One relaxed load when the arena has no watermarks.
  class Reading {
   public:
    explicit Reading(WatermarkWatch& watch) noexcept
        : watch_(watch.levels_.Active() ? &watch : nullptr) {
      if (watch_ != nullptr) watch_->held_before_ = watch_->held_after_ = watch_->stats_.bytes_held;
    }
    ~Reading() {
      if (watch_ == nullptr) return;
      watch_->held_after_ = watch_->stats_.bytes_held;
      watch_->in_use_after_ = watch_->stats_.bytes_in_use;
    }
    Reading(const Reading&) = delete;
    Reading& operator=(const Reading&) = delete;

   private:
    WatermarkWatch* watch_;
  };

 private:
  WatermarkCrossing Describe() const;

  common::WatermarkLevels& levels_;
  const AllocatorStats& stats_;
  const std::size_t limit_;
  const std::string& name_;
  std::size_t held_before_ = 0;
  std::size_t held_after_ = 0;
  std::size_t in_use_after_ = 0;
};

}  // namespace memarena::arena
