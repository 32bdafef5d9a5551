// memarena plan FILE.csv: plan a MiniMalloc-format lifetime file, print arena size, lower
// bound and ratio, and draw the plan.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <sstream>

#include "charts.h"
#include "commands.h"
#include "html_report.h"
#include "memarena/export.h"
#include "memarena/planner.h"

namespace memarena::tools {
namespace {

constexpr std::array kOptions = {
    OptionSpec{"--svg", "FILE", "write the plan as SVG: tensors in time x offset, the lower bound"},
    OptionSpec{"--json", "", "print the result as JSON"},
    OptionSpec{"--budget-ms", "N", "time for the improving search (default 1000)"},
    OptionSpec{"--greedy", "", "greedy by size only (no search)"},
    OptionSpec{"--write", "FILE", "write the tensors with their planned offsets as CSV"},
    OptionSpec{"--capacity", "BYTES",
               "the block to fit (MiniMalloc's capacity): the search stops once it fits, and the "
               "exit status is 1 if it does not"},
};

const CommandSpec kSpec{"plan", "FILE.csv [options]",
                        "plan tensor lifetimes into one block; print arena size, lower bound, ratio",
                        kOptions, 1, 1, false,
                        "FILE.csv is MiniMalloc's format: header id,lower,upper,size with optional\n"
                        "alignment and offset columns; lifetimes are half-open [lower, upper)."};

int Run(const ParsedArgs& args) {
  const std::string& path = args.positional[0];
  PlanOptions options;
  options.budget = std::chrono::milliseconds(
      args.Value("--budget-ms") ? ParseCountOption("--budget-ms", *args.Value("--budget-ms")) : 1000);
  std::size_t capacity = 0;
  if (const auto value = args.Value("--capacity")) {
    capacity = ParseSizeOption("--capacity", *value);
    if (capacity == 0) throw UsageError("bad value '0' for --capacity: expected a size >= 1");
  }
  options.capacity_target = capacity;
  RequireInputFile(path);
  const PlanCsv csv = ReadPlanCsvFile(path);
  const auto start = std::chrono::steady_clock::now();
  const Plan plan = args.Flag("--greedy") ? PlanGreedyBySize(csv.tensors) : PlanBest(csv.tensors, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::optional<std::string> problem = ValidatePlan(csv.tensors, plan);
  const bool fits = capacity == 0 || plan.arena_size <= capacity;
  // A file that carries offsets (a solver's answer) is checked as given, too.
  std::optional<Plan> given;
  std::optional<std::string> given_problem;
  if (csv.offsets) {
    given.emplace();
    given->offsets = *csv.offsets;
    for (std::size_t i = 0; i < csv.tensors.size() && i < given->offsets.size(); ++i) {
      given->arena_size = std::max(given->arena_size, given->offsets[i] + csv.tensors[i].size);
    }
    given_problem = ValidatePlan(csv.tensors, *given);
  }

  if (const auto svg = args.Value("--svg")) {
    WriteTextFile(*svg, RenderPlanSvg(csv.tensors, plan,
                                      fmt::format("{}: {} tensors, arena {} ({:.3f} x lower bound)",
                                                  path, csv.tensors.size(),
                                                  FormatBytes(plan.arena_size), plan.Ratio())));
  }
  if (const auto out = args.Value("--write")) {
    std::ostringstream text;
    WritePlanCsv(text, csv.tensors, &plan);
    WriteTextFile(*out, text.str());  // says why when the file cannot be written
  }
  if (args.Flag("--json")) {
    fmt::print(
        "{{\"file\":{},\"tensors\":{},\"arena_bytes\":{},\"lower_bound_bytes\":{},\"ratio\":{:.6f},"
        "\"valid\":{},\"method\":{},\"seconds\":{:.6f}{}{}}}\n",
        JsonString(path), csv.tensors.size(), plan.arena_size, plan.lower_bound, plan.Ratio(),
        problem ? "false" : "true", JsonString(plan.method), seconds,
        capacity == 0 ? std::string()
                      : fmt::format(",\"capacity_bytes\":{},\"fits\":{}", capacity,
                                    fits ? "true" : "false"),
        given ? fmt::format(",\"given_arena_bytes\":{},\"given_valid\":{}", given->arena_size,
                            given_problem ? "false" : "true")
              : std::string());
  } else {
    fmt::print("plan {}: {} tensors\n", path, csv.tensors.size());
    fmt::print("  lower bound  {:>14} ({} B)\n", FormatBytes(plan.lower_bound), plan.lower_bound);
    fmt::print("  arena size   {:>14} ({} B)\n", FormatBytes(plan.arena_size), plan.arena_size);
    fmt::print("  ratio        {:>14.4f}\n", plan.Ratio());
    fmt::print("  method       {:>14}\n", plan.method);
    fmt::print("  valid        {:>14}\n", problem ? "NO: " + *problem : std::string("yes"));
    fmt::print("  seconds      {:>14.3f}\n", seconds);
    if (capacity != 0) {
      fmt::print("  capacity     {:>14} ({} B): {}\n", FormatBytes(capacity), capacity,
                 fits ? fmt::format("fits {}", capacity)
                      : fmt::format("does NOT fit: {} B over", plan.arena_size - capacity));
    }
    if (given) {
      fmt::print("  offsets in the file: arena {} ({:.4f} x lower bound), {}\n",
                 FormatBytes(given->arena_size),
                 plan.lower_bound == 0 ? 1.0
                                       : static_cast<double>(given->arena_size) /
                                             static_cast<double>(plan.lower_bound),
                 given_problem ? "INVALID: " + *given_problem : std::string("valid"));
    }
  }
  return problem || !fits ? 1 : 0;
}

}  // namespace

const Command kPlanCommand{&kSpec, &Run};

}  // namespace memarena::tools
