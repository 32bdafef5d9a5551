// PlanBest: greedy by size, then orderings + local search, then the exact search aimed at
// the capacity target or, without one, at capacities between the lower bound and the
// best arena so far.
#include <algorithm>

#include "memarena/planner.h"
#include "planner/exact_search.h"
#include "planner/local_search.h"
#include "planner/placer.h"
#include "planner/sweep.h"

namespace memarena {
namespace {

using Clock = std::chrono::steady_clock;

// The exact search recurses once per buffer; beyond this it is not worth the stack.
constexpr std::size_t kMaxExactTensors = 4000;
// When the exact search follows, the heuristics first get a tenth of the budget, at most
// kHeuristicCap (a fortieth, at most kTargetedHeuristicCap, with a capacity target). Above
// kSmallProblem tensors the exact search often runs out of time, so it stops at three
// quarters of the budget and the local search gets the rest.
constexpr std::chrono::milliseconds kHeuristicCap{250};
constexpr std::chrono::milliseconds kTargetedHeuristicCap{50};
constexpr std::size_t kSmallProblem = 1000;

// Probes capacities with the exact search: a found plan lowers the upper end, a proof of
// infeasibility raises the lower end, and after a timeout the next probes bisect between
// the highest capacity that timed out and the best arena. The first probe (at the target)
// gets `first_share` of the time; later ones half of what is left.
void ImproveExactly(const std::vector<PlanTensor>& tensors, Clock::time_point deadline,
                    std::size_t target, double first_share, Plan& best) {
  std::size_t lo = std::max(target, best.lower_bound);  // nothing below is wanted or possible
  std::size_t hi = best.arena_size;                     // known feasible
  std::size_t timed_out = 0;                            // highest capacity that timed out
  double share = first_share;
  while (lo < hi) {
    const std::size_t probe = timed_out < lo ? lo : timed_out + (hi - timed_out) / 2;
    if (probe >= hi) return;  // every capacity between lo and hi has timed out
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return;
    // Tight probes leave time for looser ones, unless nothing looser is left to try.
    const bool last_chance = probe + 1 >= hi;
    const Clock::time_point probe_deadline =
        last_chance ? deadline
                    : now + std::chrono::duration_cast<Clock::duration>((deadline - now) * share);
    share = 0.5;
    const planner::ExactResult r = planner::SolveExact(tensors, probe, probe_deadline);
    if (r.status == planner::ExactStatus::kFound) {
      best = planner::MakePlan(tensors, r.offsets, best.lower_bound, "exact-search");
      hi = best.arena_size;
      if (best.arena_size <= target) return;
    } else if (r.status == planner::ExactStatus::kInfeasible) {
      lo = probe + 1;
    } else {
      timed_out = probe;
    }
  }
}

}  // namespace

Plan PlanBest(const std::vector<PlanTensor>& tensors, const PlanOptions& options) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + options.budget;
  Plan best = PlanGreedyBySize(tensors);  // validates the input
  const std::size_t target = std::max(options.capacity_target, best.lower_bound);
  if (best.arena_size <= target) return best;

  const bool exact = options.exact_search && tensors.size() <= kMaxExactTensors;
  // Heuristics first: cheap, and often enough. The exact search gets the rest.
  // With a capacity target the exact search is what usually reaches it (MiniMalloc's
  // instances fit exactly at the lower bound), so the heuristics only get a first look.
  const bool targeted = options.capacity_target != 0;
  const Clock::time_point heuristic_deadline =
      !exact ? deadline
             : start + std::min<Clock::duration>(options.budget / (targeted ? 40 : 10),
                                                 targeted ? kTargetedHeuristicCap : kHeuristicCap);
  planner::ImproveByOrderings(tensors, heuristic_deadline, target, options.seed, best);
  if (exact && best.arena_size > target) {
    const bool small = tensors.size() <= kSmallProblem;
    const Clock::time_point exact_deadline = small ? deadline : start + options.budget * 3 / 4;
    // An explicit capacity is what the caller needs: give it most of the time. The lower
    // bound is often out of reach; bisecting above it needs time too.
    const double first_share = targeted ? 0.9 : 0.25;
    ImproveExactly(tensors, exact_deadline, target, first_share, best);
    if (!small && best.arena_size > target) {
      planner::ImproveByOrderings(tensors, deadline, target, options.seed + 1, best);
    }
  }
  return best;
}

}  // namespace memarena
