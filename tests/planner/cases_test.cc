// Hand-derived planning cases with known optimal arenas, input checks, traces and CSV.
#include <gtest/gtest.h>

#include <sstream>

#include "planner/planner_test_util.h"

namespace memarena::testing {
namespace {

PlanOptions Budget(int ms, std::size_t target = 0) {
  PlanOptions options;
  options.budget = std::chrono::milliseconds(ms);
  options.capacity_target = target;
  return options;
}

TEST(PlannerCases, ChainReachesTheLowerBound) {
  // Each op reads the previous output: live pairs are (a,b) 30, (b,c) 50, (c,d) 35.
  const std::vector<PlanTensor> chain = {T("a", 10, 0, 2), T("b", 20, 1, 3), T("c", 30, 2, 4),
                                         T("d", 5, 3, 5)};
  EXPECT_EQ(LowerBound(chain), 50u);
  const Plan greedy = PlanGreedyBySize(chain);
  ExpectValid(chain, greedy);
  EXPECT_EQ(greedy.arena_size, 50u);
  EXPECT_DOUBLE_EQ(greedy.Ratio(), 1.0);
}

TEST(PlannerCases, DiamondReachesTheLowerBound) {
  // x feeds y and z, which both feed w: at op 3, y + z + w = 16 + 24 + 12 = 52 are live.
  const std::vector<PlanTensor> diamond = {
      TensorFromUses("x", 8, 1, 0, 2), TensorFromUses("y", 16, 1, 1, 3),
      TensorFromUses("z", 24, 1, 2, 3), TensorFromUses("w", 12, 1, 3, 3)};
  EXPECT_EQ(LowerBound(diamond), 52u);
  const Plan best = PlanBest(diamond, Budget(20));
  ExpectValid(diamond, best);
  EXPECT_EQ(best.arena_size, 52u);
}

// The 8-tensor example network of Pisarchyk & Lee 2020 ("Efficient Memory Management for
// Deep Neural Net Inference"), inclusive operator intervals, as recalled from the paper's
// figure (its text could not be retrieved here to check). Derivation: at op 5,
// t2 + t3 + t4 + t5 = 36 + 16 + 8 + 64 = 124 bytes are live, and no other op has more
// (op 4: 88, op 7: 114), so the lower bound is 124, the figure the paper quotes.
std::vector<PlanTensor> PaperExample() {
  return {TensorFromUses("t0", 32, 1, 0, 1), TensorFromUses("t1", 28, 1, 1, 4),
          TensorFromUses("t2", 36, 1, 2, 5), TensorFromUses("t3", 16, 1, 3, 5),
          TensorFromUses("t4", 8, 1, 4, 5),  TensorFromUses("t5", 64, 1, 5, 7),
          TensorFromUses("t6", 10, 1, 6, 8), TensorFromUses("t7", 40, 1, 7, 8)};
}

TEST(PlannerCases, PaperExampleHasLowerBound124AndReachesIt) {
  const auto tensors = PaperExample();
  EXPECT_EQ(LowerBound(tensors), 124u);
  const Plan greedy = PlanGreedyBySize(tensors);
  ExpectValid(tensors, greedy);
  EXPECT_EQ(greedy.lower_bound, 124u);
  // Largest first: t5 at 0; t7 and t2 both at 64 above t5 (they never live together);
  // t1 at 32, t0 at 0, t3 at 100, t6 at 104, t4 at 116: the top is 116 + 8 = 124.
  EXPECT_EQ(greedy.arena_size, 124u);
  const Plan best = PlanBest(tensors, Budget(50));
  ExpectValid(tensors, best);
  EXPECT_EQ(best.arena_size, 124u);
  EXPECT_LE(best.arena_size, greedy.arena_size);
}

TEST(PlannerCases, MiniMallocExampleFitsCapacity12) {
  const PlanCsv csv = ReadPlanCsvFile((PlannerDataDir() / "minimalloc/input.12.csv").string());
  ASSERT_EQ(csv.tensors.size(), 5u);
  EXPECT_EQ(csv.tensors[0].id, "b1");
  EXPECT_EQ(LowerBound(csv.tensors), 12u);
  const Plan best = PlanBest(csv.tensors, Budget(100, 12));
  ExpectValid(csv.tensors, best);
  EXPECT_LE(best.arena_size, 12u);
}

TEST(PlannerCases, AlignmentIsHonouredAndCounted) {
  const std::vector<PlanTensor> tensors = {T("a", 10, 0, 4, 1), T("b", 8, 0, 4, 64),
                                           T("c", 100, 2, 6, 32)};
  for (const Plan& plan : {PlanGreedyBySize(tensors), PlanBest(tensors, Budget(20))}) {
    ExpectValid(tensors, plan);
    EXPECT_EQ(plan.offsets[1] % 64, 0u);
    EXPECT_EQ(plan.offsets[2] % 32, 0u);
  }
}

TEST(PlannerCases, BadInputIsAClearError) {
  auto message = [](const std::vector<PlanTensor>& tensors) {
    try {
      PlanGreedyBySize(tensors);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({T("x", 4, 3, 3)}).find("lower 3 >= upper 3"), std::string::npos);
  EXPECT_NE(message({T("x", 4, 0, 3, 3)}).find("alignment 3"), std::string::npos);
  EXPECT_NE(message({T("huge", ~std::size_t{0}, 0, 3)}).find("too large"), std::string::npos);
  EXPECT_THROW(TensorFromUses("x", 4, 1, 0, std::numeric_limits<std::int64_t>::max()),
               std::invalid_argument);
}

TEST(PlannerCases, TraceBecomesTensorsInAllocationOrder) {
  using A = TraceAction;
  const std::vector<TraceEvent> trace = {
      {A::kAllocate, 7, 100, 1, 0, 0, 0}, {A::kAllocate, 9, 50, 16, 0, 0, 0},
      {A::kFree, 7, 0, 1, 0, 0, 0},       {A::kAllocateFailure, 0, 1 << 30, 1, 0, 0, 0},
      {A::kAllocate, 7, 80, 1, 0, 0, 0},  {A::kFree, 9, 0, 1, 0, 0, 0}};
  const auto tensors = TensorsFromTrace(trace);
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_EQ(tensors[0].lower, 0);
  EXPECT_EQ(tensors[0].upper, 2);
  EXPECT_EQ(tensors[1].alignment, 16u);
  EXPECT_EQ(tensors[1].upper, 5);  // the failed allocation at 3 placed nothing, but takes a step
  EXPECT_EQ(tensors[2].lower, 4);
  EXPECT_EQ(tensors[2].upper, 6);  // never freed: live to the end of the trace
  EXPECT_EQ(LowerBound(tensors), 150u);
  EXPECT_THROW(TensorsFromTrace({{A::kFree, 1, 0, 1, 0, 0, 0}}), std::invalid_argument);
  EXPECT_THROW(
      TensorsFromTrace({{A::kAllocate, 1, 4, 1, 0, 0, 0}, {A::kAllocate, 1, 4, 1, 0, 0, 0}}),
      std::invalid_argument);
}

TEST(PlannerCsv, RoundTripsWithAlignmentAndOffsets) {
  const std::vector<PlanTensor> tensors = {T("b1", 4, 0, 3, 4), T("x", 12, 1, 5)};
  const Plan plan = PlanGreedyBySize(tensors);
  std::stringstream out;
  WritePlanCsv(out, tensors, &plan);
  EXPECT_EQ(out.str().substr(0, out.str().find('\n')), "id,lower,upper,size,alignment,offset");
  const PlanCsv back = ReadPlanCsv(out);
  ASSERT_EQ(back.tensors.size(), 2u);
  EXPECT_EQ(back.tensors[0].id, "b1");
  EXPECT_EQ(back.tensors[0].alignment, 4u);
  EXPECT_EQ(back.tensors[1].size, 12u);
  ASSERT_TRUE(back.offsets.has_value());
  EXPECT_EQ(*back.offsets, plan.offsets);
}

TEST(PlannerCsv, CapacityComesFromTheFileName) {
  EXPECT_EQ(CapacityFromFileName("data/minimalloc/A.1048576.csv"), 1048576u);
  EXPECT_EQ(CapacityFromFileName("input.12.csv"), 12u);
  EXPECT_EQ(CapacityFromFileName("somas/resnet50.csv"), 0u);
  EXPECT_EQ(CapacityFromFileName("a.b12.csv"), 0u);
  EXPECT_EQ(CapacityFromFileName("noext"), 0u);
}

TEST(PlannerCsv, MalformedInputNamesTheLine) {
  EXPECT_NE(CsvError("id,lower,upper,size\n0,0,3,4\n1,0,3,-4\n").find("line 3: size '-4' is negative"),
            std::string::npos);
  EXPECT_NE(CsvError("id,lower,upper,size\n0,5,3,4\n").find("line 2: lower 5 >= upper 3"),
            std::string::npos);
  EXPECT_NE(CsvError("id,lower,upper,size\n0,0,3\n").find("line 2: 3 fields where the header has 4"),
            std::string::npos);
  EXPECT_NE(CsvError("id,lower,upper,size\n0,0,x,4\n").find("line 2: upper 'x' is not an integer"),
            std::string::npos);
  EXPECT_NE(CsvError("id,lower,size\n").find("lacks the 'upper' column"), std::string::npos);
  EXPECT_NE(CsvError("id,lower,upper,size,alignment\n0,0,3,4,6\n").find("line 2: alignment 6"),
            std::string::npos);
  EXPECT_NE(CsvError("").find("line 1: the file is empty"), std::string::npos);
  EXPECT_THROW(ReadPlanCsvFile("/nonexistent/planner.csv"), std::invalid_argument);
}

}  // namespace
}  // namespace memarena::testing
