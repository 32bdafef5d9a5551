// How replay results are shown: the text table, the JSON the --json options print, the rows
// of the HTML tables, and the progress line on stderr.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "replay.h"

namespace memarena::tools {

// Column titles and one row of cells per result, shared by the text and HTML tables.
std::vector<std::string> ResultHeader();
std::vector<std::string> ResultRow(const ReplayResult& result);

// A fixed-width text table of `results`.
std::string ResultsTable(const std::vector<ReplayResult>& results);

// One JSON object: allocator, events, allocations, frees, ooms, unknown_frees,
// trace_failures, peak_in_use, peak_requested, peak_held, limit_bytes, released_bytes,
// fragmentation, seconds, ops_per_second, and "stats" (StatsToJson of the final stats).
std::string ResultJson(const ReplayResult& result);

// Prints "NAME: replaying  37% (370000/1000000 events), ETA 2.1 s" on stderr, rewriting one
// line, once a replay has run for `delay` (zero: from the start); Done() ends the line if
// anything was shown. Phase() names what runs now (parsing, recording and planning,
// replaying) and restarts the ETA, which assumes the rate so far in this phase holds; a
// phase counts events, or bytes ("parsing  37% (17.0 MiB/46.0 MiB)").
class ProgressLine {
 public:
  enum class Unit { kEvents, kBytes };
  ProgressLine(std::string name, std::chrono::milliseconds delay);
  void Phase(std::string_view phase, Unit unit = Unit::kEvents);
  void Update(std::size_t done, std::size_t total);
  void Done();

 private:
  std::string name_;
  std::string phase_;
  Unit unit_ = Unit::kEvents;
  std::chrono::steady_clock::time_point phase_start_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::milliseconds delay_;
  std::chrono::steady_clock::time_point last_;
  bool shown_ = false;
};

}  // namespace memarena::tools
