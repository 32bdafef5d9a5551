// Arena watermarks (BfcArena::SetWatermarks against max_mem): one callback per level in
// order on the way up, none on the way down or while free chunks are reused, again only
// after held fell below the level by the hysteresis; the callback may use the arena.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "arena/simulated_memory_source.h"
#include "memarena/memarena.h"
#include "observability/watermark_scenarios.h"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kMaxMem = 64 * kMiB;

class ArenaWatermarksTest : public ::testing::Test {
 public:  // for the shared scenarios
  ArenaWatermarksTest() : arena_(std::make_shared<memarena::arena::SimulatedMemorySource>(), Config()) {}

  static memarena::ArenaConfig Config() {
    memarena::ArenaConfig config;
    config.max_mem = kMaxMem;
    // Each growth is one 1 MiB region, so held climbs a MiB at a time.
    config.arena_extend_strategy = memarena::ArenaExtendStrategy::kSameAsRequested;
    config.initial_chunk_size_bytes = kMiB;
    return config;
  }

  void SetUp() override {
    arena_.SetWatermarks({0.50, 0.75, 0.90}, [this](const memarena::WatermarkCrossing& c) {
      crossings_.push_back(c);
      // Not under the arena's lock: the callback may allocate from the arena itself.
      arena_.Deallocate(arena_.Allocate(256));
    });
  }

  std::size_t Held() const { return arena_.GetStats().bytes_held; }

  void GrowTo(double fraction) {
    while (static_cast<double>(Held()) < fraction * static_cast<double>(kMaxMem)) {
      blocks_.push_back(arena_.Allocate(kMiB));
    }
  }
  // Frees blocks down to `blocks` and gives the free regions back (held follows in use).
  void FreeDownTo(std::size_t blocks) {
    while (blocks_.size() > blocks) {
      arena_.Deallocate(blocks_.back());
      blocks_.pop_back();
    }
    arena_.ReleaseUnusedSpans();
  }
  std::vector<double> Levels() const {
    std::vector<double> levels;
    for (const auto& c : crossings_) levels.push_back(c.level);
    return levels;
  }

  memarena::BfcArena arena_;
  std::vector<void*> blocks_;
  std::vector<memarena::WatermarkCrossing> crossings_;
};

TEST_F(ArenaWatermarksTest, OneCallbackPerLevelInOrderOnTheWayUp) {
  GrowTo(0.95);
  EXPECT_EQ(Levels(), (std::vector<double>{0.50, 0.75, 0.90}));
  ASSERT_EQ(crossings_.size(), 3u);
  const memarena::WatermarkCrossing& last = crossings_.back();
  EXPECT_EQ(last.limit_bytes, kMaxMem);
  EXPECT_GE(last.bytes_held, static_cast<std::size_t>(0.90 * kMaxMem));
  EXPECT_LT(last.bytes_held, static_cast<std::size_t>(0.95 * kMaxMem));
  EXPECT_GE(last.bytes_in_use, static_cast<std::size_t>(0.85 * kMaxMem));
  ASSERT_FALSE(last.largest_consumers.empty());
  EXPECT_NE(last.largest_consumers.front().name.find("chunks in use"), std::string::npos);
}

TEST_F(ArenaWatermarksTest, NoneWhileFreeChunksAreReusedNorOnTheWayDown) {
  GrowTo(0.95);
  ASSERT_EQ(crossings_.size(), 3u);
  // Free chunks served again: held does not move, the check is never reached.
  for (int round = 0; round < 100; ++round) {
    arena_.Deallocate(blocks_.back());
    blocks_.back() = arena_.Allocate(kMiB);
  }
  FreeDownTo(0);
  EXPECT_EQ(crossings_.size(), 3u);
}

TEST_F(ArenaWatermarksTest, AgainOnlyAfterHeldFellBelowTheHysteresis) {
  memarena::testing::ExpectRefiringOnlyAfterTheHysteresis(*this);
}

TEST_F(ArenaWatermarksTest, ALevelAlreadyCrossedFiresWhenSet) {
  GrowTo(0.80);
  std::vector<double> levels;
  arena_.SetWatermarks({0.25, 0.90},
                       [&levels](const memarena::WatermarkCrossing& c) { levels.push_back(c.level); });
  EXPECT_EQ(levels, (std::vector<double>{0.25}));
  GrowTo(0.95);
  EXPECT_EQ(levels, (std::vector<double>{0.25, 0.90}));
}

TEST(ArenaWatermarks, NoMaxMemNoCrossingsAndBadLevelsNameTheArena) {
  memarena::BfcArena arena(std::make_shared<memarena::arena::SimulatedMemorySource>(), {});
  int calls = 0;
  arena.SetWatermarks({0.01}, [&calls](const memarena::WatermarkCrossing&) { ++calls; });
  arena.Deallocate(arena.Allocate(8 * kMiB));
  EXPECT_EQ(calls, 0);
  try {
    arena.SetWatermarks({0.5, 0.0}, nullptr);
    FAIL() << "level 0 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bfc_arena(simulated)::SetWatermarks"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("(0, 1]"), std::string::npos) << e.what();
  }
}

}  // namespace
