// The GoogleTest guard (memarena::testing): a test event listener that releases free memory
// after each test, records each test's peak held and growth, fails tests over a memory budget
// and lists the heaviest tests at the end. Link memarena::gtest_main to get it installed.
//
// It measures the host allocator (memarena::HostAllocator()); for a whole test binary's heap
// to go through it, also link the drop-in (memarena::memarena_malloc_static) or run the
// binary with LD_PRELOAD=libmemarena_malloc.so. It also measures, releases and budgets the
// device memory of every device arena memarena knows (see memarena/testing/device_memory.h).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "memarena/testing/device_memory.h"

namespace memarena::testing {

struct MemoryGuardOptions {
  // A test fails when its peak held memory rises more than this above what was held when it
  // started (0 = no budget). Environment: MEMARENA_TEST_BUDGET=SIZE (e.g. 256MiB).
  std::size_t peak_budget_bytes = 0;
  // A test fails when it leaves more than this many bytes in use behind (0 = no check).
  // Environment: MEMARENA_TEST_GROWTH_BUDGET=SIZE.
  std::size_t growth_budget_bytes = 0;
  // A test fails when its peak of device memory held (all device arenas together) rises
  // more than this above what they held when it started (0 = no budget).
  // Environment: MEMARENA_TEST_DEVICE_BUDGET=SIZE.
  std::size_t device_budget_bytes = 0;
  // Give free device regions back (every device arena), then call
  // memarena::ReleaseUnusedSpans(), after each test. Environment: MEMARENA_TEST_RELEASE=0|1.
  bool release_after_each_test = true;
  // How many of the heaviest tests to list when the program ends (0 = none).
  // Environment: MEMARENA_TEST_REPORT=N.
  std::size_t report_top = 10;

  // Defaults overridden by the environment variables above. Throws memarena::ConfigError
  // naming the variable and the allowed form on a bad value.
  static MemoryGuardOptions FromEnvironment();
};

// What one test did to memory (host allocator, bytes).
struct TestMemoryRecord {
  std::string name;                // Suite.Test
  std::size_t held_at_start = 0;
  std::size_t peak_held = 0;       // the test's peak of held bytes
  std::size_t peak_growth = 0;     // peak_held - held_at_start
  std::int64_t in_use_growth = 0;  // in use at its end minus in use at its start
  std::size_t released = 0;        // given back by the release after it
  bool over_budget = false;
  DeviceMemoryRecord device;       // the same test's device memory
};

class MemoryGuardListener : public ::testing::EmptyTestEventListener {
 public:
  explicit MemoryGuardListener(MemoryGuardOptions options);

  // Resets the host allocator's and the device arenas' peaks and notes held and in use.
  void OnTestStart(const ::testing::TestInfo& test) override;
  // Measures, adds a failure to the test when a budget is exceeded, then releases.
  void OnTestEnd(const ::testing::TestInfo& test) override;
  // Prints the heaviest tests (by host plus device peak growth) to stdout, host and device
  // side by side when any test saw device memory.
  void OnTestProgramEnd(const ::testing::UnitTest& unit_test) override;

  const std::vector<TestMemoryRecord>& records() const noexcept { return records_; }
  const MemoryGuardOptions& options() const noexcept { return options_; }

 private:
  MemoryGuardOptions options_;
  std::vector<TestMemoryRecord> records_;
  std::size_t held_at_start_ = 0;
  std::size_t in_use_at_start_ = 0;
  std::size_t device_held_at_start_ = 0;
};

// Sets the peak budget for the currently running test only (overrides MEMARENA_TEST_BUDGET;
// 0 = none). Call it from the test body.
void SetTestPeakBudget(std::size_t bytes);

// Sets the device budget for the currently running test only (overrides
// MEMARENA_TEST_DEVICE_BUDGET; 0 = none). Call it from the test body.
void SetTestDevicePeakBudget(std::size_t bytes);

// Creates the listener and appends it to GoogleTest's listeners; its OnTestEnd runs before
// the result printer's, so a budget failure is reported on the test's own line. Call after InitGoogleTest, before
// RUN_ALL_TESTS. GoogleTest owns the listener; the reference stays valid until exit.
MemoryGuardListener& InstallMemoryGuard(MemoryGuardOptions options = MemoryGuardOptions::FromEnvironment());

}  // namespace memarena::testing
