// Greedy by size against the textbook greedy it must reach (largest first, lowest offset
// among the placed tensors that overlap in time, written the slow obvious way), and
// inputs too large for pairwise overlap lists, checked through the planner's own
// accounting (stored byte ranges), never wall time.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "planner/placer.h"
#include "planner/planner_test_util.h"

namespace memarena::testing {
namespace {

// The textbook greedy in its quadratic form, in the order PlanGreedyBySize documents.
std::vector<std::size_t> TextbookGreedy(const std::vector<PlanTensor>& tensors) {
  std::vector<std::size_t> offsets(tensors.size(), 0);
  std::vector<std::size_t> placed;
  for (const planner::Index i : planner::SizeOrder(tensors)) {
    const PlanTensor& t = tensors[i];
    if (t.size == 0) continue;
    std::vector<std::pair<std::size_t, std::size_t>> taken;  // byte ranges of overlapping
    for (const std::size_t j : placed) {
      if (tensors[j].lower < t.upper && t.lower < tensors[j].upper) {
        taken.emplace_back(offsets[j], offsets[j] + tensors[j].size);
      }
    }
    std::sort(taken.begin(), taken.end());
    std::size_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (offset + t.size <= begin) break;  // fits in the gap below this one
      offset = std::max(offset, (end + t.alignment - 1) / t.alignment * t.alignment);
    }
    offsets[i] = offset;
    placed.push_back(i);
  }
  return offsets;
}

std::vector<PlanTensor> RandomTensors(std::mt19937_64& rng, std::size_t n, std::int64_t span,
                                      std::int64_t max_length) {
  std::vector<PlanTensor> tensors;
  for (std::size_t i = 0; i < n; ++i) {
    const auto lower = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(span));
    const auto length = 1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(max_length));
    const std::size_t size = rng() % 16 == 0 ? 0 : 1 + rng() % 5000;
    const std::size_t alignment = std::size_t{1} << (rng() % 7);
    tensors.push_back(T(std::to_string(i), size, lower, lower + length, alignment));
  }
  return tensors;
}

TEST(PlannerScale, GreedyPlacesExactlyLikeTheTextbookGreedy) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 60; ++round) {
    SCOPED_TRACE(round);
    const std::size_t n = 1 + rng() % 400;
    const auto tensors = RandomTensors(rng, n, 1 + static_cast<std::int64_t>(rng() % 200),
                                       1 + static_cast<std::int64_t>(rng() % 80));
    const Plan greedy = PlanGreedyBySize(tensors);
    ExpectValid(tensors, greedy);
    EXPECT_EQ(greedy.offsets, TextbookGreedy(tensors));
    PlanOptions options;
    options.budget = std::chrono::milliseconds(5);
    EXPECT_LE(PlanBest(tensors, options).arena_size, greedy.arena_size);
  }
}

TEST(PlannerScale, AllAliveTogetherStoresLinearlyMany) {
  // 50,000 tensors live at once: 1.25e9 overlapping pairs for pairwise lists.
  constexpr std::size_t kTensors = 50000;
  std::mt19937_64 rng(3);
  std::vector<PlanTensor> tensors;
  std::size_t total = 0;
  for (std::size_t i = 0; i < kTensors; ++i) {
    tensors.push_back(T(std::to_string(i), 64 * (1 + rng() % 1000), 0, 1, 64));
    total += tensors.back().size;
  }
  planner::Placer placer(tensors);
  std::vector<std::size_t> offsets;
  const std::size_t arena = placer.Place(planner::SizeOrder(tensors), offsets);
  // One time slot: the whole stack is one merged range (covering and touching the root).
  EXPECT_LE(placer.StoredRanges(), 2u) << "ranges stored for " << kTensors << " tensors";
  Plan plan = planner::MakePlan(tensors, offsets, LowerBound(tensors), "greedy-by-size");
  ExpectValid(tensors, plan);
  EXPECT_EQ(arena, plan.lower_bound);  // a stack of multiples of 64: no gaps
  EXPECT_LE(arena, total);
  // The validator scales too: one shared byte among them is found.
  plan.offsets[kTensors - 1] = plan.offsets[0];
  EXPECT_TRUE(ValidatePlan(tensors, plan).has_value());
}

TEST(PlannerScale, RandomIntervalsStoreAtMostNLogNRanges) {
  constexpr std::size_t kTensors = 50000;
  std::mt19937_64 rng(5);
  const auto tensors = RandomTensors(rng, kTensors, 50000, 200);
  planner::Placer placer(tensors);
  std::vector<std::size_t> offsets;
  placer.Place(planner::SizeOrder(tensors), offsets);
  // Each tensor lands in at most 4 log2(slots) nodes, twice (covering and touching):
  // bounded by 2 * 4 * 17 per tensor, and merging keeps it far below.
  EXPECT_LE(placer.StoredRanges(), kTensors * 2 * 4 * 17);
  const Plan plan = planner::MakePlan(tensors, offsets, LowerBound(tensors), "greedy-by-size");
  ExpectValid(tensors, plan);
  RecordProperty("stored_ranges", static_cast<int>(placer.StoredRanges()));
}

}  // namespace
}  // namespace memarena::testing
