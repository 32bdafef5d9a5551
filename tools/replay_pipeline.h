// The read-replay-report pipeline of `memarena replay` and `memarena compare`: the options
// they share, reading TRACE, replaying it through each chosen allocator with a progress
// line, and printing the results as a table, JSON or Prometheus text, with an HTML report.
#pragma once

#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "charts.h"
#include "cli_args.h"
#include "commands.h"

namespace memarena::tools {

// A replaying command's options: its own first, then --report (with the command's help),
// --json, --prometheus, --progress and --no-progress.
// `about_report`: options that refine the report, listed right after it.
template <std::size_t N, std::size_t R = 0>
constexpr std::array<OptionSpec, N + R + 5> ReplayingOptions(
    const std::array<OptionSpec, N>& own, std::string_view report_help,
    const std::array<OptionSpec, R>& about_report = {}) {
  std::array<OptionSpec, N + R + 5> all{};
  std::copy(own.begin(), own.end(), all.begin());
  all[N] = OptionSpec{"--report", "FILE", report_help};
  std::copy(about_report.begin(), about_report.end(), all.begin() + N + 1);
  all[N + R + 1] = OptionSpec{"--json", "", "print the results as JSON"};
  all[N + R + 2] = OptionSpec{"--prometheus", "", "print the final stats in Prometheus text format"};
  all[N + R + 3] = kProgressOption;
  all[N + R + 4] = kNoProgressOption;
  return all;
}

// One allocator to replay through: a MakeTarget name and config string.
struct ReplayChoice {
  std::string allocator;
  std::string config;
  // The progress line's name ("COMMAND NAME: ..."); empty: the target's label.
  std::string progress_name;
};

struct ReplayPipeline {
  std::string_view command;          // "replay" or "compare": messages and report titles
  std::vector<ReplayChoice> targets;  // made once the trace is read, replayed in order
  // The report's chart over the results, titled from TRACE.
  std::function<LineChart(const std::vector<ReplayResult>&, const std::string& path)> chart;
  // The first line of the table output, over the trace and the results.
  std::function<std::string(const std::string& path, std::size_t events,
                            const std::vector<ReplayResult>&, std::size_t trace_peak)>
      headline;
};

// Throws UsageError for --json with --prometheus, and std::runtime_error unless TRACE (the
// first positional argument) is a readable file: before the command parses its own options.
void CheckReplayInput(const ParsedArgs& args);

// Reads TRACE, replays it through each target and prints and writes the reports. Returns
// the exit status (0).
int RunReplayPipeline(const ParsedArgs& args, const ReplayPipeline& pipeline);

}  // namespace memarena::tools
