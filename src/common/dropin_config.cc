// DropinConfig: the drop-in's rows of MEMARENA_CONF, and the one-pass parse of the whole
// string (host and drop-in rows) where a bad key is reported and skipped.
#include <fmt/format.h>

#include <array>

#include "common/memarena_conf.h"
#include "common/observability_config.h"
#include "memarena/observability.h"
#include "platform/os.h"

namespace memarena::common {
namespace {

std::uint32_t ParseSeconds(std::string_view key, std::string_view value) {
  return static_cast<std::uint32_t>(ParseInteger(key, value, 0, 86400));
}

std::string ShowSeconds(std::uint32_t seconds) { return fmt::format("{}", seconds); }

std::string ShowLevels(const std::vector<double>& levels) {
  std::string out;
  for (double level : levels) out += fmt::format("{}{}", out.empty() ? "" : "/", level * 100.0);
  return out.empty() ? "(none)" : out;
}

std::string ShowDuration(std::chrono::milliseconds interval) {
  if (interval.count() == 0) return "off";
  if (interval.count() % 1000 == 0) return fmt::format("{}s", interval.count() / 1000);
  return fmt::format("{}ms", interval.count());
}

constexpr std::array kDropinRows = {
    BoolRow<&DropinConfig::stats_at_exit>(
        "stats_at_exit", "print the stats at exit: a summary (pid, command, RSS, held "
        "and where it sits) and the current/peak table; stderr is duplicated at load, so "
        "they arrive even when the program closes stderr itself"),
    PathRow<&DropinConfig::stats_file>(
        "stats_file", "write the exit stats to PATH instead of stderr (%p = pid; a forked "
        "child writes none to a PATH without %p); implies stats_at_exit"),
    BoolRow<&DropinConfig::stats_detail>(
        "stats_detail", "the exit stats and malloc_stats add one row per used size class "
        "(allocs, frees, in use, free in thread caches, in central lists, never carved) after "
        "the summary"),
    Row<&DropinConfig::oom_message_interval, ParseSeconds, ShowSeconds>(
        "oom_message_interval", "SECONDS", "when malloc fails, one line on stderr naming the "
        "request, in use, held, the ceiling and the knob, at most once per SECONDS (0 = never; "
        "0-86400)"),
    PathRow<&DropinConfig::trace_file>(
        "trace_file", "record every allocation and free in RMM's replay-log CSV, "
        "readable by memarena replay (%p = pid; a forked child stops recording)"),
    Row<&DropinConfig::watermarks, ParseWatermarkLevels, ShowLevels>(
        "watermarks", "75/88/95", "print one line per upward crossing of these percentages "
        "of the ceiling, naming the largest consumers"),
    Row<&DropinConfig::monitor_interval, ParseDuration, ShowDuration>(
        "monitor_interval", "DURATION", "run the growth monitor every DURATION, e.g. 10s, "
        "500ms or 5m (at least 1ms; unset = off), on a thread of its own in the process that "
        "read MEMARENA_CONF (not in a forked child)"),
    PathRow<&DropinConfig::heap_profile>(
        "heap_profile", "sample the heap and write a pprof heap profile at exit and "
        "each monitor interval (%p = pid; only the process that read MEMARENA_CONF writes "
        "it, not a forked child)"),
    PathRow<&DropinConfig::prometheus_file>(
        "prometheus_file", "Prometheus textfile-collector metrics, rewritten "
        "atomically each monitor interval and at exit (%p = pid; only the process that read "
        "MEMARENA_CONF writes it, not a forked child)"),
};

}  // namespace

std::span<const ConfigRow<DropinConfig>> DropinRows() { return kDropinRows; }

MemarenaConf ParseMemarenaConf(std::string_view text, std::vector<std::string>& errors) {
  constexpr std::string_view kWhat = "MEMARENA_CONF";
  MemarenaConf conf;
  errors.clear();
  for (const Setting& setting : SplitSettings(text)) {
    if (const ConfigRow<HostConfig>* row = FindRow(HostRows(), setting.key)) {
      ApplySetting(*row, setting, kWhat, conf.host, errors);
    } else if (const ConfigRow<DropinConfig>* drop = FindRow(DropinRows(), setting.key)) {
      ApplySetting(*drop, setting, kWhat, conf.dropin, errors);
    } else {
      errors.push_back(UnknownKeyMessage(
          kWhat, setting.key, fmt::format("{}, {}", ListKeys(HostRows()), ListKeys(DropinRows()))));
    }
  }
  return conf;
}

namespace {
// An array, not a literal: every process reads it at load (MemarenaConfIsSet), and a named
// object stays in the drop-in's start-up constants where string literals do not
// (libmemarena_malloc_startup.ld).
constexpr char kConfVariable[] = "MEMARENA_CONF";
}  // namespace

bool MemarenaConfIsSet() noexcept {
  const char* text = platform::GetEnv(kConfVariable);
  return text != nullptr && *text != '\0';
}

MemarenaConf MemarenaConfFromEnvironment(std::vector<std::string>& errors) {
  const char* text = platform::GetEnv(kConfVariable);
  errors.clear();
  return text == nullptr ? MemarenaConf{} : ParseMemarenaConf(text, errors);
}

}  // namespace memarena::common
