// The gtest guard, run in a child process: a clean test passes, a deliberately growing test
// fails against MEMARENA_TEST_BUDGET / MEMARENA_TEST_GROWTH_BUDGET, a budget set in code
// applies, the heaviest tests are listed, and a bad setting is a clear error.
#include <gtest/gtest.h>

#include "subprocess.h"

namespace memarena::testing {
namespace {

ProcessResult RunFixture(const std::string& filter, const std::vector<std::string>& env) {
  std::vector<std::string> all_env = {"MEMARENA_TEST_BUDGET=", "MEMARENA_TEST_GROWTH_BUDGET="};
  all_env.insert(all_env.end(), env.begin(), env.end());
  return RunProcess({MEMARENA_GUARD_FIXTURE, "--gtest_filter=" + filter}, all_env);
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GtestGuard, CleanTestPassesUnderABudget) {
  const auto r = RunFixture("Guard.Clean", {"MEMARENA_TEST_BUDGET=16MiB"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "[       OK ] Guard.Clean")) << r.out;
  EXPECT_TRUE(Contains(r.out, "[ memarena ] heaviest 1 of 1 tests")) << r.out;
}

TEST(GtestGuard, GrowingTestFailsThePeakBudget) {
  const auto r = RunFixture("Guard.Growing", {"MEMARENA_TEST_BUDGET=16MiB"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "[  FAILED  ] Guard.Growing")) << r.out;
  EXPECT_TRUE(Contains(r.out, "over its budget of 16.00 MiB")) << r.out;
  EXPECT_TRUE(Contains(r.out, "Guard.Growing  OVER BUDGET")) << r.out;
}

TEST(GtestGuard, GrowingTestFailsTheGrowthBudget) {
  const auto r = RunFixture("Guard.Growing", {"MEMARENA_TEST_GROWTH_BUDGET=1MiB"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "left 32.00 MiB more in use than when it started")) << r.out;
}

TEST(GtestGuard, WithoutABudgetEverythingPassesAndTheHeaviestComesFirst) {
  const auto r = RunFixture("Guard.Clean:Guard.Growing", {});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  const auto heaviest = r.out.find("[ memarena ] heaviest 2 of 2 tests");
  ASSERT_NE(heaviest, std::string::npos) << r.out;
  const auto growing = r.out.find("Guard.Growing", heaviest);
  const auto clean = r.out.find("Guard.Clean", heaviest);
  ASSERT_NE(growing, std::string::npos);
  ASSERT_NE(clean, std::string::npos);
  EXPECT_LT(growing, clean) << r.out;
}

TEST(GtestGuard, BudgetSetInCodeApplies) {
  const auto r = RunFixture("Guard.CodeBudget", {});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "over its budget of 1.00 MiB")) << r.out;
}

TEST(GtestGuard, BadSettingIsAClearError) {
  const auto r = RunFixture("Guard.Clean", {"MEMARENA_TEST_BUDGET=lots"});
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_TRUE(Contains(r.err, "MEMARENA_TEST_BUDGET")) << r.err;
}

}  // namespace
}  // namespace memarena::testing
