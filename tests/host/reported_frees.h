// The fixture of the invalid-free tests: on_invalid_free:report for the test's body (the
// default, abort, restored after), the reports counted from its start, and the heap's
// invariants checked at its end.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "host/heap.h"
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

 private:
  std::uint64_t before_ = 0;
};

}  // namespace memarena::host
