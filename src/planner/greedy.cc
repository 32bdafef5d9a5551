// Greedy by size (Pisarchyk & Lee 2020; TFLite's GreedyBySize offset calculation), with
// the lowest-offset rule and no pairwise overlap lists.
#include "memarena/planner.h"
#include "planner/placer.h"
#include "planner/sweep.h"

namespace memarena {

Plan PlanGreedyBySize(const std::vector<PlanTensor>& tensors) {
  ValidateTensors(tensors);
  planner::Placer placer(tensors);
  std::vector<std::size_t> offsets;
  placer.Place(planner::SizeOrder(tensors), offsets);
  return planner::MakePlan(tensors, std::move(offsets), LowerBound(tensors),
                           planner::kGreedyMethod);
}

}  // namespace memarena
