// Every file in ../shared/data/planner is read, planned greedily and with PlanBest, and
// both plans are validated; PlanBest is never worse than greedy.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "planner/planner_test_util.h"

namespace memarena::testing {
namespace {

std::vector<std::filesystem::path> CsvFilesIn(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(dir)) return files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().extension() == ".csv") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::filesystem::path> DataFiles() { return CsvFilesIn(PlannerDataDir()); }

TEST(PlannerDataFiles, EveryFileIsPlannedAndValidated) {
  const auto files = DataFiles();
  // 11 MiniMalloc challenging instances, input.12.csv and somas/resnet50.csv.
  ASSERT_GE(files.size(), 13u) << "expected the MiniMalloc and SOMAS files in " << PlannerDataDir();
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    const PlanCsv csv = ReadPlanCsvFile(file.string());
    ASSERT_FALSE(csv.tensors.empty());
    const Plan greedy = PlanGreedyBySize(csv.tensors);
    ExpectValid(csv.tensors, greedy);
    EXPECT_GE(greedy.arena_size, greedy.lower_bound);
    PlanOptions options;
    options.budget = std::chrono::milliseconds(60);
    options.capacity_target = CapacityFromFileName(file.string());
    const Plan best = PlanBest(csv.tensors, options);
    ExpectValid(csv.tensors, best);
    EXPECT_LE(best.arena_size, greedy.arena_size);
    EXPECT_EQ(best.lower_bound, greedy.lower_bound);
  }
}

// MiniMalloc's challenging instances fit capacity 1048576. PlanBest stops at the first plan
// that fits, so the budget only bounds a failure: it is generous because a loaded CI machine
// may give the search a fraction of a core. The 1 s figure (the default budget) comes from
// planner_bench, not from here.
#ifdef NDEBUG
constexpr std::string_view kChallengingInstances = "ABCDEFGHIJK";  // all 11
#else
// Unoptimized builds (Debug, the sanitizer runs) search about 50x slower: all 11 took minutes
// under ASAN+UBSAN on a loaded machine. They check the three quickest (J's lower bound is
// below the capacity, G's and K's equal it); the optimized build checks all 11.
constexpr std::string_view kChallengingInstances = "GJK";
#endif

TEST(PlannerDataFiles, MiniMallocChallengingInstancesAllFitTheirCapacity) {
  const std::filesystem::path dir = PlannerDataDir() / "minimalloc";
  for (const char name : kChallengingInstances) {
    const std::filesystem::path file = dir / fmt::format("{}.1048576.csv", name);
    SCOPED_TRACE(file.string());
    ASSERT_TRUE(std::filesystem::is_regular_file(file));
    const PlanCsv csv = ReadPlanCsvFile(file.string());
    PlanOptions options;
    options.budget = std::chrono::seconds(120);
    options.capacity_target = CapacityFromFileName(file.string());
    ASSERT_EQ(options.capacity_target, 1048576u);
    const Plan plan = PlanBest(csv.tensors, options);
    ExpectValid(csv.tensors, plan);
    EXPECT_LE(plan.arena_size, options.capacity_target)
        << "method " << plan.method << ", lower bound " << plan.lower_bound;
  }
}

// Public SOMAS dumps of real training graphs are kept outside the repository (licence and
// size, docs/planner.md); point MEMARENA_EXTERNAL_TRACES at their folder to check the
// issue's bar on them: within 0.5 % of the lower bound. PlanBest stops as soon as it gets
// there, so the generous budget only bounds a failure on a slow or loaded machine.
TEST(PlannerExternalTraces, RealTrainingGraphsComeWithinHalfAPercentOfTheLowerBound) {
  const char* dir = std::getenv("MEMARENA_EXTERNAL_TRACES");
  if (dir == nullptr) {
    GTEST_SKIP() << "MEMARENA_EXTERNAL_TRACES is not set (a folder of training-graph traces "
                    "kept outside the repository, see docs/planner.md)";
  }
  const auto files = CsvFilesIn(dir);
  ASSERT_FALSE(files.empty()) << "no .csv files in MEMARENA_EXTERNAL_TRACES=" << dir;
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    const PlanCsv csv = ReadPlanCsvFile(file.string());
    const std::size_t lower_bound = LowerBound(csv.tensors);
    PlanOptions options;
    options.budget = std::chrono::seconds(60);
    options.capacity_target = lower_bound + lower_bound / 200;
    const Plan best = PlanBest(csv.tensors, options);
    ExpectValid(csv.tensors, best);
    EXPECT_LE(best.arena_size, options.capacity_target)
        << fmt::format("{} above the lower bound with {}", best.Ratio() - 1, best.method);
  }
}

}  // namespace
}  // namespace memarena::testing
