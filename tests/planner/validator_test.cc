// The plan validator: accepts valid plans, rejects each kind of hand-made bad plan with a
// description of the first violation.
#include <gtest/gtest.h>

#include "planner/planner_test_util.h"

namespace memarena::testing {
namespace {

std::vector<PlanTensor> ThreeTensors() {
  // a and b overlap in time; c starts exactly when a ends (half-open: no overlap).
  return {T("a", 16, 0, 4), T("b", 8, 2, 6), T("c", 16, 4, 8)};
}

Plan MakePlanOf(std::vector<std::size_t> offsets, std::size_t arena) {
  Plan plan;
  plan.offsets = std::move(offsets);
  plan.arena_size = arena;
  return plan;
}

TEST(PlanValidator, AcceptsAValidPlanWithReuseAcrossTime) {
  // c reuses a's bytes because a is dead when c starts.
  EXPECT_EQ(ValidatePlan(ThreeTensors(), MakePlanOf({0, 16, 0}, 24)), std::nullopt);
}

TEST(PlanValidator, RejectsTensorsOverlappingInTimeAndSpace) {
  const auto problem = ValidatePlan(ThreeTensors(), MakePlanOf({0, 8, 0}, 24));
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("'a'"), std::string::npos) << *problem;
  EXPECT_NE(problem->find("'b'"), std::string::npos) << *problem;
  EXPECT_NE(problem->find("share bytes [8, 16)"), std::string::npos) << *problem;
}

TEST(PlanValidator, RejectsOverlapBetweenLaterTensors) {
  // a/b fine, but c collides with b in [4, 6).
  const auto problem = ValidatePlan(ThreeTensors(), MakePlanOf({0, 16, 10}, 26));
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("'c'"), std::string::npos) << *problem;
  EXPECT_NE(problem->find("[4, 6)"), std::string::npos) << *problem;
}

TEST(PlanValidator, RejectsMisalignedOffsets) {
  std::vector<PlanTensor> tensors = {T("a", 16, 0, 4, 64), T("b", 8, 0, 4, 8)};
  EXPECT_EQ(ValidatePlan(tensors, MakePlanOf({0, 16}, 24)), std::nullopt);
  const auto problem = ValidatePlan(tensors, MakePlanOf({0, 20}, 28));
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("alignment 8"), std::string::npos) << *problem;
}

TEST(PlanValidator, RejectsTensorsPastTheArenaAndWrongCounts) {
  const auto past = ValidatePlan(ThreeTensors(), MakePlanOf({0, 16, 0}, 20));
  ASSERT_TRUE(past.has_value());
  EXPECT_NE(past->find("arena size 20"), std::string::npos) << *past;
  const auto count = ValidatePlan(ThreeTensors(), MakePlanOf({0, 16}, 24));
  ASSERT_TRUE(count.has_value());
  EXPECT_NE(count->find("2 offsets for 3 tensors"), std::string::npos) << *count;
}

TEST(PlanValidator, ZeroSizeTensorsNeverConflict) {
  std::vector<PlanTensor> tensors = {T("a", 16, 0, 4), T("empty", 0, 0, 4)};
  EXPECT_EQ(ValidatePlan(tensors, MakePlanOf({0, 8}, 16)), std::nullopt);
}

}  // namespace
}  // namespace memarena::testing
