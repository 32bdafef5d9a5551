// First-fit placement of tensors in a given order: the engine under greedy by size and
// under the local search, which only changes the order.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "memarena/planner.h"
#include "planner/occupancy.h"
#include "planner/sweep.h"

namespace memarena::planner {

class Placer {
 public:
  // Keeps a reference: `tensors` must outlive it. O(n log n) setup, O(n) memory.
  explicit Placer(const std::vector<PlanTensor>& tensors);

  // Places tensors in `order` (a permutation of all indices): each at the lowest offset,
  // a multiple of its alignment, where it overlaps no already placed tensor that is live
  // at the same time (the textbook greedy step). Writes `offsets`; returns the arena
  // size. Stops early, returning a value above `give_up_above`, once the arena exceeds
  // it (offsets are then incomplete), and likewise once `deadline` has passed (checked
  // every few thousand tensors, so a large placement cannot overrun a budget by much). No
  // pairwise overlap lists: each step is a query on a segment tree over time (occupancy.h).
  std::size_t Place(const std::vector<Index>& order, std::vector<std::size_t>& offsets,
                    std::size_t give_up_above = static_cast<std::size_t>(-1),
                    std::chrono::steady_clock::time_point deadline =
                        std::chrono::steady_clock::time_point::max());

  // Stored byte ranges after the last Place (memory accounting).
  std::size_t StoredRanges() const noexcept { return occupancy_.StoredRanges(); }

 private:
  const std::vector<PlanTensor>& tensors_;
  std::vector<std::int64_t> times_;     // DistinctTimes(tensors)
  std::vector<std::uint32_t> slot_lo_;  // per tensor: its lifetime in compressed time
  std::vector<std::uint32_t> slot_hi_;
  Occupancy occupancy_;
};

// Distinct lifetime boundaries, sorted: slot k is [times[k], times[k + 1]).
std::vector<std::int64_t> DistinctTimes(const std::vector<PlanTensor>& tensors);
// The slot a lifetime boundary `time` (one of `times`) starts.
std::uint32_t SlotOf(const std::vector<std::int64_t>& times, std::int64_t time);

// Indices sorted by size, largest first; ties by longer lifetime, then index.
std::vector<Index> SizeOrder(const std::vector<PlanTensor>& tensors);

// The length of a lifetime, without signed overflow (lower < upper).
inline std::uint64_t LifetimeLength(const PlanTensor& t) noexcept {
  return static_cast<std::uint64_t>(t.upper) - static_cast<std::uint64_t>(t.lower);
}

// Plan::method of PlanGreedyBySize's plans: the Placer's placement in SizeOrder.
inline constexpr const char* kGreedyMethod = "greedy-by-size";

// A Plan from offsets: arena size and lower bound filled in.
Plan MakePlan(const std::vector<PlanTensor>& tensors, std::vector<std::size_t> offsets,
              std::size_t lower_bound, std::string method);

}  // namespace memarena::planner
