// libFuzzer harness: arbitrary text through the planner's CSV reader (MiniMalloc format), then
// the planners on what it accepts. Invariants: the reader returns tensors or throws
// std::invalid_argument, nothing else; a file's own offsets are judged by ValidatePlan exactly
// as a brute-force pairwise check judges them; greedy and PlanBest plans pass both checks,
// reach at least the lower bound (which a brute-force sweep confirms) and PlanBest is never
// larger than greedy.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "memarena/planner.h"

namespace {

using memarena::Plan;
using memarena::PlanTensor;
using memarena::fuzz::Check;

// The pairwise checks are O(n^2): above this many tensors only ValidatePlan judges a plan.
constexpr std::size_t kBruteForceTensors = 128;

bool LiveTogether(const PlanTensor& a, const PlanTensor& b) {
  return a.lower < b.upper && b.lower < a.upper;
}

bool ShareAByte(std::size_t offset_a, std::size_t size_a, std::size_t offset_b, std::size_t size_b) {
  return size_a > 0 && size_b > 0 && offset_a < offset_b + size_b && offset_b < offset_a + size_a;
}

// The plan's validity by definition: one aligned offset per tensor, arena_size the highest
// end, and no two tensors live at the same time sharing a byte.
bool PairwiseValid(const std::vector<PlanTensor>& tensors, const Plan& plan) {
  if (plan.offsets.size() != tensors.size()) return false;
  std::size_t end = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (plan.offsets[i] % tensors[i].alignment != 0) return false;
    end = std::max(end, plan.offsets[i] + tensors[i].size);
    for (std::size_t j = 0; j < i; ++j) {
      if (LiveTogether(tensors[i], tensors[j]) &&
          ShareAByte(plan.offsets[i], tensors[i].size, plan.offsets[j], tensors[j].size)) {
        return false;
      }
    }
  }
  return end == plan.arena_size;
}

// The largest sum of live sizes at any time step: a tensor's start is where a maximum can
// begin, so checking every start suffices.
std::size_t BruteForceLowerBound(const std::vector<PlanTensor>& tensors) {
  std::size_t peak = 0;
  for (const PlanTensor& at : tensors) {
    std::size_t live = 0;
    for (const PlanTensor& t : tensors) {
      if (t.lower <= at.lower && at.lower < t.upper) live += t.size;
    }
    peak = std::max(peak, live);
  }
  return peak;
}

void CheckPlan(const std::vector<PlanTensor>& tensors, const Plan& plan, std::size_t lower_bound) {
  Check(!memarena::ValidatePlan(tensors, plan).has_value(), "a planner's plan fails ValidatePlan");
  Check(plan.lower_bound == lower_bound, "the plan reports another lower bound");
  Check(plan.arena_size >= lower_bound, "a plan is smaller than the lower bound");
  if (tensors.size() <= kBruteForceTensors) {
    Check(PairwiseValid(tensors, plan), "a planner's plan overlaps or is misaligned");
  }
  memarena::fuzz::CountOperations(tensors.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // One operation for the read, then one per tensor placement checked: each tensor of the
  // greedy plan and of PlanBest's, and of the file's own offsets when it has them.
  memarena::fuzz::CountOperation();
  memarena::fuzz::FuzzInput in(data, size);
  std::istringstream text(in.Rest());
  memarena::PlanCsv csv;
  try {
    csv = memarena::ReadPlanCsv(text);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const std::vector<PlanTensor>& tensors = csv.tensors;
  memarena::ValidateTensors(tensors);  // throws (a crash here) if the reader let one through
  const std::size_t lower_bound = memarena::LowerBound(tensors);
  if (tensors.size() <= kBruteForceTensors) {
    Check(lower_bound == BruteForceLowerBound(tensors), "LowerBound disagrees with the sweep");
  }
  if (csv.offsets) {
    Plan given;
    given.offsets = *csv.offsets;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      given.arena_size = std::max(given.arena_size, given.offsets[i] + tensors[i].size);
    }
    given.lower_bound = lower_bound;
    const bool valid = !memarena::ValidatePlan(tensors, given).has_value();
    if (tensors.size() <= kBruteForceTensors) {
      Check(valid == PairwiseValid(tensors, given), "ValidatePlan misjudges the file's offsets");
      memarena::fuzz::CountOperations(tensors.size());
    }
  }
  const Plan greedy = memarena::PlanGreedyBySize(tensors);
  CheckPlan(tensors, greedy, lower_bound);
  memarena::PlanOptions options;
  options.budget = std::chrono::milliseconds(1);  // the search's breadth is not the point here
  const Plan best = memarena::PlanBest(tensors, options);
  CheckPlan(tensors, best, lower_bound);
  Check(best.arena_size <= greedy.arena_size, "PlanBest is larger than greedy by size");
  return 0;
}
