// GrowthDetector: flags a steady rise, names its rate, and ignores flat or noisy use.
#include "common/growth_detector.h"

#include <gtest/gtest.h>

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(GrowthDetector, FlagsOneMiBPerIntervalWithinTheWindowAndNamesTheRate) {
  memarena::common::GrowthDetector detector;
  std::size_t flagged_at = 0;
  for (std::size_t i = 0; i < 10 && flagged_at == 0; ++i) {
    detector.Add(10.0 * static_cast<double>(i), 20 * kMiB + i * kMiB);
    if (detector.Growing()) flagged_at = i + 1;
  }
  EXPECT_EQ(flagged_at, memarena::common::GrowthDetector::kWindow);
  EXPECT_NEAR(detector.BytesPerHour() / kMiB, 360.0, 1e-6);  // 1 MiB per 10 s
  EXPECT_EQ(detector.WindowRise(), 7.0 * kMiB);  // the rate's grounds: 7 MiB in 70 s
  EXPECT_EQ(detector.WindowSeconds(), 70.0);
}

TEST(GrowthDetector, FlatOrSawtoothUseIsNotGrowth) {
  memarena::common::GrowthDetector flat;
  memarena::common::GrowthDetector sawtooth;
  for (std::size_t i = 0; i < 30; ++i) {
    flat.Add(static_cast<double>(i), 50 * kMiB);
    sawtooth.Add(static_cast<double>(i), (40 + (i % 4) * 4) * kMiB);
    EXPECT_FALSE(flat.Growing());
    EXPECT_FALSE(sawtooth.Growing()) << "at sample " << i;
  }
}

TEST(GrowthDetector, TooSmallARiseIsNotGrowth) {
  memarena::common::GrowthDetector detector;
  for (std::size_t i = 0; i < 10; ++i) detector.Add(static_cast<double>(i), 1000 * kMiB + i * kMiB);
  EXPECT_FALSE(detector.Growing()) << "7 MiB on 1000 MiB is under the 10 % rise";
}

}  // namespace
