// The plan validator: alignment, arena size, and no two tensors sharing a byte while
// both are live. Independent of how the plan was made.
#include <fmt/format.h>

#include <algorithm>

#include "memarena/planner.h"
#include "planner/sweep.h"

namespace memarena {

std::optional<std::string> ValidatePlan(const std::vector<PlanTensor>& tensors,
                                        const Plan& plan) {
  if (plan.offsets.size() != tensors.size()) {
    return fmt::format("the plan has {} offsets for {} tensors", plan.offsets.size(),
                       tensors.size());
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const PlanTensor& t = tensors[i];
    const std::size_t offset = plan.offsets[i];
    if (t.lower >= t.upper) {
      return fmt::format("tensor #{} '{}' has an empty lifetime [{}, {})", i, t.id, t.lower,
                         t.upper);
    }
    if (!IsValidAlignment(t.alignment) || offset % t.alignment != 0) {
      return fmt::format("tensor #{} '{}' at offset {} does not meet its alignment {}", i,
                         t.id, offset, t.alignment);
    }
    if (t.size > plan.arena_size || offset > plan.arena_size - t.size) {
      return fmt::format("tensor #{} '{}' at [{}, {}+{}) ends past the arena size {}", i,
                         t.id, offset, offset, t.size, plan.arena_size);
    }
  }
  // Sweep over time; each starting tensor is compared with every tensor live then.
  std::vector<planner::Index> active;
  for (const planner::SweepEvent& e : planner::SortedEvents(tensors)) {
    if (!e.is_start) {
      active.erase(std::find(active.begin(), active.end(), e.index));
      continue;
    }
    const PlanTensor& a = tensors[e.index];
    const std::size_t a_begin = plan.offsets[e.index];
    for (planner::Index j : active) {
      const PlanTensor& b = tensors[j];
      const std::size_t b_begin = plan.offsets[j];
      if (a.size == 0 || b.size == 0) continue;
      if (a_begin < b_begin + b.size && b_begin < a_begin + a.size) {
        return fmt::format(
            "tensors #{} '{}' (time [{}, {}), bytes [{}, {})) and #{} '{}' (time [{}, {}), "
            "bytes [{}, {})) are live together in [{}, {}) and share bytes [{}, {})",
            j, b.id, b.lower, b.upper, b_begin, b_begin + b.size, e.index, a.id, a.lower,
            a.upper, a_begin, a_begin + a.size, std::max(a.lower, b.lower),
            std::min(a.upper, b.upper), std::max(a_begin, b_begin),
            std::min(a_begin + a.size, b_begin + b.size));
      }
    }
    active.push_back(e.index);
  }
  return std::nullopt;
}

}  // namespace memarena
