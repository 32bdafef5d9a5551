// First-fit placement in a given order over the time-indexed occupancy tree.
#include "planner/placer.h"

#include <algorithm>

namespace memarena::planner {

std::vector<std::int64_t> DistinctTimes(const std::vector<PlanTensor>& tensors) {
  std::vector<std::int64_t> times;
  times.reserve(tensors.size() * 2);
  for (const PlanTensor& t : tensors) {
    times.push_back(t.lower);
    times.push_back(t.upper);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  return times;
}

std::uint32_t SlotOf(const std::vector<std::int64_t>& times, std::int64_t time) {
  return static_cast<std::uint32_t>(std::lower_bound(times.begin(), times.end(), time) -
                                    times.begin());
}

Placer::Placer(const std::vector<PlanTensor>& tensors)
    : tensors_(tensors), times_(DistinctTimes(tensors)), slot_lo_(tensors.size()),
      slot_hi_(tensors.size()), occupancy_(times_.empty() ? 0 : times_.size() - 1) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    slot_lo_[i] = SlotOf(times_, tensors[i].lower);
    slot_hi_[i] = SlotOf(times_, tensors[i].upper);
  }
}

std::size_t Placer::Place(const std::vector<Index>& order, std::vector<std::size_t>& offsets,
                          std::size_t give_up_above,
                          std::chrono::steady_clock::time_point deadline) {
  constexpr std::size_t kDeadlineStride = 4096;  // placements between clock reads
  offsets.assign(tensors_.size(), 0);
  occupancy_.Clear();
  std::size_t arena = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (k % kDeadlineStride == kDeadlineStride - 1 &&
        std::chrono::steady_clock::now() >= deadline) {
      return static_cast<std::size_t>(-1);  // above any give_up_above: an unfinished plan
    }
    const Index i = order[k];
    const PlanTensor& t = tensors_[i];
    if (t.size == 0) continue;  // occupies nothing; offset 0 meets any alignment
    const std::size_t offset = occupancy_.LowestFit(slot_lo_[i], slot_hi_[i], t.size, t.alignment);
    offsets[i] = offset;
    occupancy_.Insert(slot_lo_[i], slot_hi_[i], offset, offset + t.size);
    arena = std::max(arena, offset + t.size);
    if (arena > give_up_above) return arena;
  }
  return arena;
}

std::vector<Index> SizeOrder(const std::vector<PlanTensor>& tensors) {
  std::vector<Index> order(tensors.size());
  for (Index i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](Index a, Index b) {
    if (tensors[a].size != tensors[b].size) return tensors[a].size > tensors[b].size;
    const std::uint64_t la = LifetimeLength(tensors[a]);
    const std::uint64_t lb = LifetimeLength(tensors[b]);
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
