// memarena compare TRACE: the trace through every allocator and arena strategy, one table
// and one picture.
#include <fmt/format.h>

#include <array>

#include "replay_pipeline.h"

namespace memarena::tools {
namespace {

constexpr auto kOptions = ReplayingOptions(
    std::array{
        OptionSpec{"--ceiling", "SIZE",
                   "limit for every allocator (host ceiling, bfc max_mem, ...)"},
    },
    "write an HTML report: the table and the held timelines");

const CommandSpec kSpec{"compare", "TRACE [options]",
                        "replay a trace through every allocator and arena strategy side by side",
                        kOptions, 1, 1, false,
                        "The allocators: host, bfc with kNextPowerOfTwo, bfc with kSameAsRequested,\n"
                        "bfc with expandable_segments:1 (a virtual range with 2 MiB granules committed on\n"
                        "demand), planned (ORT mem pattern: a first run is recorded and planned), system."};

// Every allocator and arena strategy, with the limit spelled in each one's config keys.
std::vector<ReplayChoice> Lineup(std::size_t ceiling) {
  const std::string limit = ceiling == 0 ? "" : fmt::format("ceiling:{}", ceiling);
  const std::string max_mem = ceiling == 0 ? "" : fmt::format(",max_mem:{}", ceiling);
  return {{"host", limit, ""},
          {"bfc", "arena_extend_strategy:kNextPowerOfTwo" + max_mem, ""},
          {"bfc", "arena_extend_strategy:kSameAsRequested" + max_mem, ""},
          {"bfc", "expandable_segments:1" + max_mem, ""},
          {"planned", limit, ""},
          {"system", limit, ""}};
}

int Run(const ParsedArgs& args) {
  CheckReplayInput(args);
  const std::size_t ceiling =
      args.Value("--ceiling") ? ParseSizeOption("--ceiling", *args.Value("--ceiling")) : 0;
  const ReplayPipeline pipeline{
      "compare", Lineup(ceiling),
      [](const std::vector<ReplayResult>& results, const std::string& path) {
        return CompareChart(results, fmt::format("held over time: {}", path));
      },
      [](const std::string& path, std::size_t events, const std::vector<ReplayResult>&,
         std::size_t trace_peak) {
        return fmt::format("trace {}: {} events; peak requested by the trace {}", path, events,
                           FormatBytes(trace_peak));
      }};
  return RunReplayPipeline(args, pipeline);
}

}  // namespace

const Command kCompareCommand{&kSpec, &Run};

}  // namespace memarena::tools
