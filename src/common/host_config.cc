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

std::array<common::ConfigKey, 9> HostKeys(HostConfig& c) {
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
         "  stats_at_exit:0|1             drop-in: print the stats table at exit\n"
         "  trace_file:PATH               drop-in: record a CSV trace (RMM replay-log format)\n"
         "  watermarks:75/88/95           call back (drop-in: print) once per upward crossing "
         "of these percentages of the ceiling\n"
         "  monitor_interval:DURATION     drop-in: growth monitor every DURATION, e.g. 10s\n"
         "  heap_profile:PATH             drop-in: sample the heap, write a pprof heap profile "
         "(%p = pid)\n"
         "  prometheus_file:PATH          drop-in: Prometheus textfile metrics, written "
         "atomically\n"
         "SIZE takes B, K/KiB, M/MiB, G/GiB or T/TiB.";
}

}  // namespace memarena
