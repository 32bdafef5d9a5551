// Best-fit gap placement in a given order (TFLite's greedy-by-size offset step).
#include "planner/placer.h"

#include <algorithm>

namespace memarena::planner {

Placer::Placer(const std::vector<PlanTensor>& tensors,
               const std::vector<std::vector<Index>>& overlaps)
    : tensors_(tensors), overlaps_(overlaps), rank_(tensors.size(), 0) {}

std::size_t Placer::Place(const std::vector<Index>& order, std::vector<std::size_t>& offsets,
                          std::size_t give_up_above, std::size_t first) {
  if (first == 0) offsets.assign(tensors_.size(), 0);
  for (std::size_t pos = 0; pos < order.size(); ++pos) rank_[order[pos]] = pos;
  std::size_t arena = 0;
  for (std::size_t pos = 0; pos < first; ++pos) {
    arena = std::max(arena, offsets[order[pos]] + tensors_[order[pos]].size);
  }
  for (std::size_t pos = first; pos < order.size(); ++pos) {
    const Index i = order[pos];
    const PlanTensor& t = tensors_[i];
    spans_.clear();
    for (Index j : overlaps_[i]) {
      if (rank_[j] < pos && tensors_[j].size != 0) {
        spans_.push_back({offsets[j], offsets[j] + tensors_[j].size});
      }
    }
    std::sort(spans_.begin(), spans_.end(),
              [](const Span& a, const Span& b) { return a.begin < b.begin; });
    // Walk the gaps between placed neighbours; keep the smallest gap that fits.
    std::size_t best_offset = 0;
    std::size_t best_gap = static_cast<std::size_t>(-1);
    std::size_t cursor = 0;  // everything below is covered or already considered
    for (const Span& s : spans_) {
      const std::size_t candidate = AlignUp(cursor, t.alignment);
      if (s.begin > cursor && candidate + t.size <= s.begin) {
        const std::size_t gap = s.begin - cursor;
        if (gap < best_gap) {
          best_gap = gap;
          best_offset = candidate;
        }
      }
      cursor = std::max(cursor, s.end);
    }
    if (best_gap == static_cast<std::size_t>(-1)) best_offset = AlignUp(cursor, t.alignment);
    offsets[i] = best_offset;
    arena = std::max(arena, best_offset + t.size);
    if (arena > give_up_above) return arena;
  }
  return arena;
}

std::vector<Index> SizeOrder(const std::vector<PlanTensor>& tensors) {
  std::vector<Index> order(tensors.size());
  for (Index i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](Index a, Index b) {
    if (tensors[a].size != tensors[b].size) return tensors[a].size > tensors[b].size;
    const auto la = tensors[a].upper - tensors[a].lower;
    const auto lb = tensors[b].upper - tensors[b].lower;
    if (la != lb) return la > lb;
    return a < b;
  });
  return order;
}

Plan MakePlan(const std::vector<PlanTensor>& tensors, std::vector<std::size_t> offsets,
              std::size_t lower_bound, std::string method) {
  Plan plan;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    plan.arena_size = std::max(plan.arena_size, offsets[i] + tensors[i].size);
  }
  plan.offsets = std::move(offsets);
  plan.lower_bound = lower_bound;
  plan.method = std::move(method);
  return plan;
}

}  // namespace memarena::planner
