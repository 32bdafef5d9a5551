// The plan validator: alignment, arena size, and no two tensors sharing a byte while
// both are live. Independent of how the plan was made (no planner code but the sweep).
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

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
  // Sweep over time keeping the live tensors ordered by offset. They never share a byte
  // (or we would have returned), so a starting tensor can only collide with its neighbours
  // in that order: O(n log n) however many pairs overlap in time.
  std::set<std::pair<std::size_t, planner::Index>> live;  // (offset, index), size > 0 only
  auto describe = [&](planner::Index j, planner::Index i) {
    const PlanTensor& a = tensors[i];
    const PlanTensor& b = tensors[j];
    const std::size_t a_begin = plan.offsets[i];
    const std::size_t b_begin = plan.offsets[j];
    return fmt::format(
        "tensors #{} '{}' (time [{}, {}), bytes [{}, {})) and #{} '{}' (time [{}, {}), "
        "bytes [{}, {})) are live together in [{}, {}) and share bytes [{}, {})",
        j, b.id, b.lower, b.upper, b_begin, b_begin + b.size, i, a.id, a.lower, a.upper,
        a_begin, a_begin + a.size, std::max(a.lower, b.lower), std::min(a.upper, b.upper),
        std::max(a_begin, b_begin), std::min(a_begin + a.size, b_begin + b.size));
  };
  for (const planner::SweepEvent& e : planner::SortedEvents(tensors)) {
    const std::size_t size = tensors[e.index].size;
    if (size == 0) continue;
    const std::size_t begin = plan.offsets[e.index];
    if (!e.is_start) {
      live.erase({begin, e.index});
      continue;
    }
    auto next = live.lower_bound({begin, 0});
    if (next != live.end() && next->first < begin + size) return describe(next->second, e.index);
    if (next != live.begin()) {
      const planner::Index below = std::prev(next)->second;
      if (plan.offsets[below] + tensors[below].size > begin) return describe(below, e.index);
    }
    live.emplace(begin, e.index);
  }
  return std::nullopt;
}

}  // namespace memarena
