// memarena::SetWatermarks for the host ceiling: one WatermarkLevels that the heap's slow
// paths check against held bytes, and what a host crossing reports.
#include "host/watermarks.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "common/watermark_levels.h"
#include "host/heap.h"
#include "memarena/observability.h"
#include "memarena/stats.h"

namespace memarena {
namespace host::watermarks {
namespace {

constexpr std::size_t kMaxConsumers = 5;

// Never destroyed: malloc runs checks after static destructors (exit handlers, other
// libraries' destructors). Constant-initialized: the first check may run inside malloc.
union Levels {
  constexpr Levels() : levels() {}
  ~Levels() {}
  common::WatermarkLevels levels;
};
constinit Levels g_host;

// Cold: never runs at start-up, so it stays out of .text.memarena_startup (docs/dropin.md).
[[gnu::cold]] std::vector<MemoryConsumer> LargestConsumers(const AllocatorStats& stats) {
  std::vector<MemoryConsumer> consumers;
  std::size_t small = 0;
  std::array<SizeClassStats, kNumClasses> classes;
  SizeClasses(classes);
  for (const SizeClassStats& c : classes) {
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

[[gnu::cold]] WatermarkCrossing DescribeHost() {
  const AllocatorStats stats = host::Stats();
  WatermarkCrossing crossing;
  crossing.bytes_in_use = stats.bytes_in_use;
  crossing.bytes_held = stats.bytes_held;
  crossing.limit_bytes = stats.limit_bytes;
  crossing.largest_consumers = LargestConsumers(stats);
  return crossing;
}

}  // namespace

void Check() noexcept {
  if (!g_host.levels.Active()) return;
  g_host.levels.Check(host::HeldBytes(), host::Ceiling(), DescribeHost);
}

double CurrentLevel() noexcept { return g_host.levels.CurrentLevel(); }

}  // namespace host::watermarks

void SetWatermarks(std::vector<double> levels, WatermarkCallback callback, double hysteresis) {
  host::watermarks::g_host.levels.Set("SetWatermarks", std::move(levels), std::move(callback),
                                      hysteresis);
  host::watermarks::Check();  // a level already crossed fires now
}

[[gnu::cold]] std::string FormatWatermarkCrossing(const WatermarkCrossing& crossing) {
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
