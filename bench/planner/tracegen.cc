// planner_tracegen: writes a generated planner input as MiniMalloc CSV, for `memarena plan`
// and other planners: a transformer training trace (the default), random intervals, every
// tensor alive at once, or an inference-style trace; the same inputs as planner_bench.
//   planner_tracegen [--kind=training|random-intervals|all-alive|inference] TENSORS [SEED]
#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>

#include "synthetic_inputs.h"
#include "training_trace.h"

namespace {

constexpr const char* kUsage =
    "usage: planner_tracegen [--kind=training|random-intervals|all-alive|inference] TENSORS "
    "[SEED]   (writes CSV to stdout)\n";

std::vector<memarena::PlanTensor> Generate(const std::string& kind, std::size_t tensors,
                                           std::uint64_t seed) {
  namespace bench = memarena::bench;
  if (kind == "training") return bench::TrainingTrace(bench::TrainingTraceOfSize(tensors, seed));
  if (kind == "random-intervals") return bench::RandomIntervals(tensors, seed);
  if (kind == "all-alive") return bench::AllAlive(tensors, seed);
  if (kind == "inference") return bench::SyntheticTrace(tensors, seed);
  throw std::invalid_argument(fmt::format(
      "bad value '{}' for --kind: expected training, random-intervals, all-alive or inference",
      kind));
}

}  // namespace

int main(int argc, char** argv) {
  std::string kind = "training";
  int first = 1;
  if (argc > 1 && std::strncmp(argv[1], "--kind=", 7) == 0) {
    kind = argv[1] + 7;
    first = 2;
  }
  const int positional = argc - first;
  if (positional < 1 || positional > 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  try {
    const std::size_t tensors = std::stoull(argv[first]);
    const std::uint64_t seed = positional == 2 ? std::stoull(argv[first + 1]) : 1;
    memarena::WritePlanCsv(std::cout, Generate(kind, tensors, seed));
  } catch (const std::exception& e) {
    std::fputs(fmt::format("planner_tracegen: {}\n", e.what()).c_str(), stderr);
    return 2;
  }
  return 0;
}
