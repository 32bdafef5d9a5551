// The pipeline behind `memarena replay` and `memarena compare`: read, replay, report.
#include "replay_pipeline.h"

#include <fmt/format.h>

#include "html_report.h"
#include "memarena/export.h"
#include "memarena/tracing.h"
#include "memory_holders.h"
#include "replay.h"
#include "segment_map.h"

namespace memarena::tools {
namespace {

void WriteHtmlReport(const std::string& file, const ReplayPipeline& pipeline,
                     const std::string& path, const std::vector<TraceEvent>& trace,
                     const std::vector<ReplayResult>& results, std::size_t trace_peak) {
  HtmlReport html(fmt::format("memarena {}: {}", pipeline.command, path));
  html.Paragraph(fmt::format("{} events; the trace's peak of live requested bytes is {}.",
                             trace.size(), FormatBytes(trace_peak)));
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : results) rows.push_back(ResultRow(r));
  html.Table(ResultHeader(), rows);
  html.Svg(RenderLineChart(pipeline.chart(results, path)));
  // Each BFC arena's segments at the peak; a single other allocator gets the line saying
  // the map covers arenas only.
  for (const ReplayChoice& t : pipeline.targets) {
    if (pipeline.targets.size() == 1 || t.allocator == "bfc") {
      AddSegmentMap(html, trace, t.allocator, t.config);
    }
  }
  AddMemoryHolders(html, trace);
  WriteTextFile(file, html.Finish());
}

}  // namespace

void CheckReplayInput(const ParsedArgs& args) {
  RejectJsonWithPrometheus(args);
  RequireInputFile(args.positional[0]);
}

int RunReplayPipeline(const ParsedArgs& args, const ReplayPipeline& pipeline) {
  const std::string& path = args.positional[0];
  const auto trace = ReadTraceShowingProgress(args, pipeline.command, path);
  std::vector<ReplayResult> results;
  for (const ReplayChoice& choice : pipeline.targets) {
    auto target = MakeTarget(choice.allocator, choice.config);
    const std::string& name = choice.progress_name.empty() ? target->label() : choice.progress_name;
    auto progress = MakeProgress(args, fmt::format("{} {}", pipeline.command, name));
    ReplayOptions options;
    AttachProgress(progress, options);
    results.push_back(Replay(trace, *target, options));
    if (progress) progress->Done();
  }
  const std::size_t trace_peak = TracePeakRequested(trace);
  const auto report = args.Value("--report");
  if (report) WriteHtmlReport(*report, pipeline, path, trace, results, trace_peak);
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
               JsonString(path), trace.size(), trace_peak, list);
    return 0;
  }
  fmt::print("{}\n\n{}", pipeline.headline(path, trace.size(), results, trace_peak),
             ResultsTable(results));
  if (report) fmt::print("\nreport written to {}\n", *report);
  return 0;
}

}  // namespace memarena::tools
