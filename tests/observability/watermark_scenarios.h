// The watermark scenario the host and arena tests share: levels 50/75/90 % of a 64 MiB
// limit, grown and freed in 1 MiB blocks by the fixture (GrowTo, FreeDownTo, Levels).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace memarena::testing {

// Up to 95 %, down into the 90 % level's hysteresis band and up again (no new callback),
// then down to 60 % and up again: 75 % and 90 % fire again, 50 % does not.
template <typename Fixture>
void ExpectRefiringOnlyAfterTheHysteresis(Fixture& f) {
  f.GrowTo(0.95);
  ASSERT_EQ(f.Levels().size(), 3u);
  // Down to 87 %: below 90 % but not below 90 % - 5 %: 90 % stays fired.
  f.FreeDownTo(static_cast<std::size_t>(0.87 * 64));
  f.GrowTo(0.95);
  EXPECT_EQ(f.Levels().size(), 3u) << "re-fired inside the hysteresis band";
  // Down to 60 %: 75 % and 90 % re-arm, 50 % does not.
  f.FreeDownTo(static_cast<std::size_t>(0.60 * 64));
  EXPECT_EQ(f.Levels().size(), 3u) << "a callback on the way down";
  f.GrowTo(0.95);
  EXPECT_EQ(f.Levels(), (std::vector<double>{0.50, 0.75, 0.90, 0.75, 0.90}));
}

}  // namespace memarena::testing
