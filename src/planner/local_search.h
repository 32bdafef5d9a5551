// The heuristic improver: several tensor orderings under best-fit placement, then a local
// search over the order that moves tensors which touch the arena top earlier. Each trial
// is one first-fit placement (O(n log^2 n)), so large inputs get fewer trials, never a
// quadratic setup.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "memarena/planner.h"
#include "planner/sweep.h"

namespace memarena::planner {

// Replaces `best` when a smaller arena is found before `deadline`; stops at once when the
// arena reaches `target` or less. `best` must be a valid plan for `tensors`.
void ImproveByOrderings(const std::vector<PlanTensor>& tensors,
                        std::chrono::steady_clock::time_point deadline, std::size_t target,
                        std::uint64_t seed, Plan& best);

}  // namespace memarena::planner
