// The plan cache: exact keys ({2,3} is not {3,2}), replacement and LRU eviction.
#include <gtest/gtest.h>

#include "memarena/planner.h"

namespace memarena::testing {
namespace {

std::shared_ptr<const MemoryPattern> PatternOfSize(std::size_t arena) {
  auto pattern = std::make_shared<MemoryPattern>();
  pattern->plan.arena_size = arena;
  return pattern;
}

TEST(PlanCache, DistinctShapesNeverCollide) {
  PlanCache cache(8);
  // Every one of these has the same XOR (and sum/product for some) of dimensions.
  const std::vector<ShapeSignature> shapes = {{{2, 3}}, {{3, 2}}, {{2}, {3}}, {{3}, {2}},
                                              {{1, 2, 3}}, {{6}}, {{2, 3, 1}}};
  for (std::size_t i = 0; i < shapes.size(); ++i) cache.Insert(shapes[i], PatternOfSize(i + 1));
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    auto found = cache.Find(shapes[i]);
    ASSERT_NE(found, nullptr) << i;
    EXPECT_EQ(found->plan.arena_size, i + 1);
  }
  EXPECT_EQ(cache.Find({{3, 3}}), nullptr);
  EXPECT_EQ(cache.Find({}), nullptr);
}

TEST(PlanCache, EvictsTheLeastRecentlyUsed) {
  PlanCache cache(2);
  cache.Insert({{1}}, PatternOfSize(1));
  cache.Insert({{2}}, PatternOfSize(2));
  ASSERT_NE(cache.Find({{1}}), nullptr);  // {1} is now the most recent
  cache.Insert({{3}}, PatternOfSize(3));  // evicts {2}
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.evictions(), 1u);
  EXPECT_EQ(cache.Find({{2}}), nullptr);
  EXPECT_NE(cache.Find({{1}}), nullptr);
  EXPECT_NE(cache.Find({{3}}), nullptr);
}

TEST(PlanCache, InsertReplacesAndZeroCapacityIsAnError) {
  PlanCache cache(1);
  cache.Insert({{4, 4}}, PatternOfSize(10));
  cache.Insert({{4, 4}}, PatternOfSize(20));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.evictions(), 0u);
  EXPECT_EQ(cache.Find({{4, 4}})->plan.arena_size, 20u);
  EXPECT_THROW(PlanCache(0), std::invalid_argument);
}

}  // namespace
}  // namespace memarena::testing
