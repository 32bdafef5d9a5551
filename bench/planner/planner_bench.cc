// Planner benchmarks: for every file in ../shared/data/planner and for generated inputs
// (transformer training traces of 20,000-200,000 tensors, 200,000 tensors all alive
// together or at random intervals), arena / lower bound for greedy by size and for
// PlanBest, whether the arena fits the capacity in the file name, and planning time (wall
// and process CPU, since the machine may be shared). A summary table follows.
//   planner_bench [--budget_ms=N] [--external_traces=DIR] [Google Benchmark flags]
// --budget_ms: PlanBest's budget (default 1000). --external_traces (or the environment
// variable MEMARENA_EXTERNAL_TRACES): a folder of CSV traces kept outside the repository
// (public dumps of real training graphs, see docs/planner.md), run as external/<file>.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "memarena/planner.h"
#include "synthetic_inputs.h"
#include "training_trace.h"

namespace {

using Clock = std::chrono::steady_clock;
using memarena::Plan;
using memarena::PlanTensor;

std::chrono::milliseconds g_budget{1000};  // PlanBest's default in `memarena plan`

// One input's figures; with --benchmark_repetitions each repetition adds a sample and the
// summary prints medians.
struct Row {
  std::size_t tensors = 0;
  std::size_t lower_bound = 0;
  std::size_t capacity = 0;
  double greedy_ratio = 0;
  std::vector<double> greedy_ms;
  std::vector<double> greedy_cpu_ms;
  std::vector<double> best_ratio;
  std::vector<double> best_ms;
  std::vector<double> best_cpu_ms;
  std::string best_method;
  int best_fits = 0;  // repetitions whose arena fit the capacity
};

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}
std::map<std::string, Row> g_rows;

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Process CPU time: on a loaded machine wall time includes waiting for a core.
double CpuMillis() { return 1000.0 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// Validates, then publishes the plan's figures as counters.
bool Publish(benchmark::State& state, const std::vector<PlanTensor>& tensors, const Plan& plan,
             std::size_t capacity) {
  if (const auto problem = memarena::ValidatePlan(tensors, plan)) {
    state.SkipWithError(problem->c_str());
    return false;
  }
  state.counters["arena"] = static_cast<double>(plan.arena_size);
  state.counters["lower_bound"] = static_cast<double>(plan.lower_bound);
  state.counters["ratio"] = plan.Ratio();
  if (capacity != 0) state.counters["fits"] = plan.arena_size <= capacity ? 1 : 0;
  return true;
}

void Register(const std::string& name, const std::vector<PlanTensor>& tensors,
              std::size_t capacity) {
  benchmark::RegisterBenchmark(("greedy/" + name).c_str(), [=](benchmark::State& state) {
    Plan plan;
    const Clock::time_point start = Clock::now();
    const double cpu_start = CpuMillis();
    for (auto _ : state) benchmark::DoNotOptimize(plan = memarena::PlanGreedyBySize(tensors));
    const auto iterations = static_cast<double>(state.iterations());
    const double ms = MillisSince(start) / iterations;
    const double cpu_ms = (CpuMillis() - cpu_start) / iterations;
    if (!Publish(state, tensors, plan, capacity)) return;
    Row& row = g_rows[name];
    row.tensors = tensors.size();
    row.lower_bound = plan.lower_bound;
    row.capacity = capacity;
    row.greedy_ratio = plan.Ratio();
    row.greedy_ms.push_back(ms);
    row.greedy_cpu_ms.push_back(cpu_ms);
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(("best/" + name).c_str(), [=](benchmark::State& state) {
    memarena::PlanOptions options;
    options.budget = g_budget;
    options.capacity_target = capacity;
    Plan plan;
    const Clock::time_point start = Clock::now();
    const double cpu_start = CpuMillis();
    for (auto _ : state) benchmark::DoNotOptimize(plan = memarena::PlanBest(tensors, options));
    const auto iterations = static_cast<double>(state.iterations());
    const double ms = MillisSince(start) / iterations;
    const double cpu_ms = (CpuMillis() - cpu_start) / iterations;
    if (!Publish(state, tensors, plan, capacity)) return;
    Row& row = g_rows[name];
    row.capacity = capacity;
    row.best_ratio.push_back(plan.Ratio());
    row.best_ms.push_back(ms);
    row.best_cpu_ms.push_back(cpu_ms);
    row.best_method = plan.method;
    row.best_fits += capacity != 0 && plan.arena_size <= capacity ? 1 : 0;
  })->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
}

void RegisterFile(const std::filesystem::path& file, const std::string& name) {
  Register(name, memarena::ReadPlanCsvFile(file.string()).tensors,
           memarena::CapacityFromFileName(file.string()));
}

// The .csv files under `dir`, sorted.
std::vector<std::filesystem::path> CsvFiles(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().extension() == ".csv") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// External traces are optional: say why none run rather than failing or staying silent.
void RegisterExternalTraces(const std::string& dir) {
  if (dir.empty()) {
    std::printf("planner_bench: no external traces (set MEMARENA_EXTERNAL_TRACES=DIR or pass "
                "--external_traces=DIR)\n");
    return;
  }
  if (!std::filesystem::is_directory(dir)) {
    std::printf("planner_bench: external traces skipped: %s is not a directory\n", dir.c_str());
    return;
  }
  const std::vector<std::filesystem::path> files = CsvFiles(dir);
  std::printf("planner_bench: %zu external traces from %s\n", files.size(), dir.c_str());
  for (const auto& file : files) {
    RegisterFile(file, "external/" + std::filesystem::relative(file, dir).string());
  }
}

void PrintSummary() {
  std::string out = fmt::format(
      "\nPlanBest budget {} ms; medians; times are wall / process CPU in ms\n"
      "| input | tensors | LB | greedy/LB | greedy ms | best/LB | best ms | method | "
      "capacity | fits (runs) |\n|---|---|---|---|---|---|---|---|---|---|\n",
      g_budget.count());
  int fits = 0;
  int with_capacity = 0;
  for (const auto& [name, r] : g_rows) {
    const std::size_t runs = r.best_ms.size();
    out += fmt::format(
        "| {} | {} | {} | {:.4f} | {:.1f} / {:.1f} | {:.4f} | {:.0f} / {:.0f} | {} | {} | {} |\n",
        name, r.tensors, r.lower_bound, r.greedy_ratio, Median(r.greedy_ms),
        Median(r.greedy_cpu_ms), Median(r.best_ratio), Median(r.best_ms), Median(r.best_cpu_ms),
        r.best_method, r.capacity == 0 ? "-" : std::to_string(r.capacity),
        r.capacity == 0 ? "-" : fmt::format("{} of {}", r.best_fits, runs));
    if (r.capacity != 0) {
      ++with_capacity;
      fits += 2 * static_cast<std::size_t>(r.best_fits) > runs ? 1 : 0;
    }
  }
  out += fmt::format("fit their capacity in most runs: {} of {}\n", fits, with_capacity);
  std::fputs(out.c_str(), stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args;
  const char* external_env = std::getenv("MEMARENA_EXTERNAL_TRACES");
  std::string external = external_env == nullptr ? "" : external_env;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--budget_ms=", 12) == 0) {
      g_budget = std::chrono::milliseconds(std::stoll(argv[i] + 12));
    } else if (std::strncmp(argv[i], "--external_traces=", 18) == 0) {
      external = argv[i] + 18;
    } else {
      args.push_back(argv[i]);
    }
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  const std::filesystem::path dir = MEMARENA_PLANNER_DATA_DIR;
  if (!std::filesystem::is_directory(dir)) {
    std::fprintf(stderr, "planner_bench: data folder %s is missing (../shared/data/planner)\n",
                 dir.c_str());
    return 1;
  }
  for (const auto& file : CsvFiles(dir)) {
    RegisterFile(file, std::filesystem::relative(file, dir).string());
  }
  RegisterExternalTraces(external);
  Register("synthetic-trace-20000", memarena::bench::SyntheticTrace(20000, 7), 0);
  for (const std::size_t n : {20000, 60000, 200000}) {
    Register(fmt::format("training-{}", n),
             memarena::bench::TrainingTrace(memarena::bench::TrainingTraceOfSize(n, n)), 0);
  }
  Register("random-intervals-20000", memarena::bench::RandomIntervals(20000, 11), 0);
  Register("random-intervals-200000", memarena::bench::RandomIntervals(200000, 13), 0);
  Register("all-alive-200000", memarena::bench::AllAlive(200000, 17), 0);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  PrintSummary();
  return 0;
}
