// A pointer an allocator did not hand out (foreign, inside a block, or already freed) gets
// the same documented treatment from every allocator and adaptor, under each value of
// on_invalid_free: abort with one line, report the line and carry on, or carry on silently.
// Nothing is freed and no counter moves in any case.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include <unistd.h>

#include "memarena/adaptors.h"
#include "memarena/arena.h"
#include "memarena/host.h"
#include "memarena/planner.h"
#include "memarena/tracing.h"
#include "memarena/virtual_memory_source.h"

namespace memarena {
namespace {

struct HostFactory {
  static std::shared_ptr<Allocator> Make() {
    return std::shared_ptr<Allocator>(&HostAllocator(), [](Allocator*) {});
  }
};

struct ArenaFactory {
  static std::shared_ptr<Allocator> Make() {
    return std::make_shared<BfcArena>(std::make_shared<HostMemorySource>());
  }
};

struct ExpandableArenaFactory {
  static std::shared_ptr<Allocator> Make() {
    ArenaConfig config;
    config.expandable_segments = true;
    return std::make_shared<BfcArena>(std::make_shared<HostVirtualMemorySource>(std::size_t{1} << 30),
                                      config);
  }
};

// An adaptor of type A over a BFC arena, owning both.
template <typename A, typename... Args>
std::shared_ptr<Allocator> OverArena(Args... args) {
  struct Stack {
    explicit Stack(Args... a) : adaptor(arena, a...) {}
    BfcArena arena{std::make_shared<HostMemorySource>()};
    A adaptor;
  };
  auto stack = std::make_shared<Stack>(args...);
  return std::shared_ptr<Allocator>(stack, &stack->adaptor);
}

struct PlannedArenaFactory {
  static std::shared_ptr<Allocator> Make() { return OverArena<PlannedArena>(); }
};

struct LimitingFactory {
  static std::shared_ptr<Allocator> Make() {
    return OverArena<LimitingAllocator>(std::size_t{64} << 20);
  }
};

struct StatisticsFactory {
  static std::shared_ptr<Allocator> Make() { return OverArena<StatisticsAllocator>(); }
};

struct TracingFactory {
  static std::shared_ptr<Allocator> Make() {
    static int next_id = 0;
    const std::string path = ::testing::TempDir() + "foreign_pointer." +
                             std::to_string(getpid()) + "." + std::to_string(next_id++) + ".csv";
    std::shared_ptr<Allocator> traced = OverArena<TracingAllocator>(path);
    // These tests read no trace: the open file is unlinked at once, so no run leaves it in
    // /tmp (each left five, the death test's child one of them).
    std::remove(path.c_str());
    return traced;
  }
};

template <typename F>
class ForeignPointer : public ::testing::Test {
 protected:
  void SetUp() override {
    HostAllocator();  // applies MEMARENA_CONF first, so it cannot undo the tests' setting
    allocator_ = F::Make();
  }
  void TearDown() override { SetInvalidFreeAction(InvalidFreeAction::kAbort); }

  // Frees `ptr`, which `allocator_` does not own, under `action`; returns what went to
  // stderr and checks the count of invalid frees moved by one and no stats moved.
  std::string FreeInvalid(void* ptr, InvalidFreeAction action) {
    SetInvalidFreeAction(action);
    const std::uint64_t invalid_before = InvalidFreeCount();
    const AllocatorStats before = allocator_->GetStats();
    ::testing::internal::CaptureStderr();
    allocator_->Deallocate(ptr);
    const std::string output = ::testing::internal::GetCapturedStderr();
    const AllocatorStats after = allocator_->GetStats();
    EXPECT_EQ(InvalidFreeCount(), invalid_before + 1);
    EXPECT_EQ(after.num_frees, before.num_frees);
    EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
    return output;
  }

  std::shared_ptr<Allocator> allocator_;
};

using Allocators = ::testing::Types<HostFactory, ArenaFactory, ExpandableArenaFactory,
                                    PlannedArenaFactory, LimitingFactory, StatisticsFactory,
                                    TracingFactory>;
TYPED_TEST_SUITE(ForeignPointer, Allocators);

TYPED_TEST(ForeignPointer, ReportPrintsOneLineAndLeavesEverythingAlone) {
  alignas(64) static std::uint8_t not_a_block[256];
  const std::string line = this->FreeInvalid(not_a_block, InvalidFreeAction::kReport);
  EXPECT_NE(line.find("invalid free"), std::string::npos) << line;
  EXPECT_NE(line.find("left alone"), std::string::npos) << line;
  // The allocator keeps working.
  void* p = this->allocator_->Allocate(1000);
  this->allocator_->Deallocate(p);
}

TYPED_TEST(ForeignPointer, InteriorAndDoubleFreesAreInvalidToo) {
  auto* p = static_cast<std::uint8_t*>(this->allocator_->Allocate(1024));
  auto* keep = this->allocator_->Allocate(1024);  // so the freed block is not given back
  EXPECT_NE(this->FreeInvalid(p + 64, InvalidFreeAction::kReport), "");
  this->allocator_->Deallocate(p);
  EXPECT_NE(this->FreeInvalid(p, InvalidFreeAction::kReport), "");
  this->allocator_->Deallocate(keep);
}

TYPED_TEST(ForeignPointer, IgnoreSaysNothingButCounts) {
  int on_the_stack = 0;
  EXPECT_EQ(this->FreeInvalid(&on_the_stack, InvalidFreeAction::kIgnore), "");
}

TYPED_TEST(ForeignPointer, AbortPrintsTheLineThenAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  SetInvalidFreeAction(InvalidFreeAction::kAbort);
  int on_the_stack = 0;
  Allocator& allocator = *this->allocator_;
  EXPECT_DEATH(allocator.Deallocate(&on_the_stack),
               "invalid free of .*aborting \\(MEMARENA_CONF=on_invalid_free:report carries on\\)");
}

}  // namespace
}  // namespace memarena
