// memarena replay TRACE: one trace through one allocator, with table, JSON or HTML report.
#include <fmt/format.h>

#include <array>

#include "charts.h"
#include "commands.h"
#include "html_report.h"
#include "memory_holders.h"
#include "memarena/export.h"
#include "memarena/observability.h"
#include "memarena/tracing.h"
#include "replay.h"
#include "segment_map.h"
#include "watermark_lines.h"

namespace memarena::tools {
namespace {

constexpr std::array kOptions = {
    OptionSpec{"--allocator", "NAME", "host (default), bfc, planned or system"},
    OptionSpec{"--config", "KEY:VALUE,...", "settings of the allocator (see below)"},
    OptionSpec{"--report", "FILE", "write an HTML report with the timeline"},
    OptionSpec{"--watermarks", "P/P/...",
               "draw these percentages of the limit (ceiling or max_mem) on the report's timeline"},
    OptionSpec{"--json", "", "print the results as JSON"},
    OptionSpec{"--prometheus", "", "print the final stats in Prometheus text format"},
    kProgressOption,
    kNoProgressOption,
};

const std::string& Epilog() {
  static const std::string text = TargetConfigHelp() +
      "\nTRACE is a CSV in RMM's replay-log format (Thread,Time,Action,Pointer,Size,Stream), as\n"
      "written by rmm::mr::logging_resource_adaptor, memarena::TracingAllocator or the drop-in's\n"
      "MEMARENA_CONF=trace_file:PATH. Rows replay in file order with the default alignment.";
  return text;
}

const CommandSpec kSpec{"replay", "TRACE [options]",
                        "replay an allocation trace and print peak in use, peak held, "
                        "fragmentation, ops/s and OOMs",
                        kOptions, 1, 1, false, Epilog()};

int Run(const ParsedArgs& args) {
  const std::string& path = args.positional[0];
  RejectJsonWithPrometheus(args);
  RequireInputFile(path);
  const std::string allocator = args.Value("--allocator").value_or("host");
  const std::string config = args.Value("--config").value_or("");
  std::vector<double> watermarks;
  if (const auto w = args.Value("--watermarks")) {
    try {
      watermarks = ParseWatermarkLevels("--watermarks", *w);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    if (!args.Value("--report")) throw UsageError("--watermarks draws on the timeline of --report FILE; add it");
  }
  const auto trace = ReadTraceShowingProgress(args, "replay", path);
  auto target = MakeTarget(allocator, config);
  auto progress = MakeProgress(args, fmt::format("replay {}", allocator));
  ReplayOptions options;
  AttachProgress(progress, options);
  const ReplayResult result = Replay(trace, *target, options);
  if (progress) progress->Done();
  const std::size_t lower = TracePeakRequested(trace);
  if (!watermarks.empty() && result.limit_bytes == 0) {
    throw UsageError(fmt::format("--watermarks: the {} replay has no limit to take percentages of; "
                                 "add --config ceiling:SIZE (host) or max_mem:SIZE (bfc)", allocator));
  }

  if (const auto report = args.Value("--report")) {
    HtmlReport html(fmt::format("memarena replay: {}", path));
    html.Paragraph(fmt::format("{} events; the trace's peak of live requested bytes is {}.",
                               trace.size(), FormatBytes(lower)));
    html.Table(ResultHeader(), {ResultRow(result)});
    LineChart timeline = TimelineChart(result, fmt::format("{} on {}", path, result.allocator));
    AddWatermarkLines(timeline, result, watermarks);
    html.Svg(RenderLineChart(timeline));
    AddSegmentMap(html, trace, allocator, config);
    AddMemoryHolders(html, trace);
    WriteTextFile(*report, html.Finish());
  }
  if (args.Flag("--prometheus")) {
    fmt::print("{}", StatsToPrometheus(result.final_stats, result.allocator));
    return 0;
  }
  if (args.Flag("--json")) {
    fmt::print("{{\"trace\":{},\"events\":{},\"trace_peak_requested\":{},\"results\":[{}]}}\n",
               JsonString(path), trace.size(), lower, ResultJson(result));
    return 0;
  }
  fmt::print("trace {}: {} events ({} allocations, {} frees", path, trace.size(),
             result.allocations + result.ooms, result.frees);
  if (result.unknown_frees != 0) fmt::print(", {} frees of unknown pointers skipped", result.unknown_frees);
  if (result.trace_failures != 0) fmt::print(", {} allocations that failed when recorded", result.trace_failures);
  fmt::print("); peak requested by the trace {}\n\n{}", FormatBytes(lower), ResultsTable({result}));
  if (const auto report = args.Value("--report")) fmt::print("\nreport written to {}\n", *report);
  return 0;
}

}  // namespace

const Command kReplayCommand{&kSpec, &Run};

}  // namespace memarena::tools
