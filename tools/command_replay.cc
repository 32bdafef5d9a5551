// memarena replay TRACE: one trace through one allocator, with table, JSON or HTML report.
#include <fmt/format.h>

#include <array>

#include "memarena/observability.h"
#include "replay_pipeline.h"
#include "watermark_lines.h"

namespace memarena::tools {
namespace {

constexpr auto kOptions = ReplayingOptions(
    std::array{
        OptionSpec{"--allocator", "NAME", "host (default), bfc, planned or system"},
        OptionSpec{"--config", "KEY:VALUE,...", "settings of the allocator (see below)"},
    },
    "write an HTML report with the timeline",
    std::array{OptionSpec{
        "--watermarks", "P/P/...",
        "draw these percentages of the limit (ceiling or max_mem) on the report's timeline"}});

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

std::string Headline(const std::string& path, std::size_t events,
                     const std::vector<ReplayResult>& results, std::size_t trace_peak) {
  const ReplayResult& result = results.front();
  std::string line = fmt::format("trace {}: {} events ({} allocations, {} frees", path, events,
                                 result.allocations + result.ooms, result.frees);
  if (result.unknown_frees != 0) {
    line += fmt::format(", {} frees of unknown pointers skipped", result.unknown_frees);
  }
  if (result.trace_failures != 0) {
    line += fmt::format(", {} allocations that failed when recorded", result.trace_failures);
  }
  return line + fmt::format("); peak requested by the trace {}", FormatBytes(trace_peak));
}

int Run(const ParsedArgs& args) {
  CheckReplayInput(args);
  const std::string allocator = args.Value("--allocator").value_or("host");
  std::vector<double> watermarks;
  if (const auto w = args.Value("--watermarks")) {
    try {
      watermarks = ParseWatermarkLevels("--watermarks", *w);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    if (!args.Value("--report")) throw UsageError("--watermarks draws on the timeline of --report FILE; add it");
  }
  const ReplayPipeline pipeline{
      "replay",
      {{allocator, args.Value("--config").value_or(""), allocator}},
      // Called for --report only, which --watermarks requires: before anything is printed.
      [&](const std::vector<ReplayResult>& results, const std::string& path) {
        const ReplayResult& result = results.front();
        if (!watermarks.empty() && result.limit_bytes == 0) {
          throw UsageError(fmt::format(
              "--watermarks: the {} replay has no limit to take percentages of; "
              "add --config ceiling:SIZE (host) or max_mem:SIZE (bfc)", allocator));
        }
        LineChart timeline = TimelineChart(result, fmt::format("{} on {}", path, result.allocator));
        AddWatermarkLines(timeline, result, watermarks);
        return timeline;
      },
      &Headline};
  return RunReplayPipeline(args, pipeline);
}

}  // namespace

const Command kReplayCommand{&kSpec, &Run};

}  // namespace memarena::tools
