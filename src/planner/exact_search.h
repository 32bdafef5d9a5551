// The exact search: does every tensor fit under a capacity? A depth-first branch and
// bound in the style of MiniMalloc (Moffitt, ASPLOS'23), written for memarena.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

#include "memarena/planner.h"

namespace memarena::planner {

enum class ExactStatus { kFound, kInfeasible, kTimeout };

struct ExactResult {
  ExactStatus status = ExactStatus::kTimeout;
  std::vector<std::size_t> offsets;  // valid when status is kFound; every end <= capacity
  std::uint64_t nodes = 0;           // search nodes visited
};

// Searches for offsets with every tensor ending at or below `capacity`, until `deadline`.
// kInfeasible is a proof that none exist. Expects ValidateTensors(tensors) to pass.
ExactResult SolveExact(const std::vector<PlanTensor>& tensors, std::size_t capacity,
                       std::chrono::steady_clock::time_point deadline);

}  // namespace memarena::planner
