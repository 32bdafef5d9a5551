// memarena demo: the built-in scenarios (no input) as a table and memarena-demo.html: a test
// suite under a ceiling with and without release between tests, and two dynamic-shape
// inference traces under both arena extend strategies, the expandable arena and the planner.
#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "charts.h"
#include "commands.h"
#include "html_report.h"
#include "memarena/tracing.h"
#include "replay.h"
#include "scenarios.h"

namespace memarena::tools {
namespace {

constexpr std::array kOptions = {
    OptionSpec{"--out", "FILE", "where the HTML report goes (default memarena-demo.html)"},
    OptionSpec{"--cases", "N", "test cases in the test-suite scenario (default 400)"},
    OptionSpec{"--ceiling", "SIZE", "host ceiling of the test-suite scenario (default 20MiB)"},
    OptionSpec{"--requests", "N", "requests in the inference scenario (default 100)"},
    OptionSpec{"--batched-requests", "N", "requests in the batched inference scenario (default 280)"},
    OptionSpec{"--write-traces", "DIR", "also write the scenarios as RMM-format CSV traces into DIR"},
    kProgressOption,
    kNoProgressOption,
};

const CommandSpec kSpec{"demo", "[options]",
                        "replay the built-in scenarios and write memarena-demo.html", kOptions, 0, 0,
                        false, ""};

struct Run {
  std::string allocator;
  std::string config;
  bool release = false;
};

std::vector<ReplayResult> RunScenario(const Scenario& s, const std::vector<Run>& runs,
                                      const ParsedArgs& args) {
  std::vector<ReplayResult> results;
  for (const Run& run : runs) {
    auto target = MakeTarget(run.allocator, run.config);
    ReplayOptions options;
    options.phases = s.phases;
    options.release_between_phases = run.release;
    auto progress = MakeProgress(args, fmt::format("{}: {}", s.name, target->label()));
    AttachProgress(progress, options);
    ReplayResult r = Replay(s.trace, *target, options);
    if (progress) progress->Done();
    if (run.release) r.allocator += ", release after each test";
    results.push_back(std::move(r));
  }
  return results;
}

void AddSection(HtmlReport& html, const std::string& heading, const Scenario& s,
                const std::vector<ReplayResult>& results) {
  html.Heading(heading);
  html.Paragraph(fmt::format("{}: {} events in {} phases; the peak of live requested bytes is {}.",
                             s.description, s.trace.size(), s.phases.size(),
                             FormatBytes(TracePeakRequested(s.trace))));
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : results) rows.push_back(ResultRow(r));
  html.Table(ResultHeader(), rows);
  for (const auto& r : results) html.Svg(RenderLineChart(TimelineChart(r, r.allocator)));
}

int RunDemo(const ParsedArgs& args) {
  const std::string out = args.Value("--out").value_or("memarena-demo.html");
  const int cases = static_cast<int>(
      args.Value("--cases") ? ParseCountOption("--cases", *args.Value("--cases")) : 400);
  const int requests = static_cast<int>(
      args.Value("--requests") ? ParseCountOption("--requests", *args.Value("--requests")) : 100);
  const std::size_t ceiling =
      args.Value("--ceiling") ? ParseSizeOption("--ceiling", *args.Value("--ceiling")) : 20u << 20;

  const Scenario suite = TestSuiteScenario(cases, 2026);
  const std::string limit = fmt::format("ceiling:{}", ceiling);
  const auto suite_results = RunScenario(suite, {{"host", limit, false}, {"host", limit, true}}, args);

  const int batched_requests = static_cast<int>(
      args.Value("--batched-requests") ? ParseCountOption("--batched-requests", *args.Value("--batched-requests"))
                                       : 280);
  const Scenario inference = DynamicShapeScenario(requests, 12, 7);
  const Scenario batched = BatchedInferenceScenario(batched_requests, 6, 2024);
  if (const auto dir = args.Value("--write-traces")) {
    std::error_code error;  // a folder that does not exist yet is made, as `--out`'s file is
    std::filesystem::create_directories(*dir, error);
    if (error) {
      throw std::runtime_error(fmt::format("--write-traces {}: cannot make the folder: {}", *dir,
                                           error.message()));
    }
    WriteTrace(*dir + "/test_suite.csv", suite.trace);
    WriteTrace(*dir + "/dynamic_shapes.csv", inference.trace);
    WriteTrace(*dir + "/batched_inference.csv", batched.trace);
  }
  const std::vector<Run> arenas = {{"bfc", "arena_extend_strategy:kNextPowerOfTwo", false},
                                   {"bfc", "arena_extend_strategy:kSameAsRequested", false},
                                   {"bfc", "expandable_segments:1", false},
                                   {"planned", "", false}};
  const auto inference_results = RunScenario(inference, arenas, args);
  const auto batched_results = RunScenario(batched, arenas, args);

  const std::string suite_title = fmt::format("1. {}: {} test cases under a {} host ceiling",
                                              suite.name, cases, FormatBytes(ceiling));
  const std::string inference_title = fmt::format(
      "2. {}: {} requests, arena extend strategies, the expandable arena and the planner",
      inference.name, requests);
  const std::string batched_title =
      fmt::format("3. {}: {} requests, the same allocators", batched.name, batched_requests);
  HtmlReport html("memarena demo");
  html.Paragraph(
      "Built-in scenarios replayed through memarena's allocators. Lines: held (orange), in use "
      "(blue), ceiling (red, dashed); green triangles: release of free spans; red crosses: "
      "failed allocations (OOM).");
  AddSection(html, suite_title, suite, suite_results);
  AddSection(html, inference_title, inference, inference_results);
  html.Svg(RenderLineChart(CompareChart(inference_results, "held over time, all four")));
  AddSection(html, batched_title, batched, batched_results);
  html.Svg(RenderLineChart(CompareChart(batched_results, "held over time, all four")));
  WriteTextFile(out, html.Finish());

  fmt::print("memarena demo: built-in scenarios, no input needed\n\n{}\n{}\n", suite_title,
             ResultsTable(suite_results));
  fmt::print("{}\n{}\n", inference_title, ResultsTable(inference_results));
  fmt::print("{}\n{}\nreport written to {}\n", batched_title, ResultsTable(batched_results), out);
  return 0;
}

}  // namespace

const Command kDemoCommand{&kSpec, &RunDemo};

}  // namespace memarena::tools
