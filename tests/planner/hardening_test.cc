// Hostile planner input: lifetimes whose length overflows, alignments near 2^63, offsets
// that would wrap, an empty file. Each is a clear error naming the line and the field
// (and the suite runs clean under UBSAN, so no overflow happens on the way there).
#include <gtest/gtest.h>

#include <limits>
#include <sstream>
#include <string>

#include "planner/planner_test_util.h"

namespace memarena::testing {
namespace {

std::string TensorsError(const std::vector<PlanTensor>& tensors) {
  try {
    PlanBest(tensors);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

TEST(PlannerHardening, LifetimeWhoseLengthOverflowsNamesLineAndFields) {
  const std::string error = CsvError(
      "id,lower,upper,size\nok,0,3,4\nwide," + std::to_string(kMin) + "," + std::to_string(kMax) +
      ",4\n");
  EXPECT_NE(error.find("line 3: upper 9223372036854775807 - lower -9223372036854775808 does not "
                       "fit"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("'wide'"), std::string::npos) << error;
  EXPECT_NE(TensorsError({T("wide", 4, kMin, kMax)}).find("tensor #0 'wide': upper"),
            std::string::npos);
}

TEST(PlannerHardening, LongButRepresentableLifetimesArePlanned) {
  // Lengths up to 2^63 - 1 are fine; nothing may compute upper - lower in a wider range.
  const std::vector<PlanTensor> tensors = {T("a", 8, kMin, -1), T("b", 8, -2, kMax - 3),
                                           T("c", 4, 0, kMax)};
  for (const Plan& plan : {PlanGreedyBySize(tensors), PlanBest(tensors)}) {
    ExpectValid(tensors, plan);
    EXPECT_EQ(plan.arena_size, 16u);  // the lower bound: a and b live together at -2
  }
}

TEST(PlannerHardening, AlignmentNearTwoToThe63NamesLineAndField) {
  const std::string error =
      CsvError("id,lower,upper,size,alignment\nbig,0,3,4,9223372036854775808\n");
  EXPECT_NE(error.find("line 2: alignment 9223372036854775808 is too large"), std::string::npos)
      << error;
  const std::string odd =
      CsvError("id,lower,upper,size,alignment\nodd,0,3,4,9223372036854775807\n");
  EXPECT_NE(odd.find("line 2: alignment 9223372036854775807 is not a power of two"),
            std::string::npos)
      << odd;
  EXPECT_NE(TensorsError({T("big", 4, 0, 3, std::size_t{1} << 63)}).find("alignment"),
            std::string::npos);
  // Each alignment alone is fine; together they would let offsets overflow.
  const std::string sum = CsvError(
      "id,lower,upper,size,alignment\na,0,3,4,2305843009213693952\nb,0,3,4,2305843009213693952\n");
  EXPECT_NE(sum.find("line 3: alignment 2305843009213693952 is too large"), std::string::npos)
      << sum;
}

TEST(PlannerHardening, SizeThatWouldOverflowNamesLineAndField) {
  const std::string error =
      CsvError("id,lower,upper,size\nhuge,0,3,18446744073709551615\n");
  EXPECT_NE(error.find("line 2: size 18446744073709551615 is too large"), std::string::npos)
      << error;
}

TEST(PlannerHardening, OffsetThatWouldWrapNamesLineAndField) {
  const std::string error =
      CsvError("id,lower,upper,size,offset\na,0,3,4,0\nb,0,3,4000,18446744073709551000\n");
  EXPECT_NE(error.find("line 3: offset 18446744073709551000 of 'b' is too large"),
            std::string::npos)
      << error;
  // A plan given by the caller with a wrapping offset is invalid, not wrapped around.
  const std::vector<PlanTensor> tensors = {T("a", 4000, 0, 3), T("b", 4000, 0, 3)};
  Plan plan;
  plan.offsets = {0, ~std::size_t{0} - 100};
  plan.arena_size = 4000;
  const auto problem = ValidatePlan(tensors, plan);
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("ends past the arena size"), std::string::npos) << *problem;
}

TEST(PlannerHardening, EmptyFileAndHeaderOnly) {
  EXPECT_NE(CsvError("").find("line 1: the file is empty; expected the header"),
            std::string::npos);
  EXPECT_NE(CsvError("\n\n").find("the file is empty"), std::string::npos);
  std::istringstream header_only("id,lower,upper,size\n");
  const PlanCsv csv = ReadPlanCsv(header_only);
  EXPECT_TRUE(csv.tensors.empty());
  const Plan plan = PlanBest(csv.tensors);
  EXPECT_EQ(plan.arena_size, 0u);
  ExpectValid(csv.tensors, plan);
}

}  // namespace
}  // namespace memarena::testing
