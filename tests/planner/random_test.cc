// Randomized instances: every plan valid, PlanBest never worse than greedy, and on tiny
// instances PlanBest's exact search matches a brute-force optimum.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "planner/exact_search.h"
#include "planner/planner_test_util.h"

namespace memarena::testing {
namespace {

std::vector<PlanTensor> RandomTensors(std::mt19937_64& rng, std::size_t n, bool aligned) {
  std::vector<PlanTensor> tensors;
  for (std::size_t i = 0; i < n; ++i) {
    const auto lower = static_cast<std::int64_t>(rng() % 30);
    const auto upper = lower + 1 + static_cast<std::int64_t>(rng() % 12);
    const std::size_t size = rng() % 10 == 0 ? 0 : 1 + rng() % 100;
    const std::size_t alignment = aligned ? std::size_t{1} << (rng() % 5) : 1;
    tensors.push_back(T(std::to_string(i), size, lower, upper, alignment));
  }
  return tensors;
}

TEST(PlannerRandom, EveryPlanIsValidAndNeverWorseThanGreedy) {
  std::mt19937_64 rng(2024);
  for (int round = 0; round < 150; ++round) {
    const auto tensors = RandomTensors(rng, 1 + rng() % 40, round % 2 == 0);
    SCOPED_TRACE(round);
    const Plan greedy = PlanGreedyBySize(tensors);
    ExpectValid(tensors, greedy);
    PlanOptions options;
    options.budget = std::chrono::milliseconds(3);
    options.seed = static_cast<std::uint64_t>(round);
    options.exact_search = round % 3 != 0;
    const Plan best = PlanBest(tensors, options);
    ExpectValid(tensors, best);
    EXPECT_LE(best.arena_size, greedy.arena_size);
    EXPECT_GE(best.arena_size, best.lower_bound);
  }
}

// The optimum by brute force: any packing can be pushed down until every buffer rests on
// another or on 0, and then first-fit in order of offsets rebuilds it, so the best
// first-fit over all orders is optimal (also with alignment: first-fit in offset order
// never places a buffer above where that packing had it).
std::size_t BruteForceOptimum(const std::vector<PlanTensor>& tensors) {
  std::vector<std::size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::size_t best = ~std::size_t{0};
  do {
    std::vector<std::size_t> offsets(tensors.size());
    std::size_t arena = 0;
    for (std::size_t k = 0; k < order.size(); ++k) {
      const PlanTensor& t = tensors[order[k]];
      std::size_t offset = 0;
      for (bool moved = true; moved;) {
        moved = false;
        for (std::size_t j = 0; j < k; ++j) {
          const PlanTensor& o = tensors[order[j]];
          const std::size_t o_off = offsets[order[j]];
          const bool time = t.lower < o.upper && o.lower < t.upper;
          if (time && o.size != 0 && t.size != 0 && offset < o_off + o.size && o_off < offset + t.size) {
            offset = (o_off + o.size + t.alignment - 1) / t.alignment * t.alignment;
            moved = true;
          }
        }
      }
      offsets[order[k]] = offset;
      arena = std::max(arena, offset + t.size);
    }
    best = std::min(best, arena);
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

TEST(PlannerRandom, ExactSearchFindsTheOptimumOnTinyInstances) {
  std::mt19937_64 rng(77);
  int greedy_missed = 0;
  for (int round = 0; round < 150; ++round) {
    const auto tensors = RandomTensors(rng, 2 + rng() % 6, round % 2 == 1);
    SCOPED_TRACE(round);
    PlanOptions options;
    options.budget = std::chrono::milliseconds(200);
    const Plan best = PlanBest(tensors, options);
    ExpectValid(tensors, best);
    const std::size_t optimum = BruteForceOptimum(tensors);
    EXPECT_EQ(best.arena_size, optimum);
    if (PlanGreedyBySize(tensors).arena_size > optimum) ++greedy_missed;
    // The exact search alone: fits the optimum, and proves that one byte less is impossible.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    const auto fit = planner::SolveExact(tensors, optimum, deadline);
    ASSERT_EQ(fit.status, planner::ExactStatus::kFound);
    Plan exact;
    exact.offsets = fit.offsets;
    exact.arena_size = optimum;
    ExpectValid(tensors, exact);
    if (optimum > 0) {
      EXPECT_EQ(planner::SolveExact(tensors, optimum - 1, deadline).status,
                planner::ExactStatus::kInfeasible);
    }
  }
  EXPECT_GT(greedy_missed, 0) << "no instance needed more than greedy; the test proves little";
}

}  // namespace
}  // namespace memarena::testing
