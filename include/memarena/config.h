// HostConfig: settings of the host allocator and the drop-in layer, read from MEMARENA_CONF.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include <string_view>

namespace memarena {

// What the host heap does when free (or delete, or realloc) is given a pointer it did not
// hand out or that is already free: kAbort prints one line naming the pointer, the
// operation and the size class, then aborts (the default, as glibc); kReport prints the
// line and carries on without freeing anything; kIgnore carries on silently.
enum class InvalidFreeAction { kAbort, kReport, kIgnore };

struct HostConfig {
  // Limit on held bytes; 0 = unlimited. Key `ceiling`, a size (e.g. 8GiB).
  std::size_t ceiling = 0;
  // When held crosses ratio * ceiling, free spans go back to the OS before more is
  // taken. Key `release_threshold_ratio`, in (0, 1].
  double release_threshold_ratio = 0.8;
  // Largest number of bytes one thread cache keeps. Key `thread_cache_bytes`, a size.
  std::size_t thread_cache_bytes = 4u << 20;
  // Free committed bytes ReleaseUnusedSpans() keeps for reuse (a warm working set that still
  // counts against the ceiling). Key `release_keep`, a size; 0 = release everything.
  std::size_t release_keep = 0;
  // Drop-in only: print the stats table to stderr at exit. Key `stats_at_exit`, 0 or 1.
  // stderr is duplicated at start, so the table arrives even if the program closes fd 2.
  bool stats_at_exit = false;
  // Drop-in only: write the stats at exit to this file instead (`%p` = pid); implies
  // stats_at_exit. Key `stats_file`.
  std::string stats_file;
  // Drop-in only: when malloc fails (the ceiling, or the OS), one line on stderr naming the
  // request, held and the ceiling, at most once per this many seconds (0 = never).
  // Key `oom_message_interval`, a whole number of seconds (default 10).
  std::uint32_t oom_message_interval = 10;
  // Drop-in only: record every allocation to this CSV (RMM replay-log format). Key `trace_file`.
  std::string trace_file;
  // Host watermarks as fractions of the ceiling; the drop-in prints one line per upward
  // crossing. Key `watermarks`, percentages such as 75/88/95 (see SetWatermarks).
  std::vector<double> watermarks;
  // Drop-in only: run the growth monitor at this interval (0 = off). Key
  // `monitor_interval`, a duration such as 10s.
  std::chrono::milliseconds monitor_interval{0};
  // Drop-in only: sample the heap and write a profile here at exit and at each monitor
  // interval ("%p" = pid). Key `heap_profile`, a file path.
  std::string heap_profile;
  // Drop-in only: rewrite Prometheus textfile-collector metrics here each monitor interval
  // and at exit. Key `prometheus_file`, a file path.
  std::string prometheus_file;
  // Double, interior and foreign frees. Key `on_invalid_free`, abort|report|ignore.
  InvalidFreeAction on_invalid_free = InvalidFreeAction::kAbort;

  // Parses "key:value,key:value". Sizes accept B, K/KiB, M/MiB, G/GiB, T/TiB.
  // Throws ConfigError naming the key and the allowed values on an unknown key or bad value.
  static HostConfig Parse(std::string_view text);

  // Parses the MEMARENA_CONF environment variable (defaults when unset or empty).
  // Throws ConfigError like Parse.
  static HostConfig FromEnvironment();
};

// The keys Parse accepts, with what each takes; used by error messages and --help.
std::string_view HostConfigHelp() noexcept;

}  // namespace memarena
