// HugeFaultWatch: which first write faults of huge pages switch them off (two slow ones
// without kFastToForgiveSlow fast ones between), which count for nothing (too quick to have
// made a huge page), that the switch holds, and that the bound rises to what the same bytes
// cost in base pages. The page heap's
// use of it is in huge_pages_test.cc.
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

TEST(HugeFaultWatch, EightFastFaultsForgiveASlowOneAndFewerDoNot) {
  constexpr std::uint32_t kForgive = HugeFaultWatch::kFastToForgiveSlow;
  HugeFaultWatch forgiven;
  for (int i = 0; i < 10; ++i) {
    forgiven.Record(kSlow);
    for (std::uint32_t k = 0; k < kForgive; ++k) forgiven.Record(kFast);
  }
  EXPECT_FALSE(forgiven.Slow());  // one slow fault in nine: huge pages still gain

  HugeFaultWatch mixed;
  mixed.Record(kSlow);
  for (std::uint32_t k = 0; k + 1 < kForgive; ++k) mixed.Record(kFast);
  EXPECT_FALSE(mixed.Slow());
  mixed.Record(kSlow + 2);  // the second slow fault before the first was forgiven
  EXPECT_TRUE(mixed.Slow());
  EXPECT_EQ(mixed.SwitchedOffAt(), kSlow + 2);
}

TEST(HugeFaultWatch, SlowFaultsBetweenFastOnesSwitchThemOff) {
  // What a guest with free page reporting showed: huge pages from memory freed a moment ago
  // (fast) alternating with ones the host had to back again (slow), never two slow in a row.
  HugeFaultWatch watch;
  watch.Record(kSlow);
  watch.Record(kFast);
  EXPECT_FALSE(watch.Slow());
  watch.Record(kSlow);
  EXPECT_TRUE(watch.Slow());
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

// The seventeenth session's guest: 3.1-3.8 ms for a huge page from reported memory, 5.0-5.2
// ms for the same 2 MiB in 4 KiB faults; the fourteenth's: 6.5 ms against 0.8-1.0 ms.
constexpr std::uint64_t kCheaperThanBasePages = 3'400'000;
constexpr std::uint64_t kBasePagesDear = 5'100'000;
constexpr std::uint64_t kBasePagesCheap = 900'000;

TEST(HugeFaultWatch, OnlyAFaultAboveTheFixedBoundAsksForTheBasePageEquivalentAndOnlyOnce) {
  HugeFaultWatch watch;
  EXPECT_FALSE(watch.WantsBasePageEquivalent(kFast));
  EXPECT_FALSE(watch.WantsBasePageEquivalent(HugeFaultWatch::kDefaultSlowNanos));
  EXPECT_TRUE(watch.WantsBasePageEquivalent(kSlow));
  watch.SetBasePageEquivalent(kBasePagesCheap);
  EXPECT_FALSE(watch.WantsBasePageEquivalent(kSlow));
  HugeFaultWatch failed;  // a failed measurement (0) is an answer too: the fixed bound stands
  failed.SetBasePageEquivalent(0);
  EXPECT_FALSE(failed.WantsBasePageEquivalent(kSlow));
  EXPECT_EQ(failed.Bound(), HugeFaultWatch::kDefaultSlowNanos);
}

TEST(HugeFaultWatch, ASlowHugePageCheaperThanItsBytesInBasePagesKeepsThemOn) {
  HugeFaultWatch watch;
  ASSERT_TRUE(watch.WantsBasePageEquivalent(kCheaperThanBasePages));
  watch.SetBasePageEquivalent(kBasePagesDear);
  EXPECT_EQ(watch.Bound(), kBasePagesDear);
  for (int i = 0; i < 10; ++i) watch.Record(kCheaperThanBasePages);
  EXPECT_FALSE(watch.Slow());
  watch.Record(kBasePagesDear + 1);  // dearer than base pages: slow after all
  watch.Record(kBasePagesDear + 1);
  EXPECT_TRUE(watch.Slow());
  EXPECT_EQ(watch.SwitchedOffAt(), kBasePagesDear + 1);
}

TEST(HugeFaultWatch, CheapBasePagesLeaveTheFixedBound) {
  HugeFaultWatch watch;
  watch.SetBasePageEquivalent(kBasePagesCheap);
  EXPECT_EQ(watch.Bound(), HugeFaultWatch::kDefaultSlowNanos);
  watch.Record(kSlow);
  watch.Record(kCheaperThanBasePages);  // above 2 ms: slow where base pages are cheap
  EXPECT_TRUE(watch.Slow());
}

TEST(HugeFaultWatch, ResetKeepsTheMachinesBasePageCostAndAFixedBoundDropsIt) {
  HugeFaultWatch watch;
  watch.SetBasePageEquivalent(kBasePagesDear);
  watch.Reset();
  EXPECT_EQ(watch.Bound(), kBasePagesDear);
  EXPECT_FALSE(watch.WantsBasePageEquivalent(kSlow));
  watch.SetSlowNanos(0);  // the tests' "every huge page is slow" must not be raised again
  EXPECT_EQ(watch.Bound(), 0u);
  EXPECT_FALSE(watch.WantsBasePageEquivalent(kFast));
}

}  // namespace
}  // namespace memarena::host
