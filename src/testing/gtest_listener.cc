// MemoryGuardListener: per-test memory accounting, budgets and the heaviest-tests summary.
#include "memarena/testing/gtest_listener.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <optional>

#include "common/config_parser.h"
#include "memarena/errors.h"
#include "memarena/host.h"
#include "memarena/stats.h"
#include "platform/os.h"
#include "testing/device_guard.h"
#include "testing/watched_heaps.h"

namespace memarena::testing {
namespace {

// The budgets SetTestPeakBudget / SetTestDevicePeakBudget gave the running test; reset when
// each test starts.
std::optional<std::size_t> g_test_budget;
std::optional<std::size_t> g_test_device_budget;

// The heaps every listener reads, found once: malloc's heap does not change while running.
const WatchedHeaps& Heaps() {
  static const WatchedHeaps heaps = WatchedHeaps::Discover();
  return heaps;
}

template <typename Parse>
void FromEnv(const char* variable, Parse parse) {
  const char* value = platform::GetEnv(variable);
  if (value != nullptr && *value != '\0') parse(variable, value);
}

std::string TestName(const ::testing::TestInfo& test) {
  return fmt::format("{}.{}", test.test_suite_name(), test.name());
}

}  // namespace

MemoryGuardOptions MemoryGuardOptions::FromEnvironment() {
  MemoryGuardOptions o;
  FromEnv("MEMARENA_TEST_BUDGET",
          [&o](const char* k, const char* v) { o.peak_budget_bytes = common::ParseSize(k, v); });
  FromEnv("MEMARENA_TEST_GROWTH_BUDGET",
          [&o](const char* k, const char* v) { o.growth_budget_bytes = common::ParseSize(k, v); });
  FromEnv("MEMARENA_TEST_DEVICE_BUDGET",
          [&o](const char* k, const char* v) { o.device_budget_bytes = common::ParseSize(k, v); });
  FromEnv("MEMARENA_TEST_RELEASE",
          [&o](const char* k, const char* v) { o.release_after_each_test = common::ParseBool(k, v); });
  FromEnv("MEMARENA_TEST_REPORT", [&o](const char* k, const char* v) {
    o.report_top = static_cast<std::size_t>(common::ParseInteger(k, v, 0, 1000000));
  });
  return o;
}

MemoryGuardListener::MemoryGuardListener(MemoryGuardOptions options) : options_(options) {
  // A budget that cannot see malloc's blocks would pass every leaking test: refuse it.
  const bool budget = options_.peak_budget_bytes != 0 || options_.growth_budget_bytes != 0;
  if (budget && !Heaps().malloc_measured()) {
    throw ConfigError(fmt::format(
        "MEMARENA_TEST_BUDGET / MEMARENA_TEST_GROWTH_BUDGET: cannot measure the heap behind "
        "malloc in this process (it is not memarena's, a sanitizer's or glibc's), so a test "
        "that leaks through malloc or new would pass; link memarena::memarena_malloc_static "
        "or run with LD_PRELOAD=libmemarena_malloc.so, or unset the budgets"));
  }
}

void MemoryGuardListener::OnTestStart(const ::testing::TestInfo&) {
  g_test_budget.reset();
  g_test_device_budget.reset();
  device_held_at_start_ = StartDeviceMeasurement();
  Heaps().ResetPeaks();
  const HeapReading s = Heaps().Read();
  held_at_start_ = s.held;
  in_use_at_start_ = s.in_use;
}

void MemoryGuardListener::OnTestEnd(const ::testing::TestInfo& test) {
  const HeapReading s = Heaps().Read();
  TestMemoryRecord r;
  r.name = TestName(test);
  r.held_at_start = held_at_start_;
  r.peak_held = std::max(s.peak_held, held_at_start_);
  r.peak_growth = r.peak_held - held_at_start_;
  r.in_use_growth = static_cast<std::int64_t>(s.in_use) - static_cast<std::int64_t>(in_use_at_start_);
  const std::size_t peak_budget = g_test_budget.value_or(options_.peak_budget_bytes);
  // The failures land on this test: GoogleTest still routes results to it during OnTestEnd.
  if (peak_budget != 0 && r.peak_growth > peak_budget) {
    r.over_budget = true;
    ADD_FAILURE() << fmt::format(
        "memarena: {} raised held memory by {} at its peak (from {} to {}), over its budget of {} "
        "(MEMARENA_TEST_BUDGET or SetTestPeakBudget)",
        r.name, FormatBytes(r.peak_growth), FormatBytes(held_at_start_), FormatBytes(r.peak_held),
        FormatBytes(peak_budget));
  }
  if (options_.growth_budget_bytes != 0 && r.in_use_growth > 0 &&
      static_cast<std::size_t>(r.in_use_growth) > options_.growth_budget_bytes) {
    r.over_budget = true;
    ADD_FAILURE() << fmt::format(
        "memarena: {} left {} more in use than when it started, over the growth budget of {} "
        "(MEMARENA_TEST_GROWTH_BUDGET); it keeps memory alive past its end",
        r.name, FormatBytes(static_cast<std::size_t>(r.in_use_growth)),
        FormatBytes(options_.growth_budget_bytes));
  }
  FinishDeviceMeasurement(r, device_held_at_start_,
                          g_test_device_budget.value_or(options_.device_budget_bytes),
                          options_.release_after_each_test);
  if (options_.release_after_each_test) r.released = Heaps().Release();
  records_.push_back(std::move(r));
}

void MemoryGuardListener::OnTestProgramEnd(const ::testing::UnitTest&) {
  if (options_.report_top == 0 || records_.empty()) return;
  std::vector<const TestMemoryRecord*> heaviest;
  for (const auto& r : records_) heaviest.push_back(&r);
  const auto weight = [](const TestMemoryRecord* r) { return r->peak_growth + r->device.peak_growth; };
  std::sort(heaviest.begin(), heaviest.end(), [&weight](const auto* a, const auto* b) {
    return weight(a) != weight(b) ? weight(a) > weight(b) : a->name < b->name;
  });
  heaviest.resize(std::min(heaviest.size(), options_.report_top));
  const bool device = std::any_of(records_.begin(), records_.end(),
                                  [](const TestMemoryRecord& r) { return r.device.seen; });
  std::string out = fmt::format("[ memarena ] heaviest {} of {} tests ({}{}{}):\n",
                                heaviest.size(), records_.size(), Heaps().Describe(),
                                device ? " | device arenas" : "",
                                Heaps().peak_exact() ? "" : "; peak growth is a lower bound");
  out += fmt::format("[ memarena ] {:>12} {:>12} {:>12}{}  {}\n", "peak growth", "in use left",
                     "released", device ? DeviceColumnsHeader() : "", "test");
  for (const auto* r : heaviest) {
    const std::string left = r->in_use_growth < 0
                                 ? "-" + FormatBytes(static_cast<std::size_t>(-r->in_use_growth))
                                 : FormatBytes(static_cast<std::size_t>(r->in_use_growth));
    out += fmt::format("[ memarena ] {:>12} {:>12} {:>12}{}  {}{}\n", FormatBytes(r->peak_growth),
                       left, FormatBytes(r->released), device ? DeviceColumns(r->device) : "",
                       r->name, r->over_budget ? "  OVER BUDGET" : "");
  }
  if (device) out += DeviceUsedLine(records_);
  fmt::print("{}", out);
  std::fflush(stdout);
}

void SetTestPeakBudget(std::size_t bytes) { g_test_budget = bytes; }

void SetTestDevicePeakBudget(std::size_t bytes) { g_test_device_budget = bytes; }

MemoryGuardListener& InstallMemoryGuard(MemoryGuardOptions options) {
  // GoogleTest calls OnTestEnd in reverse order of appending, so a listener appended after
  // the result printer measures first: a budget failure then shows on the test's own line.
  auto* guard = new MemoryGuardListener(options);
  ::testing::UnitTest::GetInstance()->listeners().Append(guard);
  return *guard;
}

}  // namespace memarena::testing
