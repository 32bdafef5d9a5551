// The watermark state one limit needs (host ceiling, an arena's max_mem): the levels and
// their callback, which levels have fired, and the check that fires and re-arms them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "memarena/observability.h"

namespace memarena::common {

class WatermarkLevels {
 public:
  constexpr WatermarkLevels() = default;
  WatermarkLevels(const WatermarkLevels&) = delete;
  WatermarkLevels& operator=(const WatermarkLevels&) = delete;

  // Replaces the levels (sorted here) and callback; empty `levels` turns them off. Throws
  // std::invalid_argument, its message starting with `who`, for more than 16 levels, a level
  // outside (0, 1] or a hysteresis outside [0, 1).
  void Set(std::string_view who, std::vector<double> levels, WatermarkCallback callback,
           double hysteresis) MEMARENA_EXCLUDES(settings_mutex_);

  // One relaxed load.
  bool Active() const noexcept { return active_.load(std::memory_order_relaxed); }

  // Compares `held` with each level of `limit` (0: no limit, nothing fires): fires the
  // callback for every level crossed upward, in order, once per crossing across threads,
  // and re-arms levels held fell below by the hysteresis. `describe()` (called only when a
  // level fires) gives the crossing's in use, held, limit and consumers. Call with no
  // allocator lock held; a callback's own allocations do not re-enter any check.
  template <typename Describe>
  void Check(std::size_t held, std::size_t limit, Describe&& describe) noexcept {
    if (!Active() || InCallback()) return;
    try {
      std::shared_ptr<const Settings> settings;
      const std::uint32_t to_fire = Arm(held, limit, settings);
      if (to_fire != 0) Fire(*settings, to_fire, describe());
    } catch (...) {
      // A settings copy or the description failed to allocate: the next check retries.
    }
  }

  // The highest level currently fired (0 when none).
  double CurrentLevel() const noexcept;

 private:
  struct Settings;
  static bool InCallback() noexcept;
  std::shared_ptr<const Settings> CurrentSettings() const MEMARENA_EXCLUDES(settings_mutex_);
  std::uint32_t Arm(std::size_t held, std::size_t limit, std::shared_ptr<const Settings>& out)
      MEMARENA_EXCLUDES(settings_mutex_);
  void Fire(const Settings& settings, std::uint32_t levels, const WatermarkCrossing& base)
      MEMARENA_EXCLUDES(callback_mutex_);

  mutable Mutex settings_mutex_;
  // Replaced, never edited: a reader keeps its copy of the pointer after the lock.
  std::shared_ptr<const Settings> settings_ MEMARENA_GUARDED_BY(settings_mutex_);
  Mutex callback_mutex_;  // serializes callbacks (and so keeps their order); guards no field
  std::atomic<bool> active_{false};
  std::atomic<std::uint32_t> fired_{0};  // bit i: level i fired and not re-armed
};

}  // namespace memarena::common
