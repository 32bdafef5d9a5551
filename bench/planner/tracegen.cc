// planner_tracegen: writes a synthetic transformer training trace as MiniMalloc CSV, for
// `memarena plan` and other planners.
//   planner_tracegen TENSORS [SEED] > trace.csv
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "training_trace.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fputs("usage: planner_tracegen TENSORS [SEED]   (writes CSV to stdout)\n", stderr);
    return 2;
  }
  try {
    const std::size_t tensors = std::stoull(argv[1]);
    const std::uint64_t seed = argc == 3 ? std::stoull(argv[2]) : 1;
    const auto trace =
        memarena::bench::TrainingTrace(memarena::bench::TrainingTraceOfSize(tensors, seed));
    memarena::WritePlanCsv(std::cout, trace);
  } catch (const std::exception& e) {
    std::fputs(fmt::format("planner_tracegen: {}\n", e.what()).c_str(), stderr);
    return 2;
  }
  return 0;
}
