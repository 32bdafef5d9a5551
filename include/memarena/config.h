// HostConfig: settings of the host allocator and the drop-in layer, read from MEMARENA_CONF.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>
#include <string_view>

namespace memarena {

struct HostConfig {
  // Limit on held bytes; 0 = unlimited. Key `ceiling`, a size (e.g. 8GiB).
  std::size_t ceiling = 0;
  // When held crosses ratio * ceiling, free spans go back to the OS before more is
  // taken. Key `release_threshold_ratio`, in (0, 1].
  double release_threshold_ratio = 0.8;
  // Largest number of bytes one thread cache keeps. Key `thread_cache_bytes`, a size.
  std::size_t thread_cache_bytes = 4u << 20;
  // Drop-in only: print the stats table to stderr at exit. Key `stats_at_exit`, 0 or 1.
  bool stats_at_exit = false;
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
