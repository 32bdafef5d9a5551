// Host watermarks: one callback per level in order on the way up, none on the way down,
// again only after held fell below the level by the hysteresis; bad levels are refused.
#include <gtest/gtest.h>

#include <vector>

#include "common/memarena_conf.h"
#include "memarena/memarena.h"
#include "override/dropin.h"
#include "observability/watermark_scenarios.h"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kCeiling = 64 * kMiB;

class WatermarksTest : public ::testing::Test {
 public:  // for the shared scenarios
  void SetUp() override {
    ASSERT_TRUE(memarena::SetCeiling(kCeiling));
    memarena::SetWatermarks({0.50, 0.75, 0.90}, [this](const memarena::WatermarkCrossing& c) {
      crossings_.push_back(c);  // the callback may allocate
      levels_.push_back(c.level);
    });
  }
  void TearDown() override {
    memarena::SetWatermarks({}, nullptr);
    FreeDownTo(0);
    memarena::SetCeiling(0);
  }

  // 1 MiB blocks until held reaches `fraction` of the ceiling.
  void GrowTo(double fraction) {
    while (static_cast<double>(memarena::HostAllocator().GetStats().bytes_held) <
           fraction * static_cast<double>(kCeiling)) {
      blocks_.push_back(memarena::HostAllocator().Allocate(kMiB));
    }
  }
  void FreeDownTo(std::size_t blocks) {
    while (blocks_.size() > blocks) {
      memarena::HostAllocator().Deallocate(blocks_.back());
      blocks_.pop_back();
    }
    memarena::ReleaseUnusedSpans();  // held follows in use down
  }

  const std::vector<double>& Levels() const { return levels_; }

  std::vector<void*> blocks_;
  std::vector<double> levels_;
  std::vector<memarena::WatermarkCrossing> crossings_;
};

TEST_F(WatermarksTest, OneCallbackPerLevelInOrderOnTheWayUp) {
  GrowTo(0.95);
  EXPECT_EQ(levels_, (std::vector<double>{0.50, 0.75, 0.90}));
  ASSERT_EQ(crossings_.size(), 3u);
  const memarena::WatermarkCrossing& last = crossings_.back();
  EXPECT_EQ(last.limit_bytes, kCeiling);
  EXPECT_GE(last.bytes_held, static_cast<std::size_t>(0.90 * kCeiling));
  EXPECT_GE(last.bytes_in_use, static_cast<std::size_t>(0.85 * kCeiling));
  ASSERT_FALSE(last.largest_consumers.empty());
  EXPECT_EQ(last.largest_consumers.front().name, "large blocks");
  EXPECT_NE(memarena::FormatWatermarkCrossing(last).find("watermark 90% crossed"),
            std::string::npos);
}

TEST_F(WatermarksTest, NoneOnTheWayDownAndAgainOnlyAfterHysteresis) {
  memarena::testing::ExpectRefiringOnlyAfterTheHysteresis(*this);
}

// realloc's headroom allocation (host::AllocateIfAvailable) takes the slow path's watermark
// check too: a level crossed only by it fires before realloc returns, not at the next
// ordinary allocation. The old blocks are of a small class, so their frees check nothing.
TEST_F(WatermarksTest, ALevelCrossedByReallocsHeadroomFiresAtOnce) {
  constexpr std::size_t kSmall = 128 << 10;  // a size class: freed on the fast path
  constexpr std::size_t kGrown = 150 << 10;  // below the 192 KiB realloc asks for, a large block
  std::vector<void*> small;
  for (int i = 0; i < 64; ++i) small.push_back(memarena::dropin::Malloc(kSmall));
  const auto held = [] { return memarena::HostAllocator().GetStats().bytes_held; };
  const std::size_t level = kCeiling / 2;
  GrowTo((static_cast<double>(level) - 2.0 * kMiB) / static_cast<double>(kCeiling));
  ASSERT_TRUE(levels_.empty()) << "the growth to just below the level crossed it";
  std::size_t held_before = 0;
  std::size_t held_after = held();
  for (void*& block : small) {
    if (held_after >= level) break;
    held_before = held_after;
    block = memarena::dropin::Realloc(block, kGrown);
    held_after = held();
  }
  for (void* block : small) memarena::dropin::Free(block);
  ASSERT_LT(held_before, level);
  ASSERT_GE(held_after, level) << "the reallocs never reached the level";
  EXPECT_EQ(levels_, (std::vector<double>{0.50}))
      << "held went from " << held_before << " to " << held_after << " B in one realloc";
}

TEST(WatermarksConfig, BadLevelsAreRefusedWithTheAllowedForm) {
  EXPECT_THROW(memarena::SetWatermarks({0.5, 1.5}, nullptr), std::invalid_argument);
  EXPECT_EQ(memarena::ParseWatermarkLevels("watermarks", "75/88/95"),
            (std::vector<double>{0.75, 0.88, 0.95}));
  try {
    memarena::ParseWatermarkLevels("watermarks", "90/80");
    FAIL() << "descending levels accepted";
  } catch (const memarena::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("watermarks"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("75/88/95"), std::string::npos);
  }
  std::vector<std::string> errors;
  memarena::common::ParseMemarenaConf("watermarks:0/50", errors);
  EXPECT_EQ(errors.size(), 1u);
  EXPECT_EQ(
      memarena::common::ParseMemarenaConf("monitor_interval:10s", errors).dropin.monitor_interval.count(),
      10000);
  EXPECT_TRUE(errors.empty());
  EXPECT_THROW(memarena::HostConfig::Parse("monitor_interval:10parsecs"), memarena::ConfigError);
}

}  // namespace
