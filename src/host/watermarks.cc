// memarena::SetWatermarks for the host ceiling: per-level fired bits flipped by CAS so each
// crossing fires once across threads, callbacks serialized under their own mutex (never a
// heap lock), and a thread-local guard so a callback's own allocations do not re-enter.
#include "host/watermarks.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "host/heap.h"
#include "memarena/observability.h"
#include "memarena/stats.h"

namespace memarena {
namespace host::watermarks {
namespace {

constexpr std::size_t kMaxLevels = 16;
constexpr std::size_t kMaxConsumers = 5;

struct Settings {
  std::vector<double> levels;
  double hysteresis = kDefaultWatermarkHysteresis;
  WatermarkCallback callback;
};

// Never destroyed: malloc runs checks after static destructors (exit handlers, other
// libraries' destructors). Settings are replaced, never edited: a checker holding the old
// shared_ptr finishes with it.
struct Shared {
  std::mutex settings_mutex;
  std::shared_ptr<const Settings> settings;  // guarded by settings_mutex
  std::mutex callback_mutex;  // serializes callbacks (and so keeps their order)
};
Shared& TheShared() {
  static auto* shared = new Shared;
  return *shared;
}
constinit std::atomic<bool> g_active{false};
constinit std::atomic<std::uint32_t> g_fired{0};  // bit i: level i fired and not re-armed
thread_local bool t_in_callback = false;

std::shared_ptr<const Settings> CurrentSettings() {
  Shared& shared = TheShared();
  std::lock_guard<std::mutex> hold(shared.settings_mutex);
  return shared.settings;
}

std::vector<MemoryConsumer> LargestConsumers(const AllocatorStats& stats) {
  std::vector<MemoryConsumer> consumers;
  std::size_t small = 0;
  for (std::size_t i = 0; i < stats.num_size_classes; ++i) {
    const SizeClassStats& c = stats.size_classes[i];
    small += c.bytes_in_use;
    if (c.bytes_in_use != 0) {
      consumers.push_back({fmt::format("class {}", FormatBytes(c.size)), c.bytes_in_use});
    }
  }
  if (stats.bytes_in_use > small) consumers.push_back({"large blocks", stats.bytes_in_use - small});
  if (stats.bytes_held > stats.bytes_in_use) {
    consumers.push_back({"free and cached", stats.bytes_held - stats.bytes_in_use});
  }
  std::sort(consumers.begin(), consumers.end(),
            [](const MemoryConsumer& a, const MemoryConsumer& b) { return a.bytes > b.bytes; });
  if (consumers.size() > kMaxConsumers) consumers.resize(kMaxConsumers);
  return consumers;
}

void Fire(const Settings& settings, std::uint32_t levels_to_fire) {
  t_in_callback = true;
  try {
    std::lock_guard<std::mutex> hold(TheShared().callback_mutex);
    const AllocatorStats stats = host::Stats();
    for (std::size_t i = 0; i < settings.levels.size(); ++i) {
      if ((levels_to_fire & (1u << i)) == 0) continue;
      WatermarkCrossing crossing;
      crossing.level = settings.levels[i];
      crossing.bytes_in_use = stats.bytes_in_use;
      crossing.bytes_held = stats.bytes_held;
      crossing.limit_bytes = stats.limit_bytes;
      crossing.largest_consumers = LargestConsumers(stats);
      settings.callback(crossing);
    }
  } catch (...) {
    // A callback must not unwind through malloc; its exception is dropped here.
  }
  t_in_callback = false;
}

void Evaluate() {
  const std::shared_ptr<const Settings> settings = CurrentSettings();
  if (settings == nullptr) return;
  const double limit = static_cast<double>(host::Ceiling());
  if (limit == 0.0) return;
  const double held = static_cast<double>(host::HeldBytes());
  std::uint32_t to_fire = 0;
  for (std::size_t i = 0; i < settings->levels.size(); ++i) {
    const std::uint32_t bit = 1u << i;
    const double level = settings->levels[i];
    if (held >= level * limit) {
      // Whoever flips the bit fires the level: one callback per crossing across threads.
      if ((g_fired.fetch_or(bit, std::memory_order_acq_rel) & bit) == 0) to_fire |= bit;
    } else if (held < (level - settings->hysteresis) * limit) {
      g_fired.fetch_and(~bit, std::memory_order_acq_rel);
    }
  }
  if (to_fire != 0 && settings->callback) Fire(*settings, to_fire);
}

}  // namespace

void Check() noexcept {
  if (!g_active.load(std::memory_order_relaxed) || t_in_callback) return;
  try {
    Evaluate();
  } catch (...) {
    // Stats or a settings copy failed to allocate: skip this check, the next one retries.
  }
}

double CurrentLevel() noexcept {
  const std::uint32_t fired = g_fired.load(std::memory_order_relaxed);
  if (fired == 0) return 0.0;
  const std::shared_ptr<const Settings> settings = CurrentSettings();
  if (settings == nullptr) return 0.0;
  double level = 0.0;
  for (std::size_t i = 0; i < settings->levels.size(); ++i) {
    if ((fired & (1u << i)) != 0) level = settings->levels[i];
  }
  return level;
}

}  // namespace host::watermarks

void SetWatermarks(std::vector<double> levels, WatermarkCallback callback, double hysteresis) {
  if (levels.size() > host::watermarks::kMaxLevels) {
    throw std::invalid_argument(fmt::format("SetWatermarks: {} levels; at most {} allowed",
                                            levels.size(), host::watermarks::kMaxLevels));
  }
  for (const double level : levels) {
    if (!(level > 0.0 && level <= 1.0)) {
      throw std::invalid_argument(fmt::format(
          "SetWatermarks: level {} is outside (0, 1]; levels are fractions of the ceiling",
          level));
    }
  }
  if (!(hysteresis >= 0.0 && hysteresis < 1.0)) {
    throw std::invalid_argument(
        fmt::format("SetWatermarks: hysteresis {} is outside [0, 1)", hysteresis));
  }
  std::sort(levels.begin(), levels.end());
  auto settings = std::make_shared<host::watermarks::Settings>();
  settings->levels = std::move(levels);
  settings->hysteresis = hysteresis;
  settings->callback = std::move(callback);
  const bool active = !settings->levels.empty();
  {
    host::watermarks::Shared& shared = host::watermarks::TheShared();
    std::lock_guard<std::mutex> hold(shared.settings_mutex);
    shared.settings = active ? std::move(settings) : nullptr;
    host::watermarks::g_fired.store(0, std::memory_order_release);
  }
  host::watermarks::g_active.store(active, std::memory_order_release);
  host::watermarks::Check();  // a level already crossed fires now
}

std::string FormatWatermarkCrossing(const WatermarkCrossing& crossing) {
  std::string consumers;
  for (const MemoryConsumer& c : crossing.largest_consumers) {
    consumers += fmt::format("{}{} {}", consumers.empty() ? "" : ", ", c.name, FormatBytes(c.bytes));
  }
  return fmt::format(
      "memarena: watermark {:.0f}% crossed: held {} of the {} ceiling, in use {}; largest: {}\n",
      crossing.level * 100.0, FormatBytes(crossing.bytes_held), FormatBytes(crossing.limit_bytes),
      FormatBytes(crossing.bytes_in_use), consumers.empty() ? "none" : consumers);
}

}  // namespace memarena
