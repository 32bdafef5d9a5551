// The gtest guard, run in a child process: a clean test passes, a deliberately growing test
// fails against MEMARENA_TEST_BUDGET / MEMARENA_TEST_GROWTH_BUDGET, a budget set in code
// applies, the heaviest tests are listed, and a bad setting is a clear error. On a simulated
// device arena: the one test whose device peak exceeds MEMARENA_TEST_DEVICE_BUDGET fails and
// the others pass, free device regions go back after each test, host and device side by side.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "subprocess.h"

namespace memarena::testing {
namespace {

// The fixture's tests run in the order given: the device cases check what one test leaves
// the next, so a GTEST_SHUFFLE=1 meant for this suite (the child inherits it) must not
// shuffle them (it failed WithoutReleaseTheNextTestStartsFromTheCachedPeak in about half
// of the runs).
ProcessResult RunFixture(const std::string& filter, const std::vector<std::string>& env) {
  std::vector<std::string> all_env = {"MEMARENA_TEST_BUDGET=", "MEMARENA_TEST_GROWTH_BUDGET=",
                                      "MEMARENA_TEST_DEVICE_BUDGET=", "MEMARENA_TEST_RELEASE=",
                                      "GTEST_SHUFFLE=0"};
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

// The documented setups, each with a test that leaks 16 MiB through malloc under a 1 MiB
// growth budget. Without a drop-in, malloc is glibc's (or a sanitizer's in those builds).
TEST(GtestGuard, MallocLeakIsCaughtWithoutADropIn) {
  const auto r = RunFixture("Guard.LeaksThroughMalloc", {"MEMARENA_TEST_GROWTH_BUDGET=1MiB"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "Guard.LeaksThroughMalloc left 16.")) << r.out;
  EXPECT_TRUE(Contains(r.out, "Guard.LeaksThroughMalloc  OVER BUDGET")) << r.out;
}

#if defined(MEMARENA_GUARD_FIXTURE_LINKED)
TEST(GtestGuard, MallocLeakIsCaughtWithTheLinkedDropIn) {
  const auto r = RunProcess({MEMARENA_GUARD_FIXTURE_LINKED, "--gtest_filter=Guard.LeaksThroughMalloc"},
                            {"MEMARENA_TEST_BUDGET=", "MEMARENA_TEST_GROWTH_BUDGET=1MiB"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "Guard.LeaksThroughMalloc left 16.")) << r.out;
  EXPECT_TRUE(Contains(r.out, "memarena host allocator (also behind malloc)")) << r.out;
}

TEST(GtestGuard, MallocLeakIsCaughtUnderLdPreload) {
  const auto r = RunFixture("Guard.LeaksThroughMalloc",
                            {"MEMARENA_TEST_GROWTH_BUDGET=1MiB",
                             std::string("LD_PRELOAD=") + MEMARENA_DROPIN_LIBRARY});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "Guard.LeaksThroughMalloc left 16.")) << r.out;
  EXPECT_TRUE(Contains(r.out, "+ preloaded memarena drop-in (malloc)")) << r.out;
}

TEST(GtestGuard, PeakBudgetSeesMallocUnderLdPreload) {
  const auto r = RunFixture("Guard.LeaksThroughMalloc",
                            {"MEMARENA_TEST_BUDGET=1MiB",
                             std::string("LD_PRELOAD=") + MEMARENA_DROPIN_LIBRARY});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "over its budget of 1.00 MiB")) << r.out;
}
#endif

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

// The device tests of the fixture that stay within 32 MiB above the weights, and the one that
// peaks 64 MiB above them.
constexpr const char* kDeviceSuite =
    "DeviceGuard.Peaky:DeviceGuard.Small:DeviceGuard.Medium:DeviceGuard.HostOnly";

// The heaviest-tests row of `test`, with each run of spaces squeezed to one.
std::string ReportRow(const std::string& out, const std::string& test) {
  const auto table = out.find("[ memarena ] heaviest");
  if (table == std::string::npos) return {};
  std::size_t at = table;
  do {
    at = out.find(" " + test, at + 1);
  } while (at != std::string::npos && out.compare(at + 1 + test.size(), 1, "\n") != 0 &&
           out.compare(at + 1 + test.size(), 2, "  ") != 0);
  if (at == std::string::npos) return {};
  const auto begin = out.rfind("[ memarena ]", at);
  std::string row;
  for (std::size_t i = begin; i < out.size() && out[i] != '\n'; ++i) {
    if (out[i] != ' ' || row.empty() || row.back() != ' ') row += out[i];
  }
  return row;
}

TEST(GtestGuard, DeviceBudgetFailsOnlyTheTestThatPeaksOverIt) {
  const auto r = RunFixture(kDeviceSuite, {"MEMARENA_TEST_DEVICE_BUDGET=32MiB"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "[  FAILED  ] DeviceGuard.Peaky (")) << r.out;
  for (const char* ok : {"Small", "Medium", "HostOnly"}) {
    EXPECT_TRUE(Contains(r.out, fmt::format("[       OK ] DeviceGuard.{} (", ok))) << r.out;
  }
  EXPECT_TRUE(Contains(r.out, " 1 FAILED TEST")) << r.out;
  EXPECT_TRUE(Contains(r.out,
                       "memarena: DeviceGuard.Peaky took device memory held to a peak of 80.00 MiB "
                       "(in use 80.00 MiB) from a baseline of 16.00 MiB at its start: 64.00 MiB "
                       "more, over its device budget of 32.00 MiB"))
      << r.out;
}

TEST(GtestGuard, DeviceReportSitsBesideTheHostOneAndReleaseRestoresTheBaseline) {
  const auto r = RunFixture(kDeviceSuite, {});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  // The host side names the heaps it read (the host allocator, and malloc's heap).
  EXPECT_TRUE(Contains(r.out, "[ memarena ] heaviest 4 of 4 tests (memarena host allocator"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, " | device arenas")) << r.out;
  // Columns: host peak growth, in use left, released | device baseline, peak, growth, released.
  EXPECT_TRUE(Contains(ReportRow(r.out, "DeviceGuard.Peaky"),
                       "| 16.00 MiB 80.00 MiB 64.00 MiB 64.00 MiB"))
      << ReportRow(r.out, "DeviceGuard.Peaky") << "\n" << r.out;
  // Small runs after Peaky: the release gave Peaky's 64 MiB back, so Small starts from the
  // weights alone.
  EXPECT_TRUE(Contains(ReportRow(r.out, "DeviceGuard.Small"), "| 16.00 MiB 20.00 MiB 4.00 MiB 4.00 MiB"))
      << r.out;
  EXPECT_TRUE(Contains(r.out,
                       "device used (the runtime's count) at most 80.00 MiB of 1.00 GiB, at the end "
                       "of DeviceGuard.Peaky: 944.00 MiB of headroom"))
      << r.out;
}

TEST(GtestGuard, WithoutReleaseTheNextTestStartsFromTheCachedPeak) {
  const auto r = RunFixture("DeviceGuard.Peaky:DeviceGuard.Small", {"MEMARENA_TEST_RELEASE=0"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(ReportRow(r.out, "DeviceGuard.Small"), "| 80.00 MiB 80.00 MiB 0 B 0 B"))
      << r.out;
}

TEST(GtestGuard, DeviceBudgetSetInCodeApplies) {
  const auto r = RunFixture("DeviceGuard.CodeBudget:DeviceGuard.Small", {});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "[  FAILED  ] DeviceGuard.CodeBudget (")) << r.out;
  EXPECT_TRUE(Contains(r.out, "[       OK ] DeviceGuard.Small (")) << r.out;
  EXPECT_TRUE(Contains(r.out, "over its device budget of 1.00 MiB")) << r.out;
}

TEST(GtestGuard, BadDeviceBudgetIsAClearError) {
  const auto r = RunFixture("DeviceGuard.Small", {"MEMARENA_TEST_DEVICE_BUDGET=lots"});
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_TRUE(Contains(r.err, "MEMARENA_TEST_DEVICE_BUDGET")) << r.err;
}

}  // namespace
}  // namespace memarena::testing
