// MEMARENA_CONF as a whole: the host heap's keys (HostConfig) and the drop-in's own
// (DropinConfig), one row per key, read in one pass where a bad key skips only itself.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/config_table.h"
#include "memarena/config.h"

namespace memarena::common {

// The drop-in layer's settings (src/override applies them): exit stats, the trace file, the
// failed-malloc line and the observability outputs. They sit here, beside the host's rows,
// so that every process, with or without the drop-in, recognises and checks every key of
// MEMARENA_CONF (a program run under a drop-in process's environment reads the same string).
struct DropinConfig {
  // Print the stats to stderr at exit. stderr is duplicated at load, so the table arrives
  // even if the program closes fd 2.
  bool stats_at_exit = false;
  // Write the stats at exit to this file instead ("%p" = pid); implies stats_at_exit.
  std::string stats_file;
  // The exit stats add one row per used size class after the summary (detail on request).
  bool stats_detail = false;
  // When malloc fails, one line on stderr at most once per this many seconds (0 = never).
  std::uint32_t oom_message_interval = 10;
  // Record every allocation to this CSV (RMM replay-log format).
  std::string trace_file;
  // Host watermarks as fractions of the ceiling; one stderr line per upward crossing.
  std::vector<double> watermarks;
  // Run the growth monitor at this interval (0 = off).
  std::chrono::milliseconds monitor_interval{0};
  // Sample the heap and write a profile here at exit and each monitor interval.
  std::string heap_profile;
  // Rewrite Prometheus textfile-collector metrics here each monitor interval and at exit.
  std::string prometheus_file;
};

std::span<const ConfigRow<HostConfig>> HostRows();
std::span<const ConfigRow<DropinConfig>> DropinRows();

struct MemarenaConf {
  HostConfig host;
  DropinConfig dropin;
};

// Parses a MEMARENA_CONF string. Every valid key applies; each unknown key or bad value adds
// one message to `errors` (naming MEMARENA_CONF, the key and what is allowed) and is skipped.
MemarenaConf ParseMemarenaConf(std::string_view text, std::vector<std::string>& errors);

// The MEMARENA_CONF environment variable through ParseMemarenaConf (defaults when unset).
MemarenaConf MemarenaConfFromEnvironment(std::vector<std::string>& errors);

// True when MEMARENA_CONF is set and not empty. Otherwise every key keeps its default, so the
// drop-in's start-up skips the parsing, whose code then stays off the start-up text
// (docs/dropin.md).
bool MemarenaConfIsSet() noexcept;

}  // namespace memarena::common
