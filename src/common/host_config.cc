// HostConfig: the MEMARENA_CONF keys of the host allocator and the drop-in layer.
#include <fmt/format.h>

#include <array>

#include "common/config_parser.h"
#include "common/observability_config.h"
#include "memarena/config.h"
#include "memarena/errors.h"
#include "memarena/observability.h"
#include "platform/os.h"

namespace memarena {

namespace {

InvalidFreeAction ParseInvalidFreeAction(std::string_view value) {
  if (value == "abort") return InvalidFreeAction::kAbort;
  if (value == "report") return InvalidFreeAction::kReport;
  if (value == "ignore") return InvalidFreeAction::kIgnore;
  throw ConfigError(fmt::format(
      "bad value '{}' for key 'on_invalid_free': expected abort, report or ignore", value));
}

std::array<common::ConfigKey, 13> HostKeys(HostConfig& c) {
  return {{
      {"ceiling", "a size such as 8GiB (0 = unlimited)",
       [&c](std::string_view v) { c.ceiling = common::ParseSize("ceiling", v); }},
      {"release_threshold_ratio", "a number in (0, 1], e.g. 0.8",
       [&c](std::string_view v) {
         c.release_threshold_ratio = common::ParseRatio("release_threshold_ratio", v, 0.0, 1.0);
       }},
      {"thread_cache_bytes", "a size such as 4MiB",
       [&c](std::string_view v) {
         c.thread_cache_bytes = common::ParseSize("thread_cache_bytes", v);
       }},
      {"release_keep", "a size such as 64MiB (0 = release every free span)",
       [&c](std::string_view v) { c.release_keep = common::ParseSize("release_keep", v); }},
      {"stats_at_exit", "0 or 1",
       [&c](std::string_view v) { c.stats_at_exit = common::ParseBool("stats_at_exit", v); }},
      {"trace_file", "a file path",
       [&c](std::string_view v) { c.trace_file = std::string(v); }},
      {"watermarks", "ascending percentages of the ceiling such as 75/88/95",
       [&c](std::string_view v) { c.watermarks = ParseWatermarkLevels("watermarks", v); }},
      {"monitor_interval", "a duration such as 10s, 500ms or 5m",
       [&c](std::string_view v) {
         c.monitor_interval = common::ParseDuration("monitor_interval", v);
       }},
      {"heap_profile", "a file path (%p = pid)",
       [&c](std::string_view v) { c.heap_profile = std::string(v); }},
      {"prometheus_file", "a file path",
       [&c](std::string_view v) { c.prometheus_file = std::string(v); }},
      {"stats_file", "a file path (%p = pid)",
       [&c](std::string_view v) { c.stats_file = std::string(v); }},
      {"oom_message_interval", "a whole number of seconds, 0-86400 (0 = no message)",
       [&c](std::string_view v) {
         c.oom_message_interval =
             static_cast<std::uint32_t>(common::ParseInteger("oom_message_interval", v, 0, 86400));
       }},
      {"on_invalid_free", "abort, report or ignore",
       [&c](std::string_view v) { c.on_invalid_free = ParseInvalidFreeAction(v); }},
  }};
}

}  // namespace

HostConfig HostConfig::Parse(std::string_view text) {
  HostConfig config;
  const auto keys = HostKeys(config);
  common::ParseConfigString(text, keys, "MEMARENA_CONF");
  return config;
}

HostConfig HostConfig::FromEnvironment() {
  const char* text = platform::GetEnv("MEMARENA_CONF");
  return text == nullptr ? HostConfig{} : Parse(text);
}

std::string_view HostConfigHelp() noexcept {
  return "MEMARENA_CONF=key:value,... with keys:\n"
         "  ceiling:SIZE                  limit on held bytes, e.g. 8GiB (0 = unlimited)\n"
         "  release_threshold_ratio:R     give free spans back once held > R * ceiling (0<R<=1, "
         "default 0.8)\n"
         "  thread_cache_bytes:SIZE       bytes one thread cache may keep (default 4MiB)\n"
         "  release_keep:SIZE             free spans ReleaseUnusedSpans() keeps committed "
         "(default 0)\n"
         "  stats_at_exit:0|1             drop-in: print the stats table at exit\n"
         "  trace_file:PATH               drop-in: record a CSV trace (RMM replay-log format)\n"
         "  watermarks:75/88/95           call back (drop-in: print) once per upward crossing "
         "of these percentages of the ceiling\n"
         "  monitor_interval:DURATION     drop-in: growth monitor every DURATION, e.g. 10s\n"
         "  heap_profile:PATH             drop-in: sample the heap, write a pprof heap profile "
         "(%p = pid)\n"
         "  prometheus_file:PATH          drop-in: Prometheus textfile metrics, written "
         "atomically\n"
         "  stats_file:PATH               drop-in: write the stats at exit to PATH (%p = pid)\n"
         "  oom_message_interval:SECONDS  drop-in: at most one failed-malloc line per SECONDS "
         "(default 10, 0 = none)\n"
         "  on_invalid_free:abort|report|ignore  double, interior or foreign free: abort with "
         "a message (default), print it and carry on, or carry on\n"
         "SIZE takes B, K/KiB, M/MiB, G/GiB or T/TiB.";
}

}  // namespace memarena
