// Best-fit placement of tensors in a given order: the engine under greedy by size and
// under the local search, which only changes the order.
#pragma once

#include <cstddef>
#include <vector>

#include "memarena/planner.h"
#include "planner/sweep.h"

namespace memarena::planner {

class Placer {
 public:
  // Keeps references: `tensors` and `overlaps` (OverlapLists(tensors)) must outlive it.
  Placer(const std::vector<PlanTensor>& tensors, const std::vector<std::vector<Index>>& overlaps);

  // Places tensors in `order` (a permutation of all indices): each goes into the smallest
  // gap, among already placed tensors that overlap it in time, that fits it with its
  // alignment (lowest such gap on ties), else on top of them. Writes `offsets`; returns
  // the arena size. Stops early, returning a value above `give_up_above`, once the arena
  // exceeds it (offsets are then incomplete). With `first` > 0, `offsets` must already
  // hold the placement of order[0, first) (as an earlier Place of an order sharing that
  // prefix left it), and only the rest is placed.
  std::size_t Place(const std::vector<Index>& order, std::vector<std::size_t>& offsets,
                    std::size_t give_up_above = static_cast<std::size_t>(-1),
                    std::size_t first = 0);

 private:
  struct Span {
    std::size_t begin;
    std::size_t end;
  };
  const std::vector<PlanTensor>& tensors_;
  const std::vector<std::vector<Index>>& overlaps_;
  std::vector<std::size_t> rank_;  // position of each tensor in the current order
  std::vector<Span> spans_;        // scratch
};

// Indices sorted by size, largest first; ties by longer lifetime, then index.
std::vector<Index> SizeOrder(const std::vector<PlanTensor>& tensors);

// A Plan from offsets: arena size and lower bound filled in.
Plan MakePlan(const std::vector<PlanTensor>& tensors, std::vector<std::size_t> offsets,
              std::size_t lower_bound, std::string method);

}  // namespace memarena::planner
