// memarena compare TRACE: the trace through every allocator and arena strategy, one table
// and one picture.
#include <fmt/format.h>

#include <array>

#include "charts.h"
#include "commands.h"
#include "html_report.h"
#include "memory_holders.h"
#include "memarena/export.h"
#include "memarena/tracing.h"
#include "replay.h"
#include "segment_map.h"

namespace memarena::tools {
namespace {

constexpr std::array kOptions = {
    OptionSpec{"--ceiling", "SIZE", "limit for every allocator (host ceiling, bfc max_mem, ...)"},
    OptionSpec{"--report", "FILE", "write an HTML report: the table and the held timelines"},
    OptionSpec{"--json", "", "print the results as JSON"},
    OptionSpec{"--prometheus", "", "print the final stats in Prometheus text format"},
    kProgressOption,
    kNoProgressOption,
};

const CommandSpec kSpec{"compare", "TRACE [options]",
                        "replay a trace through every allocator and arena strategy side by side",
                        kOptions, 1, 1, false,
                        "The allocators: host, bfc with kNextPowerOfTwo, bfc with kSameAsRequested,\n"
                        "bfc with expandable_segments:1 (a virtual range with 2 MiB granules committed on\n"
                        "demand), planned (ORT mem pattern: a first run is recorded and planned), system."};

// Every allocator and arena strategy, with the limit spelled in each one's config keys.
std::vector<std::pair<std::string, std::string>> Lineup(std::size_t ceiling) {
  const std::string limit = ceiling == 0 ? "" : fmt::format("ceiling:{}", ceiling);
  const std::string max_mem = ceiling == 0 ? "" : fmt::format(",max_mem:{}", ceiling);
  return {{"host", limit},
          {"bfc", "arena_extend_strategy:kNextPowerOfTwo" + max_mem},
          {"bfc", "arena_extend_strategy:kSameAsRequested" + max_mem},
          {"bfc", "expandable_segments:1" + max_mem},
          {"planned", limit},
          {"system", limit}};
}

int Run(const ParsedArgs& args) {
  const std::string& path = args.positional[0];
  RejectJsonWithPrometheus(args);
  RequireInputFile(path);
  const std::size_t ceiling =
      args.Value("--ceiling") ? ParseSizeOption("--ceiling", *args.Value("--ceiling")) : 0;
  const auto trace = ReadTraceShowingProgress(args, "compare", path);
  std::vector<ReplayResult> results;
  for (const auto& [name, config] : Lineup(ceiling)) {
    auto target = MakeTarget(name, config);
    auto progress = MakeProgress(args, fmt::format("compare {}", target->label()));
    ReplayOptions options;
    AttachProgress(progress, options);
    results.push_back(Replay(trace, *target, options));
    if (progress) progress->Done();
  }
  const std::size_t lower = TracePeakRequested(trace);
  if (const auto report = args.Value("--report")) {
    HtmlReport html(fmt::format("memarena compare: {}", path));
    html.Paragraph(fmt::format("{} events; the trace's peak of live requested bytes is {}.",
                               trace.size(), FormatBytes(lower)));
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : results) rows.push_back(ResultRow(r));
    html.Table(ResultHeader(), rows);
    html.Svg(RenderLineChart(CompareChart(results, fmt::format("held over time: {}", path))));
    for (const auto& [name, config] : Lineup(ceiling)) {
      if (name == "bfc") AddSegmentMap(html, trace, name, config);
    }
    AddMemoryHolders(html, trace);
    WriteTextFile(*report, html.Finish());
  }
  if (args.Flag("--prometheus")) {
    std::vector<NamedStats> all;
    for (const auto& r : results) all.push_back({r.allocator, r.final_stats});
    fmt::print("{}", StatsToPrometheus(all));
    return 0;
  }
  if (args.Flag("--json")) {
    std::string list;
    for (const auto& r : results) list += (list.empty() ? "" : ",") + ResultJson(r);
    fmt::print("{{\"trace\":{},\"events\":{},\"trace_peak_requested\":{},\"results\":[{}]}}\n",
               JsonString(path), trace.size(), lower, list);
    return 0;
  }
  fmt::print("trace {}: {} events; peak requested by the trace {}\n\n{}", path, trace.size(),
             FormatBytes(lower), ResultsTable(results));
  if (const auto report = args.Value("--report")) fmt::print("\nreport written to {}\n", *report);
  return 0;
}

}  // namespace

const Command kCompareCommand{&kSpec, &Run};

}  // namespace memarena::tools
