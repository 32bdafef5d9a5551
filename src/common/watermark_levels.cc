// WatermarkLevels: per-level fired bits flipped by CAS so each crossing fires once across
// threads, callbacks serialized under their own mutex (never an allocator lock), and a
// thread-local guard so a callback's own allocations do not re-enter a check.
#include "common/watermark_levels.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace memarena::common {
namespace {

constexpr std::size_t kMaxLevels = 16;
thread_local bool t_in_callback = false;

}  // namespace

struct WatermarkLevels::Settings {
  std::vector<double> levels;
  double hysteresis = kDefaultWatermarkHysteresis;
  WatermarkCallback callback;
};

void WatermarkLevels::Set(std::string_view who, std::vector<double> levels,
                          WatermarkCallback callback, double hysteresis) {
  if (levels.size() > kMaxLevels) {
    throw std::invalid_argument(
        fmt::format("{}: {} levels; at most {} allowed", who, levels.size(), kMaxLevels));
  }
  for (const double level : levels) {
    if (!(level > 0.0 && level <= 1.0)) {
      throw std::invalid_argument(fmt::format(
          "{}: level {} is outside (0, 1]; levels are fractions of the limit", who, level));
    }
  }
  if (!(hysteresis >= 0.0 && hysteresis < 1.0)) {
    throw std::invalid_argument(fmt::format("{}: hysteresis {} is outside [0, 1)", who, hysteresis));
  }
  std::sort(levels.begin(), levels.end());
  auto settings = std::make_shared<Settings>();
  settings->levels = std::move(levels);
  settings->hysteresis = hysteresis;
  settings->callback = std::move(callback);
  const bool active = !settings->levels.empty();
  {
    MutexLock hold(settings_mutex_);
    settings_ = active ? std::move(settings) : nullptr;
    fired_.store(0, std::memory_order_release);
  }
  active_.store(active, std::memory_order_release);
}

bool WatermarkLevels::InCallback() noexcept { return t_in_callback; }

std::shared_ptr<const WatermarkLevels::Settings> WatermarkLevels::CurrentSettings() const {
  MutexLock hold(settings_mutex_);
  return settings_;
}

std::uint32_t WatermarkLevels::Arm(std::size_t held, std::size_t limit,
                                   std::shared_ptr<const Settings>& out) {
  out = CurrentSettings();
  if (out == nullptr || limit == 0) return 0;
  const double held_bytes = static_cast<double>(held);
  const double limit_bytes = static_cast<double>(limit);
  std::uint32_t to_fire = 0;
  for (std::size_t i = 0; i < out->levels.size(); ++i) {
    const std::uint32_t bit = 1u << i;
    const double level = out->levels[i];
    if (held_bytes >= level * limit_bytes) {
      // Whoever flips the bit fires the level: one callback per crossing across threads.
      if ((fired_.fetch_or(bit, std::memory_order_acq_rel) & bit) == 0) to_fire |= bit;
    } else if (held_bytes < (level - out->hysteresis) * limit_bytes) {
      fired_.fetch_and(~bit, std::memory_order_acq_rel);
    }
  }
  return out->callback ? to_fire : 0;
}

void WatermarkLevels::Fire(const Settings& settings, std::uint32_t levels,
                           const WatermarkCrossing& base) {
  t_in_callback = true;
  try {
    MutexLock hold(callback_mutex_);
    for (std::size_t i = 0; i < settings.levels.size(); ++i) {
      if ((levels & (1u << i)) == 0) continue;
      WatermarkCrossing crossing = base;
      crossing.level = settings.levels[i];
      settings.callback(crossing);
    }
  } catch (...) {
    // A callback must not unwind through an allocator; its exception is dropped here.
  }
  t_in_callback = false;
}

double WatermarkLevels::CurrentLevel() const noexcept {
  const std::uint32_t fired = fired_.load(std::memory_order_relaxed);
  if (fired == 0) return 0.0;
  try {
    const std::shared_ptr<const Settings> settings = CurrentSettings();
    if (settings == nullptr) return 0.0;
    double level = 0.0;
    for (std::size_t i = 0; i < settings->levels.size(); ++i) {
      if ((fired & (1u << i)) != 0) level = settings->levels[i];
    }
    return level;
  } catch (...) {
    return 0.0;  // the mutex lock threw: report no level rather than terminate
  }
}

}  // namespace memarena::common
