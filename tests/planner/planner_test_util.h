// Helpers shared by the planner tests: the data folder (../shared/data/planner beside the
// checkout) and small constructors.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "memarena/planner.h"

namespace memarena::testing {

// The planner data folder. CI always has ../shared beside the clone, so a missing folder
// is a failure with the path in the message, never a silent skip.
inline std::filesystem::path PlannerDataDir() {
  const std::filesystem::path dir = MEMARENA_PLANNER_DATA_DIR;
  if (!std::filesystem::is_directory(dir)) {
    ADD_FAILURE() << "planner data folder " << dir
                  << " is missing; it must sit at ../shared/data/planner beside the checkout";
  }
  return dir;
}

inline PlanTensor T(std::string id, std::size_t size, std::int64_t lower, std::int64_t upper,
                    std::size_t alignment = 1) {
  return PlanTensor{std::move(id), size, alignment, lower, upper};
}

// Fails the current test with the validator's description when the plan is invalid.
inline void ExpectValid(const std::vector<PlanTensor>& tensors, const Plan& plan) {
  const std::optional<std::string> problem = ValidatePlan(tensors, plan);
  EXPECT_FALSE(problem.has_value()) << plan.method << ": " << problem.value_or("");
}

// The message ReadPlanCsv throws for `text`, or "no error".
inline std::string CsvError(const std::string& text) {
  std::istringstream in(text);
  try {
    ReadPlanCsv(in);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace memarena::testing
