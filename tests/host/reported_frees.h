// The fixture of the invalid-free tests: on_invalid_free:report for the test's body (the
// default, abort, restored after), the reports counted from its start, and the heap's
// invariants checked at its end.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "host/heap.h"
#include "host/host_api.h"
#include "memarena/allocator.h"

namespace memarena::host {

class ReportedFrees : public ::testing::Test {
 protected:
  void SetUp() override {
    SetInvalidFreeAction(InvalidFreeAction::kReport);
    before_ = InvalidFreeCount();
  }
  void TearDown() override {
    SetInvalidFreeAction(InvalidFreeAction::kAbort);
    const char* problem = CheckHeap();
    EXPECT_EQ(problem, nullptr) << problem;
  }
  std::uint64_t Reported() const { return InvalidFreeCount() - before_; }

  // Frees `ptr` and returns what the free wrote to stderr (its report, if any).
  static std::string FreeCapturingReport(void* ptr) {
    ::testing::internal::CaptureStderr();
    Free(ptr);
    return ::testing::internal::GetCapturedStderr();
  }

  // After a double free of a 64 B block: the next two 64 B allocations are distinct (the
  // block was not handed out twice), and freeing them reports nothing beyond `reported`.
  void ExpectTheNextTwoBlocksDistinct(std::uint64_t reported) {
    void* a = Allocate(64, 0);
    void* b = Allocate(64, 0);
    EXPECT_NE(a, b) << "a doubly freed block was handed out twice";
    Free(a);
    Free(b);
    EXPECT_EQ(Reported(), reported) << "a legitimate free of a reused block was reported";
  }

 private:
  std::uint64_t before_ = 0;
};

}  // namespace memarena::host
