// A test program for gtest_guard_test, linked with memarena::gtest_main: one clean test,
// one that deliberately keeps growing memory, one with a budget set in code.
#include <gtest/gtest.h>

#include <vector>

#include "memarena/host.h"
#include "memarena/testing/gtest_listener.h"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(Guard, Clean) {
  void* p = memarena::HostAllocator().Allocate(1 * kMiB);
  memarena::HostAllocator().Deallocate(p);
}

// Keeps 32 MiB alive after it ends, as a cache that is never cleared would.
TEST(Guard, Growing) {
  static std::vector<void*> kept;
  for (int i = 0; i < 8; ++i) kept.push_back(memarena::HostAllocator().Allocate(4 * kMiB));
}

TEST(Guard, CodeBudget) {
  memarena::testing::SetTestPeakBudget(1 * kMiB);
  void* p = memarena::HostAllocator().Allocate(8 * kMiB);
  memarena::HostAllocator().Deallocate(p);
}

}  // namespace
