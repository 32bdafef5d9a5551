// HugeFaultWatch: which first write faults of huge pages switch them off (slow ones, in a
// row), which count for nothing (too quick to have made a huge page), and that the switch
// holds. The page heap's use of it is in huge_pages_test.cc.
#include "host/huge_fault_watch.h"

#include <gtest/gtest.h>

namespace memarena::host {
namespace {

constexpr std::uint64_t kFast = 250'000;     // a huge page from memory the guest holds
constexpr std::uint64_t kSlow = 6'500'000;   // one the host must back again
constexpr std::uint64_t kNoHugePage = 3'000;  // a 4 KiB fault

TEST(HugeFaultWatch, FastFaultsKeepHugePagesOn) {
  HugeFaultWatch watch;
  for (int i = 0; i < 100; ++i) watch.Record(kFast);
  EXPECT_FALSE(watch.Slow());
  EXPECT_EQ(watch.SwitchedOffAt(), 0u);
}

TEST(HugeFaultWatch, TwoSlowFaultsInARowSwitchThemOffAndSayHowSlow) {
  HugeFaultWatch watch;
  watch.Record(kFast);
  watch.Record(kSlow);
  EXPECT_FALSE(watch.Slow());  // one slow fault may be a preempted one
  watch.Record(kSlow + 1);
  EXPECT_TRUE(watch.Slow());
  EXPECT_EQ(watch.SwitchedOffAt(), kSlow + 1);
}

TEST(HugeFaultWatch, AFastFaultBetweenSlowOnesStartsTheCountAgain) {
  HugeFaultWatch watch;
  for (int i = 0; i < 10; ++i) {
    watch.Record(kSlow);
    watch.Record(kFast);
  }
  EXPECT_FALSE(watch.Slow());
}

TEST(HugeFaultWatch, AFaultThatMadeNoHugePageNeitherCountsNorResets) {
  HugeFaultWatch watch;
  watch.Record(kSlow);
  watch.Record(kNoHugePage);
  watch.Record(HugeFaultWatch::kMinHugeFaultNanos - 1);
  EXPECT_FALSE(watch.Slow());
  watch.Record(kSlow);
  EXPECT_TRUE(watch.Slow());  // still two slow faults in a row
}

TEST(HugeFaultWatch, TheSwitchHoldsUntilReset) {
  HugeFaultWatch watch;
  watch.Record(kSlow);
  watch.Record(kSlow);
  for (int i = 0; i < 10; ++i) watch.Record(kFast);
  EXPECT_TRUE(watch.Slow());
  EXPECT_EQ(watch.SwitchedOffAt(), kSlow);
  watch.Reset();
  EXPECT_FALSE(watch.Slow());
  EXPECT_EQ(watch.SwitchedOffAt(), 0u);
  watch.Record(kSlow);
  EXPECT_FALSE(watch.Slow());  // the count started again too
}

TEST(HugeFaultWatch, TheBoundIsExclusiveAndSettable) {
  HugeFaultWatch watch;
  watch.Record(HugeFaultWatch::kDefaultSlowNanos);
  watch.Record(HugeFaultWatch::kDefaultSlowNanos);
  EXPECT_FALSE(watch.Slow());  // at the bound is not above it
  watch.SetSlowNanos(0);
  watch.Record(kFast);
  watch.Record(HugeFaultWatch::kMinHugeFaultNanos);
  EXPECT_TRUE(watch.Slow());
  EXPECT_EQ(watch.SwitchedOffAt(), HugeFaultWatch::kMinHugeFaultNanos);
}

}  // namespace
}  // namespace memarena::host
