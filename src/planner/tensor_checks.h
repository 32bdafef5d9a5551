// One tensor's input checks, shared by ValidateTensors (which names the tensor) and the
// CSV reader (which names the line): lifetime, alignment and size limits.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "memarena/planner.h"

namespace memarena::planner {

// The largest sum of sizes plus alignments a problem may have: offsets and ends then stay
// far from overflow however the tensors are stacked.
constexpr std::size_t kMaxPlanTotal = static_cast<std::size_t>(-1) / 4;

// What is wrong with `t`, naming the field (lower, upper, alignment, size), or nullopt.
// `total` accumulates size + alignment over the tensors checked so far.
std::optional<std::string> CheckTensor(const PlanTensor& t, std::size_t& total);

}  // namespace memarena::planner
